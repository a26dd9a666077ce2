//! The top of `summary.json`: the [`Summary`] itself and who and what it is about (the
//! benchmark, the fingerprint, the judges, the plan).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{BiasInfo, CostInfo, DimensionSummary, FailureRates, Review, WorstItem};
use crate::config::AuditSettings;
use crate::dimension::Dimension;
use crate::items::aggregate::Suggestion;
use crate::items::selection::SkipReason;

/// Version of the summary format; bumped on incompatible changes.
pub(crate) const SUMMARY_VERSION: u32 = 1;

/// Everything an audit found, as `summary.json` holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Summary {
    /// [`SUMMARY_VERSION`] of the writer.
    pub summary_version: u32,
    /// The verdict on the judges: do they separate anything? (Shown first in the report;
    /// absent in summaries written before it existed, where the report computes it.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<crate::statistics::separation::Verdict>,
    /// Benchmark audited.
    pub benchmark: BenchmarkInfo,
    /// Data, config, prompt hashes and tool version.
    pub fingerprint: FingerprintInfo,
    /// The settings the audit ran with.
    pub settings: AuditSettings,
    /// The judges of the ensemble.
    pub judges: Vec<JudgeInfo>,
    /// False when the audit stopped early (budget); rerun the same command to finish it.
    pub complete: bool,
    /// Why the audit stopped early.
    pub stopped: Option<String>,
    /// What was audited and what was skipped.
    pub plan: PlanInfo,
    /// Per dimension, in canonical order.
    pub dimensions: BTreeMap<Dimension, DimensionSummary>,
    /// Position, length and pool-length biases, and self-preference.
    pub bias: BiasInfo,
    /// Failed judgements per judge and dimension.
    pub failures: BTreeMap<String, BTreeMap<Dimension, usize>>,
    /// Missing-gold candidates with their pointwise verdict (also in `suggested_qrels.tsv`):
    /// only `verdict: probable_missing_gold` ones are probable missing gold.
    pub suggested_qrels: Vec<Suggestion>,
    /// Discriminability facts: chance rate, abstentions, pool and candidate tags.
    #[serde(default)]
    pub discriminability: Option<crate::items::missing_gold::DiscriminabilityInfo>,
    /// Turns flagged by any dimension.
    pub flagged_turns: usize,
    /// Calls, tokens and dollars spent.
    pub cost: CostInfo,
    /// Agreement with human ratings (`--human-labels`).
    pub human: Option<crate::human::annotator_agreement::HumanCalibration>,
    /// What reviewers' labels on a random sample say (`mtr report` with `review/labels.jsonl`):
    /// per dimension the share failing by the judges, the reviewers and prediction-powered,
    /// and each judge's agreement with the reviewers. Absent without labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<Review>,
    /// Prompts fitted to the judges' context: shortened histories, items skipped as too long.
    #[serde(default)]
    pub context: crate::judges::context::ContextInfo,
    /// Failure rates of judgements by turn depth and by prompt length, overall and per judge:
    /// failures that cluster in late turns or long prompts move the ensemble means.
    #[serde(default)]
    pub failure_rates: BTreeMap<String, FailureRates>,
    /// The lowest-scoring items per dimension, with their text.
    pub worst: BTreeMap<Dimension, Vec<WorstItem>>,
    /// Warnings for the reader.
    pub warnings: Vec<String>,
    /// `--time-budget`: what the budget let this run start, and what is left for a rerun.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_budget: Option<crate::budget::TimeBudgetInfo>,
    /// Completeness as the MTR-Suite paper's code computes it (`[audit] paper_scale = true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paper_scale: Option<crate::paper_scale::PaperScale>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BenchmarkInfo {
    pub name: String,
    pub path: String,
    pub source: String,
    pub language: String,
    /// The benchmark's data fingerprint (BLAKE3 over its files).
    pub fingerprint: String,
    /// Generators recorded in `benchmark.toml`, by role.
    pub generator: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FingerprintInfo {
    pub data: String,
    pub config: String,
    pub prompts: String,
    pub tool_version: String,
    pub git_commit: Option<String>,
}

impl From<mtr_core::fingerprint::Fingerprint> for FingerprintInfo {
    fn from(f: mtr_core::fingerprint::Fingerprint) -> Self {
        Self {
            data: f.data,
            config: f.config,
            prompts: f.prompts,
            tool_version: f.tool_version,
            git_commit: f.git_commit,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JudgeInfo {
    pub name: String,
    pub model: String,
    /// Model family (configured, or inferred from the model name).
    pub family: Option<String>,
    /// How its 1-5 ratings are read: `generated` (the grade written) or `probability`
    /// (the probability-weighted mean over the grade tokens).
    #[serde(default)]
    pub rating_mode: mtr_llm::logprob::RatingMode,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanInfo {
    pub dialogues_total: usize,
    pub dialogues_audited: usize,
    pub sampled: bool,
    pub turns_total: usize,
    pub turns_audited: usize,
    /// Ids of the audited turns (every turn of the audited dialogues), in benchmark order:
    /// what `mtr bench --audit` and `mtr qrels apply` may change. Empty in summaries written
    /// before this field existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub audited_turns: Vec<String>,
    /// Items per dimension.
    pub items: BTreeMap<Dimension, usize>,
    /// Skipped would-be items per dimension and reason (turn-level reasons count turns,
    /// gold-level reasons count gold passages).
    pub skipped: BTreeMap<Dimension, BTreeMap<SkipReason, usize>>,
    pub judgements_planned: usize,
    pub judgements_done: usize,
}
