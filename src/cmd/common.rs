//! The argument groups several commands share, written once so that a flag means the same
//! thing everywhere: the JSON switch (`--format json`), the query formulation (`--query`, one
//! vocabulary for retrieve, bench, export and audit), and the LLM flags (only on the commands
//! that call an LLM; `--dry-run` and `--batch` only where they do something). Commands flatten
//! these into their own `Args`.

use std::path::{Path, PathBuf};

use mtr_retrieve::QueryFormulation;

/// What a command prints on stdout: text for people, or one JSON document for programs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Text for people.
    #[default]
    Text,
    /// One JSON document.
    Json,
}

/// `--format text|json`: the one JSON switch of every command that prints a summary.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct FormatArgs {
    /// Output format of the result printed on stdout.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

impl FormatArgs {
    pub fn json(self) -> bool {
        self.format == Format::Json
    }
}

/// The formulations every command understands, for help texts and errors.
pub const FORMULATIONS: &str = "last, all, full, full:N, window:N, rewrite, llm-rewrite";

/// `--query FORMULATION`: how a turn and its history become the query text. Parsed by
/// `mtr_retrieve::QueryFormulation`, so an unknown name is an error in every command.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct QueryArgs {
    /// Query formulation: last (the question as asked; alias lastturn, MTRAG's name), all
    /// (every user question so far), full (user and agent turns, newest last, within 512
    /// tokens; full:N or full=N for N tokens), window:N (the last N turns and the question),
    /// rewrite (the benchmark's standalone rewrite), llm-rewrite (alias llm_rewrite: a rewrite by
    /// the generator LLM) [default: rewrite when the benchmark has rewrites, else last].
    #[arg(long, value_name = "FORMULATION")]
    pub query: Option<QueryFormulation>,
}

impl QueryArgs {
    /// The formulation asked for, else the default for this benchmark.
    pub fn resolve(self, bench: &mtr_core::Benchmark) -> QueryFormulation {
        self.query.unwrap_or_else(|| default_formulation(bench))
    }
}

/// `rewrite` when any turn of the benchmark has a rewrite, else `last` (on MTRAG's clapnq
/// `full` is the worst formulation: nDCG@10 0.1855 against 0.2918 for `rewrite`).
pub fn default_formulation(bench: &mtr_core::Benchmark) -> QueryFormulation {
    let has_rewrite = bench
        .dialogues
        .iter()
        .flat_map(|d| &d.turns)
        .any(|t| t.rewrite.as_deref().is_some_and(|r| !r.trim().is_empty()));
    if has_rewrite {
        QueryFormulation::Rewrite
    } else {
        QueryFormulation::Last
    }
}

/// LLM flags of every command that calls an LLM or an embedder (flatten into its `Args`):
/// `mtr_llm::LlmOptions` itself, declared once in mtr-llm. `--dry-run` and `--batch` are
/// separate groups ([`DryRunArgs`], [`BatchArgs`]) because only some of these commands can
/// honour them; [`LlmArgs::with`] sets them before the client opens.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct LlmArgs {
    #[command(flatten)]
    pub options: mtr_llm::LlmOptions,
    /// Set from [`BatchArgs`]: the Batch input file cache misses are written to.
    #[arg(skip)]
    pub export_batch: Option<PathBuf>,
}

/// `--dry-run`, for the commands that can plan their LLM calls without making them.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct DryRunArgs {
    /// Count the LLM calls, tokens, cost and time per endpoint; call nothing and write nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// `--batch`, for the commands whose calls do not depend on each other's answers.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct BatchArgs {
    /// Submit the calls through the endpoint's OpenAI-compatible Batch API (files + batches) at
    /// its batch discount, then finish from the answers; a killed run resumes by batch id.
    #[arg(long)]
    pub batch: bool,
    /// Write every call the cache lacks to FILE as OpenAI Batch input lines and stop without
    /// calling anything (exit 3); answer them elsewhere (`vllm run-batch`, Ray Data, a
    /// provider's Batch API), `mtr cache import` the output, and rerun.
    #[arg(long, value_name = "FILE", conflicts_with = "batch")]
    pub export_batch: Option<PathBuf>,
}

/// `args.dry_run`, `args.batch`: the options read as the flags they are.
impl std::ops::Deref for LlmArgs {
    type Target = mtr_llm::LlmOptions;

    fn deref(&self) -> &mtr_llm::LlmOptions {
        &self.options
    }
}

