//! The bias checks of `summary.json`: position, length and pool-length biases.

use serde::{Deserialize, Serialize};

use super::Interval;
use crate::dimension::Dimension;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BiasInfo {
    /// Gold pick-rate by position per judge (completeness), with a chi-square test of the
    /// chosen positions against uniform.
    pub position: Vec<PositionBias>,
    /// Pearson correlation between item score and text length.
    pub length: Vec<LengthBias>,
    /// Judges of the same model family as the benchmark's generator, and judges that rate
    /// their own family's answers above the annotators more than other answers (human
    /// calibration: see `human.comparisons[].residual_by_source`).
    pub self_preference: Vec<String>,
    /// Length of the passage a judge picked against the rest of its pool (completeness).
    #[serde(default)]
    pub pool_length: Vec<PoolLengthBias>,
}

/// Does a judge pick long passages? Per judge (and `ensemble`: all judges' picks), over
/// discriminability trials: the picked passage's words minus the mean words of the rest of its
/// pool, against the same for the gold (what a judge that always picked the gold would show).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PoolLengthBias {
    pub judge: String,
    /// Valid picks.
    pub picks: usize,
    /// Mean of (picked passage words - mean words of the other passages of its pool).
    pub picked_minus_rest: Option<f64>,
    /// Mean of (gold words - mean words of the other passages) over the same trials.
    pub gold_minus_rest: Option<f64>,
    /// `picked_minus_rest - gold_minus_rest`: the length preference beyond the gold's length;
    /// near 0 for a judge that ignores length.
    pub excess: Option<f64>,
    /// Cluster-bootstrap interval of `excess` (clusters = items: trials of one item together).
    pub excess_ci: Option<Interval>,
    /// Share of picks that were the longest passage of their pool, and the share of trials
    /// whose gold was the longest (the rate a gold-picking judge would show).
    pub longest_picked: Option<f64>,
    pub longest_is_gold: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PositionBias {
    pub judge: String,
    /// Pool size the table is for (pools of other sizes are left out).
    pub pool_size: usize,
    /// Trials with the gold at each position (1-based positions as indices 0..pool_size).
    pub gold_at: Vec<usize>,
    /// Of those, trials where the judge picked the gold.
    pub gold_picked: Vec<usize>,
    /// How often the judge picked each position (any passage).
    pub picked_at: Vec<usize>,
    /// Chi-square of `picked_at` against uniform, corrected for the clustering of trials in
    /// items (Rao-Scott first-order: the independent-trials statistic divided by the mean
    /// design effect, at least 1).
    pub chi_square: Option<f64>,
    pub df: Option<usize>,
    pub p_value: Option<f64>,
    /// Items (clusters) behind the trials.
    #[serde(default)]
    pub items: usize,
    /// Mean design effect of the position shares (1 = trials as good as independent).
    #[serde(default)]
    pub design_effect: Option<f64>,
    /// The uncorrected test, as if trials of one item were independent (optimistic).
    #[serde(default)]
    pub chi_square_independent: Option<f64>,
    #[serde(default)]
    pub p_value_independent: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LengthBias {
    pub dimension: Dimension,
    /// `ensemble` or a judge name.
    pub judge: String,
    /// What was measured: `passage_words` or `answer_words`.
    pub length_of: String,
    pub pearson: Option<f64>,
    pub p_value: Option<f64>,
    pub n: usize,
}
