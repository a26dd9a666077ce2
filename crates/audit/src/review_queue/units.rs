//! The audited units, read back from `items.jsonl`: one per (dimension, turn, passage) the
//! judges judged, with the order a judge saw a completeness pool in and each judge's reasons.
//! Only the fields a review needs are parsed, so a large audit loads quickly.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::dimension::Dimension;
use crate::error::Result;
use crate::output::{ITEMS, VERIFY_ITEMS};

use super::key::ItemKey;

/// The part of a judgement a review reads.
#[derive(Debug, Deserialize)]
struct JudgementRow {
    dimension: Dimension,
    judge: String,
    dialogue_id: String,
    turn_id: String,
    turn: usize,
    passage_id: Option<String>,
    trial: Option<usize>,
    #[serde(default)]
    pool: Option<Vec<String>>,
    #[serde(default)]
    justification: Option<String>,
}

/// One audited unit.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditedUnit {
    /// The unit's key.
    pub key: ItemKey,
    /// Its dimension.
    pub dimension: Dimension,
    /// Its dialogue.
    pub dialogue_id: String,
    /// Its turn.
    pub turn_id: String,
    /// 1-based turn number.
    pub turn: usize,
    /// The judged passage (none for faithfulness and quality).
    pub passage_id: Option<String>,
    /// Completeness: the pool in the order the first judge saw it in its first trial.
    pub pool: Option<Vec<String>>,
    /// Per judge, its first justification (for the flagged queue; never shown blind).
    pub reasons: BTreeMap<String, String>,
}

/// The units of `AUDIT_DIR/items.jsonl` (none when the file is absent), sorted by key.
pub fn read(audit_dir: &Path) -> Result<Vec<AuditedUnit>> {
    let mut units = read_file(&audit_dir.join(ITEMS))?;
    let mut v: Vec<AuditedUnit> = std::mem::take(&mut units).into_values().collect();
    v.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(v)
}

/// The judges' pointwise reasons about missing-gold candidates (`verify_items.jsonl`), by
/// (turn, passage).
pub(crate) fn verify_reasons(
    audit_dir: &Path,
) -> Result<BTreeMap<(String, String), BTreeMap<String, String>>> {
    Ok(read_file(&audit_dir.join(VERIFY_ITEMS))?
        .into_values()
        .filter_map(|u| Some(((u.turn_id, u.passage_id?), u.reasons)))
        .collect())
}

fn read_file(path: &Path) -> Result<BTreeMap<ItemKey, AuditedUnit>> {
    let mut out: BTreeMap<ItemKey, AuditedUnit> = BTreeMap::new();
    // (trial, judge) of the judgement whose pool a unit shows
    let mut pool_from: BTreeMap<ItemKey, (usize, String)> = BTreeMap::new();
    if !path.is_file() {
        return Ok(out);
    }
    mtr_core::jsonl::for_each(path, |_, r: JudgementRow| {
        let key = ItemKey::unit(r.dimension, &r.turn_id, r.passage_id.as_deref());
        let u = out.entry(key.clone()).or_insert_with(|| AuditedUnit {
            key: key.clone(),
            dimension: r.dimension,
            dialogue_id: r.dialogue_id.clone(),
            turn_id: r.turn_id.clone(),
            turn: r.turn,
            passage_id: r.passage_id.clone(),
            pool: None,
            reasons: BTreeMap::new(),
        });
        if let Some(j) = r.justification.filter(|j| !j.trim().is_empty()) {
            u.reasons.entry(r.judge.clone()).or_insert(j);
        }
        if let Some(pool) = r.pool {
            let rank = (r.trial.unwrap_or(0), r.judge);
            let earlier = pool_from.get(&key).is_some_and(|p| *p <= rank);
            if !earlier {
                u.pool = Some(pool);
                pool_from.insert(key, rank);
            }
        }
        Ok(())
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::items::aggregate::tests::judgement;

    #[test]
    fn units_are_distinct_items_with_the_first_trials_pool() {
        let c = Dimension::Completeness;
        let mut a = judgement(c, "d::1", Some("g"), "b", Some(1), Some(1.0), Some("g"));
        a.pool = Some(vec!["x".into(), "g".into()]);
        let mut b = judgement(c, "d::1", Some("g"), "b", Some(0), Some(1.0), Some("g"));
        b.pool = Some(vec!["g".into(), "x".into()]);
        let q = judgement(Dimension::Quality, "d::1", None, "a", None, Some(4.0), None);
        let tmp = tempfile::tempdir().unwrap();
        crate::output::write_judgements(&tmp.path().join(ITEMS), &[a, b, q]).unwrap();
        let units = read(tmp.path()).unwrap();
        assert_eq!(units.len(), 2);
        assert_eq!(units[0].key.to_string(), "completeness|d::1|g");
        assert_eq!(
            units[0].pool.as_deref(),
            Some(&["g".to_string(), "x".to_string()][..])
        );
        assert_eq!(units[0].reasons["b"], "because");
        assert_eq!(units[1].key.to_string(), "quality|d::1|");
        assert!(read(&tmp.path().join("none")).unwrap().is_empty());
    }
}
