//! `mtr audit`: audit a benchmark with an ensemble of LLM judges (MTR-Eval). Reads any
//! supported benchmark folder, writes an audit folder (`items.jsonl`, `summary.json`,
//! `report.md`, `report.html`, `suggested_qrels.tsv`) and prints the scores.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use mtr_audit::budget::TimeBudget;
use mtr_audit::{AuditJob, AuditPrompts, AuditSettings, Dimension, NegativesQuery, Outcome};

use super::Ctx;
use crate::config::flags::section_flags;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Benchmark folder (native, or any format `mtr import` reads).
    pub src: PathBuf,
    #[command(flatten)]
    pub out: super::common::Output<Written>,
    /// An existing BM25 index of the benchmark's corpus [default: built in OUT/.index].
    #[arg(long)]
    pub index: Option<PathBuf>,
    /// Human ratings to calibrate against (MTRAG human evaluations JSON, or JSONL of
    /// `{turn_id, dimension, passage_id?, score, annotator?}`).
    #[arg(long)]
    pub human_labels: Option<PathBuf>,
    /// Judge a seeded sample of N human-rated answers (MTRAG file).
    #[arg(long)]
    pub human_sample: Option<usize>,
    /// Folder with prompt templates overriding the built-in `prompts/audit/*.j2`.
    #[arg(long)]
    pub prompts: Option<PathBuf>,
    /// Audit only the dialogues (in plan order) whose expected judging time, at the
    /// endpoints' configured or measured speed (`mtr local speed`), fits this budget after the
    /// preparation (e.g. 90s, 15m, 1h); the others are left for a rerun, which goes on where
    /// this one stopped. No judgement call starts once the budget is spent. With an unknown
    /// speed nothing is cut, but the deadline holds [default: none].
    #[arg(long, value_name = "DURATION", value_parser = mtr_llm::budget::parse_duration)]
    pub time_budget: Option<std::time::Duration>,
    #[command(flatten)]
    pub settings: AuditFlags,
    #[command(flatten)]
    pub import: super::common::ImportFlags,
    #[command(flatten)]
    pub llm: super::common::LlmArgs,
    #[command(flatten)]
    pub dry_run: super::common::DryRunArgs,
    #[command(flatten)]
    pub batch: super::common::BatchArgs,
}

/// What `mtr audit -o` names.
#[derive(Debug, Clone, Default)]
pub struct Written;

impl super::common::OutputKind for Written {
    const VALUE_NAME: &'static str = "DIR";
    const HELP: &'static str = "Output folder [default: `audit-<benchmark name>`]. Rerunning into the same folder resumes: finished judgements are kept as they are";
    const REQUIRED: bool = false;
}

section_flags! {
    /// The flags over `[audit]`: each sets the key it names, over the file and the environment.
    pub struct AuditFlags for AuditSettings {
        /// Dimensions to audit (comma-separated): alignment, completeness, faithfulness,
        /// quality.
        #[arg(value_delimiter = ',')]
        dimensions: Option<Vec<Dimension>> => "dimensions",
        /// Audit a seeded sample of N dialogues; unset, every dialogue is audited.
        #[arg(value_name = "N")]
        sample: Option<usize> => "sample",
        /// Seed of every random choice.
        seed: Option<u64> => "seed",
        /// Hard negatives per discriminability pool (M).
        negatives: Option<usize> => "negatives",
        /// Permutations per judge and pool (T).
        trials: Option<usize> => "trials",
        /// Query formulation for hard negatives: auto (the turn's rewrite, else full), or one
        /// of last, all, full, full:N, window:N, rewrite.
        #[arg(value_name = "FORMULATION")]
        negatives_query: Option<NegativesQuery> => "negatives_query",
        /// Worst items per dimension shown with their text.
        worst: Option<usize> => "worst",
        /// Bootstrap resamples for confidence intervals.
        resamples: Option<usize> => "resamples",
    }
}

fn settings(ctx: &Ctx, a: &Args) -> anyhow::Result<AuditSettings> {
    let s: AuditSettings = ctx.config.settings(&a.settings)?;
    s.validate().map_err(|e| {
        anyhow::anyhow!(mtr_core::Error::from(mtr_core::InputError::new(
            "[audit]",
            e.to_string()
        )))
    })?;
    Ok(s)
}

