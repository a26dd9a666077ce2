//! The "Reviewed" part of an audit: what people's labels on a random sample of the audited items
//! say, and the estimates a paper can print. Per dimension:
//! - the share of items that fail (alignment and the answer dimensions: a rating below the
//!   audit's threshold, 3 by default; completeness: the reviewer did not pick the gold), and
//!   for the rating dimensions the mean rating, each three ways with 95% intervals: from the
//!   judges alone (every audited item; biased by the judges by an unknown amount), from the
//!   reviewers alone (their random sample), and prediction-powered (PPI++: the reviewers' mean
//!   corrected by the judges' scores on every item; unbiased whatever the judges are worth,
//!   narrower than the reviewers' alone when the judges carry signal). All intervals cluster
//!   by dialogue.
//! - each judge's agreement with the reviewers (kappa with a cluster-bootstrap interval), and
//!   with two reviewers their own agreement (the ceiling);
//! - one plain sentence saying which number to publish.
//!
//! Only random-sample labels enter (keys `"<dimension>|<turn_id>|<passage_id>"`); the flagged
//! queue is not a random sample and only feeds the corrections ([`corrections`]). Several
//! reviewers on one item count once, with the mean of their answers (the mean of their 0/1
//! "fails", the mean of their ratings). The judges' prediction of "fails" is, per item, 1 when
//! the ensemble's rating is below the threshold (rating dimensions) and the share of the
//! judges' trials that did not pick the gold (completeness); of the rating, the ensemble's
//! mean rating. Items no judge scored are left out of all three estimates.

mod agreement;
pub mod corrections;
mod estimates;
pub mod sample;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::dimension::Dimension;
use crate::error::Result;
use crate::items::aggregate::{ItemScore, score_items};
use crate::judges::record::Judgement;
use crate::output::ITEMS;
use crate::statistics::resample::Resampling;
use crate::summary::Summary;

pub use crate::review::labels::{EffectiveLabels, audit_fingerprint, labels_path};
pub use crate::summary::review::{
    Review, ReviewEstimate, ReviewedDimension, ReviewerAgreement, ThreeWay,
};

fn fails_text(dim: Dimension, threshold: f64) -> String {
    if dim.is_rating() {
        format!("rated below {threshold}")
    } else {
        "the gold was not picked".into()
    }
}

fn pct(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{:.1}%", v * 100.0))
}

/// The sentence saying which number of a dimension to publish.
fn publish_line(dim: Dimension, d: &ReviewedDimension) -> String {
    let Some(ppi) = d.ppi.estimate else {
        return format!(
            "{}: too few reviewed items for an interval ({}; an interval needs two scored items from two dialogues); review more of the random sample before publishing any share, and never the judges' {} alone.",
            dim.name(),
            d.reviewers.n,
            pct(d.judges.estimate)
        );
    };
    let ci = d.ppi.ci.as_ref().map_or(String::new(), |c| {
        format!(" [{}, {}]", pct(Some(c.lower)), pct(Some(c.upper)))
    });
    let no_signal = d.lambda == Some(0.0) || d.weights.values().all(|w| *w == 0.0);
    let gain = match (&d.ppi.ci, &d.reviewers.ci, no_signal) {
        (_, _, true) => {
            "the judges carry no signal here, so it equals the reviewers' own estimate".to_string()
        }
        (Some(p), Some(r), _) if r.upper > r.lower => format!(
            "the judges narrow the reviewers' interval by {:.0}%",
            (1.0 - (p.upper - p.lower) / (r.upper - r.lower)) * 100.0
        ),
        _ => "it rests on the reviewers' sample".to_string(),
    };
    format!(
        "{}: publish the prediction-powered {}{ci} of items {} ({} reviewed): it is unbiased whatever the judges are worth, and {gain}; not the judges' {}.",
        dim.name(),
        pct(Some(ppi)),
        d.fails,
        d.ppi.n,
        pct(d.judges.estimate)
    )
}