impl LlmArgs {
    /// These flags with `--dry-run` and `--batch` as the command received them.
    pub fn with(mut self, dry_run: DryRunArgs, batch: BatchArgs) -> Self {
        self.options.dry_run = dry_run.dry_run;
        self.options.batch = batch.batch || batch.export_batch.is_some();
        self.export_batch = batch.export_batch;
        self
    }
}

/// What a command's `-o` names: its value name, its help and whether it must be given. Each
/// command that writes declares one (a marker type) and flattens [`Output`] of it.
pub trait OutputKind: Clone + Default + std::fmt::Debug + Send + Sync + 'static {
    const VALUE_NAME: &'static str;
    const HELP: &'static str;
    const REQUIRED: bool;
}

/// `-o/--output PATH` (alias `--out`): where a command writes. The one definition of the flag.
#[derive(Debug, Clone, clap::Args)]
pub struct Output<K: OutputKind> {
    #[arg(
        short = 'o',
        long = "output",
        visible_alias = "out",
        value_name = K::VALUE_NAME,
        help = K::HELP,
        required = K::REQUIRED
    )]
    output: Option<PathBuf>,
    #[arg(skip)]
    kind: std::marker::PhantomData<K>,
}

impl<K: OutputKind> Output<K> {
    /// The path given, if any (a kind that is not required has a default of its own).
    pub fn given(&self) -> Option<&Path> {
        self.output.as_deref()
    }

    /// The path of a required kind (clap refuses a command line without it).
    pub fn path(&self) -> &Path {
        self.given().unwrap_or(Path::new(""))
    }
}

/// `-o DIR` of the commands that write a folder and say no more of it.
#[derive(Debug, Clone, Default)]
pub struct Folder;

impl OutputKind for Folder {
    const VALUE_NAME: &'static str = "DIR";
    const HELP: &'static str = "The output folder";
    const REQUIRED: bool = true;
}

/// Import options shared by every command that reads a benchmark in any format.
#[derive(Debug, Clone, clap::Args)]
pub struct ImportFlags {
    /// MTRAG: import only this domain (clapnq, govt, cloud, fiqa) [default: all domains].
    #[arg(long)]
    pub domain: Option<String>,
    /// Which split: BEIR qrels split (test, dev, ...) or part of the data file's name
    /// [default: test, then dev, then the only one].
    #[arg(long)]
    pub split: Option<String>,
    /// Skip bad records with a warning instead of failing (counted in the summary).
    #[arg(long)]
    pub lenient: bool,
    /// BEIR/TREC: how query ids become dialogues (auto, single, conversational).
    #[arg(long, default_value = "auto", value_parser = parse_grouping)]
    pub group: mtr_core::formats::Grouping,
    /// The corpus file or folder, for formats whose collection ships separately.
    #[arg(long)]
    pub corpus: Option<PathBuf>,
    /// The qrels file (CAsT/iKAT, TREC), when not beside the topics.
    #[arg(long)]
    pub qrels: Option<PathBuf>,
    /// The benchmark's name in its manifest [default: from the source].
    #[arg(long)]
    pub name: Option<String>,
}

impl ImportFlags {
    pub fn options(&self) -> mtr_core::formats::ImportOptions {
        mtr_core::formats::ImportOptions {
            domain: self.domain.clone(),
            split: self.split.clone(),
            lenient: self.lenient,
            grouping: self.group,
            name: self.name.clone(),
            corpus: self.corpus.clone(),
            qrels: self.qrels.clone(),
        }
    }
}

fn parse_grouping(s: &str) -> Result<mtr_core::formats::Grouping, String> {
    s.parse()
}

/// The folder a command writes into when no `-o` is given: `<kind>-<name>` in the current
/// folder (`audit-qrecc`, `synth-wiki`), `<kind>-benchmark` for an empty name. One rule for
/// every command, so that a user can guess where the output went.
pub fn default_output(kind: &str, name: &str) -> PathBuf {
    let name = name.trim();
    PathBuf::from(format!(
        "{kind}-{}",
        if name.is_empty() { "benchmark" } else { name }
    ))
}

#[cfg(test)]
mod default_output_tests {
    use super::default_output;

    #[test]
    fn names_the_kind_and_the_source() {
        assert_eq!(
            default_output("audit", "qrecc").to_str(),
            Some("audit-qrecc")
        );
        assert_eq!(
            default_output("synth", " ").to_str(),
            Some("synth-benchmark")
        );
    }
}
