//! The review of a judge folder's holes (`mtr review DIR`): the holes were judged by an audit
//! of the holes benchmark (`DIR/audit/`, alignment only), so its review machinery serves as is:
//! a seeded random sample of the judged holes answered blind (a rating 1-5 of whether the
//! passage answers the turn) and a flagged queue, here the holes the judges found relevant
//! that move the runs most ([`queue`]), answered yes / partly / no with the judges' reasons.
//! From the labels ([`reviewed`]), per run:
//! - the share of its holes that are relevant three ways (the judges' verdicts on all its
//!   judged holes; the reviewers' sample alone; prediction-powered, the reviewers' sample
//!   corrected by the verdicts on every hole, `mtr_metrics::stats::reviewed_mean` as the audit
//!   uses it, clustered by dialogue); only random-sample labels enter it;
//! - P@K and nDCG@K with the holes filled by the judges and with reviewers' labels where they
//!   exist (sample or flagged): a sampled hole is relevant when its reviewers' mean vote for a
//!   rating of at least `verify_rating_at_least` is over a half, a flagged one when a strict
//!   majority said yes or partly.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use mtr_metrics::stats::PpiItem;
use serde::{Deserialize, Serialize};

use super::pool_record::{AUDIT_DIR, Pool};
use super::run_scoring::{RunScorer, pooled_turns};
use super::verdicts::HoleVerdict;
use crate::dimension::Dimension;
use crate::error::Result;
use crate::review_queue::flagged::{FlagKind, FlaggedItem};
use crate::review_queue::label_log::{self, EffectiveLabels};
use crate::review_queue::units::AuditedUnit;
use crate::review_queue::{ItemKey, audit_fingerprint};
use crate::summary::review::ThreeWay;

/// `summary.json` `review` of `mtr judge`'s folder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HoleReview {
    /// K.
    pub depth: usize,
    /// Holes with a usable label on the random sample.
    pub sampled: usize,
    /// Holes with a usable label in the flagged queue.
    pub flagged: usize,
    /// A sampled hole's rating at least this reads as relevant (the judges' own rule).
    pub relevant_at_least: f64,
    /// Confidence level of the intervals.
    pub level: f64,
    /// Per run, in the order given.
    pub runs: Vec<RunReview>,
}

/// One run's reviewed figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunReview {
    /// The run's name.
    pub run: String,
    /// Its judged holes (distinct (turn, passage) in its top K the qrels do not judge).
    pub holes: usize,
    /// The share of them that are relevant: judges only, reviewers only, prediction-powered.
    pub relevant_share: ThreeWay,
    /// Measure (`P_K`, `ndcg_cut_K`) -> its mean with the holes filled by the judges.
    pub filled: BTreeMap<String, f64>,
    /// Measure -> its mean with the holes filled by the judges, reviewers' labels replacing
    /// their verdicts where they exist.
    pub reviewed: BTreeMap<String, f64>,
}

/// What the reviewers said of one hole: relevant (1) or not (0).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Said {
    /// The mean over its sample reviewers of "rated at least the threshold".
    sample: Option<f64>,
    /// The flagged queue's verdict: a strict majority of yes or partly.
    flagged: Option<bool>,
}

impl Said {
    /// The grade reviewers give the hole, flagged answers first (they saw more).
    fn grade(&self) -> Option<i32> {
        match (self.flagged, self.sample) {
            (Some(f), _) => Some(i32::from(f)),
            (None, Some(s)) => Some(i32::from(s > 0.5)),
            (None, None) => None,
        }
    }
}

