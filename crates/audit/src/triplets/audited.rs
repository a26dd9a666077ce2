//! What an audit says a turn's negatives must not be, read as plain data from the audit
//! folder's `suggested_qrels.tsv` (the file people review, in the columns of
//! [`crate::output::SUGGESTIONS_HEADER`]): every passage the audit suggests as a missing gold
//! (probable, or never verified) and every candidate a judge rated relevant
//! (`verify_rating_at_least`, read from `summary.json`, else the audit's default) even when the
//! majority did not. A false negative teaches a retriever to push a right answer away, so a
//! doubtful candidate is dropped rather than kept.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use mtr_core::InputError;

use crate::error::Result;
use crate::output::{SUGGESTED_QRELS, SUMMARY};

/// The audit's rating at or above which a passage counts as relevant when `summary.json` does
/// not say (the audit's own default).
const DEFAULT_RELEVANT_RATING: f64 = 4.0;

/// Passages an audit rules out as negatives, per turn.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AuditExclusions {
    by_turn: HashMap<String, HashSet<String>>,
}

impl AuditExclusions {
    /// Reads an audit folder (or its `suggested_qrels.tsv`).
    pub fn read(path: &Path) -> Result<Self> {
        let (tsv, summary) = if path.is_dir() {
            (path.join(SUGGESTED_QRELS), path.join(SUMMARY))
        } else {
            let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
            (path.to_path_buf(), dir.join(SUMMARY))
        };
        if !tsv.is_file() {
            return Err(mtr_core::Error::from(
                InputError::new(&tsv, "no suggested_qrels.tsv: not an audit folder")
                    .field("--audit")
                    .hint("give the folder `mtr audit BENCH -o DIR` wrote"),
            )
            .into());
        }
        let at_least = relevant_rating(&summary)?;
        let text = mtr_core::jsonl::read_text(&tsv)?;
        let mut by_turn: HashMap<String, HashSet<String>> = HashMap::new();
        for (i, line) in text.lines().enumerate().skip(1) {
            if line.trim().is_empty() {
                continue;
            }
            let row = Suggested::parse(&tsv, i as u64 + 1, line)?;
            if row.excluded(at_least) {
                by_turn.entry(row.turn).or_default().insert(row.passage);
            }
        }
        Ok(Self { by_turn })
    }

    /// Rules `passage` out for `turn`.
    pub fn insert(&mut self, turn: &str, passage: &str) {
        self.by_turn
            .entry(turn.to_string())
            .or_default()
            .insert(passage.to_string());
    }

    /// Whether the audit rules `passage` out as a negative of `turn`.
    pub fn excludes(&self, turn: &str, passage: &str) -> bool {
        self.by_turn.get(turn).is_some_and(|s| s.contains(passage))
    }

    /// How many (turn, passage) pairs are ruled out.
    pub fn len(&self) -> usize {
        self.by_turn.values().map(HashSet::len).sum()
    }

    /// No (turn, passage) pair is ruled out.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// `settings.verify_rating_at_least` of the audit's summary, read as plain JSON.
fn relevant_rating(summary: &Path) -> Result<f64> {
    if !summary.is_file() {
        return Ok(DEFAULT_RELEVANT_RATING);
    }
    let text = mtr_core::jsonl::read_text(summary)?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        mtr_core::Error::from(
            InputError::new(summary, format!("not JSON: {e}")).line(e.line() as u64),
        )
    })?;
    Ok(v.pointer("/settings/verify_rating_at_least")
        .and_then(serde_json::Value::as_f64)
        .unwrap_or(DEFAULT_RELEVANT_RATING))
}

/// One line of `suggested_qrels.tsv`.
struct Suggested {
    turn: String,
    passage: String,
    verdict: String,
    ratings: Vec<f64>,
}

impl Suggested {
    fn parse(file: &PathBuf, line: u64, text: &str) -> Result<Self> {
        let cols: Vec<&str> = text.split('\t').collect();
        let bad = |field: &str, message: &str| {
            mtr_core::Error::from(InputError::new(file, message).line(line).field(field))
        };
        if cols.len() < 8 {
            return Err(bad(
                "query-id",
                &format!("{} columns, the audit writes 10", cols.len()),
            )
            .into());
        }
        let mut ratings = Vec::new();
        for pair in cols[7].split(',').filter(|p| *p != "-" && !p.is_empty()) {
            let value = pair.rsplit_once('=').map_or(pair, |(_, v)| v);
            ratings.push(value.parse().map_err(|_| {
                bad(
                    "alignment-ratings",
                    &format!("`{pair}` is not judge=rating"),
                )
            })?);
        }
        Ok(Self {
            turn: cols[0].to_string(),
            passage: cols[1].to_string(),
            verdict: cols[6].to_string(),
            ratings,
        })
    }

    /// Suggested and not cleared, or rated relevant by any judge.
    fn excluded(&self, at_least: f64) -> bool {
        self.verdict != "not_confirmed" || self.ratings.iter().any(|r| *r >= at_least)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggested_and_rated_relevant_passages_are_ruled_out() {
        let tmp = tempfile::tempdir().unwrap();
        let body = format!(
            "{}{}{}{}",
            crate::output::SUGGESTIONS_HEADER,
            "t1\tprobable\t1\t5\t6\tg\tprobable_missing_gold\ta=5,b=4.5\tfalse\t0.1000\n",
            "t1\tcleared\t0\t4\t6\tg\tnot_confirmed\ta=2,b=1\tfalse\t0.1000\n",
            "t2\tone-judge\t0\t4\t6\tg\tnot_confirmed\ta=4,b=1\tfalse\t0.1000\nt2\tunchecked\t0\t4\t6\tg\tunverified\t-\tfalse\t0.0000\n",
        );
        std::fs::write(tmp.path().join(SUGGESTED_QRELS), body).unwrap();
        let x = AuditExclusions::read(tmp.path()).unwrap();
        assert!(x.excludes("t1", "probable"));
        assert!(!x.excludes("t1", "cleared"));
        assert!(x.excludes("t2", "one-judge"));
        assert!(x.excludes("t2", "unchecked"));
        assert!(!x.excludes("t1", "unchecked"), "per turn");
        assert_eq!(x.len(), 3);
        // a stricter threshold in the summary clears the one judge's 4
        std::fs::write(
            tmp.path().join(SUMMARY),
            r#"{"settings": {"verify_rating_at_least": 4.5}}"#,
        )
        .unwrap();
        assert!(
            !AuditExclusions::read(tmp.path())
                .unwrap()
                .excludes("t2", "one-judge")
        );
        // not an audit folder
        let e = AuditExclusions::read(&tmp.path().join("nope")).unwrap_err();
        assert!(e.is_user_error(), "{e}");
    }
}
