//! `mtr bench`: score retrievers (x query formulations) and external runs on a benchmark, with
//! strata, cluster-bootstrap intervals, paired tests, diagnostics and failure analysis; writes
//! `bench.json`, `per_query.jsonl`, `report.md` (and the runs it produced) into `-o DIR`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use mtr_bench::BenchError;
use mtr_bench::job::{self, BenchSettings, Provenance, SplitRequest, SystemInput};
use mtr_core::formats::{ImportOptions, open_any_with};
use mtr_core::progress::Progress as _;

use super::Ctx;
use crate::config::flags::section_flags;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The benchmark: a native folder or any folder `mtr import` understands.
    pub bench: PathBuf,
    /// A retriever to run: bm25, dense, rrf(bm25,dense), weighted(bm25=0.3,dense=0.7) (alias
    /// weighted-minmax), weighted-z(...) (alias weighted-zscore). Repeatable.
    #[arg(long = "retriever", value_name = "SPEC")]
    pub retrievers: Vec<String>,
    /// Query formulations for the retrievers: last (alias lastturn), all, full, full:N (or
    /// full=N), window:N, rewrite, llm-rewrite (alias llm_rewrite); repeatable or
    /// comma-separated [default: last, full, and rewrite when the benchmark has gold rewrites].
    #[arg(long = "query", value_name = "FORMULATION", value_delimiter = ',')]
    pub queries: Vec<String>,
    /// An external run (TREC 6-column or MTRAG JSONL), `FILE` or `NAME=FILE`. Repeatable.
    #[arg(long = "run", value_name = "[NAME=]FILE")]
    pub runs: Vec<String>,
    #[command(flatten)]
    pub output: super::common::Output<super::common::Folder>,
    /// Index folder for the retrievers, built when missing [default: BENCH/.mtr/index, or a
    /// cache folder when BENCH is not writable].
    #[arg(long, value_name = "DIR")]
    pub index: Option<PathBuf>,
    /// Measures to report, as trec_eval (ndcg_cut.10, recall.100, recip_rank_cut.10,
    /// map_cut.100, P.5, success.5, success_strict.5) or ir_measures (nDCG@10, R@100, RR@10,
    /// AP@100, P@5, Success@5) writes them; repeatable or comma-separated [default: nDCG@5,10,20,
    /// R@5,10,20,100, RR@10, AP@100, Success@1,5,10 strict and lenient].
    #[arg(long = "measure", value_name = "MEASURE", value_delimiter = ',')]
    pub measures: Vec<String>,
    #[command(flatten)]
    pub settings: BenchFlags,
    /// MTRAG sources: the domain to import (clapnq, govt, ...) when BENCH is not native.
    #[arg(long)]
    pub domain: Option<String>,
    #[command(flatten)]
    pub llm: super::common::LlmArgs,
    /// An audit of this benchmark (`mtr audit -o DIR`): also score every system under the qrels
    /// it supports (noise-removed, sparsity-filled, corrected, and reviewed when reviewers'
    /// labels exist in `AUDIT_DIR/review/labels.jsonl`) on the audited turns, in bench.json's
    /// `label_sensitivity` and the report.
    #[arg(long, value_name = "AUDIT_DIR")]
    pub audit: Option<PathBuf>,
    /// Judge the holes in every system's top K (the passages the qrels do not judge for the
    /// turn) with the relevance judges, as `mtr judge` does, into `OUTPUT/holes/` (a rerun pays
    /// nothing twice), and show beside each measure Judged@K and its value with the holes
    /// filled (docs/judge.md).
    #[arg(long, value_name = "K")]
    pub fill_holes: Option<usize>,
}