/// Reads the labels into what they say of each hole.
fn said(labels: &EffectiveLabels, at_least: f64) -> BTreeMap<(String, String), Said> {
    let mut out: BTreeMap<(String, String), Said> = BTreeMap::new();
    for (item, by) in labels {
        let Some(key) = ItemKey::parse(item) else {
            continue;
        };
        let Some(p) = key.passage_id().map(str::to_string) else {
            continue;
        };
        let slot = out.entry((key.turn_id().to_string(), p)).or_default();
        match key {
            ItemKey::Unit {
                dimension: Dimension::Alignment,
                ..
            } => {
                let votes: Vec<f64> = by
                    .values()
                    .filter_map(|l| l.trim().parse::<u8>().ok().filter(|r| (1..=5).contains(r)))
                    .map(|r| f64::from(u8::from(f64::from(r) >= at_least)))
                    .collect();
                if !votes.is_empty() {
                    slot.sample = Some(votes.iter().sum::<f64>() / votes.len() as f64);
                }
            }
            ItemKey::Missing { .. } => {
                let (mut yes, mut all) = (0, 0);
                for l in by.values() {
                    match l.trim().to_ascii_lowercase().as_str() {
                        "yes" | "partly" => (yes, all) = (yes + 1, all + 1),
                        "no" => all += 1,
                        _ => {}
                    }
                }
                if all > 0 {
                    slot.flagged = Some(2 * yes > all);
                }
            }
            _ => {}
        }
    }
    out.retain(|_, s| s.sample.is_some() || s.flagged.is_some());
    out
}

/// Each run's holes: (turn, passage) in its top K the original qrels do not judge.
fn run_holes(pool: &Pool) -> Vec<(String, BTreeSet<(String, String)>)> {
    pool.runs
        .iter()
        .map(|r| {
            let holes = r
                .top
                .iter()
                .flat_map(|(t, docs)| {
                    let judged = pool.qrels.get(t);
                    docs.iter()
                        .filter(move |d| judged.is_none_or(|j| !j.contains_key(*d)))
                        .map(move |d| (t.clone(), d.clone()))
                })
                .collect();
            (r.run.clone(), holes)
        })
        .collect()
}

/// The filled qrels with the reviewers' grades replacing the judges' where they exist.
fn with_reviews(
    filled: &mtr_core::Qrels,
    said: &BTreeMap<(String, String), Said>,
) -> mtr_core::Qrels {
    let mut out = filled.clone();
    for ((t, p), s) in said {
        if let Some(g) = s.grade() {
            out.entry(t.clone()).or_default().insert(p.clone(), g);
        }
    }
    out
}

/// The review of the holes of the judge folder `dir`; `None` while no hole has a usable label.
pub(crate) fn reviewed(
    dir: &Path,
    pool: &Pool,
    verdicts: &[HoleVerdict],
) -> Result<Option<HoleReview>> {
    let audit_dir = dir.join(AUDIT_DIR);
    if !audit_dir.join(crate::summary::SUMMARY).is_file() {
        return Ok(None);
    }
    let summary = crate::review_queue::read_audit_summary(&audit_dir)?;
    let lines = label_log::read_lines(
        &label_log::labels_path(&audit_dir),
        &audit_fingerprint(&summary),
    )?;
    let at_least = summary.settings.verify_rating_at_least;
    let said = said(&label_log::effective(&lines), at_least);
    if said.is_empty() {
        return Ok(None);
    }
    let units = crate::review_queue::units::read(&audit_dir)?;
    let dialogue_of: BTreeMap<&str, &str> = units
        .iter()
        .map(|u| (u.turn_id.as_str(), u.dialogue_id.as_str()))
        .collect();
    let mut dialogues: Vec<&str> = dialogue_of.values().copied().collect();
    dialogues.sort_unstable();
    dialogues.dedup();
    let grade: BTreeMap<(&str, &str), i32> = verdicts
        .iter()
        .filter_map(|v| Some(((v.turn_id.as_str(), v.passage_id.as_str()), v.grade?)))
        .collect();
    let filled = super::verdicts::filled_qrels(&pool.qrels, verdicts);
    let reviewed_qrels = with_reviews(&filled, &said);
    let scorer = RunScorer::new(pool.depth)?;
    let named = pool.named_runs();
    let (fq, rq) = (
        pooled_turns(&filled, &named),
        pooled_turns(&reviewed_qrels, &named),
    );
    let mut runs = Vec::new();
    for ((name, holes), r) in run_holes(pool).into_iter().zip(&named) {
        let items: Vec<PpiItem> = holes
            .iter()
            .filter_map(|(t, p)| {
                let g = grade.get(&(t.as_str(), p.as_str()))?;
                let d = dialogue_of.get(t.as_str()).copied().unwrap_or(t.as_str());
                Some(PpiItem {
                    cluster: dialogues.binary_search(&d).unwrap_or(dialogues.len()),
                    prediction: f64::from(u8::from(*g > 0)),
                    label: said.get(&(t.clone(), p.clone())).and_then(|s| s.sample),
                })
            })
            .collect();
        let relevant_share = crate::review_estimates::estimates::three_ways_of(
            &items,
            (0.0, 1.0),
            summary.settings.confidence,
        );
        runs.push(RunReview {
            run: name,
            holes: items.len(),
            relevant_share,
            filled: scorer.score(&fq, r)?.0,
            reviewed: scorer.score(&rq, r)?.0,
        });
    }
    Ok(Some(HoleReview {
        depth: pool.depth,
        sampled: said.values().filter(|s| s.sample.is_some()).count(),
        flagged: said.values().filter(|s| s.flagged.is_some()).count(),
        relevant_at_least: at_least,
        level: summary.settings.confidence,
        runs,
    }))
}

