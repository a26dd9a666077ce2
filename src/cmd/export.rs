//! `mtr export BENCH --to beir|trec -o DIR [--query last|rewrite|full]`: writes a benchmark in a
//! format other tools read. BEIR: `corpus.jsonl`, `queries.jsonl`, `qrels/test.tsv`; TREC:
//! `topics.tsv`, `qrels.txt`, `collection.tsv`. Every turn is a query; `--query` picks its text.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use mtr_core::formats::export::{QueryField, export_beir, export_trec};

use super::Ctx;
use super::import::{ImportFlags, emit, open_benchmark};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Target {
    Beir,
    Trec,
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The benchmark (native, or any format `mtr import` reads).
    pub bench: PathBuf,
    /// The format to write.
    #[arg(long, value_enum)]
    pub to: Target,
    /// The output folder.
    #[arg(short, long)]
    pub output: PathBuf,
    /// The text of each query: the question as asked (last), the rewrite (rewrite, falling back
    /// to the question), or all questions so far (full).
    #[arg(long, default_value = "last", value_parser = parse_query)]
    pub query: QueryField,
    #[command(flatten)]
    pub import: ImportFlags,
}

fn parse_query(s: &str) -> Result<QueryField, String> {
    s.parse()
}

pub async fn run(ctx: &Ctx, args: Args) -> anyhow::Result<ExitCode> {
    let dir = open_benchmark(ctx, &args.bench, &args.import.options())?;
    let report = match args.to {
        Target::Beir => export_beir(&dir, &args.output, args.query),
        Target::Trec => export_trec(&dir, &args.output, args.query),
    }
    .with_context(|| {
        format!(
            "exporting {} to {}",
            dir.root().display(),
            args.output.display()
        )
    })?;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "exported {} queries, {} passages, {} qrels judgements to {}",
        report.queries,
        report.passages,
        report.qrels_pairs,
        args.output.display()
    );
    for f in &report.files {
        let _ = writeln!(o, "  {}", f.display());
    }
    for w in &report.warnings {
        let _ = writeln!(o, "warning: {w}");
    }
    emit(&o)?;
    Ok(ExitCode::SUCCESS)
}
