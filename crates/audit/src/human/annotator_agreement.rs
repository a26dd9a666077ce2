//! Calibration against human ratings (`--human-labels FILE`): how the judges' ratings compare
//! with the annotators' (the files themselves are read by [`crate::human::rating_files`], whose types
//! are re-exported here).
//!
//! What is reported per (dimension, human metric): Pearson and Spearman between the ensemble
//! and the human median, the same pooled against each annotator, and quadratic-weighted kappa
//! pooled against each annotator after mapping the judge scale linearly onto the human scale.
//! The annotators' own agreement is the ceiling: Krippendorff's alpha (ordinal), pooled
//! pairwise Pearson, Spearman and kappa, and each annotator against the median of the others.
//!
//! MTRAG rates three answers per task, so units are not independent: every correlation and
//! kappa gets a cluster-bootstrap interval with tasks as clusters. The ceiling is computed on
//! exactly the units the ensemble scored (the whole file's ceiling is kept beside it). The
//! file says which model wrote each answer, so self-preference is tested for real: the
//! judge-minus-human residual (judge score mapped onto the human scale, minus the human
//! median) by answer source, and each source's residual minus the other sources', with CIs.
//! MTRAG's `completeness` is judged with its own prompt that shows the passages
//! (`prompts/audit/human_completeness.j2`); the other quality metrics use the quality prompt.

use std::collections::BTreeMap;

use mtr_metrics::agreement::{self, KappaWeights, Level};
use serde::{Deserialize, Serialize};

use crate::dimension::Dimension;
pub(crate) use crate::human::rating_files::{
    HumanItem, HumanLabels, HumanRating, MtragJudged, judged_for, load, mtrag_metrics,
};
use crate::statistics::interval::Interval;
use crate::statistics::resample::Resampling;

