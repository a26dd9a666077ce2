//! `mtr index BENCH_OR_CORPUS -o INDEX`: builds the on-disk retrieval index of a corpus once
//! (BM25 always, dense vectors with `--dense`), fingerprinted by corpus content and analyzer,
//! so that `mtr retrieve`, `mtr audit`, `mtr synth` and `mtr bench` reopen it in milliseconds.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use mtr_retrieve::dense::{DenseOptions, Embedder};
use mtr_retrieve::llm::LlmEmbedder;
use mtr_retrieve::{CorpusSource, IndexBuilder, IndexOptions, IndexSettings, Language};

use super::Ctx;
use super::common::{FormatArgs, LlmArgs};
use super::open::open_llm;
use crate::config::flags::section_flags;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// A native benchmark folder, or a JSONL corpus (`{id,title,text}` or BEIR `{_id,title,text}`).
    pub src: PathBuf,
    #[command(flatten)]
    pub output: super::common::Output<Written>,
    #[command(flatten)]
    pub settings: IndexFlags,
    #[command(flatten)]
    pub format: FormatArgs,
    #[command(flatten)]
    pub llm: LlmArgs,
}

section_flags! {
    /// The flags over `[index]`; each default is `IndexSettings::default()`'s.
    pub struct IndexFlags for IndexSettings {
        /// Analyzer language: en (alias english), zh (aliases chinese, zh-cn, zh-tw, zh-hans,
        /// zh-hant), or auto (the benchmark's language, else detected from the corpus).
        language: Option<Language> => "language",
        /// Do not store passage texts in the index (smaller; `passage(id)` then returns empty
        /// texts).
        no_store: bool => "store_text" = false,
        /// Indexing threads (0: one per CPU, at most 8).
        threads: Option<usize> => "threads",
        /// Indexing memory budget in MiB.
        memory_mb: Option<usize> => "memory_mb",
        /// Also embed every passage with the `embedder` role (cached; an interrupted run
        /// resumes).
        dense: bool => "dense" = true,
        /// Texts per embedding request.
        batch_size: Option<usize> => "batch_size",
        /// Embedding requests in flight.
        concurrency: Option<usize> => "concurrency",
    }
}

/// What `mtr index -o` names.
#[derive(Debug, Clone, Default)]
pub struct Written;

impl super::common::OutputKind for Written {
    const VALUE_NAME: &'static str = "DIR";
    const HELP: &'static str = "The index folder to write (an existing mtr index there is replaced; its embeddings are kept)";
    const REQUIRED: bool = true;
}

pub async fn run(ctx: &Ctx, args: Args) -> anyhow::Result<ExitCode> {
    let settings: IndexSettings = ctx.config.settings(&args.settings)?;
    let src = CorpusSource::detect(&args.src).map_err(anyhow::Error::new)?;
    let opts = IndexOptions {
        language: settings.language,
        store_text: settings.store_text,
        threads: settings.threads,
        heap_bytes: settings.memory_mb << 20,
        merge: true,
    };
    let start = Instant::now();
    let builder = IndexBuilder::new(args.output.path(), opts);
    let progress = ctx.progress.clone();
    let idx = tokio::task::spawn_blocking(move || builder.build(&src, progress.as_ref()))
        .await?
        .map_err(anyhow::Error::new)?;
    let bm25_secs = start.elapsed().as_secs_f64();
    let meta = idx.meta().clone();
    let mut summary = serde_json::json!({
        "index": args.output.path(),
        "passages": meta.num_passages,
        "analyzer": meta.analyzer,
        "bm25": { "k1": meta.bm25.k1, "b": meta.bm25.b },
        "fingerprint": meta.fingerprint,
        "corpus_hash": meta.corpus_hash,
        "bm25_seconds": bm25_secs,
        "passages_per_second": meta.num_passages as f64 / bm25_secs.max(1e-9),
    });
    if settings.dense {
        summary["dense"] = build_dense(ctx, &args, &settings, &idx).await?;
    }
    if args.format.json() {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        println!(
            "indexed {} passages into {} ({:?} analyzer, BM25 k1={} b={}) in {:.1} s ({:.0} passages/s)",
            meta.num_passages,
            args.output.path().display(),
            meta.analyzer,
            meta.bm25.k1,
            meta.bm25.b,
            bm25_secs,
            meta.num_passages as f64 / bm25_secs.max(1e-9)
        );
        if let Some(d) = summary.get("dense") {
            println!(
                "dense: {} vectors of {} ({}-d) in {:.1} s",
                d["vectors"],
                d["model"].as_str().unwrap_or_default(),
                d["dim"],
                d["seconds"].as_f64().unwrap_or(0.0)
            );
        }
        println!(
            "fingerprint {}",
            mtr_core::fingerprint::short(&meta.fingerprint)
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `--dense`: the embedder's vectors of every passage, beside the BM25 index; what was built.
async fn build_dense(
    ctx: &Ctx,
    args: &Args,
    settings: &IndexSettings,
    idx: &mtr_retrieve::IndexDir,
) -> anyhow::Result<serde_json::Value> {
    let llm = open_llm(ctx, &args.llm).await?;
    let embedder: Arc<dyn Embedder> = Arc::new(LlmEmbedder::new(llm).ok_or_else(|| {
        anyhow::Error::new(mtr_core::Error::from(
            mtr_core::InputError::new("mtr.toml [llm]", "no `embedder` role is configured")
                .field("llm.roles.embedder"),
        ))
    })?);
    let dopts = DenseOptions {
        batch_size: settings.batch_size,
        concurrency: settings.concurrency,
        ..Default::default()
    };
    let t = Instant::now();
    let src = CorpusSource::detect(&args.src).map_err(anyhow::Error::new)?;
    let dense =
        mtr_retrieve::ensure_dense(idx, &src, embedder.as_ref(), &dopts, ctx.progress.as_ref())
            .await
            .map_err(anyhow::Error::new)?;
    Ok(serde_json::json!({
        "model": dense.meta().model,
        "dim": dense.meta().dim,
        "vectors": dense.meta().count,
        "prefixes": dense.meta().prefixes,
        "seconds": t.elapsed().as_secs_f64(),
    }))
}
