//! One quantity of one dimension three ways: from the judges on every audited item, from the
//! reviewers on their random sample, and prediction-powered (PPI++, the ensemble's prediction on
//! every item correcting the reviewers' sample mean), each with its interval clustered by
//! dialogue, all from [`mtr_metrics::stats::reviewed_mean`]: a share with no failure among the
//! reviewed items gets an exact interval, never `[0, 0]`; the judges' weight is cross-fitted and
//! clipped to `[0, 1]`, or 1 (plain PPI) with too few reviewed dialogues, so judges that agree
//! perfectly on the sample are never dropped; few reviewed dialogues widen the intervals and are
//! named.

use mtr_metrics::stats::{self, MeanEstimate, PpiItem, ReviewedMeanOptions, reviewed_mean};

use crate::items::aggregate::ItemScore;
use crate::summary::Interval;
use crate::summary::review::{IntervalMethod, LambdaRule};

use super::{ReviewEstimate, ThreeWay};

/// The values of one quantity: the judges' prediction of every item, and the reviewers' value
/// of the sampled ones.
pub(super) struct Quantity<'a> {
    /// Items with a judge score, and the judges' prediction for each.
    pub predictions: Vec<(&'a ItemScore, f64)>,
    /// (index into `predictions`, reviewers' value) of the reviewed items.
    pub labels: Vec<(usize, f64)>,
    /// The values the quantity can take (a share: 0-1; a rating: 1-5).
    pub range: (f64, f64),
}

/// One estimate as the summary records it (the interval already lies within the range).
fn estimate(e: &MeanEstimate, n: usize, clusters: usize) -> ReviewEstimate {
    let ci = &e.interval;
    let finite = ci.lower.is_finite() && ci.upper.is_finite();
    ReviewEstimate {
        estimate: ci.estimate.is_finite().then_some(ci.estimate),
        ci: finite.then_some(Interval {
            lower: ci.lower,
            upper: ci.upper,
            level: ci.level,
            resamples: 0,
            clusters,
        }),
        n,
        method: finite.then_some(match e.method {
            stats::IntervalMethod::ClopperPearson => IntervalMethod::ClopperPearson,
            stats::IntervalMethod::AdjustedWald => IntervalMethod::AdjustedWald,
        }),
    }
}

/// The three estimates with their `level` intervals; without enough reviewed items for an
/// interval (two, from two dialogues) the point estimates alone.
pub(super) fn three_ways(q: &Quantity<'_>, level: f64) -> ThreeWay {
    let mut dialogues: Vec<&str> = q
        .predictions
        .iter()
        .map(|(it, _)| it.dialogue_id.as_str())
        .collect();
    dialogues.sort_unstable();
    dialogues.dedup();
    let mut label_of: Vec<Option<f64>> = vec![None; q.predictions.len()];
    for (i, y) in &q.labels {
        if let Some(slot) = label_of.get_mut(*i) {
            *slot = Some(*y);
        }
    }
    let items: Vec<PpiItem> = q
        .predictions
        .iter()
        .zip(&label_of)
        .map(|((it, f), y)| PpiItem {
            cluster: dialogues
                .binary_search(&it.dialogue_id.as_str())
                .unwrap_or(0),
            prediction: *f,
            label: *y,
        })
        .collect();
    let opts = ReviewedMeanOptions {
        level,
        range: q.range,
    };
    match reviewed_mean(&items, &opts) {
        Ok(m) => ThreeWay {
            judges: estimate(&m.judges, m.items, m.clusters),
            reviewers: estimate(&m.reviewers, m.labelled, m.labelled_clusters),
            ppi: estimate(&m.ppi, m.labelled, m.labelled_clusters),
            lambda: Some(m.lambda),
            lambda_rule: Some(match m.lambda_rule {
                stats::LambdaRule::CrossFitted => LambdaRule::CrossFitted,
                stats::LambdaRule::Plain => LambdaRule::Plain,
            }),
            few_clusters: m.few_clusters,
        },
        Err(_) => without_interval(q),
    }
}

/// The three estimates of a quantity given as [`PpiItem`]s directly (each item's cluster, the
/// judges' prediction and the reviewers' value where reviewed), as [`three_ways`] makes them;
/// `mtr review` of a judge folder's holes uses it for the share of each run's holes that are
/// relevant.
pub(crate) fn three_ways_of(items: &[PpiItem], range: (f64, f64), level: f64) -> ThreeWay {
    let opts = ReviewedMeanOptions { level, range };
    match reviewed_mean(items, &opts) {
        Ok(m) => ThreeWay {
            judges: estimate(&m.judges, m.items, m.clusters),
            reviewers: estimate(&m.reviewers, m.labelled, m.labelled_clusters),
            ppi: estimate(&m.ppi, m.labelled, m.labelled_clusters),
            lambda: Some(m.lambda),
            lambda_rule: Some(match m.lambda_rule {
                stats::LambdaRule::CrossFitted => LambdaRule::CrossFitted,
                stats::LambdaRule::Plain => LambdaRule::Plain,
            }),
            few_clusters: m.few_clusters,
        },
        Err(_) => {
            let labels: Vec<f64> = items.iter().filter_map(|i| i.label).collect();
            let plain = |estimate, n| ReviewEstimate {
                estimate,
                ci: None,
                n,
                method: None,
            };
            ThreeWay {
                judges: plain(
                    mtr_metrics::stats::mean(items.iter().map(|i| i.prediction)),
                    items.len(),
                ),
                reviewers: plain(
                    mtr_metrics::stats::mean(labels.iter().copied()),
                    labels.len(),
                ),
                ppi: plain(None, labels.len()),
                lambda: None,
                lambda_rule: None,
                few_clusters: None,
            }
        }
    }
}

/// The means alone where the prediction-powered estimator has too little to work with.
fn without_interval(q: &Quantity<'_>) -> ThreeWay {
    let n = q.labels.len();
    ThreeWay {
        judges: ReviewEstimate {
            estimate: mtr_metrics::stats::mean(q.predictions.iter().map(|(_, f)| *f)),
            ci: None,
            n: q.predictions.len(),
            method: None,
        },
        reviewers: ReviewEstimate {
            estimate: mtr_metrics::stats::mean(q.labels.iter().map(|(_, y)| *y)),
            ci: None,
            n,
            method: None,
        },
        ppi: ReviewEstimate {
            estimate: None,
            ci: None,
            n,
            method: None,
        },
        lambda: None,
        lambda_rule: None,
        few_clusters: None,
    }
}