/// Agreement of judges with humans, and of humans with each other.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HumanCalibration {
    pub file: String,
    /// `mtrag` (answers judged for calibration) or `items` (ratings of audited items).
    pub kind: String,
    /// Human-rated units in the file.
    pub units: usize,
    /// Units judged (a seeded sample with `--human-sample`).
    #[serde(default)]
    pub judged_units: Option<usize>,
    pub comparisons: Vec<HumanComparison>,
    /// Failed judgements of the calibration run (excluded).
    pub failed_judgements: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HumanComparison {
    pub dimension: Dimension,
    pub human_metric: String,
    /// Prompt the judges rated with (`name@version`).
    #[serde(default)]
    pub judged_with: Option<String>,
    pub human_scale: [f64; 2],
    pub judge_scale: [f64; 2],
    /// The ensemble (mean over judges).
    pub ensemble: JudgeAgreement,
    pub per_judge: BTreeMap<String, JudgeAgreement>,
    /// How well the annotators agree with each other on exactly the units the ensemble scored:
    /// the ceiling for any judge.
    pub ceiling: Ceiling,
    /// The same over every unit of the file with two annotators (judged or not).
    #[serde(default)]
    pub ceiling_all_units: Option<Ceiling>,
    /// Judge-minus-human residual (judge score mapped linearly onto the human scale, minus the
    /// human median) by answer source, per judge and for the `ensemble` (MTRAG file).
    #[serde(default)]
    pub residual_by_source: BTreeMap<String, BTreeMap<String, SourceResidual>>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JudgeAgreement {
    /// Units with both a judge score and a human median.
    pub n: usize,
    /// Tasks (clusters of the bootstrap) among them.
    #[serde(default)]
    pub clusters: usize,
    pub pearson: Option<f64>,
    /// Cluster-bootstrap interval (clusters = tasks).
    #[serde(default)]
    pub pearson_ci: Option<Interval>,
    /// p-value assuming independent units (optimistic: units of one task are correlated).
    pub pearson_p: Option<f64>,
    pub spearman: Option<f64>,
    #[serde(default)]
    pub spearman_ci: Option<Interval>,
    pub spearman_p: Option<f64>,
    /// Pooled over every (unit, annotator) pair.
    pub pairs: usize,
    pub pearson_vs_annotators: Option<f64>,
    #[serde(default)]
    pub pearson_vs_annotators_ci: Option<Interval>,
    pub spearman_vs_annotators: Option<f64>,
    #[serde(default)]
    pub spearman_vs_annotators_ci: Option<Interval>,
    /// Quadratic-weighted kappa against each annotator (pooled), judge scores mapped onto the
    /// human scale and rounded.
    pub kappa_quadratic: Option<f64>,
    #[serde(default)]
    pub kappa_quadratic_ci: Option<Interval>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Ceiling {
    /// Units with at least two annotators.
    pub units: usize,
    pub annotators_per_unit: f64,
    pub krippendorff_alpha_ordinal: Option<f64>,
    #[serde(default)]
    pub krippendorff_alpha_ordinal_ci: Option<Interval>,
    /// Ordered annotator pairs within a unit, pooled.
    pub pairs: usize,
    pub pearson_pairwise: Option<f64>,
    #[serde(default)]
    pub pearson_pairwise_ci: Option<Interval>,
    pub spearman_pairwise: Option<f64>,
    #[serde(default)]
    pub spearman_pairwise_ci: Option<Interval>,
    pub kappa_quadratic_pairwise: Option<f64>,
    #[serde(default)]
    pub kappa_quadratic_pairwise_ci: Option<Interval>,
    /// Each annotator against the median of the other annotators of the unit.
    pub pearson_leave_one_out: Option<f64>,
    #[serde(default)]
    pub pearson_leave_one_out_ci: Option<Interval>,
    pub spearman_leave_one_out: Option<f64>,
    #[serde(default)]
    pub spearman_leave_one_out_ci: Option<Interval>,
}

/// Judge-minus-human residual of one answer source (on the human scale).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceResidual {
    pub n: usize,
    /// Mean of (judge score on the human scale - human median); positive = the judge is more
    /// lenient than the annotators on this source's answers.
    pub mean: Option<f64>,
    pub ci: Option<Interval>,
    /// This source's mean residual minus that of the other sources' answers: a judge that
    /// prefers its own family's answers has a positive value on that family's source.
    pub minus_others: Option<f64>,
    pub minus_others_ci: Option<Interval>,
}

/// One unit to compare: judge scores and annotator ratings.
#[derive(Debug, Clone, Default)]
pub(crate) struct Unit {
    pub per_judge: BTreeMap<String, f64>,
    pub annotators: BTreeMap<String, f64>,
    /// Cluster of the bootstrap (the task: MTRAG rates several answers per task).
    pub cluster: String,
    /// Who wrote the answer (MTRAG), empty when unknown.
    pub source: String,
}

impl Unit {
    pub(crate) fn ensemble(&self) -> Option<f64> {
        (!self.per_judge.is_empty())
            .then(|| self.per_judge.values().sum::<f64>() / self.per_judge.len() as f64)
    }
}

pub(crate) fn median(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    Some(if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    })
}

/// Maps a judge score onto the human scale (linear), unrounded.
pub(crate) fn to_human_scale(score: f64, judge: [f64; 2], human: [f64; 2]) -> f64 {
    human[0] + (score - judge[0]) / (judge[1] - judge[0]) * (human[1] - human[0])
}

/// Maps a judge score onto the human scale (linear), rounded to the nearest grade.
pub(crate) fn to_human_grade(score: f64, judge: [f64; 2], human: [f64; 2]) -> i64 {
    to_human_scale(score, judge, human)
        .clamp(human[0], human[1])
        .round() as i64
}

type CorrFn =
    fn(&[f64], &[f64]) -> std::result::Result<agreement::Correlation, mtr_metrics::MetricsError>;

/// A correlation and its p-value; `None` where undefined (fewer than 3 pairs, no variance).
#[derive(Debug, Clone, Copy, Default)]
struct Tested {
    r: Option<f64>,
    p: Option<f64>,
}

fn corr(f: CorrFn, x: &[f64], y: &[f64]) -> Tested {
    if x.len() < 3 {
        return Tested::default();
    }
    match f(x, y) {
        Ok(c) if c.r.is_finite() => Tested {
            r: Some(c.r),
            p: c.p_value.is_finite().then_some(c.p_value),
        },
        _ => Tested::default(),
    }
}

fn kappa(a: &[i64], b: &[i64]) -> Option<f64> {
    if a.len() < 2 {
        return None;
    }
    agreement::weighted_kappa(a, b, KappaWeights::Quadratic)
        .ok()
        .filter(|k| k.is_finite())
}

