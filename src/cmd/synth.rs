//! `mtr synth`: synthesize a verified multi-turn retrieval benchmark from a document corpus
//! (MTR-Pipeline, see crates/pipeline). Settings come from `[synth]` in mtr.toml; the flags
//! below override them. A rerun of the same command resumes: finished stages are loaded from
//! the work dir and LLM calls already made are served from the cache.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use mtr_pipeline::VectorSource;

use crate::config::flags::section_flags;
use mtr_pipeline::{SynthConfig, SynthJob, SynthPrompts};

use super::Ctx;
use super::common::{DryRunArgs, LlmArgs};
use super::open::open_llm;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The documents, a file or a folder tree of: PDF (by page), DOCX, ODT, HTML, Markdown and
    /// reStructuredText (by section), .txt files, LangChain or LlamaIndex chunks, WikiExtractor
    /// output (`<doc>` blocks or `--json` lines), JSON lines or JSON ({id, title, text}; BEIR
    /// and native benchmark folders read their corpus.jsonl), MTRAG passage-level zips, or
    /// Parquet (Hugging Face dumps); each may be .gz, .bz2, .zst or .xz (`mtr corpus` shows
    /// what is read).
    #[arg(long, value_name = "PATH")]
    pub corpus: PathBuf,
    /// Stop (exit 2) at the first corpus file that cannot be read (an encrypted PDF, a scan
    /// without text, a damaged DOCX, undecodable HTML) instead of skipping it (skipped files
    /// are named, counted and listed in synth_report.md).
    #[arg(long)]
    pub strict: bool,
    #[command(flatten)]
    pub out: super::common::Output<Written>,
    /// Folder with edited prompt templates (<name>.j2; missing ones use the built-in).
    #[arg(long, value_name = "DIR")]
    pub prompts: Option<PathBuf>,
    /// Work dir for stage artefacts and checkpoints [default: OUT/.mtr-synth].
    #[arg(long, value_name = "DIR")]
    pub work_dir: Option<PathBuf>,
    /// Forget checkpoints and artefacts of earlier runs (the LLM cache still applies).
    #[arg(long)]
    pub fresh: bool,
    /// Start only the dialogues whose expected time, at the endpoints' configured or measured
    /// speed (`mtr local speed`), fits this budget after the preparation (e.g. 90s, 14m, 1h);
    /// the others are left for a rerun, which goes on where this one stopped. With an unknown
    /// speed nothing is cut, but no dialogue starts once the budget is spent [default: none].
    /// A dialogue left out still starts when the finished turns run ahead of the plan and its
    /// first turn fits. No turn starts that would end past the budget (taking as long as a
    /// typical finished turn), and no LLM call starts once it is spent: a started dialogue
    /// stops at a turn boundary, or leaves the turn in flight unfinished (its calls cached),
    /// its verified turns kept for the rerun.
    #[arg(long, value_name = "DURATION", value_parser = mtr_llm::budget::parse_duration)]
    pub time_budget: Option<std::time::Duration>,
    /// Under --time-budget, start only the dialogues the plan takes, even when the finished
    /// turns run ahead of it.
    #[arg(long, requires = "time_budget")]
    pub plan_only: bool,
    #[command(flatten)]
    pub settings: SynthFlags,
    #[command(flatten)]
    pub llm: LlmArgs,
    #[command(flatten)]
    pub dry_run: DryRunArgs,
}

/// What `mtr synth -o` names.
#[derive(Debug, Clone, Default)]
pub struct Written;

impl super::common::OutputKind for Written {
    const VALUE_NAME: &'static str = "DIR";
    const HELP: &'static str = "Output benchmark folder (native format) [default: `synth-<corpus name>`, e.g. `synth-wiki` for `--corpus wiki/`]";
    const REQUIRED: bool = false;
}

