//! How `mtr judge` scores a run on the pooled turns: P@K and nDCG@K per turn (a turn the run
//! lacks scores 0, as `trec_eval -c` counts it) and their means, and Judged@K over the turns it
//! answers. The summary ([`super::effect`]) and a review's rescoring ([`super::review`]) use
//! the same scorer, so a reviewed figure and a judged one are the same measure.

use std::collections::BTreeMap;

use mtr_core::Qrels;
use mtr_metrics::{EvalOptions, EvalQrels, MeasureSet, MissingQueries};

use super::hole_pool::NamedRun;
use crate::error::{AuditError, Result};

/// The measures each run is scored with at depth `k`, and their `trec_eval` column names.
pub(crate) fn measures(k: usize) -> (Vec<String>, Vec<String>) {
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
