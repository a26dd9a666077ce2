//! `mtr synth`: synthesize a verified multi-turn retrieval benchmark from a document corpus
//! (MTR-Pipeline, see crates/pipeline). Settings come from `[synth]` in mtr.toml; the flags
//! below override them. A rerun of the same command resumes: finished stages are loaded from
//! the work dir and LLM calls already made are served from the cache.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use mtr_pipeline::config::VectorSource;
use mtr_pipeline::{SynthConfig, SynthJob, SynthPrompts};

use super::Ctx;
use super::common::{DryRunArgs, LlmArgs};
use super::open::open_llm;

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Vectors {
    /// The embedder role when configured (the bundled CPU embedder only up to 2,000
    /// chunks), else lexical.
    Auto,
    /// Embed chunks with the embedder role (enables dense uniqueness retrieval).
    Embedder,
    /// Local hashed TF-IDF vectors (no model; BM25-only uniqueness retrieval).
    Lexical,
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The documents, a file or a folder tree of: WikiExtractor output (`<doc>` blocks or
    /// `--json` lines), JSON lines or JSON ({id, title, text}; BEIR and native benchmark
    /// folders read their corpus.jsonl), MTRAG passage-level zips, Parquet (Hugging Face
    /// dumps), or .md/.txt files; each may be .gz, .bz2, .zst or .xz.
    #[arg(long, value_name = "PATH")]
    pub corpus: PathBuf,
    /// The fields (or Parquet columns) holding a document's id, title and text, e.g.
    /// `id=doc_id,text=body` [default: [synth] corpus_fields, else the usual names].
    #[arg(long, value_name = "KEY=FIELD,..")]
    pub corpus_fields: Option<mtr_pipeline::input::CorpusFields>,
    /// Leave malformed corpus records out (their count is reported) instead of stopping at
    /// them.
    #[arg(long)]
    pub skip_bad: bool,
    /// Output benchmark folder (native format) [default: `synth-<corpus name>`, e.g.
    /// `synth-wiki` for `--corpus wiki/`].
    #[arg(
        short = 'o',
        long = "output",
        visible_alias = "out",
        value_name = "DIR"
    )]
    pub out: Option<PathBuf>,
    /// Number of dialogues [default: 100, or [synth] dialogues].
    #[arg(long)]
    pub dialogues: Option<usize>,
    /// Turns per dialogue [default: 8].
    #[arg(long)]
    pub turns: Option<usize>,
    /// Seed of every random choice [default: 0].
    #[arg(long)]
    pub seed: Option<u64>,
    /// Chunk size range in tokens, MIN-MAX [default: 256-512].
    #[arg(long, value_name = "MIN-MAX")]
    pub chunk_tokens: Option<String>,
    /// Chunks per topic path [default: 8].
    #[arg(long)]
    pub path_size: Option<usize>,
    /// Share of dialogues with a topic switch [default: 0.5].
    #[arg(long, value_name = "SHARE")]
    pub switch_share: Option<f64>,
    /// Synthesize from a seeded uniform sample of N documents drawn over the whole input
    /// (reservoir sampling with --seed, before curation; 0 = all).
    #[arg(long, value_name = "N")]
    pub max_documents: Option<usize>,
    /// Where chunk vectors come from.
    #[arg(long, value_enum)]
    pub vectors: Option<Vectors>,
    /// Endpoint of the verifier's judge [default: the first of [llm.roles] judges].
    #[arg(long, value_name = "ENDPOINT")]
    pub verifier: Option<String>,
    /// Skip the corpus-wide uniqueness check (not recommended).
    #[arg(long)]
    pub no_uniqueness: bool,
    /// Keep the user agent's questions as they are.
    #[arg(long)]
    pub no_humanizer: bool,
    /// Ask the user agent for its question alone, without a standalone rewrite (the turns
    /// get no `rewrite`; [synth.generation] rewrites = false).
    #[arg(long)]
    pub no_rewrites: bool,
    /// Style of the user agent and the humanizer: concise (one short question: the default on
    /// the embedded local model), production (context, constraints, asides, long-tailed
    /// lengths, follow-ups leaning on the history: the default with any other endpoint) or
    /// like:BENCH (lengths and referring back drawn from a real benchmark); [synth.style]
    /// profile.
    #[arg(long, value_name = "PROFILE", value_parser = parse_style)]
    pub style: Option<String>,
    /// Folder with edited prompt templates (<name>.j2; missing ones use the built-in).
    #[arg(long, value_name = "DIR")]
    pub prompts: Option<PathBuf>,
    /// Work dir for stage artefacts and checkpoints [default: OUT/.mtr-synth].
    #[arg(long, value_name = "DIR")]
    pub work_dir: Option<PathBuf>,
    /// Forget checkpoints and artefacts of earlier runs (the LLM cache still applies).
    #[arg(long)]
    pub fresh: bool,
    /// Benchmark name in the manifest [default: the output folder's name].
    #[arg(long)]
    pub name: Option<String>,
    /// License recorded in the manifest (that of the source corpus).
    #[arg(long)]
    pub license: Option<String>,
    /// Start only the dialogues whose expected time, at the endpoints' configured or measured
    /// speed (`mtr local speed`), fits this budget after the preparation (e.g. 90s, 14m, 1h);
    /// the others are left for a rerun, which goes on where this one stopped. With an unknown
    /// speed nothing is cut, but no dialogue starts once the budget is spent [default: none].
    /// A dialogue left out still starts when the finished turns run ahead of the plan.
    #[arg(long, value_name = "DURATION", value_parser = mtr_llm::budget::parse_duration)]
    pub time_budget: Option<std::time::Duration>,
    /// Under --time-budget, start only the dialogues the plan takes, even when the finished
    /// turns run ahead of it.
    #[arg(long, requires = "time_budget")]
    pub plan_only: bool,
    #[command(flatten)]
    pub llm: LlmArgs,
    #[command(flatten)]
    pub dry_run: DryRunArgs,
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

