//! `mtr judge`: fills the holes of a leaderboard. Every passage that a run ranks in its top K
//! and the benchmark's qrels do not judge is judged once by the audit's relevance judges
//! (`mtr_audit::holes`); the folder holds `judgements.jsonl`, `summary.json`, `report.md`,
//! `report.html` and the audit of the holes (`audit/`, where a rerun resumes). `mtr qrels
//! apply BENCH DIR --variant filled` writes the filled qrels.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use mtr_audit::budget::TimeBudget;
use mtr_audit::holes::{HoleJob, HoleOutcome, HolePlan, NamedRun};
use mtr_audit::{AuditJob, AuditSettings, Outcome};

use super::Ctx;
use crate::config::flags::section_flags;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Benchmark folder (native, or any format `mtr import` reads) with qrels.
    pub src: PathBuf,
    /// A run to pool (TREC 6-column or MTRAG JSONL); repeat for several.
    #[arg(long = "run", value_name = "FILE")]
    pub runs: Vec<PathBuf>,
    /// A folder of runs: every file in it (sorted by name) is pooled; a `mtr bench` results
    /// folder (with bench.json) gives its systems' runs, by system name.
    #[arg(long, value_name = "DIR")]
    pub runs_dir: Option<PathBuf>,
    /// K: the depth of each run's ranking that is pooled.
    #[arg(long, value_name = "K", default_value_t = 10)]
    pub depth: usize,
    #[command(flatten)]
    pub out: super::common::Output<Written>,
    /// Folder with prompt templates overriding the built-in `prompts/audit/*.j2`.
    #[arg(long)]
    pub prompts: Option<PathBuf>,
    /// Judge only the turns (in benchmark order) whose expected judging time fits this
    /// budget (e.g. 90s, 15m, 1h); a rerun goes on where this one stopped [default: none].
    #[arg(long, value_name = "DURATION", value_parser = mtr_llm::budget::parse_duration)]
    pub time_budget: Option<std::time::Duration>,
    #[command(flatten)]
    pub settings: JudgeFlags,
    #[command(flatten)]
    pub import: super::common::ImportFlags,
    #[command(flatten)]
    pub llm: super::common::LlmArgs,
    #[command(flatten)]
    pub dry_run: super::common::DryRunArgs,
    #[command(flatten)]
    pub batch: super::common::BatchArgs,
}

/// What `mtr judge -o` names.
#[derive(Debug, Clone, Default)]
pub struct Written;

impl super::common::OutputKind for Written {
    const VALUE_NAME: &'static str = "DIR";
    const HELP: &'static str = "Output folder [default: `judge-<benchmark name>`]. Rerunning into the same folder resumes: judged holes are kept as they are";
    const REQUIRED: bool = false;
}

section_flags! {
    /// The flags over `[audit]` that judging holes reads.
    pub struct JudgeFlags for AuditSettings {
        /// Seed of every random choice.
        seed: Option<u64> => "seed",
    }
}

