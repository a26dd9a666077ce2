//! The verdict on the judges as `summary.json` holds it: how far the judges separate items
//! ([`Separation`]), how each judge's verdicts are spread ([`JudgeSpread`], [`Behaviour`]), and
//! the thresholds that define those words. [`crate::statistics::verdict`] computes the verdict from a
//! summary; these types live apart so that the summary can hold the verdict without importing
//! the module that reads the summary.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::dimension::Dimension;

/// A judge needs this many valid verdicts in a dimension before its spread is judged.
pub(crate) const MIN_ANSWERS: usize = 5;
/// A judge whose most common verdict (a grade; for picks, a pool position) covers at least
/// this share of its verdicts is constant.
pub(crate) const CONSTANT_SHARE: f64 = 0.95;
/// A judge that abstains on at least this share of its discriminability answers picks nothing.
pub(crate) const ABSTAINS_SHARE: f64 = 0.9;
/// Agreement (alpha for ratings, kappa for picks) at or above which the judges separate items.
pub(crate) const AGREEMENT_SEPARATES: f64 = 0.4;
/// Agreement at or above which (and below [`AGREEMENT_SEPARATES`]) the separation is weak.
pub(crate) const AGREEMENT_WEAK: f64 = 0.2;
/// Completeness: with at least this share of all answers abstaining, the separation is at
/// most weak; with [`ABSTAINS_SHARE`] or more, the judges cannot separate.
pub(crate) const ABSTENTION_WEAK: f64 = 0.5;

/// How far the judges separate items, best last (the overall verdict is the best dimension's).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Separation {
    /// Nothing was judged.
    NotJudged,
    /// Every judge is constant or abstains, or the judges disagree: scores and flags say
    /// nothing about the benchmark.
    CannotSeparate,
    /// Judgements vary but their agreement cannot be measured (one varying judge).
    Unconfirmed,
    /// The judges agree only fairly (or abstain on most pools).
    Weak,
    /// At least two varying judges agree at least moderately.
    Separates,
}

impl Separation {
    pub fn name(self) -> &'static str {
        match self {
            Separation::NotJudged => "not judged",
            Separation::CannotSeparate => "cannot separate",
            Separation::Unconfirmed => "unconfirmed",
            Separation::Weak => "weak",
            Separation::Separates => "separates",
        }
    }
}

/// How one judge's verdicts in one dimension are spread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Behaviour {
    /// Fewer than [`MIN_ANSWERS`] valid verdicts.
    TooFew,
    /// One grade (or one pool position) for nearly everything.
    Constant,
    /// Abstains on nearly every discriminability pool.
    Abstains,
    /// Its verdicts vary.
    Varies,
}

/// The spread of one judge's verdicts in one dimension.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JudgeSpread {
    pub judge: String,
    /// Valid verdicts (ratings; for completeness picks and abstentions).
    pub answers: usize,
    /// The most common verdict: a grade 1-5, or (completeness) a 1-based pool position.
    pub mode: Option<usize>,
    /// Share of the most common verdict among the ratings or picks.
    pub mode_share: Option<f64>,
    /// Standard deviation of the rounded grades (ratings only).
    pub sd: Option<f64>,
    /// Share of abstentions among the answers (completeness only).
    pub abstention_share: Option<f64>,
    pub behaviour: Behaviour,
}

/// The verdict on the judges in one dimension.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DimensionVerdict {
    pub separation: Separation,
    /// The agreement the verdict used: Krippendorff's alpha (ordinal) for ratings, Fleiss'
    /// kappa on the passages picked for completeness.
    pub agreement: Option<f64>,
    /// Share of all discriminability answers that abstained (completeness only).
    pub abstention_share: Option<f64>,
    pub judges: Vec<JudgeSpread>,
    /// Why, in a few words.
    pub reason: String,
}

/// The verdict on the judges, shown as the first lines of the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Verdict {
    /// The best dimension's separation.
    pub separation: Separation,
    /// The one-line verdict.
    pub line: String,
    pub dimensions: BTreeMap<Dimension, DimensionVerdict>,
}

impl Verdict {
    /// True when the judges' flags in `dim` are no evidence about the benchmark.
    pub fn fails(&self, dim: Dimension) -> bool {
        self.dimensions
            .get(&dim)
            .is_some_and(|d| d.separation == Separation::CannotSeparate)
    }
}
