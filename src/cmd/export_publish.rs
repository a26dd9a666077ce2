//! The publishing targets of `mtr export`: `--to hf` (a Hugging Face dataset folder whose card
//! carries the audit's verdict and the realism figures) and `--to triplets` (retriever training
//! data, its negatives mined with the benchmark's own indexes and cleaned by an audit). The
//! libraries do the work (`mtr_core::formats::hf`, `mtr_audit::triplets`); this module gathers
//! what they take from flags, configuration and other crates, and prints their reports.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use mtr_audit::items::SuggestionVerdict;
use mtr_audit::triplets::{self, AuditExclusions, SplitSpec, TripletForm, TripletOptions};
use mtr_core::formats::{CardSection, HfOptions};
use mtr_core::{Benchmark, BenchmarkDir};
use mtr_retrieve::realism::{self, IntervalOptions, RealismInput};
use mtr_retrieve::{QueryFormulation, Retriever};

use super::Ctx;

/// The flags only `--to triplets` reads (and `--audit`, which `--to hf` reads too).
#[derive(Debug, Clone, clap::Args)]
pub struct PublishArgs {
    /// An audit folder of this benchmark (`mtr audit -o DIR`). With --to triplets no negative
    /// is a passage it suggests as a missing gold or a judge rated relevant for that turn;
    /// with --to hf the dataset card carries its verdict.
    #[arg(long, value_name = "AUDIT")]
    pub audit: Option<PathBuf>,
    /// --to triplets: hard negatives per turn (at least 1; a turn for which none is found is
    /// left out and counted).
    #[arg(long, value_name = "N", default_value_t = 7)]
    pub negatives: usize,
    /// --to triplets: one `anchor, positive, negative` line per pair (sentence-transformers'
    /// MultipleNegativesRankingLoss) instead of one `query, pos, neg` line per turn
    /// (FlagEmbedding).
    #[arg(long)]
    pub flat: bool,
    /// --to triplets: split by dialogue with these shares, each split its own file beside
    /// -o (`FILE.train.jsonl`, ...), e.g. train=0.8,dev=0.2 (`--split` is the qrels split of
    /// a foreign benchmark folder, as in every command that reads one).
    #[arg(long, value_name = "NAME=SHARE,...")]
    pub splits: Option<SplitSpec>,
    /// --to triplets: seed of the split.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub seed: u64,
    /// --to triplets: the BM25 index to mine with (`mtr index`; built beside the benchmark
    /// when absent). Dense negatives join when `[llm.roles] embedder` is configured, or with
    /// --dense.
    #[arg(long, value_name = "INDEX")]
    pub index: Option<PathBuf>,
    /// --to triplets: mine dense negatives too, with the embedder role even when only the
    /// embedded local default provides it (multilingual-e5-small; the corpus is embedded once
    /// and kept beside the index).
    #[arg(long)]
    pub dense: bool,
}

/// The card's sections: the audit's verdict when `--audit` is given, and realism figures.
pub fn card_options(
    bench: &Benchmark,
    audit: Option<&Path>,
    query: mtr_core::formats::QueryField,
) -> anyhow::Result<HfOptions> {
    let mut sections = Vec::new();
    if let Some(a) = audit {
        sections.push(audit_section(a, &bench.manifest.fingerprint)?);
    }
    let input = RealismInput {
        name: bench.manifest.name.clone(),
        bm25: None,
        intervals: IntervalOptions::default(),
    };
    let measured = realism::measure(&bench.dialogues, &input)?;
    sections.push(CardSection {
        title: "Realism".into(),
        body: format!(
            "Measured as `mtr stats --realism` measures any benchmark (the history gap needs the BM25 index: n/a here), with 95% bootstrap intervals over dialogues.\n\n{}",
            realism::render::render(&[&measured])
        ),
    });
    Ok(HfOptions { query, sections })
}

fn audit_summary(path: &Path) -> anyhow::Result<mtr_audit::Summary> {
    let file = if path.is_dir() {
        path.join(mtr_audit::output::SUMMARY)
    } else {
        path.to_path_buf()
    };
    Ok(mtr_audit::output::read_summary(&file)?)
}

fn audit_section(path: &Path, fingerprint: &str) -> anyhow::Result<CardSection> {
    let s = audit_summary(path)?;
    if s.fingerprint.data != fingerprint {
        return Err(anyhow::Error::new(mtr_core::Error::from(
            mtr_core::InputError::new(
                path,
                "the audit is of another benchmark (its data fingerprint differs)",
            )
            .field("--audit"),
        )));
    }
    let mut body = String::new();
    let verdict = s
        .verdict
        .as_ref()
        .map_or("no verdict (the audit did not judge enough items)", |v| {
            v.line.as_str()
        });
    let _ = writeln!(
        body,
        "**Verdict of the LLM-judge audit (`mtr audit`):** {verdict}\n"
    );
    let judges: Vec<String> = s.judges.iter().map(|j| format!("`{}`", j.model)).collect();
    let _ = writeln!(body, "- judges: {}", judges.join(", "));
    let _ = writeln!(
        body,
        "- complete: {}",
        if s.complete { "yes" } else { "no" }
    );
    let _ = writeln!(body, "- turns flagged: {}", s.flagged_turns);
    let probable = s
        .suggested_qrels
        .iter()
        .filter(|x| x.verdict == SuggestionVerdict::ProbableMissingGold)
        .count();
    let _ = writeln!(
        body,
        "- missing-gold candidates: {} ({probable} probable after pointwise verification)",
        s.suggested_qrels.len()
    );
    Ok(CardSection {
        title: "Audit".into(),
        body,
    })
}

