//! The mean of a quantity over N items (the share of failing units of an audit, say) from
//! predictions on every item (the judges') and labels on a simple random sample of them (a
//! reviewer's), three ways, each with an interval that keeps its coverage where audits live:
//! rare failures, tens of labels, a few dozen dialogues or fewer, judges that are perfect or
//! useless.
//!
//! - **Reviewers only**: the labels' mean. A share (0/1 labels) gets the Korn-Graubard
//!   interval ([`super::share`]): Clopper-Pearson on the effective sample size after the
//!   design effect of the clusters and the few-clusters correction, so 0 of 40 observed gives
//!   `[0, 8.8%]`, not `[0, 0]`. Other values get the adjusted Wald interval below.
//! - **Judges only**: the predictions' mean over every item, biased by whatever the judges get
//!   wrong, reported for what it is.
//! - **Prediction-powered** (PPI++): `theta = mean_n(Y - lambda (f - mean_N(f)))`, unbiased
//!   whatever the predictions are worth. `lambda` is the labels' regression on the
//!   predictions, clipped to `[0, 1]` and cross-fitted: the labelled clusters are split into two
//!   folds and each fold's items take the `lambda` tuned on the other fold, so the weight never
//!   sees the labels it corrects. With too few labelled clusters to split
//!   (`2 * MIN_TUNING_CLUSTERS`), or no spread in a fold's labels or predictions, `lambda` is
//!   1, the plain PPI: the judges are never dropped.
//!
//! The adjusted Wald interval (reviewers-only beyond shares, judges-only, PPI) adds two
//! pseudo-items' weight to the sample, takes the augmented sample's variance times the design
//! effect of the clusters (never below 1), and Student's t on `G - 1` degrees of freedom (G the
//! clusters). A mean of values gets one pseudo-item at each end of the values' range (Bonett
//! and Price). The prediction-powered mean, a label minus a prediction (a paired difference),
//! gets half a pseudo-item at each end of its range and one where label and prediction agree
//! (Agresti and Min's half in each cell of the paired table). The pseudo-items keep the
//! interval from zero width when every value agrees (perfect judges: `mean_N(f) +- t / (n +
//! 2)`, inside the reviewers' exact interval of the same labels) and pull it toward the
//! middle where a rare event was not seen. Intervals are cut to the values' range.
//!
//! The target is the mean over the N items (the audit's own units), and the sample a simple
//! random sample of them, as `mtr review` draws it; the clustered variances and the `G - 1`
//! degrees of freedom make the intervals conservative for that target and honest for a wider
//! one. Fewer than [`FEW_CLUSTERS`] labelled clusters is reported ([`ReviewedMean::few_clusters`])
//! so a report can say so. The coverage study (`reviewed_mean/coverage.rs`, table in
//! docs/audit.md) checks all three over the regime the audits live in.

use serde::Serialize;

use super::interval::ConfidenceInterval;
use super::share::{ShareSample, korn_graubard, t_quantile};
use crate::error::{MetricsError, Result};

#[cfg(test)]
mod coverage;
#[cfg(test)]
pub(crate) mod sim;
#[cfg(test)]
mod tests;

/// One item: its cluster, the prediction on it, and its label if it was labelled.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PpiItem {
    /// Any id; items with the same id are one cluster (e.g. a dialogue's index).
    pub cluster: usize,
    /// The prediction on the item.
    pub prediction: f64,
    /// The label, if the item was labelled.
    pub label: Option<f64>,
}

/// Labelled clusters each of the two cross-fitting folds needs before `lambda` is tuned on
/// it: the tuned weight takes a degree of freedom, and the fold's variance keeps four more.
const MIN_TUNING_CLUSTERS: usize = 6;

/// Labelled clusters under which an interval rests on few dialogues and a report says so.
pub const FEW_CLUSTERS: usize = 10;

/// What an estimate's interval is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IntervalMethod {
    /// Clopper-Pearson on the Korn-Graubard effective sample size (a share's labels).
    ClopperPearson,
    /// The adjusted Wald interval with Student's t on the clusters (see the module doc).
    AdjustedWald,
}

/// How the prediction-powered estimate's `lambda` was set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LambdaRule {
    /// Tuned on the other fold of labelled clusters, clipped to `[0, 1]`.
    CrossFitted,
    /// 1 (plain PPI): too few labelled clusters to tune it on a sample of its own.
    Plain,
}

/// One estimate with its interval and the interval's method.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MeanEstimate {
    /// The estimate and its interval.
    pub interval: ConfidenceInterval,
    /// How the interval was made.
    pub method: IntervalMethod,
}

