//! How far each judge agrees with the reviewers on the sampled items, and the reviewers with
//! each other (the ceiling a judge can reach): quadratic-weighted kappa of the 1-5 ratings
//! (a judge's rating and the reviewers' mean rating rounded to a grade), Cohen's kappa of
//! "fails" for completeness (a judge fails an item when its share of trials that picked the
//! gold is below the audit's flag threshold, 0.5 by default; the reviewers fail it when the
//! mean of their "not the gold" answers is at least one half). Intervals: cluster bootstrap over dialogues, seeded.

use mtr_metrics::agreement::{KappaWeights, cohens_kappa, weighted_kappa};

use crate::dimension::Dimension;
use crate::statistics::resample::{Resampling, cluster_interval};

use super::ReviewerAgreement;
use super::sampled_labels::Reviewed;

/// The statistic's name in the report and `summary.json`.
pub(super) fn statistic(dim: Dimension) -> &'static str {
    if dim.is_rating() {
        "quadratic-weighted kappa"
    } else {
        "Cohen's kappa (fails)"
    }
}

/// A value as the kappa's category: the rounded grade, or 1 for "fails" and 0 for "passes".
fn category(dim: Dimension, rating: Option<f64>, fails: f64) -> Option<i64> {
    if dim.is_rating() {
        rating.map(|r| r.round() as i64)
    } else {
        Some(i64::from(fails >= 0.5))
    }
}

fn kappa(dim: Dimension, a: &[i64], b: &[i64]) -> Option<f64> {
    let k = if dim.is_rating() {
        weighted_kappa(a, b, KappaWeights::Quadratic)
    } else {
        cohens_kappa(a, b)
    };
    k.ok().filter(|k| k.is_finite())
}

/// The kappa of paired categories with its cluster-bootstrap interval.
fn agreement(
    dim: Dimension,
    who: String,
    pairs: &[(i64, i64, &str)],
    r: &Resampling,
) -> ReviewerAgreement {
    let a: Vec<i64> = pairs.iter().map(|p| p.0).collect();
    let b: Vec<i64> = pairs.iter().map(|p| p.1).collect();
    let clusters: Vec<&str> = pairs.iter().map(|p| p.2).collect();
    let k = (!pairs.is_empty()).then(|| kappa(dim, &a, &b)).flatten();
    let ci = k.and_then(|_| {
        cluster_interval(&clusters, r, |idx| {
            let x: Vec<i64> = idx.iter().map(|&i| a[i]).collect();
            let y: Vec<i64> = idx.iter().map(|&i| b[i]).collect();
            kappa(dim, &x, &y)
        })
    });
    ReviewerAgreement {
        who,
        statistic: statistic(dim).to_string(),
        kappa: k,
        ci,
        n: pairs.len(),
    }
}

/// `judge` (a judge's name, or `None` for the ensemble's mean) against the reviewers' mean.
pub(super) fn judge_vs_reviewers(
    dim: Dimension,
    judge: Option<&str>,
    reviewed: &[Reviewed<'_>],
    threshold: f64,
    r: &Resampling,
) -> ReviewerAgreement {
    let pairs: Vec<(i64, i64, &str)> = reviewed
        .iter()
        .filter_map(|x| {
            let score = match judge {
                Some(j) => x.item.per_judge.get(j).copied(),
                None => x.item.score,
            }?;
            let judge_cat = if dim.is_rating() {
                category(dim, Some(score), 0.0)
            } else {
                category(dim, None, f64::from(score < threshold))
            }?;
            let reviewer_cat = category(dim, x.mean_rating(), x.mean_fails())?;
            Some((judge_cat, reviewer_cat, x.item.dialogue_id.as_str()))
        })
        .collect();
    agreement(dim, judge.unwrap_or("ensemble").to_string(), &pairs, r)
}

/// The two reviewers who labelled the most items in common, against each other; `None` with
/// fewer than two reviewers on any item.
pub(super) fn between_reviewers(
    dim: Dimension,
    reviewed: &[Reviewed<'_>],
    r: &Resampling,
) -> Option<ReviewerAgreement> {
    let mut shared: std::collections::BTreeMap<(&str, &str), usize> = Default::default();
    for x in reviewed {
        let names: Vec<&str> = x.answers.keys().map(String::as_str).collect();
        for (i, a) in names.iter().enumerate() {
            for b in &names[i + 1..] {
                *shared.entry((a, b)).or_default() += 1;
            }
        }
    }
    let ((a, b), _) = shared
        .into_iter()
        .max_by(|x, y| x.1.cmp(&y.1).then(y.0.cmp(&x.0)))?;
    let pairs: Vec<(i64, i64, &str)> = reviewed
        .iter()
        .filter_map(|x| {
            let (p, q) = (x.answers.get(a)?, x.answers.get(b)?);
            Some((
                category(dim, p.rating, p.fails)?,
                category(dim, q.rating, q.fails)?,
                x.item.dialogue_id.as_str(),
            ))
        })
        .collect();
    Some(agreement(dim, format!("{a} vs {b}"), &pairs, r))
}