/// The BM25 retriever of the benchmark's index, and dense when an embedder is configured or
/// `--dense` asks for it.
async fn retrievers(
    ctx: &Ctx,
    args: &PublishArgs,
    bench: &Benchmark,
) -> anyhow::Result<Vec<Arc<dyn Retriever>>> {
    let dir: &BenchmarkDir = &bench.dir;
    let src = mtr_retrieve::CorpusSource::Benchmark(dir.clone());
    let path = args.index.clone().unwrap_or_else(|| {
        mtr_bench::job::default_index_path(dir.root(), &bench.manifest.fingerprint)
    });
    let idx = mtr_retrieve::ensure_index(&src, &path, &Default::default(), ctx.progress.as_ref())
        .with_context(|| format!("opening the BM25 index {}", path.display()))?;
    let mut out: Vec<Arc<dyn Retriever>> = vec![Arc::new(idx.bm25()?)];
    if args.dense || super::audit::configured_embedder(ctx) {
        let llm = super::open::open_llm(ctx, &Default::default()).await?;
        let embedder =
            mtr_retrieve::llm::open_embedder(&llm, &idx, &src, ctx.progress.as_ref()).await?;
        let dense = mtr_retrieve::dense::DenseIndex::open(&idx, &embedder.model())?;
        out.push(Arc::new(mtr_retrieve::dense::DenseRetriever::new(
            Arc::new(dense),
            embedder,
        )));
    }
    Ok(out)
}

/// `--to triplets`: mines, filters, writes; returns the report.
pub async fn export_triplets(
    ctx: &Ctx,
    args: &PublishArgs,
    bench: &Benchmark,
    query: QueryFormulation,
    out: &Path,
) -> anyhow::Result<triplets::TripletReport> {
    if query == QueryFormulation::LlmRewrite {
        return Err(anyhow::Error::new(mtr_core::Error::from(
            mtr_core::InputError::new(
                "command line",
                "`mtr export --to triplets` writes the query formulations that need no LLM",
            )
            .field("--query")
            .hint("last, all, full, full:N, window:N or rewrite"),
        )));
    }
    if args.negatives == 0 {
        return Err(anyhow::Error::new(mtr_core::Error::from(
            mtr_core::InputError::new("command line", "a training line needs a negative")
                .field("--negatives")
                .hint("1 or more (7 by default)"),
        )));
    }
    let audit = match &args.audit {
        Some(a) => {
            let s = audit_summary(a);
            if let Ok(s) = &s
                && s.fingerprint.data != bench.manifest.fingerprint
            {
                return Err(anyhow::Error::new(mtr_core::Error::from(
                    mtr_core::InputError::new(
                        a,
                        "the audit is of another benchmark (its data fingerprint differs)",
                    )
                    .field("--audit"),
                )));
            }
            Some(AuditExclusions::read(a)?)
        }
        None => None,
    };
    let retrievers = retrievers(ctx, args, bench).await?;
    let opts = TripletOptions {
        negatives: args.negatives,
        query,
        form: if args.flat {
            TripletForm::Flat
        } else {
            TripletForm::Lists
        },
        splits: args.splits.clone().unwrap_or_default(),
        seed: args.seed,
        ..Default::default()
    };
    let report = triplets::export(
        bench,
        &retrievers,
        audit.as_ref(),
        out,
        &opts,
        ctx.progress.as_ref(),
    )
    .await?;
    Ok(report)
}

/// The text summary of a triplets export.
pub fn triplets_text(r: &triplets::TripletReport) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "wrote {} turns with gold ({} without gold and {} without any negative left out), {} negatives mined with {} ({} turns got fewer than asked); query {}",
        r.turns,
        r.turns_without_gold,
        r.turns_without_negatives,
        r.negatives,
        r.retrievers.join(" + "),
        r.short_turns,
        r.query
    );
    let _ = writeln!(
        o,
        "removed while mining: {} by the audit{}, {} near-duplicates of a gold",
        r.removed.audit,
        r.audit_exclusions.map_or_else(
            || " (no --audit given)".to_string(),
            |n| format!(" ({n} turn-passage pairs ruled out)")
        ),
        r.removed.near_duplicate
    );
    for f in &r.files {
        let _ = writeln!(
            o,
            "  {} {}: {} dialogues, {} turns, {} lines",
            f.split,
            f.path.display(),
            f.dialogues,
            f.turns,
            f.lines
        );
    }
    o
}
