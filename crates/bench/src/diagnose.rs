//! Diagnostics from practice: what a combination of measures says about a retriever, and when
//! a benchmark is too easy to separate systems.
//!
//! The metric-combination table reads four numbers at one depth k (default 10):
//! - high HitRate with low MRR: the gold is found but ranked low (a ranking problem; a
//!   reranker helps);
//! - high MRR with low Recall: one gold is found early, the others are missed (incomplete
//!   recall; widen the candidate set or fix the query);
//! - high Recall with low nDCG: the golds are retrieved but ordered badly, the best graded
//!   ones not first (a graded-order problem).
//!
//! The thresholds are fixed and recorded in the messages so a reader can disagree with them.

use crate::result::{Diagnosis, Finding};

/// "High" for HitRate, MRR and Recall.
pub(crate) const HIGH: f64 = 0.5;
/// MRR / HitRate below this: when a gold is found, it is on average below rank 2.
pub(crate) const RANKING_RATIO: f64 = 0.5;
/// Recall below this with high MRR: most golds are missed.
pub(crate) const LOW_RECALL: f64 = 0.5;
/// nDCG / Recall below this with high Recall: good recall spent on a poor order.
pub(crate) const GRADED_RATIO: f64 = 0.6;
/// Too easy: HitRate@5 above this ...
pub(crate) const TOO_EASY_HIT5: f64 = 0.95;
/// ... or MRR above this.
pub(crate) const TOO_EASY_MRR: f64 = 0.9;

/// Applies the metric-combination table to one system's means at depth `k`.
pub(crate) fn diagnose(k: usize, hit: f64, mrr: f64, recall: f64, ndcg: f64) -> Diagnosis {
    let mut findings = Vec::new();
    if hit >= HIGH && mrr < RANKING_RATIO * hit {
        findings.push(Finding {
            pattern: "ranking_problem".into(),
            message: format!(
                "Hit@{k} {hit:.3} but MRR@{k} {mrr:.3}: the gold is usually found but ranked low (MRR/Hit {:.2} < {RANKING_RATIO}); a reranker should help",
                mrr / hit
            ),
        });
    }
    if mrr >= HIGH && recall < LOW_RECALL {
        findings.push(Finding {
            pattern: "incomplete_recall".into(),
            message: format!(
                "MRR@{k} {mrr:.3} but Recall@{k} {recall:.3} (< {LOW_RECALL}): one gold comes early, the others are missed; widen the candidate set or the query"
            ),
        });
    }
    if recall >= HIGH && ndcg < GRADED_RATIO * recall {
        findings.push(Finding {
            pattern: "graded_order_problem".into(),
            message: format!(
                "Recall@{k} {recall:.3} but nDCG@{k} {ndcg:.3} (nDCG/Recall {:.2} < {GRADED_RATIO}): the golds are retrieved but ordered badly",
                ndcg / recall
            ),
        });
    }
    Diagnosis {
        k,
        hit,
        mrr,
        recall,
        ndcg,
        findings,
    }
}

/// A warning when a system's scores leave no room to separate better systems.
pub(crate) fn too_easy(system: &str, hit5: f64, mrr: f64, mrr_k: usize) -> Option<String> {
    if hit5 > TOO_EASY_HIT5 || mrr > TOO_EASY_MRR {
        Some(format!(
            "benchmark may be too easy: {system} reaches Hit@5 {hit5:.3} (limit {TOO_EASY_HIT5}) / MRR@{mrr_k} {mrr:.3} (limit {TOO_EASY_MRR}); it cannot separate systems at the top"
        ))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patterns(d: &Diagnosis) -> Vec<&str> {
        d.findings.iter().map(|f| f.pattern.as_str()).collect()
    }

    #[test]
    fn each_pattern_fires_on_its_combination_only() {
        assert_eq!(
            patterns(&diagnose(10, 0.9, 0.3, 0.7, 0.5)),
            ["ranking_problem"]
        );
        assert_eq!(
            patterns(&diagnose(10, 0.8, 0.7, 0.3, 0.4)),
            ["incomplete_recall"]
        );
        assert_eq!(
            patterns(&diagnose(10, 0.9, 0.6, 0.8, 0.4)),
            ["graded_order_problem"]
        );
        assert!(patterns(&diagnose(10, 0.9, 0.8, 0.8, 0.75)).is_empty());
        assert!(patterns(&diagnose(10, 0.2, 0.05, 0.1, 0.05)).is_empty());
        assert!(too_easy("s", 0.96, 0.5, 10).is_some());
        assert!(too_easy("s", 0.9, 0.91, 10).is_some());
        assert!(too_easy("s", 0.9, 0.8, 10).is_none());
    }
}
