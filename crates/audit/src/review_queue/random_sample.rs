//! The random sample a reviewer labels for estimates: per dimension, `per_dimension` audited
//! units drawn with a seeded shuffle of the units sorted by key (so the draw depends on the
//! seed and the audit only, never on the judges' answers), interleaved dimension by dimension
//! so a reviewer who stops early leaves a balanced sample. Drawn once and stored in
//! `review/sample.jsonl` (a header line with the seed, size and audit fingerprint, then one
//! unit a line); later runs read it back and never draw again.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};

use crate::dimension::Dimension;
use crate::error::{AuditError, Result};

use super::key::ItemKey;
use super::units::AuditedUnit;
use super::{io_error, review_dir, user_error};

pub(crate) const SAMPLE_FILE: &str = "sample.jsonl";
/// Version of the sample file's format.
pub(crate) const SAMPLE_VERSION: u32 = 1;
/// Units per dimension unless `--sample` says otherwise.
pub const DEFAULT_PER_DIMENSION: usize = 50;

/// The first line of `sample.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SampleHeader {
    /// Version of the sample file's format.
    pub sample_version: u32,
    /// The seed the sample was drawn with.
    pub seed: u64,
    /// Units drawn per dimension.
    pub per_dimension: usize,
    /// The audit's fingerprint ([`super::audit_fingerprint`]).
    pub fingerprint: String,
}

/// One unit of the sample.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SampleUnit {
    /// The unit's key ([`crate::review_queue::ItemKey`]).
    pub item: String,
    /// Its dimension.
    pub dimension: Dimension,
    /// Its dialogue.
    pub dialogue_id: String,
    /// Its turn.
    pub turn_id: String,
    /// 1-based turn number.
    pub turn: usize,
    /// Empty for faithfulness and quality.
    pub passage_id: String,
    /// Completeness: the pool in the order a judge saw it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<Vec<String>>,
}

/// The stored sample.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// The header line: seed, size, audit fingerprint.
    pub header: SampleHeader,
    /// The units, interleaved dimension by dimension.
    pub units: Vec<SampleUnit>,
}

impl Sample {
    /// Units per dimension, in the canonical dimension order.
    pub fn counts(&self) -> BTreeMap<Dimension, usize> {
        let mut m = BTreeMap::new();
        for u in &self.units {
            *m.entry(u.dimension).or_insert(0) += 1;
        }
        m
    }
}

pub(crate) fn sample_path(audit_dir: &Path) -> PathBuf {
    review_dir(audit_dir).join(SAMPLE_FILE)
}

/// Draws the sample from the audited units (pure: the same units and seed give the same
/// sample).
pub fn draw(units: &[AuditedUnit], per_dimension: usize, seed: u64, fingerprint: &str) -> Sample {
    let mut by_dim: BTreeMap<Dimension, Vec<&AuditedUnit>> = BTreeMap::new();
    for u in units {
        by_dim.entry(u.dimension).or_default().push(u);
    }
    let mut drawn: Vec<Vec<&AuditedUnit>> = Vec::new();
    for (dim, mut us) in by_dim {
        us.sort_by(|a, b| a.key.cmp(&b.key));
        let mut rng = crate::seed::rng(seed, &["review-sample", dim.name()]);
        us.shuffle(&mut rng);
        us.truncate(per_dimension);
        drawn.push(us);
    }
    let longest = drawn.iter().map(Vec::len).max().unwrap_or(0);
    let mut out = Vec::new();
    for i in 0..longest {
        for d in &drawn {
            if let Some(u) = d.get(i) {
                out.push(SampleUnit {
                    item: u.key.to_string(),
                    dimension: u.dimension,
                    dialogue_id: u.dialogue_id.clone(),
                    turn_id: u.turn_id.clone(),
                    turn: u.turn,
                    passage_id: u.passage_id.clone().unwrap_or_default(),
                    pool: u.pool.clone(),
                });
            }
        }
    }
    Sample {
        header: SampleHeader {
            sample_version: SAMPLE_VERSION,
            seed,
            per_dimension,
            fingerprint: fingerprint.to_string(),
        },
        units: out,
    }
}

/// Writes the sample atomically.
pub fn write(path: &Path, sample: &Sample) -> Result<()> {
    let mut text = json_line(path, &sample.header)?;
    for u in &sample.units {
        text.push_str(&json_line(path, u)?);
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| io_error(parent, e))?;
    }
    mtr_core::atomic::write_atomic(path, text.as_bytes())?;
    Ok(())
}

/// A value as one JSON line, newline included.
pub(crate) fn json_line<T: Serialize>(path: &Path, v: &T) -> Result<String> {
    let mut s = serde_json::to_string(v).map_err(|e| io_error(path, e))?;
    s.push('\n');
    Ok(s)
}

