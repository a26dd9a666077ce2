//! `mtr retrieve BENCH --index INDEX --retriever SPEC --query FORMULATION --k 100 -o run.trec`:
//! retrieves for every turn of a benchmark and writes a TREC run (usable by `mtr eval` and
//! trec_eval), a JSONL run with query texts and scores, and the run's metadata. The run name,
//! `<retriever>.<formulation>`, is the TREC tag.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use mtr_core::BenchmarkDir;
use mtr_retrieve::fusion::RetrieverSpec;
use mtr_retrieve::llm::LlmRewriter;
use mtr_retrieve::query::Rewriter;
use mtr_retrieve::{CorpusSource, IndexOptions, Language, QueryFormulation, RetrieveSettings};

use super::Ctx;
use super::common::{FormatArgs, LlmArgs, QueryArgs};
use super::open::open_llm;
use crate::config::flags::section_flags;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// A native benchmark folder (see `mtr import`).
    pub bench: PathBuf,
    /// The index folder (`mtr index`); built from the benchmark's corpus when missing.
    #[arg(long)]
    pub index: PathBuf,
    #[command(flatten)]
    pub settings: RetrieveFlags,
    #[command(flatten)]
    pub query: QueryArgs,
    #[command(flatten)]
    pub output: super::common::Output<Written>,
    #[command(flatten)]
    pub format: FormatArgs,
    #[command(flatten)]
    pub llm: LlmArgs,
}

section_flags! {
    /// The flags over `[retrieve]`; each default is `RetrieveSettings::default()`'s.
    pub struct RetrieveFlags for RetrieveSettings {
        /// bm25, dense, rrf(bm25,dense), weighted(bm25=0.3,dense=0.7) (alias weighted-minmax),
        /// weighted-z(...) (alias weighted-zscore).
        retriever: Option<RetrieverSpec> => "retriever",
        /// Passages per query.
        k: Option<usize> => "k",
        /// Query-side analyzer language: en (alias english), zh (aliases chinese, zh-cn,
        /// zh-tw, zh-hans, zh-hant) or auto (the index's); must match the index.
        language: Option<Language> => "language",
    }
}

/// What `mtr retrieve -o` names.
#[derive(Debug, Clone, Default)]
pub struct Written;

impl super::common::OutputKind for Written {
    const VALUE_NAME: &'static str = "RUN";
    const HELP: &'static str = "The TREC run to write (also writes RUN.jsonl and RUN.meta.json)";
    const REQUIRED: bool = true;
}

pub async fn run(ctx: &Ctx, args: Args) -> anyhow::Result<ExitCode> {
    let settings: RetrieveSettings = ctx.config.settings(&args.settings)?;
    let bench_dir = BenchmarkDir::open(&args.bench).map_err(anyhow::Error::new)?;
    let bench = bench_dir.load().map_err(anyhow::Error::new)?;
    let query = args.query.resolve(&bench);
    let src = CorpusSource::Benchmark(bench_dir.clone());
    let start = Instant::now();
    let idx = open_index(ctx, &args, settings.language, &src).await?;

    let needs_llm = settings.retriever.needs_dense() || query == QueryFormulation::LlmRewrite;
    let llm = if needs_llm {
        Some(open_llm(ctx, &args.llm).await?)
    } else {
        None
    };
    let embedder = match (&llm, settings.retriever.needs_dense()) {
        (Some(llm), true) => Some(
            mtr_retrieve::llm::open_embedder(llm, &idx, &src, ctx.progress.as_ref())
                .await
                .map_err(anyhow::Error::new)?,
        ),
        _ => None,
    };
    let rewriter: Option<LlmRewriter> = match (&llm, query) {
        (Some(llm), QueryFormulation::LlmRewrite) => {
            Some(LlmRewriter::new(llm.clone()).map_err(anyhow::Error::new)?)
        }
        _ => None,
    };
    let retriever = mtr_retrieve::open_retriever(&settings.retriever, &idx, embedder)
        .map_err(anyhow::Error::new)?;
    let mut out = mtr_retrieve::retrieve_benchmark(
        &bench,
        retriever.as_ref(),
        &query,
        settings.k,
        rewriter.as_ref().map(|r| r as &dyn Rewriter),
        ctx.progress.as_ref(),
    )
    .await
    .map_err(anyhow::Error::new)?;
    out.meta.index_fingerprint = Some(idx.fingerprint().to_string());
    mtr_retrieve::write_run_files(&out, args.output.path())
        .map_err(anyhow::Error::new)
        .with_context(|| format!("writing {}", args.output.path().display()))?;
    let seconds = start.elapsed().as_secs_f64();
    summarise(&args, settings.k, &out, query, seconds, llm.as_ref())?;
    Ok(ExitCode::SUCCESS)
}

/// The benchmark's index folder, built first if it is missing, checked against `--language`.
async fn open_index(
    ctx: &Ctx,
    args: &Args,
    language: Language,
    src: &CorpusSource,
) -> anyhow::Result<mtr_retrieve::IndexDir> {
    let opts = IndexOptions {
        language,
        ..Default::default()
    };
    let (index_path, progress) = (args.index.clone(), ctx.progress.clone());
    let src = src.clone();
    let idx = tokio::task::spawn_blocking(move || {
        mtr_retrieve::ensure_index(&src, &index_path, &opts, progress.as_ref())
    })
    .await?
    .map_err(anyhow::Error::new)?;
    idx.check_analyzer(language).map_err(anyhow::Error::new)?;
    Ok(idx)
}

/// What was written, as JSON (`--format json`) or lines, and what the LLM calls cost.
fn summarise(
    args: &Args,
    k: usize,
    out: &mtr_retrieve::RetrievedRun,
    query: QueryFormulation,
    seconds: f64,
    llm: Option<&mtr_llm::Llm>,
) -> anyhow::Result<()> {
    let (_, jsonl, meta) = mtr_retrieve::run::run_file_paths(args.output.path());
    if args.format.json() {
        let summary = serde_json::json!({
            "run": out.name,
            "query": query.name(),
            "queries": out.meta.num_queries,
            "k": k,
            "seconds": seconds,
            "files": [args.output.path(), &jsonl, &meta],
            "rewrite_fallbacks": out.meta.rewrite_fallbacks,
            "cost_usd": llm.map_or(0.0, |l| l.ledger().total_cost_usd),
        });
        println!("{}", serde_json::to_string_pretty(&summary)?);
        return Ok(());
    }
    println!(
        "{}: {} queries, k={} in {:.1} s -> {} ({}, {})",
        out.name,
        out.meta.num_queries,
        k,
        seconds,
        args.output.path().display(),
        jsonl.display(),
        meta.display()
    );
    if out.meta.rewrite_fallbacks > 0 {
        println!(
            "note: {} turns had no gold rewrite and used their user utterance",
            out.meta.rewrite_fallbacks
        );
    }
    if let Some(llm) = llm {
        let ledger = llm.ledger();
        if ledger.total_cost_usd > 0.0 {
            println!("{}", ledger.to_markdown());
        }
    }
    Ok(())
}
