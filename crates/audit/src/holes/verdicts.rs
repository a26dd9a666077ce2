//! The holes judged: the copy of the benchmark whose golds are the holes (what the audit
//! judges), the audit's alignment judgements read back into one verdict a hole, and the
//! filled qrels. A hole is relevant when a strict majority of the judges that rated it rate
//! it at least `verify_rating_at_least` of 5, the audit's rule for a probable missing gold;
//! a relevant hole gets grade 1, the others grade 0 (judged, not relevant).

use std::collections::BTreeMap;

use mtr_core::{Benchmark, Gold, Qrels};
use serde::{Deserialize, Serialize};

use super::hole_pool::{Hole, HolePlan};
use crate::dimension::Dimension;
use crate::judges::record::Judgement;

/// One judge's rating of a hole and its reason.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeGrade {
    /// The judge (endpoint) name.
    pub judge: String,
    /// Its alignment rating, 1-5 (the mean over self-consistency samples); `None` when every
    /// call failed.
    pub rating: Option<f64>,
    /// Its justification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// What the ensemble says of one hole: a line of `judgements.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HoleVerdict {
    /// The turn.
    pub turn_id: String,
    /// The passage.
    pub passage_id: String,
    /// Each judge's rating and reason, by judge name.
    pub judges: Vec<JudgeGrade>,
    /// The ensemble's rating: the mean over the judges that rated.
    pub rating: Option<f64>,
    /// The grade it fills the hole with: 1 relevant, 0 not; `None` when no judge rated it
    /// (not judged yet, or every call failed): the hole stays a hole.
    pub grade: Option<i32>,
}

/// The benchmark whose golds are the holes (grade 1 each, so the audit's alignment dimension
/// judges every one); turns without holes have no gold.
pub(crate) fn holes_benchmark(bench: &Benchmark, plan: &HolePlan) -> Benchmark {
    let mut by_turn: BTreeMap<&str, Vec<&Hole>> = BTreeMap::new();
    for h in &plan.holes {
        by_turn.entry(h.turn_id.as_str()).or_default().push(h);
    }
    let mut out = bench.clone();
    for d in &mut out.dialogues {
        for t in &mut d.turns {
            t.gold = by_turn
                .get(t.id.as_str())
                .into_iter()
                .flatten()
                .map(|h| Gold {
                    passage_id: h.passage_id.clone(),
                    grade: 1,
                })
                .collect();
        }
    }
    out
}

/// One verdict per hole of `plan`, from the audit's alignment judgements of the holes
/// benchmark; `at_least` is the rating a judge must give for its vote to say relevant.
pub(crate) fn verdicts(
    plan: &HolePlan,
    judgements: &[Judgement],
    at_least: f64,
) -> Vec<HoleVerdict> {
    // (turn, passage) -> judge -> (ratings, first reason)
    type ByJudge<'a> = BTreeMap<&'a str, (Vec<f64>, Option<&'a str>)>;
    let mut by_hole: BTreeMap<(&str, &str), ByJudge<'_>> = BTreeMap::new();
    for j in judgements
        .iter()
        .filter(|j| j.dimension == Dimension::Alignment && j.ok())
    {
        let Some(p) = j.passage_id.as_deref() else {
            continue;
        };
        let slot = by_hole
            .entry((j.turn_id.as_str(), p))
            .or_default()
            .entry(j.judge.as_str())
            .or_default();
        if let Some(s) = j.score {
            slot.0.push(s);
        }
        slot.1 = slot.1.or(j.justification.as_deref());
    }
    plan.holes
        .iter()
        .map(|h| {
            let judges: Vec<JudgeGrade> = by_hole
                .get(&(h.turn_id.as_str(), h.passage_id.as_str()))
                .into_iter()
                .flatten()
                .map(|(judge, (ratings, reason))| JudgeGrade {
                    judge: judge.to_string(),
                    rating: mtr_metrics::stats::mean(ratings),
                    reason: reason.map(str::to_string),
                })
                .collect();
            verdict(h, judges, at_least)
        })
        .collect()
}

/// The ensemble's verdict on a hole from its judges' ratings.
fn verdict(h: &Hole, judges: Vec<JudgeGrade>, at_least: f64) -> HoleVerdict {
    let rated: Vec<f64> = judges.iter().filter_map(|j| j.rating).collect();
    let grade = (!rated.is_empty()).then(|| {
        let votes = rated.iter().filter(|r| **r >= at_least).count();
        i32::from(2 * votes > rated.len())
    });
    HoleVerdict {
        turn_id: h.turn_id.clone(),
        passage_id: h.passage_id.clone(),
        judges,
        rating: mtr_metrics::stats::mean(&rated),
        grade,
    }
}

/// The original qrels plus every judged hole: relevant holes with their grade, the others
/// with grade 0, so that they count as judged. Holes no judge rated are left out.
pub fn filled_qrels(qrels: &Qrels, verdicts: &[HoleVerdict]) -> Qrels {
    let mut out = qrels.clone();
    for v in verdicts {
        if let Some(g) = v.grade {
            out.entry(v.turn_id.clone())
                .or_default()
                .entry(v.passage_id.clone())
                .or_insert(g);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grades(rs: &[Option<f64>]) -> Vec<JudgeGrade> {
        rs.iter()
            .enumerate()
            .map(|(i, r)| JudgeGrade {
                judge: format!("j{i}"),
                rating: *r,
                reason: None,
            })
            .collect()
    }

    fn hole() -> Hole {
        Hole {
            turn_id: "t".into(),
            passage_id: "p".into(),
        }
    }

    #[test]
    fn a_strict_majority_of_the_judges_that_rated_makes_a_hole_relevant() {
        assert_eq!(
            verdict(&hole(), grades(&[Some(5.0), Some(4.0), Some(1.0)]), 4.0).grade,
            Some(1)
        );
        assert_eq!(
            verdict(&hole(), grades(&[Some(5.0), Some(1.0)]), 4.0).grade,
            Some(0)
        );
        assert_eq!(
            verdict(&hole(), grades(&[Some(4.0), None]), 4.0).grade,
            Some(1)
        );
        assert_eq!(verdict(&hole(), grades(&[None, None]), 4.0).grade, None);
        assert_eq!(
            verdict(&hole(), grades(&[Some(2.0), Some(4.0)]), 4.0).rating,
            Some(3.0)
        );
    }

    #[test]
    fn filled_qrels_keep_the_original_and_add_judged_holes_only() {
        let mut q = Qrels::new();
        q.entry("t".into()).or_default().insert("g".into(), 2);
        let v = |p: &str, grade| HoleVerdict {
            turn_id: "t".into(),
            passage_id: p.into(),
            judges: Vec::new(),
            rating: None,
            grade,
        };
        let f = filled_qrels(
            &q,
            &[
                v("a", Some(1)),
                v("b", Some(0)),
                v("c", None),
                v("g", Some(0)),
            ],
        );
        let t = &f["t"];
        assert_eq!((t["g"], t["a"], t["b"]), (2, 1, 0));
        assert!(!t.contains_key("c"));
    }
}