/// The runs, named: `--run` in the order given (by file stem), then `--runs-dir`: a `mtr
/// bench` results folder gives the runs of its systems by their names
/// ([`bench_runs`]), any other folder every file in it, sorted by name.
fn run_paths(a: &Args) -> anyhow::Result<Vec<(String, PathBuf)>> {
    let mut paths: Vec<(String, PathBuf)> = a.runs.iter().map(|p| (stem(p), p.clone())).collect();
    if let Some(dir) = &a.runs_dir {
        if dir.join(mtr_bench::output::RESULT_FILE).is_file() {
            paths.extend(bench_runs(dir)?);
        } else {
            let mut more: Vec<PathBuf> = std::fs::read_dir(dir)
                .with_context(|| format!("reading {}", dir.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file())
                .collect();
            more.sort();
            paths.extend(more.into_iter().map(|p| (stem(&p), p)));
        }
    }
    if paths.is_empty() {
        return Err(anyhow::Error::new(mtr_core::Error::from(
            mtr_core::InputError::new("--run", "no run to pool")
                .hint("give --run FILE or --runs-dir DIR"),
        )));
    }
    Ok(paths)
}

/// A run file's name: its stem.
fn stem(p: &std::path::Path) -> String {
    p.file_stem().map_or_else(
        || p.display().to_string(),
        |s| s.to_string_lossy().into_owned(),
    )
}

/// The runs of a `mtr bench` results folder, by system name in `bench.json`'s order: a
/// retriever system's run is the folder's `runs/<system>.trec`; an external system's is the
/// file it was read from (`source`, as given to `mtr bench`: relative to the current folder),
/// skipped with a warning when it is no longer there.
fn bench_runs(dir: &std::path::Path) -> anyhow::Result<Vec<(String, PathBuf)>> {
    let file = dir.join(mtr_bench::output::RESULT_FILE);
    let loaded = mtr_bench::leaderboard::load(std::slice::from_ref(&file))?;
    let mut out = Vec::new();
    for (_, r) in &loaded {
        for s in &r.systems {
            let path = match (&s.kind, &s.source) {
                (mtr_bench::SystemKind::Retriever, _) => {
                    dir.join(mtr_bench::output::run_file(&s.name))
                }
                (mtr_bench::SystemKind::External, Some(src)) => PathBuf::from(src),
                (mtr_bench::SystemKind::External, None) => continue,
            };
            if path.is_file() {
                out.push((s.name.clone(), path));
            } else {
                tracing::warn!(
                    "{}: the run of system `{}` is not at {}: not pooled (give it with --run)",
                    file.display(),
                    s.name,
                    path.display()
                );
            }
        }
    }
    Ok(out)
}

pub async fn run(ctx: &Ctx, args: Args) -> anyhow::Result<ExitCode> {
    let started = std::time::Instant::now();
    let settings: AuditSettings = ctx.config.settings(&args.settings)?;
    let dir = super::open::open_benchmark(ctx, &args.src, &args.import.options())?;
    let bench = dir
        .load()
        .with_context(|| format!("loading {}", dir.root().display()))?;
    let qrels = bench.dir.qrels().map_err(anyhow::Error::new)?;
    let runs = mtr_audit::holes::read_named_runs(&run_paths(&args)?).map_err(anyhow::Error::new)?;
    let plan = mtr_audit::holes::plan_holes(
        &qrels,
        &bench.dir.root().join("qrels.tsv"),
        &runs,
        args.depth,
    )
    .map_err(anyhow::Error::new)?;
    let out = args.out.given().map_or_else(
        || super::common::default_output("judge", &bench.manifest.name),
        PathBuf::from,
    );
    if !args.dry_run.dry_run {
        super::preflight::writable_dir(&out, "-o")?;
    }
    let llm_args = args.llm.clone().with(args.dry_run, args.batch.clone());
    let llm = super::open::open_llm_batching(ctx, &llm_args).await?;
    let spend_job = mtr_llm::client::spend::job_tag("judge", &out);
    if !args.dry_run.dry_run {
        super::preflight::writable_cache(&llm)?;
        llm.set_spend_job(&spend_job);
    }
    super::batch_file::start(ctx, &llm, &llm_args, Some(&spend_job))?;
    let prompts = super::audit::prompts(args.prompts.as_deref())?;
    let audit = audit_job(ctx, settings, &out, prompts);
    let time = super::audit::time_budget(args.time_budget, started, args.dry_run.dry_run);
    let job = Judging {
        bench: &bench,
        runs: &runs,
        qrels: &qrels,
        plan: &plan,
        audit,
        time,
    };
    let outcome = match judge_passes(ctx, &args, &job, &llm).await? {
        Ok(o) => o,
        Err(code) => return Ok(code),
    };
    print_outcome(&outcome, &job, &out, &spend_job, &llm)?;
    Ok(ExitCode::SUCCESS)
}

/// The audit that judges the holes into `out` (its `audit/` folder).
fn audit_job(
    ctx: &Ctx,
    settings: AuditSettings,
    out: &std::path::Path,
    prompts: mtr_audit::AuditPrompts,
) -> AuditJob {
    AuditJob {
        settings,
        out_dir: out.to_path_buf(),
        prompts,
        retrievers: Vec::new(),
        config_hash: ctx.config.hash(),
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        git_commit: option_env!("MTR_GIT_COMMIT").map(str::to_string),
        human_labels: None,
        human_sample: None,
        progress: ctx.progress.clone(),
    }
}

/// What `mtr bench --fill-holes K` asks of the judging.
pub(crate) struct FillRequest<'a> {
    pub bench: &'a mtr_core::Benchmark,
    pub qrels: &'a mtr_core::Qrels,
    /// The system's runs, by system name.
    pub runs: &'a [NamedRun],
    pub depth: usize,
    /// The judge folder (`mtr judge -o`'s layout): `RESULTS/holes`.
    pub out: &'a std::path::Path,
    pub llm: &'a super::common::LlmArgs,
}

