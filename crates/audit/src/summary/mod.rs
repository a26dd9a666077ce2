//! `summary.json`: everything the report shows, computed once. The report renderers read only
//! this file (and `items.jsonl` for nothing else), so `mtr report AUDIT_DIR` re-renders an
//! audit without the benchmark or any LLM. Its JSON Schema is `docs/schema/audit-summary.schema.json`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::config::AuditSettings;
use crate::dimension::Dimension;
use crate::items::aggregate::Suggestion;
use crate::items::plan::SkipReason;
pub use crate::statistics::interval::Interval;
pub use file::{SUMMARY, read_summary, write_summary};
pub use review::{Review, ReviewEstimate, ReviewerAgreement};

mod file;
pub mod review;

/// Version of the summary format; bumped on incompatible changes.
pub const SUMMARY_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Summary {
    pub summary_version: u32,
    /// The verdict on the judges: do they separate anything? (Shown first in the report;
    /// absent in summaries written before it existed, where the report computes it.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<crate::statistics::separation::Verdict>,
    /// Benchmark audited.
    pub benchmark: BenchmarkInfo,
    /// Data, config, prompt hashes and tool version.
    pub fingerprint: FingerprintInfo,
    pub settings: AuditSettings,
    pub judges: Vec<JudgeInfo>,
    /// False when the audit stopped early (budget); rerun the same command to finish it.
    pub complete: bool,
    /// Why the audit stopped early.
    pub stopped: Option<String>,
    pub plan: PlanInfo,
    /// Per dimension, in canonical order.
    pub dimensions: BTreeMap<Dimension, DimensionSummary>,
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
    pub cost: CostInfo,
    /// Agreement with human ratings (`--human-labels`).
    pub human: Option<crate::human::agreement::HumanCalibration>,
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

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Ledger {
    /// Judgements.
    pub calls: usize,
    /// Judgements answered by an identical request of this audit (paid once).
    pub cache_hits: usize,
    pub failed: usize,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// The cost of the result: every answer at the price paid when it was fetched, whether
    /// this run or an earlier one paid it. What was spent over every attempt is in
    /// `spend.json`.
    pub cost_usd: f64,
}

impl Ledger {
    pub fn add(&mut self, j: &crate::judges::record::Judgement) {
        self.calls += 1;
        self.cache_hits += usize::from(j.cache_hit);
        self.failed += usize::from(!j.ok());
        self.prompt_tokens += j.prompt_tokens;
        self.completion_tokens += j.completion_tokens;
        self.cost_usd += j.cost_usd;
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CostInfo {
    pub total: Ledger,
    pub per_judge: BTreeMap<String, Ledger>,
    pub per_dimension: BTreeMap<Dimension, Ledger>,
    /// Mean prompt tokens per judgement, per dimension (what the prompts cost to send).
    pub prompt_tokens_per_judgement: BTreeMap<Dimension, f64>,
    /// The `--max-cost` budget of the run that wrote this summary, if any.
    pub max_cost_usd: Option<f64>,
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
