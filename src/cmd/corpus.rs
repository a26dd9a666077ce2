//! `mtr corpus CORPUS -o docs.jsonl [--chunks] [--strict]`: reads a corpus exactly as `mtr
//! synth --corpus` does (the same readers, `[synth]`'s `corpus_fields`, `skip_bad`,
//! `max_documents`, `seed` and `chunking`) and writes what it made of it: one JSON line per
//! document (`id`, `title`, `text`, `source` with the file and the page or section) or, with
//! `--chunks`, per passage as synth would make them (curated, then chunked). The summary on
//! stderr counts documents, pages, words, and names every file skipped with its reason.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;

use mtr_core::jsonl::JsonlWriter;
use mtr_pipeline::SynthConfig;
use mtr_pipeline::input::{self, Document, Loaded, ReadOptions, Source, Unreadable};
use serde::Serialize;

use super::Ctx;
use super::synth::ChunkTokens;
use crate::config::flags::section_flags;

section_flags! {
    /// The flags over `[synth]` that reading a corpus uses.
    pub struct CorpusFlags for SynthConfig {
        /// The fields (or Parquet columns) holding a document's id, title and text, e.g.
        /// `id=doc_id,text=body`; unset, the usual names.
        #[arg(value_name = "KEY=FIELD,..")]
        corpus_fields: Option<mtr_pipeline::input::CorpusFields> => "corpus_fields",
        /// Leave malformed corpus records out (their count is reported) instead of stopping at
        /// them.
        skip_bad: bool => "skip_bad" = true,
        /// Read a seeded uniform sample of N documents drawn over the whole input (0 = all).
        #[arg(value_name = "N")]
        max_documents: Option<usize> => "max_documents",
        /// Seed of the sample.
        seed: Option<u64> => "seed",
        /// With --chunks: chunk size range in tokens, MIN-MAX.
        #[arg(value_name = "MIN-MAX")]
        chunk_tokens: Option<ChunkTokens> => "chunking",
        /// With --chunks: every document one passage with its own id, as `mtr synth --chunks
        /// as-is` makes them (a team's own chunks, not cut again).
        as_is: bool => "chunking.keep" = true,
    }
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The corpus: a folder or file of documents (PDF, DOCX, ODT, HTML, Markdown,
    /// reStructuredText, text) or records (JSON lines, JSON, Parquet, WikiExtractor output,
    /// LangChain or LlamaIndex chunks), compressed or not.
    pub corpus: PathBuf,
    /// The JSON-lines file to write.
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
    /// One line per passage as `mtr synth` makes them (curated, then chunked), instead of one
    /// per document.
    #[arg(long)]
    pub chunks: bool,
    /// Stop (exit 2) at the first file that cannot be read (an encrypted PDF, a scan without
    /// text, a damaged DOCX, undecodable HTML) instead of skipping and listing it.
    #[arg(long)]
    pub strict: bool,
    #[command(flatten)]
    pub settings: CorpusFlags,
}

/// One line of the output without `--chunks`.
#[derive(Serialize)]
struct DocumentLine<'a> {
    id: &'a str,
    title: &'a str,
    text: &'a str,
    source: &'a Source,
}

/// One line of the output with `--chunks`.
#[derive(Serialize)]
struct PassageLine<'a> {
    id: &'a str,
    doc_id: &'a str,
    title: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    section: Option<&'a str>,
    text: &'a str,
    tokens: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    source: Option<&'a Source>,
}

/// A pipeline error as the exit status wants it: a user error through mtr-core's.
fn user_error(e: mtr_pipeline::Error) -> anyhow::Error {
    if e.is_user_error() {
        anyhow::Error::new(mtr_core::Error::from(e))
    } else {
        anyhow::Error::new(e)
    }
}

pub async fn run(ctx: &Ctx, args: Args) -> anyhow::Result<ExitCode> {
    let cfg: SynthConfig = ctx.config.settings(&args.settings)?;
    let opts = ReadOptions {
        fields: cfg.corpus_fields.clone(),
        max_documents: cfg.max_documents,
        seed: cfg.seed,
        skip_bad: cfg.skip_bad,
    };
    let unreadable = if args.strict {
        Unreadable::Fail
    } else {
        Unreadable::Skip
    };
    let loaded = input::read_with(&args.corpus, &opts, unreadable).map_err(user_error)?;
    let lines = if args.chunks {
        write_passages(&args, &cfg, &loaded)?
    } else {
        write_documents(&args, &loaded)?
    };
    eprint!("{}", summary(&loaded, lines, args.chunks, &args.output));
    Ok(ExitCode::SUCCESS)
}

fn write_documents(args: &Args, loaded: &Loaded) -> anyhow::Result<u64> {
    let mut w = JsonlWriter::create(&args.output)?;
    for (d, source) in loaded.documents.iter().zip(&loaded.sources) {
        w.write(&DocumentLine {
            id: &d.id,
            title: &d.title,
            text: &d.text,
            source,
        })?;
    }
    Ok(w.commit()?)
}

fn write_passages(args: &Args, cfg: &SynthConfig, loaded: &Loaded) -> anyhow::Result<u64> {
    let sources: HashMap<&str, &Source> = loaded
        .documents
        .iter()
        .zip(&loaded.sources)
        .map(|(d, s)| (d.id.as_str(), s))
        .collect();
    let curated = mtr_pipeline::curate(loaded.documents.clone(), &cfg.curation_options());
    let chunks = mtr_pipeline::chunk_corpus(&curated.documents, &cfg.chunking)
        .map_err(|e| anyhow::anyhow!("chunking: {e}"))?;
    let mut w = JsonlWriter::create(&args.output)?;
    for c in &chunks {
        w.write(&PassageLine {
            id: &c.id,
            doc_id: &c.doc_id,
            title: &c.title,
            section: c.section.as_deref(),
            text: &c.text,
            tokens: c.tokens,
            source: sources.get(c.doc_id.as_str()).copied(),
        })?;
    }
    Ok(w.commit()?)
}

/// What was read and written, and every file skipped with its reason.
fn summary(loaded: &Loaded, lines: u64, chunks: bool, out: &std::path::Path) -> String {
    let r = &loaded.report;
    let words: usize = loaded.documents.iter().map(words).sum();
    let mut s = format!(
        "{} documents from {} file{}, {} PDF page{}, {words} words; {lines} {} written to {}\n",
        loaded.documents.len(),
        r.files,
        if r.files == 1 { "" } else { "s" },
        r.pages,
        if r.pages == 1 { "" } else { "s" },
        if chunks { "passages" } else { "documents" },
        out.display()
    );
    if r.malformed_skipped > 0 {
        s.push_str(&format!(
            "{} malformed records skipped (--skip-bad)\n",
            r.malformed_skipped
        ));
    }
    if let Some(sample) = &r.sample {
        s.push_str(&format!(
            "a uniform sample of {} of {} documents (seed {})\n",
            sample.kept, r.documents, sample.seed
        ));
    }
    if !r.skipped.is_empty() {
        s.push_str(&format!("{} files skipped:\n", r.skipped.len()));
        for f in &r.skipped {
            s.push_str(&format!("  {}: {}\n", f.file, f.reason));
        }
    }
    s
}

fn words(d: &Document) -> usize {
    d.text.split_whitespace().count()
}