/// The review of one dimension, or `None` when no sampled item of it was labelled.
fn dimension(
    s: &Summary,
    dim: Dimension,
    items: &[&ItemScore],
    labels: &EffectiveLabels,
) -> (Option<ReviewedDimension>, usize) {
    let threshold = if dim.is_rating() {
        s.settings.flag_rating_below
    } else {
        s.settings.flag_share_below
    };
    let (reviewed, unusable) = sample::reviewed(dim, items, labels, threshold);
    if reviewed.is_empty() {
        return (None, unusable);
    }
    let index: BTreeMap<String, usize> = items
        .iter()
        .enumerate()
        .map(|(i, it)| (sample::item_key(it), i))
        .collect();
    let judge_names: Vec<String> = s.judges.iter().map(|j| j.name.clone()).collect();
    let at = |r: &sample::Reviewed<'_>| index.get(&sample::item_key(r.item)).copied();
    let share = estimates::Quantity {
        predictions: items
            .iter()
            .map(|it| {
                let x = it.score.unwrap_or(f64::NAN);
                let f = if dim.is_rating() {
                    f64::from(x < threshold)
                } else {
                    1.0 - x
                };
                (*it, f)
            })
            .collect(),
        labels: reviewed
            .iter()
            .filter_map(|r| Some((at(r)?, r.mean_fails())))
            .collect(),
        judges: judge_names.clone(),
        range: (0.0, 1.0),
    };
    let share = estimates::three_ways(&share, s.settings.confidence);
    let mean_rating = dim.is_rating().then(|| {
        let q = estimates::Quantity {
            predictions: items
                .iter()
                .map(|it| (*it, it.score.unwrap_or(f64::NAN)))
                .collect(),
            labels: reviewed
                .iter()
                .filter_map(|r| Some((at(r)?, r.mean_rating()?)))
                .collect(),
            judges: judge_names.clone(),
            range: (1.0, 5.0),
        };
        estimates::three_ways(&q, s.settings.confidence)
    });
    let resampling = |who: &str| Resampling {
        resamples: s.settings.resamples,
        level: s.settings.confidence,
        seed: crate::seed::derive(s.settings.seed, &["review", dim.name(), who]),
    };
    let mut agreement: Vec<ReviewerAgreement> = s
        .judges
        .iter()
        .map(|j| {
            agreement::judge_vs_reviewers(
                dim,
                Some(&j.name),
                &reviewed,
                threshold,
                &resampling(&j.name),
            )
        })
        .collect();
    if s.judges.len() > 1 {
        agreement.push(agreement::judge_vs_reviewers(
            dim,
            None,
            &reviewed,
            threshold,
            &resampling("ensemble"),
        ));
    }
    let mut d = ReviewedDimension {
        fails: fails_text(dim, threshold),
        judges: share.judges,
        reviewers: share.reviewers,
        ppi: share.ppi,
        lambda: share.lambda,
        weights: share.weights,
        mean_rating,
        agreement,
        reviewers_agreement: agreement::between_reviewers(dim, &reviewed, &resampling("reviewers")),
        publish: String::new(),
    };
    d.publish = publish_line(dim, &d);
    (Some(d), unusable)
}

/// The review of an audit from its item scores and the reviewers' effective labels; `None`
/// when no label is about an audited item of the random sample.
pub fn review(s: &Summary, items: &[ItemScore], labels: &EffectiveLabels) -> Option<Review> {
    // Alignment items of suggested passages (rated pointwise) are not golds.
    let suggested: BTreeSet<(&str, &str)> = s
        .suggested_qrels
        .iter()
        .map(|x| (x.turn_id.as_str(), x.passage_id.as_str()))
        .collect();
    let mut dimensions = BTreeMap::new();
    let mut unusable = 0;
    for dim in s.dimensions.keys() {
        let of_dim: Vec<&ItemScore> = items
            .iter()
            .filter(|it| it.dimension == *dim && it.score.is_some_and(f64::is_finite))
            .filter(|it| {
                *dim != Dimension::Alignment
                    || !it
                        .passage_id
                        .as_deref()
                        .is_some_and(|p| suggested.contains(&(it.turn_id.as_str(), p)))
            })
            .collect();
        let (d, u) = dimension(s, *dim, &of_dim, labels);
        unusable += u;
        if let Some(d) = d {
            dimensions.insert(*dim, d);
        }
    }
    if dimensions.is_empty() {
        return None;
    }
    let reviewers: BTreeSet<&str> = labels
        .values()
        .flat_map(|by| by.keys().map(String::as_str))
        .collect();
    let sample_items = dimensions.values().map(|d| d.reviewers.n).sum::<usize>();
    let publish = if dimensions.values().any(|d| d.ppi.estimate.is_some()) {
        "Publish the prediction-powered (PPI) figures with their intervals: they rest on the reviewers' random sample and are unbiased whatever the judges are worth; the judges-only figures are biased by the judges by an unknown amount."
    } else {
        "Publish nothing yet: too few reviewed items for an interval; the judges-only figures are biased by the judges by an unknown amount."
    };
    Some(Review {
        reviewers: reviewers.into_iter().map(String::from).collect(),
        sample_items,
        unusable_labels: unusable,
        flagged_items: labels.keys().filter(|k| !sample::is_sample_key(k)).count(),
        dimensions,
        publish: publish.to_string(),
    })
}

/// Adds the review of `audit_dir`'s labels file to its summary, with the verdict it changes:
/// `Ok(false)`, and the summary untouched, without a labels file (or without a usable label).
/// A labels file of another audit is a user error.
pub fn attach(audit_dir: &Path, s: &mut Summary) -> Result<bool> {
    let path = labels_path(audit_dir);
    if !path.is_file() {
        return Ok(false);
    }
    let lines = crate::review::labels::read_lines(&path, &audit_fingerprint(s))?;
    let labels = crate::review::labels::effective(&lines);
    let items_path = audit_dir.join(ITEMS);
    let judgements: Vec<Judgement> = if items_path.is_file() {
        mtr_core::jsonl::read_all(&items_path)?
    } else {
        Vec::new()
    };
    let items = score_items(&judgements, s.judges.len().max(1), s.settings.trials);
    let Some(r) = review(s, &items, &labels) else {
        return Ok(false);
    };
    s.review = Some(r);
    s.verdict = Some(crate::statistics::verdict::of(s));
    Ok(true)
}

#[cfg(test)]
pub(crate) mod tests;