/// True when `[llm.roles] embedder` is set in the configuration (the embedded local embedder
/// alone does not turn dense negatives on: embedding a corpus locally takes long).
pub(super) fn configured_embedder(ctx: &Ctx) -> bool {
    ctx.config
        .table
        .get("llm")
        .and_then(|l| l.get("roles"))
        .and_then(|r| r.get("embedder"))
        .and_then(|e| e.as_array())
        .is_some_and(|a| !a.is_empty())
}

pub async fn run(ctx: &Ctx, args: Args) -> anyhow::Result<ExitCode> {
    // the budget's clock starts with the command: the preparation counts against it
    let started = std::time::Instant::now();
    let s = settings(ctx, &args)?;
    let dir = super::open::open_benchmark(ctx, &args.src, &args.import.options())?;
    let bench = dir
        .load()
        .with_context(|| format!("loading {}", dir.root().display()))?;
    let out = args
        .out
        .given()
        .map_or_else(|| default_output(&bench), PathBuf::from);
    // every folder written and the cache must take writes before anything is paid
    if !args.dry_run.dry_run {
        super::preflight::writable_dir(&out, "-o")?;
    }
    let llm_args = args.llm.clone().with(args.dry_run, args.batch.clone());
    let llm = super::open::open_llm_batching(ctx, &llm_args).await?;
    let spend_job = mtr_llm::client::spend::job_tag("audit", &out);
    if !args.dry_run.dry_run {
        super::preflight::writable_cache(&llm)?;
        llm.set_spend_job(&spend_job);
    }
    super::batch_file::start(ctx, &llm, &llm_args, Some(&spend_job))?;
    let prompts = prompts(args.prompts.as_deref())?;
    // a dry run writes nothing: the index it needs for hard negatives lives in a temporary folder
    let scratch = if args.dry_run.dry_run {
        Some(tempfile::tempdir().context("creating a temporary folder")?)
    } else {
        None
    };
    let index_dir = scratch
        .as_ref()
        .map_or_else(|| out.join(".index"), |t| t.path().join("index"));
    let retrievers = if s.dimensions().contains(&Dimension::Completeness) {
        negative_retrievers(ctx, &args, &s, &bench, &llm, &index_dir).await?
    } else {
        Vec::new()
    };
    let job = AuditJob {
        settings: s,
        out_dir: out.clone(),
        prompts,
        retrievers,
        config_hash: ctx.config.hash(),
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        git_commit: option_env!("MTR_GIT_COMMIT").map(str::to_string),
        human_labels: args.human_labels.clone(),
        human_sample: args.human_sample,
        progress: ctx.progress.clone(),
    };
    if !args.dry_run.dry_run {
        collect_open_batches(ctx, &llm).await?;
    }
    let time = time_budget(args.time_budget, started, args.dry_run.dry_run);
    let outcome = match judge_passes(ctx, &args, &bench, &job, &llm, time.as_ref()).await? {
        Ok(outcome) => outcome,
        Err(code) => return Ok(code),
    };
    match outcome {
        Outcome::DryRun {
            plan,
            judgements,
            reused,
            time_budget,
        } => print_dry_run(&DryRunShown {
            plan: &plan,
            judgements,
            reused,
            time_budget: time_budget.as_deref(),
            out: &out,
            llm: &llm,
        }),
        Outcome::Audited(summary) => print_audited(&summary, &out, &spend_job, &llm)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// The built-in prompts, or those of `--prompts DIR`.
pub(crate) fn prompts(dir: Option<&std::path::Path>) -> anyhow::Result<AuditPrompts> {
    match dir {
        Some(p) => AuditPrompts::from_dir(p),
        None => AuditPrompts::builtin(),
    }
    .map_err(anyhow::Error::new)
}

/// `--time-budget`, its clock started with the command; a real run announces its plan on
/// stderr (a dry run prints it with the table).
pub(crate) fn time_budget(
    budget: Option<std::time::Duration>,
    started: std::time::Instant,
    dry_run: bool,
) -> Option<TimeBudget> {
    budget.map(|b| {
        let mut t = TimeBudget::new(b, started);
        if !dry_run {
            t.announce = Some(Arc::new(|line: &str| eprintln!("{line}")));
        }
        t
    })
}

/// What a dry run shows.
struct DryRunShown<'a> {
    plan: &'a mtr_llm::Plan,
    judgements: usize,
    reused: usize,
    time_budget: Option<&'a mtr_audit::budget::BudgetPlan>,
    out: &'a std::path::Path,
    llm: &'a mtr_llm::Llm,
}

/// The dry run's plan: judgements, calls, tokens, cost, and the time budget's cut.
fn print_dry_run(d: &DryRunShown<'_>) {
    println!(
        "dry run: {} judgements to make ({} already in {}), nothing called\n",
        d.judgements,
        d.reused,
        d.out.display()
    );
    print!("{}", d.plan.to_table());
    if let Some(s) = d.llm.prompt_sample() {
        println!(
            "prompt tokens: {} prompts counted, {} estimated from their length at the \
             counted prompts' tokens per byte (a dry run this large samples)",
            s.counted, s.estimated
        );
    }
    if let Some(b) = d.time_budget {
        print_budget_plan(b);
    }
}

/// `audit-<benchmark name>` (`audit-benchmark` for a benchmark without a name).
fn default_output(bench: &mtr_core::Benchmark) -> PathBuf {
    super::common::default_output("audit", &bench.manifest.name)
}

/// The hard-negative retrievers: BM25 over `--index` or the index built in `index_dir`, and
/// dense too when the configuration names an embedder.
async fn negative_retrievers(
    ctx: &Ctx,
    args: &Args,
    s: &AuditSettings,
    bench: &mtr_core::Benchmark,
    llm: &mtr_llm::Llm,
    index_dir: &std::path::Path,
) -> anyhow::Result<Vec<Arc<dyn mtr_retrieve::Retriever>>> {
    let progress = ctx.progress.as_ref();
    let mut retrievers: Vec<Arc<dyn mtr_retrieve::Retriever>> = Vec::new();
    let src = mtr_retrieve::CorpusSource::Benchmark(bench.dir.clone());
    let idx = match &args.index {
        Some(p) => {
            let idx = mtr_retrieve::IndexDir::open(p).map_err(anyhow::Error::new)?;
            idx.check_corpus(&src).map_err(anyhow::Error::new)?;
            idx
        }
        None => mtr_audit::items::corpus_index(bench, index_dir, progress)
            .map_err(anyhow::Error::new)?,
    };
    retrievers.push(Arc::new(idx.bm25().map_err(anyhow::Error::new)?));
    // dense negatives too, when the configuration names an embedder
    if s.dense_negatives
        && configured_embedder(ctx)
        && let Some(e) = mtr_retrieve::llm::LlmEmbedder::new(llm.clone())
    {
        let embedder: Arc<dyn mtr_retrieve::dense::Embedder> = Arc::new(e);
        let opts = mtr_retrieve::dense::DenseOptions::default();
        let dense = mtr_retrieve::ensure_dense(&idx, &src, embedder.as_ref(), &opts, progress)
            .await
            .map_err(anyhow::Error::new)?;
        retrievers.push(Arc::new(mtr_retrieve::dense::DenseRetriever::new(
            Arc::new(dense),
            embedder,
        )));
    }
    Ok(retrievers)
}

/// Batches an interrupted run left open (or recorded but maybe never created) are found and
/// polled first, with or without --batch: their answers are paid for already.
async fn collect_open_batches(ctx: &Ctx, llm: &mtr_llm::Llm) -> anyhow::Result<()> {
    if llm
        .batches_open()
        .map_err(|e| super::open::llm_error(ctx, e))?
        > 0
    {
        let rep = llm
            .run_batches()
            .await
            .map_err(|e| super::open::llm_error(ctx, e))?;
        tracing::info!(
            resumed = ?rep.resumed,
            answered = rep.answered,
            "batches of an interrupted run collected"
        );
    }
    Ok(())
}

/// Runs the audit. With --batch the first pass queues every uncached judgement instead of
/// calling it; the queued calls go through the Batch API and the next pass finds them in the
/// cache. `Err(code)`: a Batch-file export ended the command.
async fn judge_passes(
    ctx: &Ctx,
    args: &Args,
    bench: &mtr_core::Benchmark,
    job: &AuditJob,
    llm: &mtr_llm::Llm,
    time: Option<&TimeBudget>,
) -> anyhow::Result<Result<Outcome, ExitCode>> {
    loop {
        let outcome = mtr_audit::run_within(bench, job.clone(), llm, time.cloned())
            .await
            .map_err(anyhow::Error::new)?;
        if let Some(code) = super::batch_file::finish(ctx, llm, "mtr audit")? {
            return Ok(Err(code));
        }
        if args.batch.batch && llm.batch_queued() > 0 {
            let rep = llm
                .run_batches()
                .await
                .map_err(|e| super::open::llm_error(ctx, e))?;
            tracing::info!(
                submitted = ?rep.submitted,
                answered = rep.answered,
                failed = rep.failed + rep.parse_failed,
                "batch finished; judging again from the answers"
            );
            if rep.answered == 0 {
                return Ok(Ok(outcome));
            }
            continue;
        }
        return Ok(Ok(outcome));
    }
}

/// `--dry-run --time-budget`: the dialogues a run would audit, in plan order, each with the
/// time it adds.
fn print_budget_plan(b: &mtr_audit::budget::BudgetPlan) {
    println!("\n{}", b.line(mtr_llm::budget::Run::Dry));
    if b.info.expected_s.is_none() {
        return;
    }
    let started: Vec<String> = b
        .dialogues
        .iter()
        .zip(&b.selected)
        .zip(&b.seconds)
        .filter(|((_, s), _)| **s)
        .map(|((id, _), secs)| {
            format!(
                "{id} (+{})",
                mtr_llm::plan::human_duration(secs.unwrap_or(0.0))
            )
        })
        .collect();
    println!(
        "dialogues the budget would start ({}): {}",
        started.len(),
        started.join(", ")
    );
}

/// Prints the scores and the cost; a judge that failed (nearly) every judgement fails the
/// command, naming it.
fn print_audited(
    summary: &mtr_audit::Summary,
    out: &std::path::Path,
    spend_job: &str,
    llm: &mtr_llm::Llm,
) -> anyhow::Result<()> {
    println!("{}", summary_text(summary, out));
    println!("{}", llm.ledger().to_markdown());
    let spend = super::spend::write(out, spend_job, llm, summary.cost.total.cost_usd)?;
    if let Some(spent) = spend.spent_usd {
        println!(
            "cost of the result ${:.4}; spent on {} over every attempt ${spent:.4} ({})",
            spend.result_cost_usd,
            out.display(),
            super::spend::SPEND
        );
    }
    let items = mtr_audit::statistics::failures::read_items(&out.join(mtr_audit::output::ITEMS));
    let failed = mtr_audit::statistics::failures::from_summary(summary, Some(&items));
    if !failed.is_empty() {
        let lines: Vec<String> = failed.iter().map(|f| f.message()).collect();
        return Err(crate::exit::Failed::internal(format!(
            "the audit is not complete: {} (`[audit] max_failed_share` = {})",
            lines.join("; "),
            summary.settings.max_failed_share
        )));
    }
    if !summary.complete {
        println!(
            "incomplete: {}; run the same command again to resume",
            summary.stopped.as_deref().unwrap_or("stopped")
        );
    }
    if let Some(b) = summary
        .time_budget
        .as_ref()
        .filter(|b| b.dialogues_left > 0)
    {
        eprintln!(
            "time budget {}: {} of {} planned dialogues are not audited yet{}; run the same command again with more time (or none) to continue",
            mtr_audit::budget::budget_text(b.budget_s),
            b.dialogues_left,
            b.dialogues_planned,
            if b.deadline_stopped {
                " (the deadline stopped judging)"
            } else {
                ""
            }
        );
    }
    Ok(())
}

fn summary_text(s: &mtr_audit::Summary, out: &std::path::Path) -> String {
    let mut t = format!(
        "audit of {}: {} of {} dialogues, {} turns, {} judges\n",
        s.benchmark.name,
        s.plan.dialogues_audited,
        s.plan.dialogues_total,
        s.plan.turns_audited,
        s.judges.len()
    );
    t.push_str(&format!(
        "{:<14} {:>6} {:>8} {:>18} {:>8}\n",
        "dimension", "items", "mean", "95% CI", "flagged"
    ));
    for (d, x) in &s.dimensions {
        let ci =
            x.ci.as_ref()
                .map(|c| format!("[{:.3}, {:.3}]", c.lower, c.upper))
                .unwrap_or_else(|| "-".into());
        let mean = x
            .mean
            .map(|m| format!("{m:.3}"))
            .unwrap_or_else(|| "-".into());
        t.push_str(&format!(
            "{:<14} {:>6} {:>8} {:>18} {:>8}\n",
            d.name(),
            x.items,
            mean,
            ci,
            x.flagged
        ));
    }
    t.push_str(&format!(
        "probable missing gold: {} of {} candidates (suggested_qrels.tsv)\n",
        s.suggested_qrels
            .iter()
            .filter(|x| x.verdict == mtr_audit::items::SuggestionVerdict::ProbableMissingGold)
            .count(),
        s.suggested_qrels.len()
    ));
    if let Some(h) = &s.human {
        t.push_str(&mtr_audit::human::text_table(h));
    }
    t.push_str(&format!("report: {}\n", out.join("report.html").display()));
    t
}
