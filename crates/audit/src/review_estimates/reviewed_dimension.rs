//! The review of one dimension: the share that fails (and the mean rating) three ways, each
//! judge's agreement with the reviewers, and the sentence saying which number to publish.

use std::collections::BTreeMap;

use crate::dimension::Dimension;
use crate::items::aggregate::ItemScore;
use crate::statistics::resample::Resampling;
use crate::summary::Summary;

use super::{
    EffectiveLabels, ReviewedDimension, ReviewerAgreement, estimates, reviewer_agreement,
    sampled_labels,
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
    let no_signal = d.lambda == Some(0.0);
    let gain = match (&d.ppi.ci, &d.reviewers.ci, no_signal) {
        (_, _, true) => {
            "the judges carry no signal here, so it equals the reviewers' own estimate".to_string()
        }
        (Some(p), Some(r), _) if r.upper - r.lower > p.upper - p.lower => format!(
            "the judges narrow the reviewers' interval by {:.0}%",
            (1.0 - (p.upper - p.lower) / (r.upper - r.lower)) * 100.0
        ),
        (Some(_), Some(_), _) => {
            "the judges do not narrow the reviewers' interval here".to_string()
        }
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
pub(super) fn dimension(
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
    let (reviewed, unusable) = sampled_labels::reviewed(dim, items, labels, threshold);
    if reviewed.is_empty() {
        return (None, unusable);
    }
    let index: BTreeMap<String, usize> = items
        .iter()
        .enumerate()
        .map(|(i, it)| (sampled_labels::item_key(it), i))
        .collect();
    let at =
        |r: &sampled_labels::Reviewed<'_>| index.get(&sampled_labels::item_key(r.item)).copied();
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
            range: (1.0, 5.0),
        };
        estimates::three_ways(&q, s.settings.confidence)
    });
    let agreement = agreements(s, dim, &reviewed, threshold);
    let mut d = ReviewedDimension {
        fails: fails_text(dim, threshold),
        judges: share.judges,
        reviewers: share.reviewers,
        ppi: share.ppi,
        lambda: share.lambda,
        lambda_rule: share.lambda_rule,
        few_clusters: share.few_clusters,
        mean_rating,
        agreement,
        reviewers_agreement: reviewer_agreement::between_reviewers(
            dim,
            &reviewed,
            &resampling(s, dim, "reviewers"),
        ),
        publish: String::new(),
    };
    d.publish = publish_line(dim, &d);
    (Some(d), unusable)
}

/// The resampling of one dimension's agreement intervals, seeded by who is compared.
fn resampling(s: &Summary, dim: Dimension, who: &str) -> Resampling {
    Resampling {
        resamples: s.settings.resamples,
        level: s.settings.confidence,
        seed: crate::seed::derive(s.settings.seed, &["review", dim.name(), who]),
    }
}

/// Each judge's agreement with the reviewers, and the ensemble's when there are several.
fn agreements(
    s: &Summary,
    dim: Dimension,
    reviewed: &[sampled_labels::Reviewed<'_>],
    threshold: f64,
) -> Vec<ReviewerAgreement> {
    let mut agreement: Vec<ReviewerAgreement> = s
        .judges
        .iter()
        .map(|j| {
            reviewer_agreement::judge_vs_reviewers(
                dim,
                Some(&j.name),
                reviewed,
                threshold,
                &resampling(s, dim, &j.name),
            )
        })
        .collect();
    if s.judges.len() > 1 {
        agreement.push(reviewer_agreement::judge_vs_reviewers(
            dim,
            None,
            reviewed,
            threshold,
            &resampling(s, dim, "ensemble"),
        ));
    }
    agreement
}