/// The holes judged for `mtr bench --fill-holes K`, as `mtr judge` judges them (the `[audit]`
/// settings, the built-in prompts, the cache; a rerun pays nothing twice), written into
/// `req.out`, with its spend record. Returns the summary and the filled qrels.
pub(crate) async fn fill_holes(
    ctx: &Ctx,
    req: &FillRequest<'_>,
) -> anyhow::Result<(mtr_audit::holes::HoleSummary, mtr_core::Qrels)> {
    let settings: AuditSettings = ctx.config.settings(&JudgeFlags::default())?;
    let qrels_path = req.bench.dir.root().join("qrels.tsv");
    let plan = mtr_audit::holes::plan_holes(req.qrels, &qrels_path, req.runs, req.depth)
        .map_err(anyhow::Error::new)?;
    super::preflight::writable_dir(req.out, "--output")?;
    let llm = super::open::open_llm(ctx, req.llm).await?;
    super::preflight::writable_cache(&llm)?;
    let spend_job = mtr_llm::client::spend::job_tag("judge", req.out);
    llm.set_spend_job(&spend_job);
    let hole_job = HoleJob {
        runs: req.runs,
        qrels: req.qrels,
        plan: &plan,
        audit: audit_job(ctx, settings, req.out, super::audit::prompts(None)?),
    };
    let outcome = mtr_audit::holes::judge_holes(req.bench, hole_job, &llm, None)
        .await
        .map_err(anyhow::Error::new)?;
    let HoleOutcome::Judged(summary) = outcome else {
        anyhow::bail!("judging the holes made no judgements (a dry run)");
    };
    super::spend::write(req.out, &spend_job, &llm, llm.ledger().total().cost_usd)?;
    let verdicts = mtr_audit::holes::read_verdicts(req.out).map_err(anyhow::Error::new)?;
    let filled = mtr_audit::holes::filled_qrels(req.qrels, &verdicts);
    Ok((*summary, filled))
}

/// Everything one pass of the judging needs.
struct Judging<'a> {
    bench: &'a mtr_core::Benchmark,
    runs: &'a [NamedRun],
    qrels: &'a mtr_core::Qrels,
    plan: &'a HolePlan,
    audit: AuditJob,
    time: Option<TimeBudget>,
}

/// Judges the holes; with --batch the first pass queues the uncached judgements and the next
/// finds their answers in the cache. `Err(code)`: a Batch-file export ended the command.
async fn judge_passes(
    ctx: &Ctx,
    args: &Args,
    job: &Judging<'_>,
    llm: &mtr_llm::Llm,
) -> anyhow::Result<Result<HoleOutcome, ExitCode>> {
    loop {
        let hole_job = HoleJob {
            runs: job.runs,
            qrels: job.qrels,
            plan: job.plan,
            audit: job.audit.clone(),
        };
        let outcome = mtr_audit::holes::judge_holes(job.bench, hole_job, llm, job.time.clone())
            .await
            .map_err(anyhow::Error::new)?;
        if let Some(code) = super::batch_file::finish(ctx, llm, "mtr judge")? {
            return Ok(Err(code));
        }
        if args.batch.batch && llm.batch_queued() > 0 {
            let rep = llm
                .run_batches()
                .await
                .map_err(|e| super::open::llm_error(ctx, e))?;
            if rep.answered > 0 {
                continue;
            }
        }
        return Ok(Ok(outcome));
    }
}

/// What a run prints: the dry run's plan, or the report and the cost.
fn print_outcome(
    outcome: &HoleOutcome,
    job: &Judging<'_>,
    out: &std::path::Path,
    spend_job: &str,
    llm: &mtr_llm::Llm,
) -> anyhow::Result<()> {
    let (plan, runs) = (job.plan, job.runs);
    match outcome {
        HoleOutcome::DryRun(Outcome::DryRun {
            plan: calls,
            judgements,
            reused,
            ..
        }) => {
            println!(
                "dry run: {} holes in the top {} of {} runs; {judgements} judgements to make ({reused} already in {}), nothing called\n",
                plan.holes.len(),
                plan.depth,
                runs.len(),
                out.display()
            );
            print!("{}", calls.to_table());
        }
        HoleOutcome::DryRun(_) => {}
        HoleOutcome::Judged(s) => {
            print!(
                "{}",
                std::fs::read_to_string(out.join("report.md")).unwrap_or_default()
            );
            println!("{}", llm.ledger().to_markdown());
            super::spend::write(out, spend_job, llm, llm.ledger().total().cost_usd)?;
            if !s.complete {
                println!(
                    "incomplete: {} of {} holes judged; run the same command again to judge the rest",
                    s.judged, s.holes
                );
            }
            println!("{}", out.display());
        }
    }
    Ok(())
}
