//! Holes in a bench (`mtr bench --fill-holes K`): how much of each number rests on passages
//! the qrels never judged. The binary judges the holes (every passage in some system's top K
//! that the qrels do not judge for its turn) with `mtr judge`'s machinery and hands bench the
//! filled qrels (the original plus every judged hole, relevant or not) as plain data; here every
//! system gets, on the bench's own scored turns and with the same cluster bootstrap:
//! - Judged@K (mtr-metrics' `judged.K`, ir_measures' `Judged@k`: the share of its top K the
//!   qrels judge; a turn the system does not answer counts 0, as every bench measure does)
//!   under the original and under the filled qrels;
//! - every reported measure under the filled qrels (the turns stay the scored turns of the
//!   original qrels, so the two numbers of a measure are paired);
//!
//! and the result gets Kendall's tau-b of the systems' order by the main measure, original
//! against filled, with its bootstrap interval (`mtr_metrics::agreement::tau_b_interval`,
//! resampling dialogues like every other bench interval).

use std::collections::BTreeMap;

use mtr_core::Qrels;
use mtr_metrics::agreement::{PairedScores, tau_b_interval};
use mtr_metrics::{EvalOptions, EvalQrels, MeasureSet, MissingQueries, evaluate_run};
use serde::{Deserialize, Serialize};

use crate::error::{BenchError, Result};
use crate::job::{Outcome, Settings, SystemInput};
use crate::query_set::QuerySet;
use crate::score::Scorer;
use crate::stats::bootstrap::{ClusterBootstrap, Estimate, estimates};

/// What the judges filled, as the binary hands it over.
#[derive(Debug, Clone, Copy)]
pub struct FilledHoles<'a> {
    /// K: the depth pooled.
    pub depth: usize,
    /// The original qrels plus every judged hole.
    pub filled: &'a Qrels,
    /// The judge folder, relative to the results folder (`holes`).
    pub folder: &'a str,
    /// Distinct holes over all systems.
    pub holes: usize,
    /// Holes some judge rated.
    pub judged: usize,
    /// Holes judged relevant.
    pub relevant: usize,
}

/// `bench.json` `holes`: what was filled and how the order changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HolesInfo {
    /// K.
    pub depth: usize,
    /// The judge folder (`mtr judge`'s layout), relative to the results folder.
    pub folder: String,
    /// Distinct holes over all systems.
    pub holes: usize,
    /// Holes some judge rated (the others stay unjudged in the filled qrels).
    pub judged: usize,
    /// Holes judged relevant.
    pub relevant: usize,
    /// Kendall's tau-b of the systems' order by the main measure under the original against
    /// the filled qrels, with its cluster-bootstrap interval; absent with fewer than two
    /// systems or a constant measure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kendall_tau: Option<Estimate>,
}

/// A system's `holes` in `bench.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SystemHoles {
    /// K.
    pub depth: usize,
    /// Judged@K under the original qrels.
    pub judged: Estimate,
    /// Judged@K under the filled qrels.
    pub judged_filled: Estimate,
    /// Measure id -> its estimate under the filled qrels (the measures the system reports,
    /// none deeper than its run).
    pub filled: BTreeMap<String, Estimate>,
}

