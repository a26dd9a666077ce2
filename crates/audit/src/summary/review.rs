//! The "Reviewed" figures as `summary.json` records them (its `review`): per dimension the share
//! failing three ways, each judge's agreement with the reviewers, and which number to publish.
//! [`crate::review_estimates`] computes them from people's labels; the report renders them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::dimension::Dimension;
use crate::statistics::interval::Interval;

/// What the reviewers' labels say about an audit (`summary.json`'s `review`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Review {
    /// Reviewers with at least one label.
    pub reviewers: Vec<String>,
    /// Random-sample items with at least one usable label.
    pub sample_items: usize,
    /// Random-sample labels that matched no scored item or did not fit their dimension.
    pub unusable_labels: usize,
    /// Flagged-queue items labelled (corrections; not in the estimates).
    pub flagged_items: usize,
    /// Per dimension with reviewed items.
    pub dimensions: BTreeMap<Dimension, ReviewedDimension>,
    /// Which number to publish, in one plain sentence.
    pub publish: String,
}

/// One dimension's reviewed estimates: `judges`, `reviewers` and `ppi` are the share of items
/// that fail.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewedDimension {
    /// What "fails" means in this dimension.
    pub fails: String,
    /// Share failing by the judges' verdicts on every scored item.
    pub judges: ReviewEstimate,
    /// Share failing by the reviewers on their random sample.
    pub reviewers: ReviewEstimate,
    /// Prediction-powered share failing (PPI++).
    pub ppi: ReviewEstimate,
    /// PPI++'s tuned weight of the ensemble's prediction, in `[0, 1]` (0: the judges add
    /// nothing), when the ensemble's prediction is the only predictor (few reviewed dialogues).
    pub lambda: Option<f64>,
    /// Each predictor's tuned weight (`ensemble`, then each judge's own score), when there
    /// are enough reviewed dialogues to use every judge; else the ensemble's `lambda` alone.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub weights: BTreeMap<String, f64>,
    /// The mean 1-5 rating three ways (rating dimensions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_rating: Option<ThreeWay>,
    /// Each judge's, and the ensemble's, agreement with the reviewers.
    pub agreement: Vec<ReviewerAgreement>,
    /// The two reviewers with the most items in common, against each other (the ceiling).
    pub reviewers_agreement: Option<ReviewerAgreement>,
    /// Which of the three to publish, and why.
    pub publish: String,
}

/// One estimate with its interval (clustered by dialogue; `resamples` 0: analytic).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewEstimate {
    pub estimate: Option<f64>,
    pub ci: Option<Interval>,
    /// Items it rests on (judges: every scored item; reviewers and PPI: the reviewed ones).
    pub n: usize,
}

/// A quantity three ways.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ThreeWay {
    pub judges: ReviewEstimate,
    pub reviewers: ReviewEstimate,
    pub ppi: ReviewEstimate,
    pub lambda: Option<f64>,
    /// As [`ReviewedDimension::weights`].
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub weights: BTreeMap<String, f64>,
}

/// Agreement of a judge (or of one reviewer) with the reviewers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewerAgreement {
    /// A judge's name, `ensemble`, or `a vs b` for two reviewers.
    pub who: String,
    pub statistic: String,
    pub kappa: Option<f64>,
    /// Cluster-bootstrap interval over dialogues.
    pub ci: Option<Interval>,
    /// Items compared.
    pub n: usize,
}
