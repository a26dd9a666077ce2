//! The review of a whole audit ([`review`]) and its place in the summary ([`attach`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::dimension::Dimension;
use crate::error::Result;
use crate::items::aggregate::{ItemScore, score_items};
use crate::judges::record::Judgement;
use crate::output::ITEMS;
use crate::summary::Summary;

use super::reviewed_dimension::dimension;
use super::{EffectiveLabels, Review, audit_fingerprint, labels_path, sampled_labels};

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
        flagged_items: labels
            .keys()
            .filter(|k| !sampled_labels::is_sample_key(k))
            .count(),
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
    let lines = crate::review_queue::label_log::read_lines(&path, &audit_fingerprint(s))?;
    let labels = crate::review_queue::label_log::effective(&lines);
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
