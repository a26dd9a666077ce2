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
    /// PPI++'s weight of the ensemble's prediction, in `[0, 1]` (0: the judges add nothing;
    /// 1: plain PPI); the mean over the reviewed items of the weight each took.
    pub lambda: Option<f64>,
    /// How `lambda` was set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lambda_rule: Option<LambdaRule>,
    /// The reviewed dialogues, when fewer than 10: the intervals rest on few clusters and are
    /// widened for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub few_clusters: Option<usize>,
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
    /// How the interval was made (absent without an interval).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<IntervalMethod>,
}

/// A quantity three ways.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ThreeWay {
    pub judges: ReviewEstimate,
    pub reviewers: ReviewEstimate,
    pub ppi: ReviewEstimate,
    /// As [`ReviewedDimension::lambda`].
    pub lambda: Option<f64>,
    /// As [`ReviewedDimension::lambda_rule`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lambda_rule: Option<LambdaRule>,
    /// As [`ReviewedDimension::few_clusters`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub few_clusters: Option<usize>,
}

/// What an estimate's interval is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum IntervalMethod {
    /// Clopper-Pearson on the Korn-Graubard effective sample size (a share's 0/1 labels).
    ClopperPearson,
    /// Adjusted Wald (two pseudo-items at the range's ends), design effect of the dialogues,
    /// Student's t on (dialogues - 1) degrees of freedom.
    AdjustedWald,
}

impl IntervalMethod {
    /// The method's name in a report.
    pub fn title(self) -> &'static str {
        match self {
            IntervalMethod::ClopperPearson => "Clopper-Pearson (Korn-Graubard)",
            IntervalMethod::AdjustedWald => "adjusted Wald",
        }
    }
}

/// How PPI++'s `lambda` was set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LambdaRule {
    /// Tuned on the other half of the reviewed dialogues (cross-fitted), clipped to `[0, 1]`.
    CrossFitted,
    /// 1 (plain PPI): too few reviewed dialogues to tune it on a sample of its own.
    Plain,
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
