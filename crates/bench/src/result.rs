//! The bench result (`bench.json`): what was scored, how, with what uncertainty, and what the
//! diagnostics found. `mtr leaderboard` reads these files back, so the schema is versioned
//! ([`SCHEMA`]) and every field says what it is. Maps are `BTreeMap`s so that the same inputs
//! and seed write the same bytes.

use std::collections::BTreeMap;

use mtr_core::fingerprint::Fingerprint;
use serde::{Deserialize, Serialize};

use crate::query_set::Part;
use crate::sensitivity::edits::{Applied, Variant};
use crate::stats::bootstrap::Estimate;

/// Schema id written into every result.
pub(crate) const SCHEMA: &str = "mtr.bench/1";

/// What `mtr bench` computed (`bench.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchResult {
    /// The schema id, `mtr.bench/1`.
    pub schema: String,
    /// The mtr version that made it.
    pub mtr_version: String,
    /// Day the result was produced (`YYYY-MM-DD`; `SOURCE_DATE_EPOCH` pins it).
    pub date: String,
    /// The benchmark scored.
    pub benchmark: BenchmarkInfo,
    /// Benchmark hash, bench configuration hash, prompt hash, tool version, git commit.
    pub fingerprint: Fingerprint,
    /// How the figures are computed (bootstrap, tests).
    pub conventions: Conventions,
    /// Reported measures, in display order.
    pub measures: Vec<MeasureInfo>,
    /// The measure used for ranking, tests and diagnostics.
    pub main_measure: String,
    /// The dev/test split, if one was scored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<SplitInfo>,
    /// Strata families with their group sizes, in display order.
    pub strata: Vec<StratumFamily>,
    /// Every system, in the order given.
    pub systems: Vec<SystemResult>,
    /// Every system against the baseline, when there are two systems or more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tests: Option<BaselineTests>,
    /// How many system pairs the tests tell apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discriminative_power: Option<DiscriminativePower>,
    /// Per fused system: what each component adds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ablation: Vec<Ablation>,
    /// Every pair of systems on the main measure: paired randomization p-values, Holm-corrected
    /// over all pairs, and per-turn wins, ties and losses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pairwise: Option<Pairwise>,
    /// Strata with fewer turns than this are marked `small` (read with care; not plotted).
    #[serde(default = "default_min_stratum")]
    pub min_stratum_turns: usize,
    /// Warnings about the data and the runs.
    pub warnings: Vec<String>,
    /// With `--audit`: every system under the original qrels and under the variants an audit
    /// of this benchmark supports, on the audited turns (see [`crate::sensitivity`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_sensitivity: Option<LabelSensitivity>,
    /// With `--fill-holes K`: the holes in the systems' top K judged, and how the order of the
    /// systems changes with them filled (see [`crate::holes`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holes: Option<crate::holes::HolesInfo>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchmarkInfo {
    pub name: String,
    pub version: String,
    pub language: String,
    pub source: String,
    /// BLAKE3 of the benchmark's data files.
    pub fingerprint: String,
    pub dialogues: usize,
    pub turns: usize,
    /// Turns scored (at least one passage judged relevant), after any split.
    pub scored_queries: usize,
    /// Dialogues those turns belong to.
    pub scored_dialogues: usize,
    /// Turns left out because no passage is judged relevant for them.
    pub skipped_without_relevant: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Conventions {
    /// How runs are scored (sorting, ties, missing queries, relevance).
    pub scoring: Vec<String>,
    /// Measure id -> its convention.
    pub measures: BTreeMap<String, String>,
    pub bootstrap: BootstrapConventions,
    pub tests: TestConventions,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BootstrapConventions {
    /// What is resampled: `dialogue` (cluster bootstrap).
    pub unit: String,
    pub resamples: usize,
    pub level: f64,
    pub method: String,
    pub seed: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestConventions {
    pub method: String,
    pub permutations: usize,
    pub seed: u64,
    pub alpha: f64,
    pub correction: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MeasureInfo {
    pub id: String,
    pub label: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SplitInfo {
    pub ratio: f64,
    pub seed: u64,
    /// The part scored in this result: `dev` or `test`.
    pub part: Part,
    pub dev_dialogues: usize,
    pub test_dialogues: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StratumFamily {
    pub name: String,
    pub groups: Vec<StratumGroup>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StratumGroup {
    pub name: String,
    /// Turns in the group.
    pub n: usize,
    /// Dialogues those turns come from.
    pub dialogues: usize,
    /// Fewer turns than the result's `min_stratum_turns` (default 30): read with care; charts
    /// grey the group out instead of plotting it.
    pub small: bool,
}

/// How a system's ranking was produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SystemKind {
    /// Run by mtr from a retriever spec and a query formulation.
    Retriever,
    /// Read from a run file.
    External,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SystemResult {
    pub name: String,
    pub kind: SystemKind,
    /// Retriever spec (`bm25`, `dense`, `fusion:...`) for retriever systems.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retriever: Option<String>,
    /// Query formulation (`last`, `full`, `rewrite`, ...) for retriever systems.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub formulation: Option<String>,
    /// Run file for external systems.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Hash of the retriever configuration (or of the run file for external systems).
    pub config_hash: String,
    /// Hash of the prompts the system used (LLM rewrites), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_hash: Option<String>,
    /// Scored queries the run answered (the others score 0).
    pub answered: usize,
    /// Rank depth of the run: the most documents it ranks for one scored turn (0: unknown, a
    /// result written before mtr recorded depths).
    #[serde(default)]
    pub depth: usize,
    /// Ranked documents that are not in the benchmark's corpus, scored as non-relevant (as
    /// trec_eval does; `mtr bench --strict` refuses such runs instead): every occurrence, and
    /// the distinct ids.
    #[serde(default)]
    pub out_of_corpus: usize,
    #[serde(default)]
    pub out_of_corpus_distinct: usize,
    /// Measure id -> mean with its cluster-bootstrap interval. A measure deeper than the run
    /// (cutoff > `depth`, and the run is shorter than the corpus) is not here but in
    /// `beyond_depth`: Recall@100 of a depth-10 run is its Recall@10 and cannot be ranked
    /// against deeper runs. The main measure is the exception: it stays (ranking needs it) and
    /// is also listed in `beyond_depth`, with a warning.
    pub measures: BTreeMap<String, Estimate>,
    /// Measures deeper than the run, with the values trec_eval would print (for parity checks
    /// only; displays show them as "n/a (depth N)").
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub beyond_depth: BTreeMap<String, Estimate>,
    /// family -> group -> measure id -> estimate.
    pub strata: BTreeMap<String, BTreeMap<String, BTreeMap<String, Estimate>>>,
    /// Main measure by exact turn position (1-based; the last entry also holds deeper turns).
    pub by_position: Vec<PositionPoint>,
    pub diagnosis: Diagnosis,
    pub failures: Failures,
    /// With `--fill-holes K`: Judged@K under the original and the filled qrels, and every
    /// reported measure under the filled qrels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holes: Option<crate::holes::SystemHoles>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PositionPoint {
    pub position: usize,
    /// True for the last point when it pools all deeper turns.
    pub and_deeper: bool,
    pub n: usize,
    pub estimate: Estimate,
}

/// The metric-combination table of one system.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Diagnosis {
    pub k: usize,
    pub hit: f64,
    pub mrr: f64,
    pub recall: f64,
    pub ndcg: f64,
    /// Patterns found: `ranking_problem`, `incomplete_recall`, `graded_order_problem`.
    pub findings: Vec<Finding>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub pattern: String,
    pub message: String,
}

/// Failure analysis of one system.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Failures {
    /// Depth for recall failures: no relevant document in the top `k`.
    pub k: usize,
    /// Rank for ranking failures: the first relevant document is below rank `r` (but in the
    /// top `k`).
    pub r: usize,
    pub recall_failures: usize,
    pub ranking_failures: usize,
    pub scored: usize,
    /// The worst turns, with their query and top passages.
    pub examples: Vec<FailureExample>,
}

/// Where a failed turn's first relevant passage is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FailureKind {
    /// No relevant passage in the top `k` (the retriever never found it).
    Recall,
    /// The first relevant passage in the top `k` but below rank `r`.
    Ranking,
    /// A relevant passage in the top `r`, yet the main measure is low.
    Partial,
}

impl std::fmt::Display for FailureKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FailureKind::Recall => "recall",
            FailureKind::Ranking => "ranking",
            FailureKind::Partial => "partial",
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailureExample {
    pub qid: String,
    pub dialogue: String,
    pub position: usize,
    /// `recall` (no relevant in top k), `ranking` (relevant below rank r) or `partial`.
    pub kind: FailureKind,
    pub main_value: f64,
    pub first_relevant: Option<usize>,
    /// The user's question at this turn.
    pub question: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewrite: Option<String>,
    /// The query text the system actually used, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    pub gold: Vec<PassageView>,
    pub top: Vec<PassageView>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PassageView {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    /// Qrels grade (0 when unjudged).
    pub grade: i32,
    #[serde(default)]
    pub title: String,
    /// The passage text, shortened for display.
    #[serde(default)]
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselineTests {
    pub baseline: String,
    pub measure: String,
    pub comparisons: Vec<Comparison>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub system: String,
    pub mean: f64,
    pub baseline_mean: f64,
    pub diff: f64,
    /// Relative difference to the baseline (`diff / baseline_mean`; absent when that is 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rel_diff: Option<f64>,
    /// Paired effect size (Cohen's d_z).
    pub effect_size: f64,
    pub p: f64,
    pub p_holm: f64,
    pub significant: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiscriminativePower {
    pub measure: String,
    pub alpha: f64,
    pub systems: usize,
    pub pairs: usize,
    /// Pairs separated at p < alpha (uncorrected).
    pub separated: usize,
    pub share: f64,
    /// Pairs separated after Holm correction over all pairs.
    pub separated_holm: usize,
    pub share_holm: f64,
    /// Spread of the main measure over systems.
    pub min: f64,
    pub max: f64,
    pub range: f64,
    pub sd: f64,
}

/// Marginal contribution of each component of a fused run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ablation {
    pub system: String,
    pub measure: String,
    pub full: f64,
    pub components: Vec<AblationComponent>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AblationComponent {
    pub component: String,
    /// The main measure of the fusion without this component.
    pub without: f64,
    /// `full - without`: what this component adds.
    pub contribution: f64,
    /// Paired randomization p-value of full versus without.
    pub p: f64,
}

impl BenchResult {
    /// The system of this name.
    pub fn system(&self, name: &str) -> Option<&SystemResult> {
        self.systems.iter().find(|s| s.name == name)
    }
}

fn default_min_stratum() -> usize {
    crate::strata::MIN_GROUP
}

/// Every pair of systems compared on the main measure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pairwise {
    pub measure: String,
    pub alpha: f64,
    /// Each unordered pair once, `a` before `b` in the order systems were given.
    pub pairs: Vec<PairTest>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairTest {
    pub a: String,
    pub b: String,
    /// Mean of `a` minus mean of `b`.
    pub diff: f64,
    pub p: f64,
    /// Holm-corrected over all pairs.
    pub p_holm: f64,
    pub significant: bool,
    /// Scored turns where `a` beats `b`, ties with it (equal to 1e-12) and loses to it.
    pub wins: usize,
    pub ties: usize,
    pub losses: usize,
}

/// The label-sensitivity section of `bench.json` (`label_sensitivity`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabelSensitivity {
    /// The measure scored (the bench's main measure).
    pub measure: String,
    /// What the audit covered and which thresholds made the variants.
    pub scope: AuditScope,
    /// Every system under the original qrels, on the audited turns.
    pub original: Vec<SystemScore>,
    /// One entry per variant the audit supports.
    pub variants: Vec<VariantResult>,
    /// Per system: its rank under the original qrels and every variant (audited turns).
    pub robustness: Vec<RankInterval>,
    /// How every figure is computed.
    pub conventions: Vec<String>,
}

impl LabelSensitivity {
    /// The figures of variant `v`, if the audit supports it.
    pub fn variant(&self, v: Variant) -> Option<&VariantResult> {
        self.variants.iter().find(|x| x.variant == v)
    }

    pub(crate) fn robustness_of(&self, system: &str) -> Option<&RankInterval> {
        self.robustness.iter().find(|r| r.system == system)
    }
}

/// What the audit covered and which thresholds made the variants.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditScope {
    /// Fingerprint of the benchmark the audit was made on (equal to this bench's).
    pub audit_fingerprint: String,
    /// The audit's alignment threshold: golds with an ensemble score below it are removed.
    pub flag_rating_below: f64,
    /// Missing golds added: suggestions whose pointwise verification made them probable
    /// missing golds.
    pub added_golds: String,
    /// The audit covered a sample of dialogues.
    pub sampled: bool,
    /// The figures rest on part of the scored turns (a sample, or an audit that does not
    /// cover every scored turn).
    pub partial: bool,
    /// Dialogues the audit covered.
    pub dialogues_audited: usize,
    /// Dialogues of the benchmark.
    pub dialogues_total: usize,
    /// Scored turns of this bench.
    pub scored_turns: usize,
    /// Of those, turns the audit covered: every figure of this section is on these turns.
    pub scored_turns_audited: usize,
    /// Dialogues with a scored turn the audit covered.
    pub scored_dialogues_audited: usize,
    /// False when the audit stopped early (some judgements missing).
    pub audit_complete: bool,
    /// Notes on the scope, for the report.
    pub notes: Vec<String>,
}

/// A system's mean on the audited turns under one set of qrels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SystemScore {
    /// The system's name.
    pub system: String,
    /// 1-based rank by mean (ties by system order).
    pub rank: usize,
    /// Its mean, with its interval over dialogues.
    pub estimate: Estimate,
}

/// One variant's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VariantResult {
    /// Which variant.
    pub variant: Variant,
    /// What the variant changed in the qrels.
    pub applied: Applied,
    /// Audited turns scored under this variant (turns left without gold leave the mean).
    pub turns: usize,
    /// Dialogues of those turns.
    pub dialogues: usize,
    /// Every system under the variant.
    pub systems: Vec<SystemShift>,
    /// Kendall's tau-b between the original and the variant ranking (bootstrap interval).
    pub kendall_tau: Option<Estimate>,
    /// tau_AP of the original ranking against the variant's (swaps near the top of the
    /// original ranking cost most; bootstrap interval).
    pub tau_ap: Option<Estimate>,
    /// Pairs whose order flips.
    pub flips: Vec<Flip>,
    /// Changed turns, those that move systems most first (at most the configured number).
    pub moved_turns: Vec<TurnShift>,
}

/// A system under one variant, against the original qrels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SystemShift {
    /// The system's name.
    pub system: String,
    /// Its rank under the original qrels.
    pub original_rank: usize,
    /// Its rank under the variant.
    pub rank: usize,
    /// Under the original qrels, on the audited turns.
    pub original: Estimate,
    /// Under the variant.
    pub estimate: Estimate,
    /// Variant minus original, with a paired bootstrap interval.
    pub change: Estimate,
}

/// Two systems whose order differs between the original and the variant qrels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Flip {
    /// Ranked higher under the original qrels.
    pub above: String,
    /// Ranked higher under the variant.
    pub below: String,
    /// `above - below` under the original qrels (> 0).
    pub original_diff: f64,
    /// `above - below` under the variant (< 0).
    pub variant_diff: f64,
    /// Paired randomization p-value of the pair under the original qrels.
    pub p_original: f64,
    /// `p_original`, Holm-adjusted over this variant's flips.
    pub p_original_holm: f64,
    /// The original order was significant (Holm).
    pub original_significant: bool,
    /// Paired randomization p-value of the pair under the variant.
    pub p_variant: f64,
    /// `p_variant`, Holm-adjusted over this variant's flips.
    pub p_variant_holm: f64,
    /// The new order is significant (Holm).
    pub variant_significant: bool,
}