/// The three estimates of one mean, with what they rest on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReviewedMean {
    /// The labels' mean.
    pub reviewers: MeanEstimate,
    /// The predictions' mean over every item.
    pub judges: MeanEstimate,
    /// Prediction-powered (PPI++).
    pub ppi: MeanEstimate,
    /// The predictions' weight: the mean over labelled items of the weight each one took.
    pub lambda: f64,
    /// How `lambda` was set.
    pub lambda_rule: LambdaRule,
    /// Labelled items.
    pub labelled: usize,
    /// All items.
    pub items: usize,
    /// Clusters among all items.
    pub clusters: usize,
    /// Clusters among the labelled items.
    pub labelled_clusters: usize,
    /// The labelled clusters, when fewer than [`FEW_CLUSTERS`]: the intervals rest on few
    /// dialogues (they are widened for it, and a report should say so).
    pub few_clusters: Option<usize>,
}

/// Options of [`reviewed_mean`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReviewedMeanOptions {
    /// Confidence level, e.g. 0.95.
    pub level: f64,
    /// The values a label or prediction can take, `(low, high)`: `(0, 1)` for a share, `(1, 5)`
    /// for a rating. Labels that are all 0 or 1 in a `(0, 1)` range are a share.
    pub range: (f64, f64),
}

impl Default for ReviewedMeanOptions {
    fn default() -> Self {
        ReviewedMeanOptions {
            level: 0.95,
            range: (0.0, 1.0),
        }
    }
}

/// The three estimates of the mean label (see the module doc). Needs at least two labelled
/// items in two clusters; every value must be finite and inside `opts.range`.
pub fn reviewed_mean(items: &[PpiItem], opts: &ReviewedMeanOptions) -> Result<ReviewedMean> {
    let sample = Sample::new(items, opts)?;
    let reviewers = sample.reviewers(opts);
    let judges = sample.judges(opts);
    let (ppi, lambda, lambda_rule) = sample.ppi(opts, &reviewers);
    Ok(ReviewedMean {
        reviewers,
        judges,
        ppi,
        lambda,
        lambda_rule,
        labelled: sample.labelled.len(),
        items: items.len(),
        clusters: sample.clusters,
        labelled_clusters: sample.labelled_clusters,
        few_clusters: (sample.labelled_clusters < FEW_CLUSTERS).then_some(sample.labelled_clusters),
    })
}

/// A labelled item: its cluster (a dense index), label and prediction.
#[derive(Debug, Clone, Copy)]
struct Labelled {
    cluster: usize,
    label: f64,
    prediction: f64,
}

/// The checked items, with dense cluster indices.
struct Sample<'a> {
    items: &'a [PpiItem],
    /// Dense cluster index of every item.
    cluster_of: Vec<usize>,
    clusters: usize,
    labelled: Vec<Labelled>,
    labelled_clusters: usize,
    /// The predictions' mean over every item.
    mean_all: f64,
}

impl<'a> Sample<'a> {
    fn new(items: &'a [PpiItem], opts: &ReviewedMeanOptions) -> Result<Self> {
        check(items, opts)?;
        let mut ids: Vec<usize> = items.iter().map(|i| i.cluster).collect();
        ids.sort_unstable();
        ids.dedup();
        let cluster_of: Vec<usize> = items
            .iter()
            .map(|i| ids.binary_search(&i.cluster).unwrap_or(0))
            .collect();
        let labelled: Vec<Labelled> = items
            .iter()
            .zip(&cluster_of)
            .filter_map(|(i, c)| {
                i.label.map(|label| Labelled {
                    cluster: *c,
                    label,
                    prediction: i.prediction,
                })
            })
            .collect();
        let mut seen = vec![false; ids.len()];
        for l in &labelled {
            seen[l.cluster] = true;
        }
        let labelled_clusters = seen.iter().filter(|s| **s).count();
        if labelled.len() < 2 || labelled_clusters < 2 {
            return Err(MetricsError::invalid(
                "reviewed mean: needs at least two labelled items from two clusters",
            ));
        }
        let mean_all = super::mean(items.iter().map(|i| i.prediction)).unwrap_or(f64::NAN);
        Ok(Sample {
            items,
            cluster_of,
            clusters: ids.len(),
            labelled,
            labelled_clusters,
            mean_all,
        })
    }

    fn reviewers(&self, opts: &ReviewedMeanOptions) -> MeanEstimate {
        let values: Vec<(usize, f64)> =
            self.labelled.iter().map(|l| (l.cluster, l.label)).collect();
        let is_share = opts.range == (0.0, 1.0)
            && self
                .labelled
                .iter()
                .all(|l| l.label == 0.0 || l.label == 1.0);
        if !is_share {
            return adjusted_wald(
                &values,
                Pseudo::Ends(opts.range),
                opts.level,
                self.labelled_clusters,
            );
        }
        let share = super::mean(values.iter().map(|v| v.1)).unwrap_or(f64::NAN);
        let s = ShareSample {
            n: values.len(),
            share,
            clustered_variance: clustered_variance(&values, share),
            clusters: self.labelled_clusters,
        };
        let (lower, upper) = korn_graubard(&s, opts.level);
        MeanEstimate {
            interval: analytic(share, lower.min(share), upper.max(share), opts.level),
            method: IntervalMethod::ClopperPearson,
        }
    }

