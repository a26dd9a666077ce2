//! One quantity of one dimension three ways: from the judges on every audited item, from the
//! reviewers on their random sample, and prediction-powered (PPI++, the judges' scores on every
//! item correcting the reviewers' sample mean), each with its interval clustered by dialogue.
//!
//! The prediction-powered estimate takes the ensemble's prediction and each judge's own score
//! as predictors, each with its tuned weight ([`mtr_metrics::stats::ppi_mean_many`]), so one
//! informative judge beside judges that give every item the same grade still narrows the
//! interval (the ensemble's "rated below 3" may then never fire). That costs a degree of
//! freedom per predictor, so with few reviewed dialogues (fewer than
//! `2 + MIN_DEGREES`) it is the one-predictor PPI++ on the ensemble's prediction
//! ([`mtr_metrics::stats::ppi_mean`]). Which of the two is decided by the number of reviewed
//! dialogues alone, never by the labels' values. A judge's missing score (its judgement
//! failed) is its mean over the items it scored.

use std::collections::BTreeMap;

use mtr_metrics::stats::{
    ConfidenceInterval, PPI_MANY_MIN_DEGREES, PpiItem, PpiManyItem, ppi_mean, ppi_mean_many,
};

use crate::items::aggregate::ItemScore;
use crate::summary::Interval;

use super::{ReviewEstimate, ThreeWay};

/// The values of one quantity: the judges' prediction of every item, and the reviewers' value
/// of the sampled ones.
pub(super) struct Quantity<'a> {
    /// Items with a judge score, and the judges' prediction for each.
    pub predictions: Vec<(&'a ItemScore, f64)>,
    /// (index into `predictions`, reviewers' value) of the reviewed items.
    pub labels: Vec<(usize, f64)>,
    /// The judges whose own scores ([`ItemScore::per_judge`]) are predictors too.
    pub judges: Vec<String>,
    /// The values the quantity can take (a share: 0-1; a rating: 1-5).
    pub range: (f64, f64),
}

/// The estimate with its interval cut to the quantity's `range` (a share's interval from a
/// few dialogues can reach below 0 or above 1; nothing lies there, and cutting it off keeps
/// every value the interval covered).
fn estimate(
    ci: &ConfidenceInterval,
    n: usize,
    clusters: usize,
    range: (f64, f64),
) -> ReviewEstimate {
    let finite = ci.lower.is_finite() && ci.upper.is_finite();
    ReviewEstimate {
        estimate: ci.estimate.is_finite().then_some(ci.estimate),
        ci: finite.then_some(Interval {
            lower: ci.lower.clamp(range.0, range.1),
            upper: ci.upper.clamp(range.0, range.1),
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
    let labelled_dialogues = labelled_clusters(&items);
    let single = ppi_mean(&items, level);
    let many = (labelled_dialogues >= 2 + PPI_MANY_MIN_DEGREES)
        .then(|| ppi_mean_many(&with_judges(q, &items), level).ok())
        .flatten();
    match single {
        Ok(e) => {
            let judges = estimate(&e.predictions_only, e.items, e.clusters, q.range);
            let reviewers = estimate(&e.labels_only, e.labelled, e.labelled_clusters, q.range);
            match many {
                Some(m) => {
                    let names =
                        std::iter::once("ensemble").chain(q.judges.iter().map(String::as_str));
                    ThreeWay {
                        judges,
                        reviewers,
                        ppi: estimate(&m.ppi, m.labelled, m.clusters, q.range),
                        lambda: None,
                        weights: names
                            .zip(&m.lambdas)
                            .map(|(k, w)| (k.to_string(), *w))
                            .collect(),
                    }
                }
                None => ThreeWay {
                    judges,
                    reviewers,
                    ppi: estimate(&e.ppi, e.labelled, e.clusters, q.range),
                    lambda: Some(e.lambda),
                    weights: BTreeMap::from([("ensemble".to_string(), e.lambda)]),
                },
            }
        }
        Err(_) => without_interval(q),
    }
}

/// The dialogues with at least one reviewed item.
fn labelled_clusters(items: &[PpiItem]) -> usize {
    let mut c: Vec<usize> = items
        .iter()
        .filter(|i| i.label.is_some())
        .map(|i| i.cluster)
        .collect();
    c.sort_unstable();
    c.dedup();
    c.len()
}

/// The means alone where the prediction-powered estimator has too little to work with.
fn without_interval(q: &Quantity<'_>) -> ThreeWay {
    let n = q.labels.len();
    ThreeWay {
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
        weights: BTreeMap::new(),
    }
}

/// The items with the ensemble's prediction and then each judge's own score as predictors (a
/// missing score: the judge's mean over the items it scored, or 0 when it scored none).
fn with_judges(q: &Quantity<'_>, items: &[PpiItem]) -> Vec<PpiManyItem> {
    let fill: Vec<f64> = q
        .judges
        .iter()
        .map(|j| {
            mean(
                q.predictions
                    .iter()
                    .filter_map(|(it, _)| it.per_judge.get(j).copied()),
            )
            .unwrap_or(0.0)
        })
        .collect();
    q.predictions
        .iter()
        .zip(items)
        .map(|((it, _), p)| {
            let mut predictions = vec![p.prediction];
            predictions.extend(q.judges.iter().zip(&fill).map(|(j, m)| {
                it.per_judge
                    .get(j)
                    .copied()
                    .filter(|x| x.is_finite())
                    .unwrap_or(*m)
            }));
            PpiManyItem {
                cluster: p.cluster,
                predictions,
                label: p.label,
            }
        })
        .collect()
}
