//! What filling the holes changes, per run: Judged@K (mtr-metrics' `judged.K`, the share of
//! its top K that the qrels judge, averaged over the turns it answers that the qrels have)
//! before and after, and its P@K and nDCG@K with the original qrels (holes count as not
//! relevant, as `trec_eval` counts them) and with the filled qrels; and how the order of the
//! runs changes (Kendall's tau-b of the two orders, mtr-metrics' one tau-b).

use std::collections::BTreeMap;

use mtr_core::Qrels;
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
    /// What reviewers' labels on the holes say (`mtr review DIR`); absent without labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<super::review::HoleReview>,
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

/// Scores every run with the original and the filled qrels.
pub(crate) fn summarise(
    qrels: &Qrels,
    filled: &Qrels,
    runs: &[NamedRun],
    plan: &HolePlan,
    verdicts: &[HoleVerdict],
) -> Result<HoleSummary> {
    let k = plan.depth;
    let (_, columns) = measures(k);
    let scorer = RunScorer::new(k)?;
    let (before, after) = (EvalQrels::from_qrels(qrels), EvalQrels::from_qrels(filled));
    let relevant: std::collections::BTreeSet<(&str, &str)> = verdicts
        .iter()
        .filter(|v| v.grade.is_some_and(|g| g > 0))
        .map(|v| (v.turn_id.as_str(), v.passage_id.as_str()))
        .collect();
    let mut out = Vec::new();
    for r in runs {
        let ((original, judged_before), (filled, judged_after)) =
            (scorer.score(&before, r)?, scorer.score(&after, r)?);
        out.push(RunEffect {
            run: r.name.clone(),
            holes: plan.per_run.get(&r.name).copied().unwrap_or(0),
            relevant_holes: relevant_in_top_k(r, &relevant, k),
            judged_before,
            judged_after,
            original,
            filled,
        });
    }
    let kendall_tau = columns
        .iter()
        .filter_map(|c| {
            let of = |f: fn(&RunEffect) -> &BTreeMap<String, f64>| -> Vec<f64> {
                out.iter()
                    .map(|r| f(r).get(c).copied().unwrap_or(f64::NAN))
                    .collect()
            };
            let tau = mtr_metrics::agreement::tau_b(&of(|r| &r.original), &of(|r| &r.filled))?;
            Some((c.clone(), tau))
        })
        .collect();
    Ok(HoleSummary {
        review: None,
        depth: k,
        holes: plan.holes.len(),
        judged: verdicts.iter().filter(|v| v.grade.is_some()).count(),
        relevant: relevant.len(),
        complete: verdicts.iter().all(|v| v.grade.is_some()),
        runs: out,
        kendall_tau,
    })
}

/// P@K and nDCG@K (means over the turns a run answers that the qrels have, holes counted as
/// not relevant) and Judged@K of a run, as the summary reports them.
pub(crate) struct RunScorer {
    opts: EvalOptions,
    columns: Vec<String>,
    judged: String,
}

impl RunScorer {
    pub(crate) fn new(k: usize) -> Result<Self> {
        let (mut specs, columns) = measures(k);
        let (judged_spec, judged) = judged(k);
        specs.push(judged_spec);
        Ok(Self {
            opts: EvalOptions {
                measures: MeasureSet::parse(&specs).map_err(stats_error)?,
                missing: MissingQueries::Intersect,
                ..EvalOptions::default()
            },
            columns,
            judged,
        })
    }

    /// Measure -> mean, and Judged@K, of `r` under `q`.
    pub(crate) fn score(
        &self,
        q: &EvalQrels,
        r: &NamedRun,
    ) -> Result<(BTreeMap<String, f64>, f64)> {
        let e = mtr_metrics::evaluate_run(q, &r.run, &self.opts).map_err(stats_error)?;
        let means = self
            .columns
            .iter()
            .filter_map(|c| Some((c.clone(), e.mean(c)?)))
            .collect();
        Ok((means, e.mean(&self.judged).unwrap_or(0.0)))
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
