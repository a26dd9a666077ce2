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
use mtr_metrics::agreement::{PairedScores, tau_b_interval};
use mtr_metrics::stats::ClusterBootstrap;
use mtr_metrics::{EvalOptions, EvalQrels, MeasureSet, MissingQueries};
use serde::{Deserialize, Serialize};

use super::hole_pool::{HolePlan, NamedRun, top_k};
use super::verdicts::HoleVerdict;
use crate::error::{AuditError, Result};

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
    pub review: Option<super::review::HoleReview>,
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

/// The measures each run is scored with at depth `k`, and their `trec_eval` column names.
fn measures(k: usize) -> (Vec<String>, Vec<String>) {
    (
        vec![format!("P.{k}"), format!("ndcg_cut.{k}")],
        vec![format!("P_{k}"), format!("ndcg_cut_{k}")],
    )
}

/// Judged@K's `trec_eval`-style spec and column name.
fn judged(k: usize) -> (String, String) {
    (format!("judged.{k}"), format!("judged_{k}"))
}

/// The qrels of the turns some run answers.
pub(crate) fn pooled_turns(qrels: &Qrels, runs: &[NamedRun]) -> Qrels {
    qrels
        .iter()
        .filter(|(q, _)| runs.iter().any(|r| r.run.contains_key(*q)))
        .map(|(q, j)| (q.clone(), j.clone()))
        .collect()
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

/// P@K and nDCG@K of a run per pooled turn (a turn it lacks scores 0, `trec_eval -c`) and
/// their means, and Judged@K (over the turns it answers), as the summary reports them. The
/// qrels given must be those of the pooled turns ([`pooled_turns`]).
pub(crate) struct RunScorer {
    opts: EvalOptions,
    judged_opts: EvalOptions,
    columns: Vec<String>,
    judged: String,
}

impl RunScorer {
    pub(crate) fn new(k: usize) -> Result<Self> {
        let (specs, columns) = measures(k);
        let (judged_spec, judged) = judged(k);
        let parse = |specs: &[String]| MeasureSet::parse(specs).map_err(stats_error);
        Ok(Self {
            opts: EvalOptions {
                measures: parse(&specs)?,
                missing: MissingQueries::Complete,
                ..EvalOptions::default()
            },
            judged_opts: EvalOptions {
                measures: parse(&[judged_spec])?,
                missing: MissingQueries::Intersect,
                ..EvalOptions::default()
            },
            columns,
            judged,
        })
    }

    /// Per measure, the values of `r` on `turns` (in order) under `q`.
    pub(crate) fn per_turn(
        &self,
        q: &EvalQrels,
        r: &NamedRun,
        turns: &[String],
    ) -> Result<Vec<Vec<f64>>> {
        let e = mtr_metrics::evaluate_run(q, &r.run, &self.opts).map_err(stats_error)?;
        Ok(self
            .columns
            .iter()
            .map(|c| {
                let by: BTreeMap<&str, f64> =
                    e.per_query(c).unwrap_or_default().into_iter().collect();
                turns
                    .iter()
                    .map(|t| by.get(t.as_str()).copied().unwrap_or(0.0))
                    .collect()
            })
            .collect())
    }

    /// Measure -> mean of per-turn values ([`Self::per_turn`]); absent without a turn.
    pub(crate) fn means(&self, per_turn: &[Vec<f64>]) -> BTreeMap<String, f64> {
        self.columns
            .iter()
            .zip(per_turn)
            .filter(|(_, v)| !v.is_empty())
            .map(|(c, v)| (c.clone(), v.iter().sum::<f64>() / v.len() as f64))
            .collect()
    }

    /// Judged@K of `r` under `q`.
    pub(crate) fn judged(&self, q: &EvalQrels, r: &NamedRun) -> Result<f64> {
        let e = mtr_metrics::evaluate_run(q, &r.run, &self.judged_opts).map_err(stats_error)?;
        Ok(e.mean(&self.judged).unwrap_or(0.0))
    }

    /// Measure -> mean over the pooled turns of `q`, and Judged@K, of `r`.
    pub(crate) fn score(&self, q: &Qrels, r: &NamedRun) -> Result<(BTreeMap<String, f64>, f64)> {
        let turns: Vec<String> = q.keys().cloned().collect();
        let eq = EvalQrels::from_qrels(q);
        let per = self.per_turn(&eq, r, &turns)?;
        Ok((self.means(&per), self.judged(&eq, r)?))
    }
}

fn stats_error(e: mtr_metrics::MetricsError) -> AuditError {
    AuditError::Stats(e.to_string())
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
