//! The per-dimension part of `summary.json`: each dimension's scores, intervals, judges'
//! means, agreement and histogram, and the failure rates by turn depth and prompt length.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Interval;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DimensionSummary {
    pub title: String,
    /// Item score range: `[1, 5]` for ratings, `[0, 1]` for the discriminability share.
    pub scale: [f64; 2],
    pub items: usize,
    /// Items with a score (at least one valid judgement).
    pub scored: usize,
    /// Items whose every judgement failed.
    pub unscored: usize,
    pub mean: Option<f64>,
    pub ci: Option<Interval>,
    /// The mean over items every judge scored (a judge's failures cannot move it toward the
    /// other judges; it may differ from `mean` when failures are not at random).
    #[serde(default)]
    pub complete_case: Option<Estimate>,
    /// The mean over every scored item after removing additive judge effects: each judge's
    /// offset from the ensemble is estimated on the items all judges scored and subtracted
    /// before averaging, so an item scored only by a lenient judge is not scored leniently.
    #[serde(default)]
    pub judge_adjusted: Option<Estimate>,
    /// Items below the flag threshold.
    pub flagged: usize,
    pub flag_threshold: f64,
    pub per_judge: BTreeMap<String, JudgeScore>,
    pub agreement: Agreement,
    /// Histogram of item scores.
    pub histogram: Vec<Bin>,
    /// Raw verdict counts per judge: ratings 1..5 for ratings, [not gold, gold] for picks.
    pub verdicts: BTreeMap<String, Vec<usize>>,
}

/// A mean over items with its cluster-bootstrap interval (clusters = dialogues).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Estimate {
    /// Items it is computed on.
    pub n: usize,
    pub mean: Option<f64>,
    pub ci: Option<Interval>,
    /// Judge offsets subtracted (judge-adjusted mean): judge score minus the ensemble mean on
    /// the items all judges scored.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub offsets: BTreeMap<String, f64>,
}

/// Failure rates of judgements by turn depth and by prompt length.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FailureRates {
    pub judgements: usize,
    pub failed: usize,
    /// By 1-based turn number.
    pub by_turn: Vec<RateBin>,
    /// By the prompt's tiktoken count (as sent, after fitting to the context).
    pub by_prompt_tokens: Vec<RateBin>,
}

/// Judgements in a bin `[lower, upper)` (`upper` none: no bound) and how many failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RateBin {
    pub lower: u64,
    pub upper: Option<u64>,
    pub judgements: usize,
    pub failed: usize,
    pub rate: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JudgeScore {
    /// Items this judge scored.
    pub n: usize,
    pub mean: Option<f64>,
    pub ci: Option<Interval>,
    /// Failed judgements of this judge in this dimension.
    pub failed: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Agreement {
    /// Krippendorff's alpha (ordinal) over items, judges as coders (rating dimensions; for
    /// completeness over per-judge gold-pick shares).
    pub krippendorff_alpha_ordinal: Option<f64>,
    /// Fleiss' kappa on discriminability picks (which passage: the gold or which negative),
    /// over trials every judge answered.
    pub fleiss_kappa: Option<f64>,
    /// Units the statistic used.
    pub units: usize,
    /// Why a statistic is missing (fewer than two judges, no variation, ...).
    pub note: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Bin {
    pub lower: f64,
    pub upper: f64,
    pub count: usize,
}

/// A low-scoring item with the text a reviewer needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorstItem {
    pub turn_id: String,
    pub dialogue_id: String,
    pub turn: usize,
    pub passage_id: Option<String>,
    pub score: f64,
    pub per_judge: BTreeMap<String, f64>,
    /// The last utterances before the question (at most four).
    pub history: Vec<String>,
    pub question: String,
    pub passage: Option<String>,
    pub answer: Option<String>,
    /// A passage the judges preferred over the gold (completeness).
    pub preferred_passage_id: Option<String>,
    pub preferred_passage: Option<String>,
    /// One justification per judge.
    pub justifications: BTreeMap<String, String>,
}
