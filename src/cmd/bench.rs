//! `mtr bench`: score retrievers (x query formulations) and external runs on a benchmark, with
//! strata, cluster-bootstrap intervals, paired tests, diagnostics and failure analysis; writes
//! `bench.json`, `per_query.jsonl`, `report.md` (and the runs it produced) into `-o DIR`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use mtr_bench::BenchError;
use mtr_bench::engine::{Settings, SystemInput};
use mtr_bench::job::{Provenance, SplitRequest};
use mtr_bench::query_set::Part;
use mtr_bench::stages;
use mtr_core::formats::{ImportOptions, open_any_with};
use mtr_core::progress::Progress as _;

use super::Ctx;

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
    /// Rank depth of the retriever runs.
    #[arg(long, default_value_t = 100)]
    pub k: usize,
    /// Measures to report, as trec_eval (ndcg_cut.10, recall.100, recip_rank_cut.10,
    /// map_cut.100, P.5, success.5, success_strict.5) or ir_measures (nDCG@10, R@100, RR@10,
    /// AP@100, P@5, Success@5) writes them; repeatable or comma-separated [default: nDCG@5,10,20,
    /// R@5,10,20,100, RR@10, AP@100, Success@1,5,10 strict and lenient].
    #[arg(long = "measure", value_name = "MEASURE", value_delimiter = ',')]
    pub measures: Vec<String>,
    /// The measure for ranking, tests, failure analysis and turn-depth curves.
    #[arg(long, default_value = "ndcg_cut.10")]
    pub main: String,
    /// The system every other is tested against [default: the first system].
    #[arg(long)]
    pub baseline: Option<String>,
    /// Bootstrap resamples (over dialogues).
    #[arg(long, default_value_t = 1000)]
    pub resamples: usize,
    /// Confidence level of the intervals (not the relevance level: grade >= 1 is relevant).
    #[arg(
        long = "confidence-level",
        value_name = "LEVEL",
        default_value_t = 0.95
    )]
    pub level: f64,
    /// Sign-flip permutations of the randomization tests.
    #[arg(long, default_value_t = 10_000)]
    pub permutations: usize,
    /// Significance level.
    #[arg(long, default_value_t = 0.05)]
    pub alpha: f64,
    /// Seed of every random choice (bootstrap, tests, split, example sampling).
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Split dialogues into dev/test with this share in dev (seeded) and score one part.
    #[arg(long, value_name = "RATIO")]
    pub split: Option<f64>,
    /// Which part of the split to score.
    #[arg(long, value_enum, default_value_t = PartArg::Dev, requires = "split")]
    pub part: PartArg,
    /// Worst turns shown per system in the failure analysis.
    #[arg(long, default_value_t = 5)]
    pub examples: usize,
    /// Recall failure: no relevant passage in the top K.
    #[arg(long, default_value_t = 10)]
    pub failure_k: usize,
    /// Ranking failure: the first relevant passage is below this rank (within the top K).
    #[arg(long, default_value_t = 3)]
    pub failure_rank: usize,
    /// MTRAG sources: the domain to import (clapnq, govt, ...) when BENCH is not native.
    #[arg(long)]
    pub domain: Option<String>,
    /// Refuse runs that rank documents the corpus lacks (without it they score as non-relevant,
    /// as trec_eval does, with a warning and a count per system).
    #[arg(long)]
    pub strict: bool,
    /// Strata with fewer turns than this are marked small: a warning, greyed out in charts.
    #[arg(long, value_name = "TURNS", default_value_t = 30)]
    pub min_stratum: usize,
    #[command(flatten)]
    pub llm: super::common::LlmArgs,
    /// An audit of this benchmark (`mtr audit -o DIR`): also score every system under the qrels
    /// it supports (noise-removed, sparsity-filled, corrected, and reviewed when reviewers'
    /// labels exist in `AUDIT_DIR/review/labels.jsonl`) on the audited turns, in bench.json's
    /// `label_sensitivity` and the report.
    #[arg(long, value_name = "AUDIT_DIR")]
    pub audit: Option<PathBuf>,
    /// Changed turns listed per variant in the label-sensitivity section.
    #[arg(long, default_value_t = 20, requires = "audit")]
    pub moved_turns: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PartArg {
    Dev,
    Test,
}