    fn judges(&self, opts: &ReviewedMeanOptions) -> MeanEstimate {
        let values: Vec<(usize, f64)> = self
            .items
            .iter()
            .zip(&self.cluster_of)
            .map(|(i, c)| (*c, i.prediction))
            .collect();
        adjusted_wald(&values, Pseudo::Ends(opts.range), opts.level, self.clusters)
    }

    /// The prediction-powered estimate, the mean weight and how it was set. An interval that
    /// lies wholly outside the values' range (a sample whose predictions disagree with every
    /// other item's, a few in ten thousand draws) says nothing the range allows: the
    /// reviewers' own estimate stands in for it.
    fn ppi(
        &self,
        opts: &ReviewedMeanOptions,
        reviewers: &MeanEstimate,
    ) -> (MeanEstimate, f64, LambdaRule) {
        let (lambdas, rule) = self.lambdas();
        let rectified: Vec<(usize, f64)> = self
            .labelled
            .iter()
            .zip(&lambdas)
            .map(|(l, lam)| (l.cluster, l.label - lam * (l.prediction - self.mean_all)))
            .collect();
        let top = lambdas.iter().copied().fold(0.0, f64::max);
        let (lo, hi) = opts.range;
        let range = (
            lo - top * (hi - self.mean_all),
            hi + top * (self.mean_all - lo),
        );
        let mut est = adjusted_wald(
            &rectified,
            Pseudo::Paired(range),
            opts.level,
            self.labelled_clusters,
        );
        est.interval.lower = est.interval.lower.max(lo);
        est.interval.upper = est.interval.upper.min(hi);
        let lambda = super::mean(&lambdas).unwrap_or(1.0);
        if est.interval.upper <= est.interval.lower {
            return (*reviewers, lambda, rule);
        }
        (est, lambda, rule)
    }

    /// Each labelled item's weight: cross-fitted over two folds of labelled clusters when
    /// there are enough of them, else 1.
    fn lambdas(&self) -> (Vec<f64>, LambdaRule) {
        if self.labelled_clusters < 2 * MIN_TUNING_CLUSTERS {
            return (vec![1.0; self.labelled.len()], LambdaRule::Plain);
        }
        // folds alternate over the labelled clusters in their order
        let mut fold_of = vec![usize::MAX; self.clusters];
        let mut k = 0;
        for l in &self.labelled {
            if fold_of[l.cluster] == usize::MAX {
                fold_of[l.cluster] = k % 2;
                k += 1;
            }
        }
        let tuned: [f64; 2] = [0, 1].map(|f| {
            let other: Vec<&Labelled> = self
                .labelled
                .iter()
                .filter(|l| fold_of[l.cluster] != f)
                .collect();
            regression_weight(&other)
        });
        let lambdas = self
            .labelled
            .iter()
            .map(|l| tuned[fold_of[l.cluster]])
            .collect();
        (lambdas, LambdaRule::CrossFitted)
    }
}

fn check(items: &[PpiItem], opts: &ReviewedMeanOptions) -> Result<()> {
    if !(opts.level > 0.0 && opts.level < 1.0) {
        return Err(MetricsError::invalid("confidence level must be in (0, 1)"));
    }
    let (lo, hi) = opts.range;
    if !(lo.is_finite() && hi.is_finite() && lo < hi) {
        return Err(MetricsError::invalid(
            "reviewed mean: the range must be finite with low < high",
        ));
    }
    let inside = |v: f64| v.is_finite() && lo <= v && v <= hi;
    if items
        .iter()
        .any(|i| !inside(i.prediction) || i.label.is_some_and(|y| !inside(y)))
    {
        return Err(MetricsError::invalid(format!(
            "reviewed mean: values must be finite and within [{lo}, {hi}]"
        )));
    }
    Ok(())
}

/// The labels' regression coefficient on the predictions over `items`, clipped to `[0, 1]`; 1
/// (plain PPI) when the labels or the predictions do not vary there: a fold that saw no
/// failure says nothing about the judges' worth, and must not drop them.
fn regression_weight(items: &[&Labelled]) -> f64 {
    let my = super::mean(items.iter().map(|l| l.label)).unwrap_or(0.0);
    let mf = super::mean(items.iter().map(|l| l.prediction)).unwrap_or(0.0);
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for l in items {
        sxy += (l.label - my) * (l.prediction - mf);
        sxx += (l.prediction - mf) * (l.prediction - mf);
        syy += (l.label - my) * (l.label - my);
    }
    if sxx > 0.0 && syy > 0.0 {
        (sxy / sxx).clamp(0.0, 1.0)
    } else {
        1.0
    }
}

