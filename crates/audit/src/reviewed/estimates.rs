//! One quantity of one dimension three ways: from the judges on every audited item, from the
//! reviewers on their random sample, and prediction-powered (PPI++, the judges' scores on every
//! item correcting the reviewers' sample mean; [`mtr_metrics::stats::ppi_mean`]), each with its
//! interval clustered by dialogue.

use mtr_metrics::stats::{ConfidenceInterval, PpiItem, ppi_mean};

use crate::items::aggregate::ItemScore;
use crate::summary::Interval;

use super::{ReviewEstimate, ThreeWay};

/// The values of one quantity: the judges' prediction of every item, and the reviewers' value
/// of the sampled ones.
pub struct Quantity<'a> {
    /// Items with a judge score, and the judges' prediction for each.
    pub predictions: Vec<(&'a ItemScore, f64)>,
    /// (index into `predictions`, reviewers' value) of the reviewed items.
    pub labels: Vec<(usize, f64)>,
}

fn estimate(ci: &ConfidenceInterval, n: usize, clusters: usize) -> ReviewEstimate {
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
    }
}

fn mean(xs: impl Iterator<Item = f64>) -> Option<f64> {
    let (s, k) = xs.fold((0.0, 0usize), |(s, k), x| (s + x, k + 1));
    (k > 0).then(|| s / k as f64)
}

/// The three estimates with their `level` intervals; without enough reviewed items for an
/// interval (two, from two dialogues) the point estimates alone.
pub fn three_ways(q: &Quantity<'_>, level: f64) -> ThreeWay {
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
    let n = q.labels.len();
    match ppi_mean(&items, level) {
        Ok(e) => ThreeWay {
            judges: estimate(&e.predictions_only, e.items, e.clusters),
            reviewers: estimate(&e.labels_only, e.labelled, e.labelled_clusters),
            ppi: estimate(&e.ppi, e.labelled, e.clusters),
            lambda: Some(e.lambda),
        },
        Err(_) => ThreeWay {
            judges: ReviewEstimate {
                estimate: mean(q.predictions.iter().map(|(_, f)| *f)),
                ci: None,
                n: q.predictions.len(),
            },
            reviewers: ReviewEstimate {
                estimate: mean(q.labels.iter().map(|(_, y)| *y)),
                ci: None,
                n,
            },
            ppi: ReviewEstimate {
                estimate: None,
                ci: None,
                n,
            },
            lambda: None,
        },
    }
}