fn config(ctx: &Ctx, args: &Args) -> anyhow::Result<SynthConfig> {
    let mut c: SynthConfig = ctx.config.section("synth")?;
    if let Some(v) = args.dialogues {
        c.dialogues = v;
    }
    if let Some(v) = args.turns {
        c.turns = v;
    }
    if let Some(v) = args.seed {
        c.seed = v;
    }
    if let Some(r) = &args.chunk_tokens {
        let (a, b) = mtr_pipeline::chunk::parse_range(r)
            .map_err(|m| user_error(mtr_pipeline::Error::param("--chunk-tokens", m)))?;
        c.chunking.min_tokens = a;
        c.chunking.max_tokens = b;
    }
    if let Some(v) = args.path_size {
        c.paths.size = v;
        c.paths.min_size = c.paths.min_size.min(v.div_ceil(2)).max(1);
    }
    if let Some(v) = args.switch_share {
        c.generation.switch_share = v;
    }
    if let Some(v) = args.max_documents {
        c.max_documents = v;
    }
    if let Some(v) = &args.corpus_fields {
        c.corpus_fields = v.clone();
    }
    if args.skip_bad {
        c.skip_bad = true;
    }
    if let Some(v) = args.vectors {
        c.vectors = match v {
            Vectors::Auto => VectorSource::Auto,
            Vectors::Embedder => VectorSource::Embedder,
            Vectors::Lexical => VectorSource::Lexical,
        };
    }
    if let Some(v) = &args.verifier {
        c.generation.verifier = Some(v.clone());
    }
    if args.no_uniqueness {
        c.generation.uniqueness.enabled = false;
    }
    if args.no_humanizer {
        c.generation.humanizer.enabled = false;
    }
    if args.no_rewrites {
        c.generation.rewrites = false;
    }
    if args.style.is_some() {
        c.style.profile = args.style.clone();
    }
    if args.name.is_some() {
        c.name = args.name.clone();
    }
    if args.license.is_some() {
        c.license = args.license.clone();
    }
    c.validate().map_err(user_error)?;
    Ok(c)
}

pub async fn run(ctx: &Ctx, args: Args) -> anyhow::Result<ExitCode> {
    let cfg = config(ctx, &args)?;
    let out = match args.out.clone() {
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
            other => user_error(other),
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
    if let Some(b) = outcome.time_budget.as_ref().filter(|b| b.started_ahead > 0) {
        eprintln!(
            "time budget {}: {} dialogue(s) beyond the plan started, as the finished turns ran ahead of it",
            mtr_pipeline::dryrun::budget::budget_text(b.budget_s),
            b.started_ahead
        );
    }
    if let Some(b) = outcome.time_budget.as_ref().filter(|b| b.left > 0) {
        eprintln!(
            "time budget {}: {} of {} planned dialogues are not done yet; run the same command again with more time (or none) to continue",
            mtr_pipeline::dryrun::budget::budget_text(b.budget_s),
            b.left,
            b.planned
        );
    }
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
    let llm_args = LlmArgs {
        dry_run: true,
        ..args.llm.clone()
    };
    match open_llm(ctx, &llm_args).await {
        Ok(llm) => {
            let plan = mtr_pipeline::dry_run(&job, &llm, progress)
                .await
                .map_err(user_error)?;
            println!("mtr synth --dry-run: nothing was called\n");
            print!("{}", plan.to_text());
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            tracing::warn!("no LLM client ({e:#}); planning without prices");
            let p = mtr_pipeline::pipeline::prepare(&job, None, true, progress)
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
    s.parse::<mtr_pipeline::style::ProfileName>()?;
    Ok(s.to_string())
}