pub async fn run(ctx: &Ctx, args: Args) -> anyhow::Result<ExitCode> {
    if args.retrievers.is_empty() && args.runs.is_empty() {
        return Err(BenchError::option(
            "--retriever/--run",
            "nothing to score: give at least one --retriever or --run",
        )
        .into());
    }
    let settings = stages::settings(&args.main, &args.measures, settings(&args))?;
    let import = ImportOptions {
        domain: args.domain.clone(),
        ..Default::default()
    };
    let dir = open_any_with(&args.bench, None, &import, ctx.progress.as_ref())?;
    let split = args.split.map(|ratio| SplitRequest {
        ratio,
        seed: args.seed,
        part: match args.part {
            PartArg::Dev => Part::Dev,
            PartArg::Test => Part::Test,
        },
    });
    let prepared = mtr_bench::job::prepare(&dir, split)?;
    // An audit of another benchmark is refused before any work.
    let label_edits = match &args.audit {
        Some(a) => Some(super::qrels::load_edits(a, &prepared.fingerprint)?),
        None => None,
    };
    // External runs first: bad input should fail before any retrieval work.
    let externals = stages::load_externals(&args.runs, &prepared)?;

    let mut systems: Vec<SystemInput> = Vec::new();
    let mut ablations = Vec::new();
    let plan = stages::plan_retrieval(
        &args.retrievers,
        &args.queries,
        args.index.as_deref(),
        dir.root(),
        &prepared,
    )?;
    if let Some(plan) = &plan {
        let (src, idx) = stages::open_index(plan, dir.root(), ctx.progress.as_ref())
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
            Some(l) if plan.needs_rewriter() => {
                Some(mtr_retrieve::llm::LlmRewriter::new(l.clone())?)
            }
            _ => None,
        };
        let (s, a) = stages::retrieve(
            plan,
            &prepared,
            &idx,
            embedder,
            rewriter.as_ref().map(|r| r as &dyn mtr_retrieve::Rewriter),
            args.k,
            ctx.progress.as_ref(),
        )
        .await?;
        systems.extend(s);
        ablations.extend(a);
    }
    systems.extend(externals.into_iter().map(SystemInput::external));

    let prov = Provenance {
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        git_commit: option_env!("MTR_GIT_COMMIT")
            .map(str::to_string)
            .or_else(|| std::env::var("MTR_GIT_COMMIT").ok()),
        config_hash: ctx.config.hash(),
        date: mtr_bench::job::today(),
    };
    ctx.progress.stage("scoring", 0);
    let edits = label_edits.as_ref().map(|e| (e, args.moved_turns));
    let outcome = stages::score(&prepared, &systems, &ablations, &settings, &prov, edits)?;
    ctx.progress.finish_stage();
    let runs = mtr_bench::output::retriever_runs(&systems);
    let written = mtr_bench::output::write_results(args.output.path(), &outcome, &runs)?;

    for w in &outcome.result.warnings {
        tracing::warn!("{w}");
    }
    let mut text = stages::summary(&outcome.result);
    text.push_str(&format!(
        "\nwrote {} files to {}\n",
        written.len(),
        args.output.path().display()
    ));
    super::open::emit(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// The statistics flags; the measures are parsed by [`stages::settings`].
fn settings(args: &Args) -> Settings {
    Settings {
        resamples: args.resamples,
        level: args.level,
        permutations: args.permutations,
        alpha: args.alpha,
        seed: args.seed,
        baseline: args.baseline.clone(),
        failure_k: args.failure_k,
        failure_rank: args.failure_rank,
        failure_examples: args.examples,
        strict: args.strict,
        min_stratum: args.min_stratum,
        ..Settings::default()
    }
}