/// A turn whose qrels the variant changed, and the systems it moves most.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnShift {
    /// The turn's query id.
    pub qid: String,
    /// Its dialogue's id.
    pub dialogue: String,
    /// Passages the variant no longer counts as relevant.
    pub removed: Vec<String>,
    /// Passages the variant adds as relevant.
    pub added: Vec<String>,
    /// The turn has no relevant passage left under the variant and leaves the mean.
    pub left_the_mean: bool,
    /// Largest |shift| over systems (for a turn that leaves the mean, its original value).
    pub largest_shift: f64,
    /// The systems it moves most (at most three), largest |shift| first.
    pub systems: Vec<TurnSystemShift>,
}

/// How a changed turn moves one system.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnSystemShift {
    /// The system's name.
    pub system: String,
    /// Its value on the turn under the original qrels.
    pub original: f64,
    /// Absent when the turn leaves the mean.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<f64>,
    /// `variant - original`, or `-original` when the turn leaves the mean.
    pub shift: f64,
}

/// A system's ranks under all qrels: label-robust when they are all equal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankInterval {
    /// The system's name.
    pub system: String,
    /// Its rank under the original qrels.
    pub original_rank: usize,
    /// Variant name -> rank.
    pub ranks: BTreeMap<String, usize>,
    /// Best and worst rank over the original and every variant.
    pub best: usize,
    /// Its worst rank over the original and every variant.
    pub worst: usize,
    /// Whether every rank is the same (the system is label-robust).
    pub robust: bool,
}