section_flags! {
    /// The flags over `[synth]`: each sets the key it names, over the file and the environment.
    pub struct SynthFlags for SynthConfig {
        /// The fields (or Parquet columns) holding a document's id, title and text, e.g.
        /// `id=doc_id,text=body`; unset, the usual names.
        #[arg(value_name = "KEY=FIELD,..")]
        corpus_fields: Option<mtr_pipeline::input::CorpusFields> => "corpus_fields",
        /// Leave malformed corpus records out (their count is reported) instead of stopping at
        /// them.
        skip_bad: bool => "skip_bad" = true,
        /// Number of dialogues.
        #[arg(value_name = "N")]
        dialogues: Option<usize> => "dialogues",
        /// Turns per dialogue.
        #[arg(value_name = "N")]
        turns: Option<usize> => "turns",
        /// Seed of every random choice.
        seed: Option<u64> => "seed",
        /// Chunk size range in tokens, MIN-MAX.
        #[arg(value_name = "MIN-MAX")]
        chunk_tokens: Option<ChunkTokens> => "chunking",
        /// How documents become passages: `recursive` (chunked to --chunk-tokens) or `as-is`
        /// (each record, page or section one passage with its own id, not cut again: a team's
        /// LangChain or LlamaIndex chunks, so that a run of its retriever scores directly);
        /// unset, recursive.
        #[arg(value_name = "HOW")]
        chunks: Option<Chunks> => "chunking.keep",
        /// Chunks per topic path (its smallest path is lowered to half of it where above).
        #[arg(value_name = "N")]
        path_size: Option<usize> => "paths.size",
        /// Share of dialogues with a topic switch.
        #[arg(value_name = "SHARE")]
        switch_share: Option<f64> => "generation.switch_share",
        /// Synthesize from a seeded uniform sample of N documents drawn over the whole input
        /// (reservoir sampling with --seed, before curation; 0 = all).
        #[arg(value_name = "N")]
        max_documents: Option<usize> => "max_documents",
        /// Where chunk vectors come from: auto (the embedder role when configured, the bundled
        /// CPU embedder only up to 2,000 chunks, else lexical), embedder (embed chunks with
        /// the embedder role: dense uniqueness retrieval), lexical (local hashed TF-IDF
        /// vectors: no model, BM25-only uniqueness retrieval).
        #[arg(value_name = "SOURCE")]
        vectors: Option<VectorSource> => "vectors",
        /// Endpoint of the verifier's judge; unset, the first of [llm.roles] judges.
        #[arg(value_name = "ENDPOINT")]
        verifier: Option<String> => "generation.verifier",
        /// Skip the corpus-wide uniqueness check (not recommended).
        no_uniqueness: bool => "generation.uniqueness.enabled" = false,
        /// Keep the user agent's questions as they are.
        no_humanizer: bool => "generation.humanizer.enabled" = false,
        /// Ask the user agent for its question alone, without a standalone rewrite (the turns
        /// get no `rewrite`).
        no_rewrites: bool => "generation.rewrites" = false,
        /// Style of the user agent and the humanizer: concise (one short question: the default
        /// on the embedded local model), production (context, constraints, asides,
        /// long-tailed lengths, follow-ups leaning on the history: the default with any other
        /// endpoint) or like:BENCH (lengths and referring back drawn from a real benchmark).
        #[arg(value_name = "PROFILE", value_parser = parse_style)]
        style: Option<String> => "style.profile",
        /// Who the user is played as: a persona file (JSON lines `{"name", "description"}`,
        /// TOML `[[persona]]` tables, or `NAME: DESCRIPTION` lines; each dialogue draws one with
        /// --seed) or `topics` (the generator writes one per coarse topic of the corpus).
        #[arg(value_name = "FILE|topics")]
        personas: Option<String> => "personas.file",
        /// Real questions whose intent and style the user agent imitates, never copies (a few
        /// shown per attempt; a question that nearly copies one is rejected): one a line, JSON
        /// lines with a `question`, `query` or `text` field (or MTRAG conversations), or TSV
        /// `id<TAB>text`.
        #[arg(value_name = "FILE")]
        seed_questions: Option<String> => "seed_questions.file",
        /// Benchmark name in the manifest; unset, the output folder's name.
        name: Option<String> => "name",
        /// License recorded in the manifest (that of the source corpus).
        license: Option<String> => "license",
    }
}