/// Scores every system of `outcome` under the filled qrels and records Judged@K before and
/// after; `systems` are the inputs the outcome was computed from, in its order.
pub fn apply(
    outcome: &mut Outcome,
    systems: &[SystemInput],
    s: &Settings,
    fill: &FilledHoles<'_>,
) -> Result<()> {
    let set = &outcome.set;
    let filled_set = with_qrels(set, fill.filled);
    let clusters = set.clusters();
    let boot = ClusterBootstrap::new(set.dialogues.len(), s.resamples, s.level, s.seed);
    let mut measures = s.measures.clone();
    if !measures.contains(&s.main) {
        measures.push(s.main);
    }
    let main_i = measures.iter().position(|m| *m == s.main).unwrap_or(0);
    let scorer = Scorer::new(&filled_set, &measures)?;
    let main_scorer = Scorer::new(set, &[s.main])?;
    let judged_spec = Judged::new(fill.depth)?;
    let mut main_before = Vec::with_capacity(systems.len());
    let mut main_after = Vec::with_capacity(systems.len());
    for (sys, out) in systems.iter().zip(outcome.result.systems.iter_mut()) {
        let after = scorer.score(&filled_set, &sys.run)?;
        let before_main = main_scorer.score(set, &sys.run)?;
        let jb = judged_spec.values(set, &set.qrels, &sys.run)?;
        let ja = judged_spec.values(set, fill.filled, &sys.run)?;
        let series: Vec<&[f64]> = after
            .values
            .iter()
            .map(Vec::as_slice)
            .chain([jb.as_slice(), ja.as_slice()])
            .collect();
        let est = estimates(&boot, &clusters, None, &series);
        let filled = measures
            .iter()
            .zip(&est)
            .map(|(m, e)| (m.id(), *e))
            .filter(|(id, _)| out.measures.contains_key(id))
            .collect();
        let n = measures.len();
        out.holes = Some(SystemHoles {
            depth: fill.depth,
            judged: est[n],
            judged_filled: est[n + 1],
            filled,
        });
        main_before.push(before_main.values.into_iter().next().unwrap_or_default());
        main_after.push(after.values.get(main_i).cloned().unwrap_or_default());
    }
    let (a, b): (Vec<&[f64]>, Vec<&[f64]>) = (
        main_before.iter().map(Vec::as_slice).collect(),
        main_after.iter().map(Vec::as_slice).collect(),
    );
    let tau = tau_b_interval(
        &PairedScores {
            first: &a,
            second: &b,
            clusters: &clusters,
        },
        &boot,
    );
    outcome.result.holes = Some(HolesInfo {
        depth: fill.depth,
        folder: fill.folder.to_string(),
        holes: fill.holes,
        judged: fill.judged,
        relevant: fill.relevant,
        kendall_tau: tau.map(Estimate::from),
    });
    Ok(())
}

/// The evaluation set with the filled qrels of its turns (the turns themselves unchanged).
fn with_qrels(set: &QuerySet, filled: &Qrels) -> QuerySet {
    let mut out = set.clone();
    for (qid, judged) in &mut out.qrels {
        if let Some(f) = filled.get(qid) {
            for (d, g) in f {
                judged.entry(d.clone()).or_insert(*g);
            }
        }
    }
    out
}

/// Judged@K through mtr-metrics (the same code as `mtr eval -m Judged@K`).
struct Judged {
    opts: EvalOptions,
    column: String,
}

impl Judged {
    fn new(k: usize) -> Result<Self> {
        let spec = format!("judged.{k}");
        let measures = MeasureSet::parse([spec.as_str()])
            .map_err(|e| BenchError::Internal(format!("measure {spec}: {e}")))?;
        Ok(Self {
            opts: EvalOptions {
                missing: MissingQueries::Complete,
                ..EvalOptions::with_measures(measures)
            },
            column: format!("judged_{k}"),
        })
    }

    /// Per scored turn of `set` (in its order), Judged@K of `run` under `qrels`.
    fn values(&self, set: &QuerySet, qrels: &Qrels, run: &mtr_core::Run) -> Result<Vec<f64>> {
        let of_set: Qrels = set
            .queries
            .iter()
            .filter_map(|q| Some((q.qid.clone(), qrels.get(&q.qid)?.clone())))
            .collect();
        let ev = evaluate_run(&EvalQrels::from_qrels(&of_set), run, &self.opts)
            .map_err(BenchError::Metrics)?;
        let by: BTreeMap<&str, f64> = ev
            .per_query(&self.column)
            .unwrap_or_default()
            .into_iter()
            .collect();
        Ok(set
            .queries
            .iter()
            .map(|q| by.get(q.qid.as_str()).copied().unwrap_or(0.0))
            .collect())
    }
}

pub(crate) mod report_cells;

#[cfg(test)]
mod tests;