/// How much a relevant hole moves the runs: the sum of its gains, and the run it moves most.
#[derive(Debug, Default)]
struct Moved<'a> {
    sum: f64,
    best: f64,
    run: &'a str,
    rank: usize,
    runs: usize,
}

impl<'a> Moved<'a> {
    fn add(&mut self, gain: f64, run: &'a str, rank: usize) {
        self.sum += gain;
        self.runs += 1;
        if gain > self.best {
            (self.best, self.run, self.rank) = (gain, run, rank);
        }
    }
}

/// The flagged queue of a judge folder: the holes judged relevant, the ones that move the runs
/// most first. A hole at rank `r` of a run's top K adds `1 / log2(r + 1)` to that run's DCG@K
/// on its turn, so it moves the run's mean by that over the run's turns; a hole is ordered by
/// the sum of that over the runs that hold it (its confidence is that sum over the largest
/// one's, 0..1). Each carries the judges' reasons (`units`: the holes audit's).
pub fn queue(pool: &Pool, verdicts: &[HoleVerdict], units: &[AuditedUnit]) -> Vec<FlaggedItem> {
    let relevant: BTreeSet<(&str, &str)> = verdicts
        .iter()
        .filter(|v| v.grade.is_some_and(|g| g > 0))
        .map(|v| (v.turn_id.as_str(), v.passage_id.as_str()))
        .collect();
    let mut moved: BTreeMap<(&str, &str), Moved<'_>> = BTreeMap::new();
    for r in &pool.runs {
        let turns = r.top.len().max(1) as f64;
        for (t, docs) in &r.top {
            for (i, d) in docs.iter().enumerate() {
                let key = (t.as_str(), d.as_str());
                if relevant.contains(&key) {
                    let gain = 1.0 / ((i + 2) as f64).log2() / turns;
                    moved.entry(key).or_default().add(gain, &r.run, i + 1);
                }
            }
        }
    }
    let top = moved.values().map(|m| m.sum).fold(0.0, f64::max);
    let ensemble: BTreeMap<(&str, &str), f64> = verdicts
        .iter()
        .filter_map(|v| Some(((v.turn_id.as_str(), v.passage_id.as_str()), v.rating?)))
        .collect();
    let mut out: Vec<FlaggedItem> = moved
        .into_iter()
        .map(|((t, p), m)| {
            let key = ItemKey::unit(Dimension::Alignment, t, Some(p));
            let reasons = units
                .binary_search_by(|u| u.key.cmp(&key))
                .ok()
                .map(|i| units[i].reasons.clone())
                .unwrap_or_default();
            FlaggedItem {
                item: ItemKey::Missing {
                    turn_id: t.to_string(),
                    passage_id: p.to_string(),
                }
                .to_string(),
                kind: FlagKind::Hole,
                turn_id: t.to_string(),
                passage_id: p.to_string(),
                gold_passage_id: None,
                confidence: if top > 0.0 { m.sum / top } else { 0.0 },
                why: format!(
                    "judged relevant (ensemble rating {}), unjudged by the qrels; rank {} in `{}` (the run it moves most), in the top {} of {} run(s)",
                    ensemble
                        .get(&(t, p))
                        .map_or("-".to_string(), |r| format!("{r:.2}")),
                    m.rank,
                    m.run,
                    pool.depth,
                    m.runs
                ),
                reasons,
            }
        })
        .collect();
    out.sort_by(|a, b| {
        b.confidence
            .total_cmp(&a.confidence)
            .then_with(|| a.item.cmp(&b.item))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::holes::pool_record::PoolRun;

    fn labels(rows: &[(&str, &[(&str, &str)])]) -> EffectiveLabels {
        rows.iter()
            .map(|(item, by)| {
                (
                    item.to_string(),
                    by.iter()
                        .map(|(w, l)| (w.to_string(), l.to_string()))
                        .collect(),
                )
            })
            .collect()
    }

    #[test]
    fn sample_ratings_and_flagged_answers_read_as_relevant_or_not() {
        let l = labels(&[
            ("alignment|t|a", &[("ann", "5"), ("bob", "2")]),
            ("alignment|t|b", &[("ann", "4")]),
            ("alignment|t|c", &[("ann", "bad")]),
            (
                "missing|t|a",
                &[("ann", "no"), ("bob", "no"), ("cy", "yes")],
            ),
            ("missing|t|d", &[("ann", "partly")]),
            ("quality|t|", &[("ann", "5")]),
        ]);
        let s = said(&l, 4.0);
        let key = |p: &str| ("t".to_string(), p.to_string());
        assert_eq!(s[&key("a")].sample, Some(0.5));
        assert_eq!(s[&key("a")].flagged, Some(false));
        assert_eq!(s[&key("a")].grade(), Some(0), "the flagged answer wins");
        assert_eq!(s[&key("b")].grade(), Some(1));
        assert_eq!(s[&key("d")].grade(), Some(1), "partly is relevant");
        assert!(!s.contains_key(&key("c")), "an unusable label says nothing");
        assert_eq!(s.len(), 3);
        // a tie of the sample's reviewers is not relevant
        assert_eq!(
            Said {
                sample: Some(0.5),
                flagged: None
            }
            .grade(),
            Some(0)
        );
    }

    fn verdict(t: &str, p: &str, grade: Option<i32>) -> HoleVerdict {
        HoleVerdict {
            turn_id: t.into(),
            passage_id: p.into(),
            judges: Vec::new(),
            rating: grade.map(|g| if g > 0 { 4.5 } else { 1.5 }),
            grade,
        }
    }

    #[test]
    fn the_flagged_queue_holds_relevant_holes_the_ones_moving_runs_most_first() {
        let top = |rows: &[(&str, &[&str])]| {
            rows.iter()
                .map(|(t, d)| (t.to_string(), d.iter().map(|x| x.to_string()).collect()))
                .collect()
        };
        let pool = Pool {
            depth: 3,
            qrels: [("t1".to_string(), [("g".to_string(), 1)].into())].into(),
            runs: vec![
                PoolRun {
                    run: "a".into(),
                    top: top(&[("t1", &["g", "low", "high"])]),
                },
                PoolRun {
                    run: "b".into(),
                    top: top(&[("t1", &["high", "g", "low"])]),
                },
            ],
        };
        let verdicts = [
            verdict("t1", "high", Some(1)),
            verdict("t1", "low", Some(1)),
            verdict("t1", "no", Some(0)),
        ];
        let q = queue(&pool, &verdicts, &[]);
        let items: Vec<&str> = q.iter().map(|f| f.item.as_str()).collect();
        assert_eq!(items, ["missing|t1|high", "missing|t1|low"]);
        assert_eq!(q[0].confidence, 1.0);
        assert!(q[1].confidence < 1.0 && q[1].confidence > 0.0);
        assert_eq!(q[0].kind, FlagKind::Hole);
        assert!(q[0].why.contains("rank 1 in `b`"), "{}", q[0].why);
        // the holes of each run
        let holes = run_holes(&pool);
        assert_eq!(holes[0].1.len(), 2);
        assert!(!holes[0].1.contains(&("t1".to_string(), "g".to_string())));
    }
}
