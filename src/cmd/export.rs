//! `mtr export BENCH --to beir|trec|hf -o DIR [--query last|all|rewrite]`: writes a benchmark
//! in a format other tools read. BEIR: `corpus.jsonl`, `queries.jsonl`, `qrels/test.tsv`; TREC:
//! `topics.tsv`, `qrels.txt`, `collection.tsv`; hf: a Hugging Face dataset folder with its card.
//! Every turn is a query; `--query` picks its text, with the names `mtr retrieve` uses (the
//! formulations that need the agent's answers or an LLM are refused with a pointer to
//! `mtr retrieve`). `--to triplets -o FILE.jsonl` writes retriever training data instead
//! ([`super::export_publish`]).

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use mtr_core::formats::{QueryField, export_beir, export_hf, export_trec};
use mtr_retrieve::QueryFormulation;

use super::Ctx;
use super::common::{
    FORMULATIONS, FormatArgs, ImportFlags, Output, QueryArgs, default_formulation,
};
use super::export_publish::{PublishArgs, card_options, export_triplets, triplets_text};
use super::open::{emit, open_benchmark};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Target {
    Beir,
    Trec,
    /// A Hugging Face dataset folder (Parquet configs and a dataset card).
    Hf,
    /// Retriever training data (JSON lines): query (--query default: full), positives, mined
    /// hard negatives.
    Triplets,
}

/// What `mtr export -o` names.
#[derive(Debug, Clone, Default)]
pub struct Written;

impl super::common::OutputKind for Written {
    const VALUE_NAME: &'static str = "PATH";
    const HELP: &'static str = "The output folder (for --to triplets the .jsonl file; with --splits its splits go beside it)";
    const REQUIRED: bool = true;
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The benchmark (native, or any format `mtr import` reads).
    pub bench: PathBuf,
    /// The format to write.
    #[arg(long, value_enum)]
    pub to: Target,
    #[command(flatten)]
    pub output: Output<Written>,
    #[command(flatten)]
    pub query: QueryArgs,
    #[command(flatten)]
    pub publish: PublishArgs,
    #[command(flatten)]
    pub import: ImportFlags,
    #[command(flatten)]
    pub print: FormatArgs,
}

/// The exported text of a formulation: `last`, `all` and `rewrite` need only the user's turns.
fn query_field(f: QueryFormulation) -> anyhow::Result<QueryField> {
    match f {
        QueryFormulation::Last => Ok(QueryField::Last),
        QueryFormulation::All => Ok(QueryField::Full),
        QueryFormulation::Rewrite => Ok(QueryField::Rewrite),
        other => Err(anyhow::Error::new(mtr_core::Error::from(
            mtr_core::InputError::new(
                "command line",
                format!(
                    "`mtr export` writes the queries last, all or rewrite, not `{other}` \
                     (formulations: {FORMULATIONS})"
                ),
            )
            .field("--query")
            .hint("`mtr retrieve --query ...` writes every formulation's query text to RUN.jsonl"),
        ))),
    }
}

pub async fn run(ctx: &Ctx, args: Args) -> anyhow::Result<ExitCode> {
    let dir = open_benchmark(ctx, &args.bench, &args.import.options())?;
    let bench = dir
        .load()
        .with_context(|| format!("loading {}", dir.root().display()))?;
    let out = args.output.path();
    if args.to == Target::Triplets {
        // the history as `--query full` gives it, unless another formulation is asked for
        let formulation = args
            .query
            .query
            .unwrap_or(QueryFormulation::Full { budget: 512 });
        let report = export_triplets(ctx, &args.publish, &bench, formulation, out).await?;
        let text = if args.print.json() {
            serde_json::to_string_pretty(&report)? + "\n"
        } else {
            triplets_text(&report)
        };
        emit(&text)?;
        return Ok(ExitCode::SUCCESS);
    }
    let formulation = args
        .query
        .query
        .unwrap_or_else(|| default_formulation(&bench));
    let field = query_field(formulation)?;
    let report = match args.to {
        Target::Beir => export_beir(&dir, out, field),
        Target::Trec => export_trec(&dir, out, field),
        _ => export_hf(
            &dir,
            out,
            &card_options(&bench, args.publish.audit.as_deref(), field)?,
        ),
    }
    .with_context(|| format!("exporting {} to {}", dir.root().display(), out.display()))?;
    if args.print.json() {
        let mut v = serde_json::to_value(&report)?;
        if let Some(obj) = v.as_object_mut() {
            obj.insert("query".into(), serde_json::json!(formulation.name()));
        }
        emit(&(serde_json::to_string_pretty(&v)? + "\n"))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut o = String::new();
    let _ = writeln!(
        o,
        "exported {} queries, {} passages, {} qrels judgements to {}",
        report.queries,
        report.passages,
        report.qrels_pairs,
        out.display()
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
