//! The flagged queue (for corrections): the probable missing golds (a passage the judges
//! picked instead of the gold, confirmed by their pointwise ratings), shown beside the gold,
//! and the flagged golds (a gold whose ensemble alignment score is below the audit's flag
//! threshold, the ones `mtr qrels apply` would remove). Most confident first: a missing gold by
//! the share of all planned picks that chose it, a flagged gold by how far below the threshold
//! its score is (`(threshold - score) / (threshold - 1)`), both in 0..1. Here the judges'
//! reasons are shown.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::dimension::Dimension;
use crate::error::Result;
use crate::items::aggregate::SuggestionVerdict;
use crate::summary::Summary;

use super::key::ItemKey;
use super::units::AuditedUnit;

/// What kind of flag an item carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FlagKind {
    /// A probable missing gold.
    Missing,
    /// A gold the judges rated as not answering.
    Gold,
    /// A hole of a judge folder (`mtr judge`): a passage some run ranks in its top K, unjudged
    /// by the qrels, that the judges rated relevant (`crate::holes::review_queue`).
    Hole,
}

/// One flagged item.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlaggedItem {
    /// The item's key ([`crate::review_queue::ItemKey`]).
    pub item: String,
    /// A probable missing gold or a doubtful gold.
    pub kind: FlagKind,
    /// The turn.
    pub turn_id: String,
    /// The candidate (missing) or the flagged gold.
    pub passage_id: String,
    /// Missing: the gold it was picked instead of.
    pub gold_passage_id: Option<String>,
    /// 0..1, see the module doc.
    pub confidence: f64,
    /// One line on why it is flagged.
    pub why: String,
    /// Each judge's reason (justification), by judge.
    pub reasons: BTreeMap<String, String>,
}

/// The flagged queue of an audit folder, most confident first.
pub fn queue(
    audit_dir: &Path,
    summary: &Summary,
    units: &[AuditedUnit],
) -> Result<Vec<FlaggedItem>> {
    let reasons_of = |dim: Dimension, turn: &str, passage: &str| -> BTreeMap<String, String> {
        let key = ItemKey::unit(dim, turn, Some(passage));
        units
            .binary_search_by(|u| u.key.cmp(&key))
            .ok()
            .map(|i| units[i].reasons.clone())
            .unwrap_or_default()
    };
    let mut out = missing(audit_dir, summary, &reasons_of)?;
    let labels = crate::label_edits::read(audit_dir)?;
    let threshold = labels.flag_rating_below;
    for r in labels.removed {
        let span = (threshold - 1.0).max(f64::EPSILON);
        out.push(FlaggedItem {
            item: ItemKey::Gold {
                turn_id: r.turn_id.clone(),
                passage_id: r.passage_id.clone(),
            }
            .to_string(),
            kind: FlagKind::Gold,
            reasons: reasons_of(Dimension::Alignment, &r.turn_id, &r.passage_id),
            turn_id: r.turn_id,
            passage_id: r.passage_id,
            gold_passage_id: None,
            confidence: ((threshold - r.score) / span).clamp(0.0, 1.0),
            why: format!(
                "ensemble alignment score {:.2}, below the flag threshold {threshold}",
                r.score
            ),
        });
    }
    out.sort_by(|a, b| {
        b.confidence
            .total_cmp(&a.confidence)
            .then_with(|| a.item.cmp(&b.item))
    });
    Ok(out)
}

/// The probable missing golds, each with the judges' reasons for their pick and rating.
fn missing(
    audit_dir: &Path,
    summary: &Summary,
    reasons_of: &dyn Fn(Dimension, &str, &str) -> BTreeMap<String, String>,
) -> Result<Vec<FlaggedItem>> {
    let mut out = Vec::new();
    let verify = super::units::verify_reasons(audit_dir)?;
    for s in summary
        .suggested_qrels
        .iter()
        .filter(|s| s.verdict == SuggestionVerdict::ProbableMissingGold)
    {
        let mut reasons = BTreeMap::new();
        for (j, r) in reasons_of(Dimension::Completeness, &s.turn_id, &s.gold_passage_id) {
            reasons.insert(format!("{j} (pick)"), r);
        }
        for (j, r) in verify
            .get(&(s.turn_id.clone(), s.passage_id.clone()))
            .into_iter()
            .flatten()
        {
            reasons.insert(format!("{j} (rating)"), r.clone());
        }
        let ratings: Vec<String> = s
            .alignment_ratings
            .iter()
            .map(|(j, r)| format!("{j} {r}"))
            .collect();
        out.push(FlaggedItem {
            item: ItemKey::Missing {
                turn_id: s.turn_id.clone(),
                passage_id: s.passage_id.clone(),
            }
            .to_string(),
            kind: FlagKind::Missing,
            turn_id: s.turn_id.clone(),
            passage_id: s.passage_id.clone(),
            gold_passage_id: Some(s.gold_passage_id.clone()),
            confidence: if s.picks == 0 {
                0.0
            } else {
                s.votes as f64 / s.picks as f64
            },
            why: format!(
                "picked instead of the gold in {} of {} picks; pointwise ratings: {}",
                s.votes,
                s.picks,
                if ratings.is_empty() {
                    "none".to_string()
                } else {
                    ratings.join(", ")
                }
            ),
            reasons,
        });
    }
    Ok(out)
}
