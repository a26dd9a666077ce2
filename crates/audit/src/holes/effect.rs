//! What filling the holes changes, per run: Judged@K (mtr-metrics' `judged.K`, the share of
//! its top K that the qrels judge, averaged over the turns it answers that the qrels have)
//! before and after, and its P@K and nDCG@K with the original qrels (holes count as not
//! relevant, as `trec_eval` counts them) and with the filled qrels, averaged over the pooled
//! turns (the turns of the qrels some run answers; a turn a run lacks scores 0, as
//! `trec_eval -c` and `mtr bench` count it, so every run is averaged over the same turns); and
//! how the order of the runs changes: Kendall's tau-b of the two orders with a seeded bootstrap
//! interval over the pooled turns (`mtr_metrics::agreement::tau_b_interval`).

use std::collections::BTreeMap;

use mtr_core::Qrels;
use mtr_metrics::EvalQrels;
use mtr_metrics::agreement::{PairedScores, tau_b_interval};
use mtr_metrics::stats::ClusterBootstrap;
use serde::{Deserialize, Serialize};

use super::hole_pool::{HolePlan, NamedRun, top_k};
use super::run_scoring::{RunScorer, measures, pooled_turns};
use super::verdicts::HoleVerdict;
use crate::error::Result;

/// One run before and after its holes are filled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunEffect {
    /// The run's name.
    pub run: String,
    /// Its holes in the top K (a hole two runs share counts in each).
    pub holes: usize,
    /// Of those, judged relevant.
    pub relevant_holes: usize,
    /// Judged@K with the original qrels.
    pub judged_before: f64,
    /// Judged@K with the filled qrels.
    pub judged_after: f64,
    /// Measure (`P_K`, `ndcg_cut_K`) -> its mean with the original qrels.
    pub original: BTreeMap<String, f64>,
    /// Measure -> its mean with the filled qrels.
    pub filled: BTreeMap<String, f64>,
}

/// `summary.json` of `mtr judge`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HoleSummary {
    /// K.
    pub depth: usize,
    /// Distinct holes over all runs.
    pub holes: usize,
    /// Holes some judge rated.
    pub judged: usize,
    /// Holes judged relevant.
    pub relevant: usize,
    /// The judging stopped before every hole was judged (a budget, an error): a rerun
    /// judges the rest.
    pub complete: bool,
    /// Per run, in the order given.
    pub runs: Vec<RunEffect>,
    /// Measure -> Kendall's tau-b between the runs' order under the original and under the
    /// filled qrels; absent with fewer than two runs or a constant measure.
    pub kendall_tau: BTreeMap<String, f64>,
    /// Measure -> the bootstrap interval of that tau-b (resampling the pooled turns).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub kendall_tau_interval: BTreeMap<String, TauInterval>,
    /// What reviewers' labels on the holes say (`mtr review DIR`); absent without labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<super::hole_review::HoleReview>,
}

/// A percentile bootstrap interval of a tau-b.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TauInterval {
    /// Lower bound.
    pub lower: f64,
    /// Upper bound.
    pub upper: f64,
    /// Confidence level.
    pub level: f64,
    /// Resamples of the pooled turns.
    pub resamples: usize,
    /// Their seed.
    pub seed: u64,
}

/// How the tau intervals resample (the audit's `resamples`, `confidence` and `seed`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct TauBootstrap {
    pub(crate) resamples: usize,
    pub(crate) level: f64,
    pub(crate) seed: u64,
}

/// Scores every run with the original and the filled qrels on the pooled turns.
pub(crate) fn summarise(
    qrels: &Qrels,
    filled: &Qrels,
    runs: &[NamedRun],
    plan: &HolePlan,
    verdicts: &[HoleVerdict],
    tau: TauBootstrap,
) -> Result<HoleSummary> {
    let k = plan.depth;
    let (_, columns) = measures(k);
    let scorer = RunScorer::new(k)?;
    let (qrels, filled) = (pooled_turns(qrels, runs), pooled_turns(filled, runs));
    let turns: Vec<String> = qrels.keys().cloned().collect();
    let (before, after) = (
        EvalQrels::from_qrels(&qrels),
        EvalQrels::from_qrels(&filled),
    );
    let relevant: std::collections::BTreeSet<(&str, &str)> = verdicts
        .iter()
        .filter(|v| v.grade.is_some_and(|g| g > 0))
        .map(|v| (v.turn_id.as_str(), v.passage_id.as_str()))
        .collect();
    let mut out = Vec::new();
    // [run][measure][turn], before and after
    let (mut per_before, mut per_after) = (Vec::new(), Vec::new());
    for r in runs {
        let (b, a) = (
            scorer.per_turn(&before, r, &turns)?,
            scorer.per_turn(&after, r, &turns)?,
        );
        out.push(RunEffect {
            run: r.name.clone(),
            holes: plan.per_run.get(&r.name).copied().unwrap_or(0),
            relevant_holes: relevant_in_top_k(r, &relevant, k),
            judged_before: scorer.judged(&before, r)?,
            judged_after: scorer.judged(&after, r)?,
            original: scorer.means(&b),
            filled: scorer.means(&a),
        });
        per_before.push(b);
        per_after.push(a);
    }
    let boot = ClusterBootstrap::new(turns.len(), tau.resamples, tau.level, tau.seed);
    let clusters: Vec<usize> = (0..turns.len()).collect();
    let mut kendall_tau = BTreeMap::new();
    let mut kendall_tau_interval = BTreeMap::new();
    for (m, c) in columns.iter().enumerate() {
        let of =
            |v: &[Vec<Vec<f64>>]| -> Vec<Vec<f64>> { v.iter().map(|x| x[m].clone()).collect() };
        let (b, a) = (of(&per_before), of(&per_after));
        let (b, a): (Vec<&[f64]>, Vec<&[f64]>) = (
            b.iter().map(Vec::as_slice).collect(),
            a.iter().map(Vec::as_slice).collect(),
        );
        let p = PairedScores {
            first: &b,
            second: &a,
            clusters: &clusters,
        };
        if let Some(ci) = tau_b_interval(&p, &boot) {
            kendall_tau.insert(c.clone(), ci.estimate);
            kendall_tau_interval.insert(
                c.clone(),
                TauInterval {
                    lower: ci.lower,
                    upper: ci.upper,
                    level: ci.level,
                    resamples: ci.resamples,
                    seed: ci.seed,
                },
            );
        }
    }
    Ok(HoleSummary {
        review: None,
        depth: k,
        holes: plan.holes.len(),
        judged: verdicts.iter().filter(|v| v.grade.is_some()).count(),
        relevant: relevant.len(),
        complete: verdicts.iter().all(|v| v.grade.is_some()),
        runs: out,
        kendall_tau,
        kendall_tau_interval,
    })
}

/// The run's relevant holes in its top K.
fn relevant_in_top_k(
    r: &NamedRun,
    relevant: &std::collections::BTreeSet<(&str, &str)>,
    k: usize,
) -> usize {
    r.run
        .iter()
        .map(|(q, docs)| {
            top_k(docs, k)
                .into_iter()
                .filter(|d| relevant.contains(&(q.as_str(), *d)))
                .count()
        })
        .sum()
}