/// `--chunks as-is|recursive`: `[synth.chunking] keep` (true for as-is).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Chunks {
    /// Every document one passage with its own id.
    AsIs,
    /// Documents chunked recursively to the token range.
    Recursive,
}

impl serde::Serialize for Chunks {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bool(*self == Chunks::AsIs)
    }
}

/// `--chunk-tokens MIN-MAX`: the chunker's `min_tokens` and `max_tokens`.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct ChunkTokens {
    min_tokens: usize,
    max_tokens: usize,
}

impl std::str::FromStr for ChunkTokens {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let (min_tokens, max_tokens) = mtr_pipeline::parse_range(s)?;
        Ok(Self {
            min_tokens,
            max_tokens,
        })
    }
}

/// A user error of the pipeline's own names its setting or file; an LLM error (a local model
/// that is not installed, `MTR_LOCAL_USE_SERVER`) goes on as it is and says whose it is.
fn user_error(e: mtr_pipeline::Error) -> anyhow::Error {
    if e.is_user_error() && !matches!(e, mtr_pipeline::Error::Llm(_)) {
        anyhow::Error::new(mtr_core::Error::from(e))
    } else {
        anyhow::Error::new(e)
    }
}

/// [`user_error`] for the errors of a run or dry run: a setting the environment or the
/// config file sets is named with where it was set (the variable, or the file and its line),
/// as the configuration's own errors are.
fn run_error(config: &crate::config::Config, e: mtr_pipeline::Error) -> anyhow::Error {
    if let mtr_pipeline::Error::Param { name, message } = &e {
        let key = format!("synth.{name}");
        if config.env.contains(&key) || crate::config::lookup_path(&config.table, &key).is_some() {
            let err = config.blame_setting(&key, message.clone());
            return anyhow::Error::new(mtr_core::Error::from(err));
        }
    }
    user_error(e)
}

fn config(ctx: &Ctx, args: &Args) -> anyhow::Result<SynthConfig> {
    layered(&ctx.config, &args.settings)
}

/// `[synth]` with every layer applied, checked.
fn layered(config: &crate::config::Config, flags: &SynthFlags) -> anyhow::Result<SynthConfig> {
    let mut c: SynthConfig = config.settings(flags)?;
    // a smaller --path-size brings the smallest path down with it
    if flags.path_size.is_some() {
        c.paths.min_size = c.paths.min_size.min(c.paths.size.div_ceil(2)).max(1);
    }
    c.validate().map_err(user_error)?;
    Ok(c)
}