/// Reads a stored sample; a sample of another audit is a user error.
pub fn read(path: &Path, fingerprint: &str) -> Result<Sample> {
    let text = mtr_core::jsonl::read_text(path)?;
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let Some((_, first)) = lines.next() else {
        return Err(user_error(
            path,
            "empty sample file",
            "delete it to draw the sample again",
        ));
    };
    let header: SampleHeader = mtr_core::jsonl::parse_line(path, 1, first)?;
    if header.fingerprint != fingerprint {
        return Err(user_error(
            path,
            format!(
                "this sample was drawn from another audit (fingerprint {}, this audit {})",
                mtr_core::fingerprint::short(&header.fingerprint),
                mtr_core::fingerprint::short(fingerprint)
            ),
            "move the review/ folder away, or review the audit it was made on",
        ));
    }
    let mut units = Vec::new();
    for (i, l) in lines {
        let u: SampleUnit = mtr_core::jsonl::parse_line(path, i as u64 + 1, l)?;
        if ItemKey::parse(&u.item).is_none_or(|k| k.queue() != super::Queue::Sample) {
            return Err(AuditError::Core(
                mtr_core::InputError::new(path, format!("`{}` is not a sample unit's key", u.item))
                    .line(i as u64 + 1)
                    .field("item")
                    .into(),
            ));
        }
        units.push(u);
    }
    Ok(Sample { header, units })
}

/// The stored sample, drawn and stored first when there is none. A stored sample is kept
/// whatever `per_dimension` and `seed` say (a note is logged when they differ).
pub fn load_or_draw(
    audit_dir: &Path,
    units: impl FnOnce() -> Result<Vec<AuditedUnit>>,
    per_dimension: usize,
    seed: u64,
    fingerprint: &str,
) -> Result<Sample> {
    let path = sample_path(audit_dir);
    if path.is_file() {
        let s = read(&path, fingerprint)?;
        if s.header.per_dimension != per_dimension || s.header.seed != seed {
            tracing::warn!(
                "{} was drawn with --sample {} --seed {}: it is kept (a sample never changes once drawn)",
                path.display(),
                s.header.per_dimension,
                s.header.seed
            );
        }
        return Ok(s);
    }
    let s = draw(&units()?, per_dimension, seed, fingerprint);
    write(&path, &s)?;
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(dim: Dimension, turn: &str, passage: Option<&str>) -> AuditedUnit {
        AuditedUnit {
            key: ItemKey::unit(dim, turn, passage),
            dimension: dim,
            dialogue_id: turn.split("::").next().unwrap_or_default().into(),
            turn_id: turn.into(),
            turn: 1,
            passage_id: passage.map(Into::into),
            pool: None,
            reasons: BTreeMap::from([("a".into(), "secret reason".into())]),
        }
    }

    fn units() -> Vec<AuditedUnit> {
        let mut v = Vec::new();
        for i in 0..30 {
            let t = format!("d{}::{}", i / 3, i % 3);
            v.push(unit(Dimension::Alignment, &t, Some("g")));
            v.push(unit(Dimension::Quality, &t, None));
        }
        v.push(unit(Dimension::Completeness, "d0::0", Some("g")));
        v
    }

    #[test]
    fn stratified_seeded_interleaved_and_stored_once() {
        let u = units();
        let s = draw(&u, 10, 7, "fp");
        assert_eq!(s.units.len(), 21, "10 + 10 + the one completeness unit");
        assert_eq!(
            s.counts(),
            BTreeMap::from([
                (Dimension::Alignment, 10),
                (Dimension::Completeness, 1),
                (Dimension::Quality, 10)
            ])
        );
        assert_eq!(s.units[0].dimension, Dimension::Alignment);
        assert_eq!(s.units[1].dimension, Dimension::Completeness);
        assert_eq!(s.units[2].dimension, Dimension::Quality);
        // the input order does not matter, the seed does
        let mut rev = u.clone();
        rev.reverse();
        assert_eq!(draw(&rev, 10, 7, "fp"), s);
        assert_ne!(draw(&u, 10, 8, "fp").units, s.units);

        let tmp = tempfile::tempdir().unwrap();
        let first = load_or_draw(tmp.path(), || Ok(u.clone()), 10, 7, "fp").unwrap();
        assert_eq!(first, s);
        let bytes = std::fs::read(sample_path(tmp.path())).unwrap();
        assert!(!String::from_utf8_lossy(&bytes).contains("secret reason"));
        // a later run with other flags keeps it, and never reads the units
        let again = load_or_draw(
            tmp.path(),
            || panic!("the units are not read again"),
            3,
            9,
            "fp",
        )
        .unwrap();
        assert_eq!(again, s);
        assert_eq!(std::fs::read(sample_path(tmp.path())).unwrap(), bytes);
        // another audit's sample is refused as a user error
        let e = load_or_draw(tmp.path(), || Ok(Vec::new()), 10, 7, "other").unwrap_err();
        assert!(
            e.is_user_error() && e.to_string().contains("another audit"),
            "{e}"
        );
    }
}