section_flags! {
    /// The flags over `[bench]`; each default is `BenchSettings::default()`'s.
    pub struct BenchFlags for BenchSettings {
        /// Rank depth of the retriever runs.
        k: Option<usize> => "k",
        /// The measure for ranking, tests, failure analysis and turn-depth curves.
        #[arg(value_name = "MAIN")]
        main: Option<String> => "main",
        /// The system every other is tested against [default: the first system].
        baseline: Option<String> => "baseline",
        /// Bootstrap resamples (over dialogues).
        resamples: Option<usize> => "resamples",
        /// Confidence level of the intervals (not the relevance level: grade >= 1 is relevant).
        #[arg(value_name = "LEVEL")]
        confidence_level: Option<f64> => "confidence_level",
        /// Sign-flip permutations of the randomization tests.
        permutations: Option<usize> => "permutations",
        /// Significance level.
        alpha: Option<f64> => "alpha",
        /// Seed of every random choice (bootstrap, tests, split, example sampling).
        seed: Option<u64> => "seed",
        /// Split dialogues into dev/test with this share in dev (seeded) and score one part.
        #[arg(value_name = "RATIO")]
        split: Option<f64> => "split",
        /// Which part of the split to score (dev or test).
        #[arg(value_name = "PART", requires = "split")]
        part: Option<String> => "part",
        /// Worst turns shown per system in the failure analysis.
        examples: Option<usize> => "examples",
        /// Recall failure: no relevant passage in the top K.
        failure_k: Option<usize> => "failure_k",
        /// Ranking failure: the first relevant passage is below this rank (within the top K).
        failure_rank: Option<usize> => "failure_rank",
        /// Refuse runs that rank documents the corpus lacks (without it they score as
        /// non-relevant, as trec_eval does, with a warning and a count per system).
        strict: bool => "strict" = true,
        /// Strata with fewer turns than this are marked small: a warning, greyed out in charts.
        #[arg(value_name = "TURNS")]
        min_stratum: Option<usize> => "min_stratum",
        /// Changed turns listed per variant in the label-sensitivity section.
        #[arg(requires = "audit")]
        moved_turns: Option<usize> => "moved_turns",
    }
}

