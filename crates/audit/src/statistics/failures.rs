//! Failed judges: an audit whose judge failed every judgement (bad key, endpoint down), or more
//! than `[audit] max_failed_share` of them, is not complete, whatever else it wrote. This module
//! finds such judges from the judgements (when the summary is built) and from a written
//! summary (when the binary decides its exit code), with the judge's first error.

use std::collections::BTreeMap;

use crate::judges::record::Judgement;
use crate::summary::Summary;

/// A judge whose failed judgements pass the threshold.
#[derive(Debug, Clone, PartialEq)]
pub struct FailedJudge {
    /// The judge's name.
    pub judge: String,
    /// Its judgements that failed.
    pub failed: usize,
    /// Its judgements made.
    pub total: usize,
    /// The first failure's message (in `items.jsonl` order), when known.
    pub first_error: Option<String>,
}

impl FailedJudge {
    /// One line naming the judge, the counts and the first error.
    pub fn message(&self) -> String {
        let what = if self.failed == self.total {
            format!("failed every judgement ({} of {})", self.failed, self.total)
        } else {
            format!(
                "failed {} of {} judgements ({:.0}%)",
                self.failed,
                self.total,
                100.0 * self.failed as f64 / self.total.max(1) as f64
            )
        };
        match &self.first_error {
            Some(e) => format!("judge `{}` {what}; first error: {e}", self.judge),
            None => format!("judge `{}` {what}", self.judge),
        }
    }
}

/// True when `failed` of `total` is too many: every one, or a share above `max_share`.
pub fn too_many(failed: usize, total: usize, max_share: f64) -> bool {
    total > 0 && failed > 0 && (failed == total || failed as f64 / total as f64 > max_share)
}

/// Judges of `judgements` past the threshold, in name order.
pub(crate) fn from_judgements(judgements: &[Judgement], max_share: f64) -> Vec<FailedJudge> {
    let mut per: BTreeMap<&str, FailedJudge> = BTreeMap::new();
    for j in judgements {
        let e = per.entry(j.judge.as_str()).or_insert_with(|| FailedJudge {
            judge: j.judge.clone(),
            failed: 0,
            total: 0,
            first_error: None,
        });
        e.total += 1;
        if !j.ok() {
            e.failed += 1;
            if e.first_error.is_none() {
                e.first_error = j.parse_detail.clone();
            }
        }
    }
    per.into_values()
        .filter(|f| too_many(f.failed, f.total, max_share))
        .collect()
}

/// Judges of a written summary past its threshold (`settings.max_failed_share`); the first
/// errors are read from `items` (the folder's `items.jsonl`) when given.
pub fn from_summary(s: &Summary, items: Option<&[Judgement]>) -> Vec<FailedJudge> {
    let mut out = Vec::new();
    for (judge, ledger) in &s.cost.per_judge {
        let failed: usize = s.failures.get(judge).map(|d| d.values().sum()).unwrap_or(0);
        if too_many(failed, ledger.calls, s.settings.max_failed_share) {
            let first_error = items.and_then(|js| {
                js.iter()
                    .find(|j| &j.judge == judge && !j.ok())
                    .and_then(|j| j.parse_detail.clone())
            });
            out.push(FailedJudge {
                judge: judge.clone(),
                failed,
                total: ledger.calls,
                first_error,
            });
        }
    }
    out
}

/// The judgements of an `items.jsonl`, in file order (unreadable lines skipped; none when the
/// file is missing).
pub fn read_items(path: &std::path::Path) -> Vec<Judgement> {
    std::fs::read_to_string(path)
        .map(|t| {
            t.lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds() {
        assert!(
            too_many(218, 218, 1.0),
            "every call failed, whatever the share"
        );
        assert!(too_many(3, 10, 0.2));
        assert!(!too_many(2, 10, 0.2));
        assert!(!too_many(0, 10, 0.0));
        assert!(!too_many(0, 0, 0.2));
        let f = FailedJudge {
            judge: "a".into(),
            failed: 4,
            total: 4,
            first_error: Some("401 bad key".into()),
        };
        assert_eq!(
            f.message(),
            "judge `a` failed every judgement (4 of 4); first error: 401 bad key"
        );
    }
}