/// A unit with a judge score and annotator ratings.
struct Row<'a> {
    score: f64,
    median: f64,
    ratings: Vec<f64>,
    cluster: &'a str,
}

/// The ensemble's agreement with the annotators on some units.
struct AgreementStats {
    /// Against the annotators' median.
    pearson: Tested,
    spearman: Tested,
    /// Pooled against each annotator.
    pearson_vs_annotators: Tested,
    spearman_vs_annotators: Tested,
    kappa_quadratic: Option<f64>,
}

impl AgreementStats {
    /// The statistics the bootstrap resamples, in the order [`judge_agreement`] reads them.
    fn values(&self) -> Vec<Option<f64>> {
        vec![
            self.pearson.r,
            self.spearman.r,
            self.pearson_vs_annotators.r,
            self.spearman_vs_annotators.r,
            self.kappa_quadratic,
        ]
    }
}

/// The agreement statistics on the rows `idx`.
fn agreement_stats(
    rows: &[Row<'_>],
    idx: &[usize],
    judge_scale: [f64; 2],
    human_scale: [f64; 2],
) -> AgreementStats {
    let (mut x, mut y) = (Vec::new(), Vec::new());
    let (mut px, mut py, mut kx, mut ky) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for &i in idx {
        let r = &rows[i];
        x.push(r.score);
        y.push(r.median);
        for &a in &r.ratings {
            px.push(r.score);
            py.push(a);
            kx.push(to_human_grade(r.score, judge_scale, human_scale));
            ky.push(a.round() as i64);
        }
    }
    AgreementStats {
        pearson: corr(agreement::pearson, &x, &y),
        spearman: corr(agreement::spearman, &x, &y),
        pearson_vs_annotators: corr(agreement::pearson, &px, &py),
        spearman_vs_annotators: corr(agreement::spearman, &px, &py),
        kappa_quadratic: kappa(&kx, &ky),
    }
}

fn distinct(labels: &[&str]) -> usize {
    let mut v = labels.to_vec();
    v.sort_unstable();
    v.dedup();
    v.len()
}

fn judge_agreement(
    units: &[Unit],
    score: &dyn Fn(&Unit) -> Option<f64>,
    judge_scale: [f64; 2],
    human_scale: [f64; 2],
    r: &Resampling,
) -> JudgeAgreement {
    let rows: Vec<Row<'_>> = units
        .iter()
        .filter_map(|u| {
            let score = score(u)?;
            let ratings: Vec<f64> = u.annotators.values().copied().collect();
            let median = median(&ratings)?;
            Some(Row {
                score,
                median,
                ratings,
                cluster: &u.cluster,
            })
        })
        .collect();
    let all: Vec<usize> = (0..rows.len()).collect();
    let est = agreement_stats(&rows, &all, judge_scale, human_scale);
    let clusters: Vec<&str> = rows.iter().map(|r| r.cluster).collect();
    let cis =
        crate::statistics::resample::cluster_intervals(&clusters, r, est.values().len(), |idx| {
            agreement_stats(&rows, idx, judge_scale, human_scale).values()
        });
    // the intervals come in the order of `AgreementStats::values`
    let mut ci = cis.into_iter();
    let mut next_ci = || ci.next().flatten();
    JudgeAgreement {
        n: rows.len(),
        clusters: distinct(&clusters),
        pearson: est.pearson.r,
        pearson_ci: next_ci(),
        pearson_p: est.pearson.p,
        spearman: est.spearman.r,
        spearman_ci: next_ci(),
        spearman_p: est.spearman.p,
        pairs: rows.iter().map(|r| r.ratings.len()).sum(),
        pearson_vs_annotators: est.pearson_vs_annotators.r,
        pearson_vs_annotators_ci: next_ci(),
        spearman_vs_annotators: est.spearman_vs_annotators.r,
        spearman_vs_annotators_ci: next_ci(),
        kappa_quadratic: est.kappa_quadratic,
        kappa_quadratic_ci: next_ci(),
    }
}

/// The annotators' agreement with each other on some units.
struct CeilingStats {
    krippendorff_alpha_ordinal: Option<f64>,
    pearson_pairwise: Option<f64>,
    spearman_pairwise: Option<f64>,
    kappa_quadratic_pairwise: Option<f64>,
    /// Each annotator against the median of the others.
    pearson_leave_one_out: Option<f64>,
    spearman_leave_one_out: Option<f64>,
}

impl CeilingStats {
    /// The statistics the bootstrap resamples, in the order [`ceiling`] reads them.
    fn values(&self) -> Vec<Option<f64>> {
        vec![
            self.krippendorff_alpha_ordinal,
            self.pearson_pairwise,
            self.spearman_pairwise,
            self.kappa_quadratic_pairwise,
            self.pearson_leave_one_out,
            self.spearman_leave_one_out,
        ]
    }
}

/// The ceiling statistics on the units `idx`.
fn ceiling_stats(multi: &[&Unit], idx: &[usize], coders: &[String]) -> CeilingStats {
    let data: Vec<Vec<Option<f64>>> = coders
        .iter()
        .map(|c| {
            idx.iter()
                .map(|&i| multi[i].annotators.get(c).copied())
                .collect()
        })
        .collect();
    let alpha = if idx.len() >= 2 {
        agreement::krippendorff_alpha(&data, Level::Ordinal)
            .ok()
            .filter(|a| a.is_finite())
    } else {
        None
    };
    let (mut a, mut b, mut ka, mut kb, mut lx, mut ly) = (
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
    );
    for &ui in idx {
        let r: Vec<f64> = multi[ui].annotators.values().copied().collect();
        for i in 0..r.len() {
            for j in 0..r.len() {
                if i != j {
                    a.push(r[i]);
                    b.push(r[j]);
                    ka.push(r[i].round() as i64);
                    kb.push(r[j].round() as i64);
                }
            }
            let others: Vec<f64> = r
                .iter()
                .enumerate()
                .filter(|(k, _)| *k != i)
                .map(|(_, v)| *v)
                .collect();
            if let Some(m) = median(&others) {
                lx.push(r[i]);
                ly.push(m);
            }
        }
    }
    CeilingStats {
        krippendorff_alpha_ordinal: alpha,
        pearson_pairwise: corr(agreement::pearson, &a, &b).r,
        spearman_pairwise: corr(agreement::spearman, &a, &b).r,
        kappa_quadratic_pairwise: kappa(&ka, &kb),
        pearson_leave_one_out: corr(agreement::pearson, &lx, &ly).r,
        spearman_leave_one_out: corr(agreement::spearman, &lx, &ly).r,
    }
}

fn ceiling(units: &[&Unit], r: &Resampling) -> Ceiling {
    let multi: Vec<&Unit> = units
        .iter()
        .copied()
        .filter(|u| u.annotators.len() >= 2)
        .collect();
    let mut coders: Vec<String> = multi
        .iter()
        .flat_map(|u| u.annotators.keys().cloned())
        .collect();
    coders.sort();
    coders.dedup();
    let all: Vec<usize> = (0..multi.len()).collect();
    let est = ceiling_stats(&multi, &all, &coders);
    let clusters: Vec<&str> = multi.iter().map(|u| u.cluster.as_str()).collect();
    let cis =
        crate::statistics::resample::cluster_intervals(&clusters, r, est.values().len(), |idx| {
            ceiling_stats(&multi, idx, &coders).values()
        });
    // the intervals come in the order of `CeilingStats::values`
    let mut ci = cis.into_iter();
    let mut next_ci = || ci.next().flatten();
    let annotations: usize = multi.iter().map(|u| u.annotators.len()).sum();
    Ceiling {
        units: multi.len(),
        annotators_per_unit: if multi.is_empty() {
            0.0
        } else {
            annotations as f64 / multi.len() as f64
        },
        krippendorff_alpha_ordinal: est.krippendorff_alpha_ordinal,
        krippendorff_alpha_ordinal_ci: next_ci(),
        pairs: multi
            .iter()
            .map(|u| u.annotators.len() * (u.annotators.len() - 1))
            .sum(),
        pearson_pairwise: est.pearson_pairwise,
        pearson_pairwise_ci: next_ci(),
        spearman_pairwise: est.spearman_pairwise,
        spearman_pairwise_ci: next_ci(),
        kappa_quadratic_pairwise: est.kappa_quadratic_pairwise,
        kappa_quadratic_pairwise_ci: next_ci(),
        pearson_leave_one_out: est.pearson_leave_one_out,
        pearson_leave_one_out_ci: next_ci(),
        spearman_leave_one_out: est.spearman_leave_one_out,
        spearman_leave_one_out_ci: next_ci(),
    }
}

/// Judge-minus-human residuals by answer source, with this source minus the others.
fn residuals(
    units: &[Unit],
    score: &dyn Fn(&Unit) -> Option<f64>,
    judge_scale: [f64; 2],
    human_scale: [f64; 2],
    r: &Resampling,
) -> BTreeMap<String, SourceResidual> {
    let rows: Vec<(&str, &str, f64)> = units
        .iter()
        .filter(|u| !u.source.is_empty())
        .filter_map(|u| {
            let s = score(u)?;
            let ratings: Vec<f64> = u.annotators.values().copied().collect();
            let m = median(&ratings)?;
            Some((
                u.source.as_str(),
                u.cluster.as_str(),
                to_human_scale(s, judge_scale, human_scale) - m,
            ))
        })
        .collect();
    let mut sources: Vec<&str> = rows.iter().map(|r| r.0).collect();
    sources.sort_unstable();
    sources.dedup();
    let clusters: Vec<&str> = rows.iter().map(|r| r.1).collect();
    let stat = |src: &str, idx: &[usize]| -> [Option<f64>; 2] {
        let mine = mtr_metrics::stats::mean(
            idx.iter()
                .filter(|&&i| rows[i].0 == src)
                .map(|&i| rows[i].2),
        );
        let others = mtr_metrics::stats::mean(
            idx.iter()
                .filter(|&&i| rows[i].0 != src)
                .map(|&i| rows[i].2),
        );
        [mine, mine.zip(others).map(|(a, b)| a - b)]
    };
    let all: Vec<usize> = (0..rows.len()).collect();
    sources
        .iter()
        .map(|&src| {
            let est = stat(src, &all);
            let cis = crate::statistics::resample::cluster_intervals(&clusters, r, 2, |idx| {
                stat(src, idx).to_vec()
            });
            (
                src.to_string(),
                SourceResidual {
                    n: rows.iter().filter(|x| x.0 == src).count(),
                    mean: est[0],
                    ci: cis[0].clone(),
                    minus_others: est[1],
                    minus_others_ci: cis[1].clone(),
                },
            )
        })
        .collect()
}

/// Compares judges with humans on one (dimension, human metric). The ceiling is computed on
/// the units the ensemble scored; `ceiling_all_units` on every unit.
pub(crate) fn compare(
    dimension: Dimension,
    human_metric: &str,
    units: &[Unit],
    judge_scale: [f64; 2],
    human_scale: [f64; 2],
    r: &Resampling,
) -> HumanComparison {
    let mut judges: Vec<String> = units
        .iter()
        .flat_map(|u| u.per_judge.keys().cloned())
        .collect();
    judges.sort();
    judges.dedup();
    let salted = |salt: &str| Resampling {
        seed: crate::seed::derive(r.seed, &["human", dimension.name(), human_metric, salt]),
        ..*r
    };
    let per_judge = judges
        .iter()
        .map(|j| {
            (
                j.clone(),
                judge_agreement(
                    units,
                    &|u: &Unit| u.per_judge.get(j).copied(),
                    judge_scale,
                    human_scale,
                    &salted(j),
                ),
            )
        })
        .collect();
    let mut residual_by_source = BTreeMap::new();
    let ens = residuals(
        units,
        &Unit::ensemble,
        judge_scale,
        human_scale,
        &salted("residual"),
    );
    if !ens.is_empty() {
        residual_by_source.insert("ensemble".to_string(), ens);
        for j in &judges {
            residual_by_source.insert(
                j.clone(),
                residuals(
                    units,
                    &|u: &Unit| u.per_judge.get(j).copied(),
                    judge_scale,
                    human_scale,
                    &salted(&format!("residual/{j}")),
                ),
            );
        }
    }
    let judged: Vec<&Unit> = units.iter().filter(|u| u.ensemble().is_some()).collect();
    let every: Vec<&Unit> = units.iter().collect();
    HumanComparison {
        dimension,
        human_metric: human_metric.to_string(),
        judged_with: None,
        human_scale,
        judge_scale,
        ensemble: judge_agreement(
            units,
            &Unit::ensemble,
            judge_scale,
            human_scale,
            &salted("ensemble"),
        ),
        per_judge,
        ceiling: ceiling(&judged, &salted("ceiling")),
        ceiling_all_units: Some(ceiling(&every, &salted("ceiling-all"))),
        residual_by_source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rs() -> Resampling {
        Resampling {
            resamples: 400,
            level: 0.95,
            seed: 3,
        }
    }

    /// Three answers (sources a, b, c) per task; annotators agree on a task-level truth.
    fn clustered_units(tasks: usize) -> Vec<Unit> {
        let mut out = Vec::new();
        for t in 0..tasks {
            for (k, src) in ["reference", "GPT-4o", "Llama-3.1-405B"].iter().enumerate() {
                let truth = 1.0 + ((t * 7 + k * 3) % 4) as f64;
                let ann: BTreeMap<String, f64> = [
                    ("x".to_string(), truth),
                    ("y".to_string(), truth),
                    (
                        "z".to_string(),
                        (truth + if t % 2 == 0 { 1.0 } else { 0.0 }).min(4.0),
                    ),
                ]
                .into();
                // a judge on 1-5 that tracks the truth; lenient (+1 human grade) on Llama
                let lenient = if *src == "Llama-3.1-405B" {
                    4.0 / 3.0
                } else {
                    0.0
                };
                let j = (1.0 + (truth - 1.0) * 4.0 / 3.0 + lenient).min(5.0);
                out.push(Unit {
                    per_judge: [("judge".to_string(), j)].into(),
                    annotators: ann,
                    cluster: format!("task{t}"),
                    source: src.to_string(),
                });
            }
        }
        out
    }

    #[test]
    fn every_correlation_and_kappa_has_a_task_clustered_interval() {
        let units = clustered_units(12);
        let c = compare(
            Dimension::Quality,
            "appropriateness",
            &units,
            [1.0, 5.0],
            [1.0, 4.0],
            &rs(),
        );
        let e = &c.ensemble;
        assert_eq!((e.n, e.clusters), (36, 12));
        for (est, ci) in [
            (e.pearson, &e.pearson_ci),
            (e.spearman, &e.spearman_ci),
            (e.pearson_vs_annotators, &e.pearson_vs_annotators_ci),
            (e.spearman_vs_annotators, &e.spearman_vs_annotators_ci),
            (e.kappa_quadratic, &e.kappa_quadratic_ci),
        ] {
            let (est, ci) = (est.unwrap(), ci.as_ref().unwrap());
            assert_eq!(ci.clusters, 12, "clusters are tasks, not answers");
            assert!(
                ci.lower <= est + 1e-9 && est <= ci.upper + 1e-9,
                "{est} {ci:?}"
            );
            assert!(ci.upper > ci.lower);
        }
        let k = &c.ceiling;
        for ci in [
            &k.krippendorff_alpha_ordinal_ci,
            &k.pearson_pairwise_ci,
            &k.spearman_pairwise_ci,
            &k.kappa_quadratic_pairwise_ci,
            &k.pearson_leave_one_out_ci,
            &k.spearman_leave_one_out_ci,
        ] {
            assert_eq!(ci.as_ref().unwrap().clusters, 12);
        }
        // the same data, seeded: identical intervals
        let again = compare(
            Dimension::Quality,
            "appropriateness",
            &units,
            [1.0, 5.0],
            [1.0, 4.0],
            &rs(),
        );
        assert_eq!(c, again);
    }

    #[test]
    fn the_ceiling_is_computed_on_the_judged_units_only() {
        let mut units = clustered_units(8);
        // answers the judges never scored, on which the annotators disagree wildly
        for t in 0..8 {
            units.push(Unit {
                per_judge: BTreeMap::new(),
                annotators: [
                    ("x".to_string(), 1.0),
                    ("y".to_string(), 4.0),
                    ("z".to_string(), if t % 2 == 0 { 1.0 } else { 4.0 }),
                ]
                .into(),
                cluster: format!("other{t}"),
                source: "reference".into(),
            });
        }
        let c = compare(
            Dimension::Quality,
            "appropriateness",
            &units,
            [1.0, 5.0],
            [1.0, 4.0],
            &rs(),
        );
        assert_eq!(c.ensemble.n, 24);
        assert_eq!(c.ceiling.units, 24, "ceiling on exactly the judged units");
        let all = c.ceiling_all_units.as_ref().unwrap();
        assert_eq!(all.units, 32);
        assert!(
            c.ceiling.krippendorff_alpha_ordinal.unwrap()
                > all.krippendorff_alpha_ordinal.unwrap() + 0.1
        );
    }

    #[test]
    fn self_preference_shows_as_a_residual_by_answer_source() {
        let units = clustered_units(15);
        let c = compare(
            Dimension::Quality,
            "appropriateness",
            &units,
            [1.0, 5.0],
            [1.0, 4.0],
            &rs(),
        );
        let by = &c.residual_by_source["judge"];
        assert_eq!(by.len(), 3);
        let llama = &by["Llama-3.1-405B"];
        let gpt = &by["GPT-4o"];
        assert_eq!(llama.n, 15);
        // the judge is lenient on Llama's answers only: a positive difference whose interval
        // excludes 0; none for the others
        let d = llama.minus_others.unwrap();
        assert!(d > 0.5, "{d}");
        assert!(llama.minus_others_ci.as_ref().unwrap().lower > 0.0);
        assert!(gpt.minus_others.unwrap() < 0.0);
        assert!(c.residual_by_source.contains_key("ensemble"));
        let judges = vec![crate::summary::JudgeInfo {
            name: "judge".into(),
            model: "llama-3.1-8b-instruct".into(),
            family: Some("llama".into()),
            rating_mode: Default::default(),
        }];
        let cal = HumanCalibration {
            file: "f".into(),
            kind: "mtrag".into(),
            units: 45,
            judged_units: Some(45),
            comparisons: vec![c],
            failed_judgements: 0,
        };
        let w = crate::human::self_preference::warnings(&cal, &judges);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("Llama-3.1-405B"), "{w:?}");
        // the terminal table: ensemble and ceiling rows, with intervals
        let t = crate::human::calibration::text_table(&cal);
        assert!(
            t.contains("annotators (ceiling)") && t.contains("ensemble"),
            "{t}"
        );
        assert!(
            t.lines()
                .nth(2)
                .is_some_and(|l| l.matches('[').count() == 3),
            "{t}"
        );
    }

    #[test]
    fn perfect_judge_matches_and_ceiling_is_computed() {
        // annotators agree on a monotone truth with noise; a judge equal to the median on a 1-5 scale
        let truth = [1.0, 2.0, 3.0, 4.0, 4.0, 2.0, 1.0, 3.0];
        let units: Vec<Unit> = truth
            .iter()
            .enumerate()
            .map(|(i, &t)| {
                let noise: f64 = if i % 3 == 0 { 1.0 } else { 0.0 };
                let ann: BTreeMap<String, f64> = [
                    ("a".to_string(), t),
                    ("b".to_string(), t),
                    ("c".to_string(), (t + noise).min(4.0)),
                ]
                .into();
                let j = 1.0 + (t - 1.0) * 4.0 / 3.0; // exact linear map onto 1-5
                Unit {
                    per_judge: [("j".to_string(), j)].into(),
                    annotators: ann,
                    cluster: format!("t{i}"),
                    source: String::new(),
                }
            })
            .collect();
        let c = compare(
            Dimension::Faithfulness,
            "faithfulness",
            &units,
            [1.0, 5.0],
            [1.0, 4.0],
            &rs(),
        );
        assert_eq!(c.ensemble.n, 8);
        assert!(c.ensemble.pearson.unwrap() > 0.95, "{:?}", c.ensemble);
        assert!(c.ensemble.kappa_quadratic.unwrap() > 0.8);
        assert_eq!(c.ceiling.units, 8);
        assert_eq!(c.ceiling.pairs, 8 * 6);
        assert!((c.ceiling.annotators_per_unit - 3.0).abs() < 1e-12);
        assert!(c.ceiling.krippendorff_alpha_ordinal.unwrap() > 0.5);
        assert_eq!(to_human_grade(5.0, [1.0, 5.0], [1.0, 4.0]), 4);
        assert_eq!(to_human_grade(1.0, [1.0, 5.0], [1.0, 4.0]), 1);
        assert_eq!(to_human_grade(3.0, [1.0, 5.0], [1.0, 4.0]), 3); // 2.5 rounds up
        assert_eq!(median(&[4.0, 1.0]), Some(2.5));
    }
}