pub async fn run(ctx: &Ctx, args: Args) -> anyhow::Result<ExitCode> {
    if args.fill_holes == Some(0) {
        return Err(
            BenchError::option("--fill-holes", "a depth of 0 pools nothing: give K >= 1").into(),
        );
    }
    if args.retrievers.is_empty() && args.runs.is_empty() {
        return Err(BenchError::option(
            "--retriever/--run",
            "nothing to score: give at least one --retriever or --run",
        )
        .into());
    }
    let section: BenchSettings = ctx.config.settings(&args.settings)?;
    let settings = job::settings(&section, &args.measures)?;
    let import = ImportOptions {
        domain: args.domain.clone(),
        ..Default::default()
    };
    let dir = open_any_with(&args.bench, None, &import, ctx.progress.as_ref())?;
    let split = section.split.map(|ratio| SplitRequest {
        ratio,
        seed: section.seed,
        part: section.part,
    });
    let prepared = job::prepare(&dir, split)?;
    // An audit of another benchmark is refused before any work.
    let label_edits = match &args.audit {
        Some(a) => Some(super::qrels::load_edits(a, &prepared.fingerprint)?),
        None => None,
    };
    // External runs first: bad input should fail before any retrieval work.
    let externals = job::load_externals(&args.runs, &prepared)?;

    let (mut systems, ablations) = retrieve(ctx, &args, &section, &dir, &prepared).await?;
    systems.extend(externals.into_iter().map(SystemInput::external));

    let prov = Provenance {
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        git_commit: option_env!("MTR_GIT_COMMIT")
            .map(str::to_string)
            .or_else(|| std::env::var("MTR_GIT_COMMIT").ok()),
        config_hash: ctx.config.hash(),
        date: job::today(),
    };
    ctx.progress.stage("scoring", 0);
    let edits = label_edits.as_ref().map(|e| (e, section.moved_turns));
    let mut outcome = job::score(&prepared, &systems, &ablations, &settings, &prov, edits)?;
    ctx.progress.finish_stage();
    if let Some(k) = args.fill_holes {
        fill_holes(ctx, &args, &prepared, &systems, k, &settings, &mut outcome).await?;
    }
    let runs = mtr_bench::output::retriever_runs(&systems);
    let written = mtr_bench::output::write_results(args.output.path(), &outcome, &runs)?;

    for w in &outcome.result.warnings {
        tracing::warn!("{w}");
    }
    let mut text = job::summary(&outcome.result);
    text.push_str(&format!(
        "\nwrote {} files to {}\n",
        written.len(),
        args.output.path().display()
    ));
    super::open::emit(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// `--fill-holes K`: the holes of every system's top K on the scored turns judged into
/// `OUTPUT/holes/`, then every system scored again with them filled.
async fn fill_holes(
    ctx: &Ctx,
    args: &Args,
    prepared: &job::Prepared,
    systems: &[SystemInput],
    k: usize,
    settings: &job::Settings,
    outcome: &mut mtr_bench::job::Outcome,
) -> anyhow::Result<()> {
    let scored: std::collections::BTreeSet<&str> = prepared
        .set
        .queries
        .iter()
        .map(|q| q.qid.as_str())
        .collect();
    let runs: Vec<mtr_audit::holes::NamedRun> = systems
        .iter()
        .map(|s| mtr_audit::holes::NamedRun {
            name: s.name.clone(),
            path: s.source.as_ref().map_or_else(
                || {
                    args.output
                        .path()
                        .join(mtr_bench::output::run_file(&s.name))
                },
                PathBuf::from,
            ),
            run: s
                .run
                .iter()
                .filter(|(q, _)| scored.contains(q.as_str()))
                .map(|(q, d)| (q.clone(), d.clone()))
                .collect(),
        })
        .collect();
    let folder = "holes";
    let out = args.output.path().join(folder);
    let req = super::judge::FillRequest {
        bench: &prepared.bench,
        qrels: &prepared.set.qrels,
        runs: &runs,
        depth: k,
        out: &out,
        llm: &args.llm,
    };
    let (summary, filled) = super::judge::fill_holes(ctx, &req).await?;
    let fill = mtr_bench::holes::FilledHoles {
        depth: k,
        filled: &filled,
        folder,
        holes: summary.holes,
        judged: summary.judged,
        relevant: summary.relevant,
    };
    mtr_bench::holes::apply(outcome, systems, settings, &fill)?;
    Ok(())
}

/// The runs of the retriever specs x query formulations (none without `--retriever`), and the
/// fusion ablations; the LLM client is opened only when a plan needs an embedder or a rewriter.
async fn retrieve(
    ctx: &Ctx,
    args: &Args,
    section: &BenchSettings,
    dir: &mtr_core::BenchmarkDir,
    prepared: &job::Prepared,
) -> anyhow::Result<(Vec<SystemInput>, Vec<job::AblationInput>)> {
    let plan = job::plan_retrieval(
        &args.retrievers,
        &args.queries,
        args.index.as_deref(),
        dir.root(),
        prepared,
    )?;
    let Some(plan) = &plan else {
        return Ok((Vec::new(), Vec::new()));
    };
    let (src, idx) = job::open_index(plan, dir.root(), ctx.progress.as_ref())
        .with_context(|| format!("index {}", plan.index_path.display()))?;
    let llm = if plan.needs_llm() {
        // the output folder and the LLM cache must take writes before anything is paid
        super::preflight::writable_dir(args.output.path(), "--output")?;
        let l = super::open::open_llm(ctx, &args.llm).await?;
        super::preflight::writable_cache(&l)?;
        Some(l)
    } else {
        None
    };
    let embedder = match &llm {
        Some(l) if plan.needs_dense() => {
            Some(mtr_retrieve::llm::open_embedder(l, &idx, &src, ctx.progress.as_ref()).await?)
        }
        _ => None,
    };
    let rewriter = match &llm {
        Some(l) if plan.needs_rewriter() => Some(mtr_retrieve::llm::LlmRewriter::new(l.clone())?),
        _ => None,
    };
    Ok(job::retrieve(
        plan,
        prepared,
        &idx,
        embedder,
        rewriter.as_ref().map(|r| r as &dyn mtr_retrieve::Rewriter),
        section.k,
        ctx.progress.as_ref(),
    )
    .await?)
}