pub async fn run(ctx: &Ctx, args: Args) -> anyhow::Result<ExitCode> {
    let cfg = config(ctx, &args)?;
    let out = match args.out.given().map(PathBuf::from) {
        Some(o) => o,
        None => {
            let o = super::common::default_output(
                "synth",
                &mtr_pipeline::input::corpus_name(&args.corpus),
            );
            eprintln!("writing to {} (no -o given)", o.display());
            o
        }
    };
    let prompts = match &args.prompts {
        Some(dir) => SynthPrompts::from_dir(dir),
        None => SynthPrompts::builtin(),
    }
    .map_err(user_error)?;
    let mut job = SynthJob::new(&args.corpus, &out, cfg, prompts);
    if let Some(w) = &args.work_dir {
        job.work_dir = w.clone();
    }
    job.time_budget = args.time_budget;
    job.start_ahead = !args.plan_only;
    job.announce = Some(Box::new(|line: &str| eprintln!("{line}")));
    if args.strict {
        job.unreadable = mtr_pipeline::input::Unreadable::Fail;
    }
    if args.fresh && !args.dry_run.dry_run && job.work_dir.exists() {
        std::fs::remove_dir_all(&job.work_dir)
            .with_context(|| format!("removing {}", job.work_dir.display()))?;
    }
    let progress = ctx.progress.as_ref();

    if args.dry_run.dry_run {
        return dry_run(ctx, &args, job).await;
    }

    // every folder written and the cache must take writes before anything is paid
    super::preflight::writable_dir(&out, "-o")?;
    super::preflight::writable_dir(&job.work_dir, "--work-dir")?;
    let llm = open_llm(ctx, &args.llm).await?;
    super::preflight::writable_cache(&llm)?;
    let spend_job = mtr_llm::client::spend::job_tag("synth", &out);
    llm.set_spend_job(&spend_job);
    let outcome = mtr_pipeline::synthesize(&job, &llm, progress)
        .await
        .map_err(|e| match e {
            mtr_pipeline::Error::Llm(l) => super::open::llm_error(ctx, l),
            other => run_error(&ctx.config, other),
        })?;
    let s = &outcome.stats;
    println!("wrote {}", outcome.out.display());
    println!(
        "{} dialogues, {} turns ({} dropped after verification), topic switches in {:.0}% of dialogues",
        outcome.dialogues,
        outcome.turns,
        s.turns_dropped,
        100.0 * s.switch_rate
    );
    println!(
        "golds per turn {:.2}, cost ${:.4} (${:.5} per dialogue), paid now ${:.4}",
        s.golds_per_turn.mean,
        s.cost_total_usd,
        s.cost_per_dialogue_usd.mean,
        llm.ledger().total_cost_usd
    );
    println!("report: {}", outcome.out.join("synth_report.md").display());
    let spend = super::spend::write(&outcome.out, &spend_job, &llm, s.cost_total_usd)?;
    let work = &spend.this_run.server_work;
    if let Some(line) = mtr_llm::server_work::per_turn_line(work, outcome.turns) {
        eprintln!("{line}");
    }
    if let Some(spent) = spend.spent_usd {
        println!(
            "spent on {} over every attempt ${spent:.4} ({})",
            outcome.out.display(),
            super::spend::SPEND
        );
    }
    // an endpoint that failed (nearly) every call fails the command, naming it
    let failed = super::spend::failed_endpoints(&llm.ledger(), job.config.max_failed_share);
    if !failed.is_empty() {
        return Err(crate::exit::Failed::internal(format!(
            "the synthesis is not complete: {} (`[synth] max_failed_share` = {})",
            failed.join("; "),
            job.config.max_failed_share
        )));
    }
    say_time_budget(outcome.time_budget.as_ref());
    if outcome.budget_stopped {
        eprintln!(
            "warning: stopped by --max-cost with at least {} of {} turns done in every dialogue; run the same command again to resume",
            outcome.layers_done, job.config.turns
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `--dry-run`: prepares the corpus and plans the calls (with prices when an LLM client
/// opens), writing nothing.
async fn dry_run(ctx: &Ctx, args: &Args, mut job: SynthJob) -> anyhow::Result<ExitCode> {
    // a section or variable that is wrong is refused; only a client that cannot open (no
    // endpoint, nothing installed) leaves the plan without prices
    super::open::llm_config(ctx)?;
    let progress = ctx.progress.as_ref();
    // a dry run writes nothing: a first run's stage artefacts (chunks, vectors: tens of
    // MB) go to a temporary folder; an existing work dir is read for what is done already
    let _scratch = if job.work_dir.exists() {
        None
    } else {
        let t = tempfile::tempdir().context("creating a temporary folder")?;
        job.work_dir = t.path().join("work");
        Some(t)
    };
    let mut llm_args = args.llm.clone();
    llm_args.options.dry_run = true;
    match open_llm(ctx, &llm_args).await {
        Ok(llm) => {
            let plan = mtr_pipeline::dry_run(&job, &llm, progress)
                .await
                .map_err(|e| run_error(&ctx.config, e))?;
            println!("mtr synth --dry-run: nothing was called\n");
            print!("{}", plan.to_text());
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            tracing::warn!("no LLM client ({e:#}); planning without prices");
            let p = mtr_pipeline::prepare(&job, None, true, progress)
                .await
                .map_err(user_error)?;
            println!("mtr synth --dry-run: nothing was called (no LLM configured: {e})\n");
            println!(
                "documents: {} read, {} kept (removed: {:?})",
                p.curation.input, p.documents, p.curation.removed
            );
            println!("chunks:    {}", p.chunks.len());
            println!(
                "paths:     {} topic paths, {} coarse topics",
                p.topics.paths.len(),
                p.topics.topics
            );
            let per_turn = 6;
            println!(
                "plan:      {} dialogues x {} turns = about {} LLM calls (first attempts)",
                job.config.dialogues,
                job.config.turns,
                job.config.dialogues * job.config.turns * per_turn
            );
            if args.time_budget.is_some() {
                println!(
                    "time budget: the endpoints' speed is unknown without an LLM configuration, so nothing would be cut"
                );
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `--style`: a profile name mtr knows (the benchmark of `like:` is read when the job starts).
fn parse_style(s: &str) -> Result<String, String> {
    s.parse::<mtr_pipeline::ProfileName>()?;
    Ok(s.to_string())
}

/// What `--time-budget` left on stderr: dialogues started beyond the plan, stopped at a turn
/// boundary, and left for a rerun.
fn say_time_budget(time_budget: Option<&mtr_pipeline::BudgetPlan>) {
    if let Some(b) = time_budget.filter(|b| b.started_ahead > 0) {
        eprintln!(
            "time budget {}: {} dialogue(s) beyond the plan started, as the finished turns ran ahead of it",
            mtr_llm::budget::budget_text(b.budget_s),
            b.started_ahead
        );
    }
    if let Some(b) = time_budget.filter(|b| b.stopped_at_turn_boundary > 0) {
        eprintln!(
            "time budget {}: {} dialogue(s) stopped at a turn boundary, before a turn that would have ended past the budget; their verified turns are kept",
            mtr_llm::budget::budget_text(b.budget_s),
            b.stopped_at_turn_boundary
        );
    }
    if let Some(b) = time_budget.filter(|b| b.cut_at_deadline > 0) {
        eprintln!(
            "time budget {}: {} dialogue(s) left a turn unfinished when the budget was spent (no call starts after it); their verified turns are kept and the unfinished turns' calls are cached",
            mtr_llm::budget::budget_text(b.budget_s),
            b.cut_at_deadline
        );
    }
    if let Some(b) = time_budget.filter(|b| b.left > 0) {
        eprintln!(
            "time budget {}: {} of {} planned dialogues are not done yet; run the same command again with more time (or none) to continue",
            mtr_llm::budget::budget_text(b.budget_s),
            b.left,
            b.planned
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(args: &[&str]) -> SynthFlags {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            flags: SynthFlags,
        }
        <Cli as clap::Parser>::try_parse_from(std::iter::once("mtr").chain(args.iter().copied()))
            .unwrap()
            .flags
    }

    #[test]
    fn flags_set_the_keys_they_name() {
        let f = flags(&[
            "--chunk-tokens",
            "48-120",
            "--path-size",
            "4",
            "--switch-share",
            "0.25",
            "--no-humanizer",
            "--vectors",
            "lexical",
            "--style",
            "production",
        ]);
        let c = layered(&crate::config::Config::default(), &f).unwrap();
        assert_eq!((c.chunking.min_tokens, c.chunking.max_tokens), (48, 120));
        assert_eq!(
            c.chunking.encoding, "o200k_base",
            "the other chunking keys are kept"
        );
        assert_eq!((c.paths.size, c.paths.min_size), (4, 2));
        assert_eq!(c.generation.switch_share, 0.25);
        assert!(!c.generation.humanizer.enabled && c.generation.uniqueness.enabled);
        assert_eq!(c.vectors, VectorSource::Lexical);
        assert_eq!(c.style.profile.as_deref(), Some("production"));
        assert!(!c.chunking.keep);
        let as_is = layered(
            &crate::config::Config::default(),
            &flags(&["--chunks", "as-is"]),
        );
        assert!(as_is.unwrap().chunking.keep);
        let recursive = flags(&["--chunks", "recursive"]);
        assert!(
            !layered(&crate::config::Config::default(), &recursive)
                .unwrap()
                .chunking
                .keep
        );
        // no flag: the defaults, and the same canonical JSON (fingerprints unchanged)
        let none = layered(&crate::config::Config::default(), &flags(&[])).unwrap();
        assert_eq!(
            serde_json::to_string(&none).unwrap(),
            serde_json::to_string(&SynthConfig::default()).unwrap()
        );
    }
}