/// The cluster-robust variance of the mean of `values` ((cluster, value) pairs, clusters dense
/// indices) around `mean`: `G / (G - 1) * sum_c (sum_{i in c} (v_i - mean) / n)^2`.
fn clustered_variance(values: &[(usize, f64)], mean: f64) -> f64 {
    let n = values.len() as f64;
    let g = values.iter().map(|v| v.0).max().map_or(0, |m| m + 1);
    let mut sums = vec![0.0; g];
    let mut present = vec![false; g];
    for (c, v) in values {
        sums[*c] += (v - mean) / n;
        present[*c] = true;
    }
    let groups = present.iter().filter(|p| **p).count() as f64;
    if groups < 2.0 {
        return f64::NAN;
    }
    groups / (groups - 1.0) * sums.iter().map(|s| s * s).sum::<f64>()
}

/// The pseudo-items an adjusted Wald interval adds, over the values' range `(low, high)`.
#[derive(Debug, Clone, Copy)]
enum Pseudo {
    /// One at each end of the range (Bonett and Price): for a mean of values.
    Ends((f64, f64)),
    /// Half at each end and one at the middle (Agresti and Min's half in each cell of a
    /// paired table): for the prediction-powered mean, whose values are a label minus a
    /// prediction, a paired difference, and whose middle is where the two agree.
    Paired((f64, f64)),
}

impl Pseudo {
    fn range(self) -> (f64, f64) {
        match self {
            Pseudo::Ends(r) | Pseudo::Paired(r) => r,
        }
    }

    /// The pseudo-items as (value, weight); the weights sum to 2 (the middle weighs nothing
    /// in [`Pseudo::Ends`]).
    fn items(self) -> [(f64, f64); 3] {
        match self {
            Pseudo::Ends((lo, hi)) => [(lo, 1.0), (hi, 1.0), ((lo + hi) / 2.0, 0.0)],
            Pseudo::Paired((lo, hi)) => [(lo, 0.5), (hi, 0.5), ((lo + hi) / 2.0, 1.0)],
        }
    }
}

/// The adjusted Wald interval of the mean of `values` (see the module doc): the pseudo-items
/// of `pseudo`, the design effect of the clusters, Student's t on `clusters - 1` degrees of
/// freedom; cut to the range and always holding the estimate.
fn adjusted_wald(
    values: &[(usize, f64)],
    pseudo: Pseudo,
    level: f64,
    clusters: usize,
) -> MeanEstimate {
    let n = values.len() as f64;
    let mean = super::mean(values.iter().map(|v| v.1)).unwrap_or(f64::NAN);
    let (lo, hi) = pseudo.range();
    let extra = pseudo.items();
    let aug_mean = (values.iter().map(|v| v.1).sum::<f64>()
        + extra.iter().map(|(v, w)| v * w).sum::<f64>())
        / (n + 2.0);
    let aug_ss: f64 = values.iter().map(|v| (v.1 - aug_mean).powi(2)).sum::<f64>()
        + extra
            .iter()
            .map(|(v, w)| w * (v - aug_mean).powi(2))
            .sum::<f64>();
    let aug_variance = aug_ss / (n + 2.0) / (n + 2.0);
    let srs_variance = values.iter().map(|v| (v.1 - mean).powi(2)).sum::<f64>() / n / n;
    let clustered = clustered_variance(values, mean);
    // values equal up to rounding (perfect judges: y - (f - mean_N(f)) for every item) have
    // no design effect, only the noise of two tiny variances' ratio
    let negligible = 1e-12 * (hi - lo) * (hi - lo) / n;
    let deff = if srs_variance > negligible && clustered.is_finite() {
        (clustered / srs_variance).max(1.0)
    } else {
        1.0
    };
    let half = t_quantile(level, clusters as f64 - 1.0) * (aug_variance * deff).sqrt();
    let lower = (aug_mean - half).min(mean).max(lo);
    let upper = (aug_mean + half).max(mean).min(hi);
    MeanEstimate {
        interval: analytic(mean, lower, upper, level),
        method: IntervalMethod::AdjustedWald,
    }
}

fn analytic(estimate: f64, lower: f64, upper: f64, level: f64) -> ConfidenceInterval {
    ConfidenceInterval {
        estimate,
        lower,
        upper,
        level,
        resamples: 0,
        seed: 0,
    }
}
