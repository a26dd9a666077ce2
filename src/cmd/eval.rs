//! `mtr eval QRELS RUN... [-m MEASURE]... [-q] [-c] [-M N] [-l N]`: trec_eval's evaluation,
//! with trec_eval's flags and byte-identical text output, plus `--format json|jsonl` (full
//! precision, conventions and input hashes), MTRAG JSONL runs, several runs per call, and
//! explicit switches for the conventions trec_eval leaves implicit (`--compat trec_eval_9`
//! for float32 scores, `--dedup first`, `--intersect`).
//!
//! `-q` is trec_eval's "per-query values" (mtr's quiet flag is `--quiet`, never `-q`), `-l` is
//! trec_eval's relevance level (`--relevance-level`, not to be confused with bench's
//! `--confidence-level`). Measures are written as trec_eval (`ndcg_cut.10`) or ir_measures
//! (`nDCG@10`) writes them. Like trec_eval, the command prints its result and nothing else.

use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use mtr_metrics::output::{InputHash, to_json, write_jsonl, write_trec_eval};
use mtr_metrics::{Compat, Dedup, EvalOptions, Evaluation, MeasureSet, MissingQueries};

use super::Ctx;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// trec_eval's text (`%-22s\t%s\t%6.4f`).
    #[default]
    Trec,
    /// One JSON document per run, full precision.
    Json,
    /// JSON lines: header, one line per query, summary.
    Jsonl,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum CompatArg {
    /// trec_eval 10.0: scores read as double.
    #[default]
    #[value(name = "trec_eval_10")]
    TrecEval10,
    /// trec_eval 9.x (and pytrec_eval, BEIR, MTEB): scores read as float32.
    #[value(name = "trec_eval_9")]
    TrecEval9,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum DedupArg {
    /// A document listed twice for one query is an error naming the line (trec_eval).
    #[default]
    Error,
    /// Keep the first occurrence.
    First,
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Qrels: TREC `qid iter docno grade`, or BEIR `qid docno grade` (header allowed).
    pub qrels: PathBuf,
    /// Runs: TREC `qid Q0 docno rank score tag`, or MTRAG JSONL (`task_id`, `contexts`).
    #[arg(required = true)]
    pub runs: Vec<PathBuf>,
    /// Measure(s), trec_eval syntax: `map`, `P.5,10`, `ndcg_cut.10`, `official`, `all`; or
    /// ir_measures syntax: `nDCG@10`, `RR@10`, `P@5`, `R@100`, `AP@100`, `Success@10`; mtr
    /// extensions: ndcg_exp_cut.k, map_capped_cut.k, success_strict.k, success_lenient.k,
    /// recip_rank_cut.k. Repeatable [default: trec_eval's official set].
    #[arg(short = 'm', long = "measure", value_name = "MEASURE")]
    pub measures: Vec<String>,
    /// Print per-query values too (trec_eval's -q).
    #[arg(short = 'q', long)]
    pub per_query: bool,
    /// Average over all qrels queries; queries missing from the run score 0 (trec_eval -c).
    #[arg(short = 'c', long = "complete", conflicts_with = "intersect")]
    pub complete: bool,
    /// Average over the queries in both qrels and run (trec_eval 9 without -c).
    #[arg(long)]
    pub intersect: bool,
    /// Evaluate only the top N documents per query (trec_eval -M).
    #[arg(short = 'M', long = "max-docs", value_name = "N")]
    pub max_docs: Option<usize>,
    /// Minimum grade counted as relevant (trec_eval -l). nDCG uses raw grades regardless.
    #[arg(
        short = 'l',
        long = "relevance-level",
        value_name = "N",
        default_value_t = 1
    )]
    pub level: i64,
    /// Reproduce another trec_eval's conventions.
    #[arg(long, value_enum, default_value_t = CompatArg::TrecEval10)]
    pub compat: CompatArg,
    /// What to do with a document listed twice for one query (or judged twice).
    #[arg(long, value_enum, default_value_t = DedupArg::Error)]
    pub dedup: DedupArg,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Trec)]
    pub format: Format,
    #[command(flatten)]
    pub output: super::common::Output<Written>,
}

/// What `mtr eval -o` names.
#[derive(Debug, Clone, Default)]
pub struct Written;

impl super::common::OutputKind for Written {
    const VALUE_NAME: &'static str = "FILE";
    const HELP: &'static str = "Write to this file (atomically) instead of stdout";
    const REQUIRED: bool = false;
}

pub async fn run(_ctx: &Ctx, args: Args) -> anyhow::Result<ExitCode> {
    let per_query = args.per_query;
    let opts = options(&args)?;

    let (qrels_path, _qrels_tmp) = spooled(&args.qrels)?;
    let qrels = mtr_metrics::read_qrels_file(&qrels_path, opts.dedup)
        .map_err(mtr_core::Error::from)
        .with_context(|| format!("reading qrels {}", args.qrels.display()))?;
    let hash_inputs = args.format != Format::Trec;
    let qrels_hash = if hash_inputs {
        let mut h = InputHash::of_file("qrels", &qrels_path).map_err(mtr_core::Error::from)?;
        h.path = args.qrels.display().to_string();
        Some(h)
    } else {
        None
    };

    let mut out: Vec<u8> = Vec::new();
    let mut json_docs = Vec::new();
    for (k, path) in args.runs.iter().enumerate() {
        let (run_path, _run_tmp) = spooled(path)?;
        let ev: Evaluation = mtr_metrics::evaluate_file(&qrels, &run_path, &opts)
            .map_err(mtr_core::Error::from)
            .with_context(|| format!("evaluating {}", path.display()))?;
        if ev.ignored_run_queries > 0 {
            tracing::info!(run = %path.display(), queries = ev.ignored_run_queries, "run queries without qrels ignored");
        }
        let mut inputs = Vec::new();
        if hash_inputs {
            inputs.extend(qrels_hash.clone());
            let mut h = InputHash::of_file("run", &run_path).map_err(mtr_core::Error::from)?;
            h.path = path.display().to_string();
            inputs.push(h);
        }
        match args.format {
            Format::Trec => write_trec_eval(&mut out, &ev, per_query)?,
            Format::Jsonl => write_jsonl(&mut out, &ev, &inputs)?,
            Format::Json => json_docs.push(to_json(&ev, &inputs)),
        }
        if k + 1 == args.runs.len() {
            // The last run's structures would only be freed just before exit.
            std::mem::forget(ev);
        }
    }
    if args.format == Format::Json {
        let doc = if json_docs.len() == 1 {
            json_docs.pop().unwrap_or_default()
        } else {
            serde_json::Value::Array(json_docs)
        };
        out = serde_json::to_vec_pretty(&doc)?;
        out.push(b'\n');
    }

    // Freeing hundreds of thousands of per-query allocations just before exit is wasted
    // work; the process exit returns the memory.
    std::mem::forget(qrels);

    emit(args.output.given(), &out)?;
    Ok(ExitCode::SUCCESS)
}

/// The evaluation's options from the flags.
fn options(args: &Args) -> anyhow::Result<EvalOptions> {
    let measures = if args.measures.is_empty() {
        MeasureSet::official()
    } else {
        MeasureSet::parse(&args.measures).map_err(mtr_core::Error::from)?
    };
    Ok(EvalOptions {
        measures,
        relevance_level: args.level,
        missing: if args.complete {
            MissingQueries::Complete
        } else if args.intersect {
            MissingQueries::Intersect
        } else {
            MissingQueries::Error
        },
        max_docs: args.max_docs,
        compat: match args.compat {
            CompatArg::TrecEval10 => Compat::TrecEval10,
            CompatArg::TrecEval9 => Compat::TrecEval9,
        },
        dedup: match args.dedup {
            DedupArg::Error => Dedup::Error,
            DedupArg::First => Dedup::First,
        },
    })
}

/// Writes the output to `-o FILE` (atomically) or stdout; a reader that left the pipe
/// (`mtr eval ... | head`) is not an error.
fn emit(path: Option<&std::path::Path>, out: &[u8]) -> anyhow::Result<()> {
    match path {
        Some(path) => {
            mtr_core::atomic::write_atomic(path, out)
                .with_context(|| format!("writing {}", path.display()))?;
        }
        None => {
            let stdout = io::stdout();
            let mut w = BufWriter::new(stdout.lock());
            match w.write_all(out).and_then(|()| w.flush()) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {}
                Err(e) => return Err(e).context("writing to stdout"),
            }
        }
    }
    Ok(())
}

/// Pipes (`<(zcat run.gz)`) and other special files are copied to a temporary file first: the
/// readers memory-map their input and read it more than once (format sniffing, hashing). The
/// temporary file lives as long as the returned guard.
fn spooled(path: &std::path::Path) -> anyhow::Result<(PathBuf, Option<tempfile::TempPath>)> {
    match std::fs::metadata(path) {
        Ok(m) if !m.is_file() && !m.is_dir() => {
            let mut src =
                std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
            let mut tmp = tempfile::NamedTempFile::new().context("creating a temporary file")?;
            std::io::copy(&mut src, &mut tmp)
                .with_context(|| format!("reading {}", path.display()))?;
            let tmp = tmp.into_temp_path();
            Ok((tmp.to_path_buf(), Some(tmp)))
        }
        // regular files, and missing ones (the reader reports those as user errors)
        _ => Ok((path.to_path_buf(), None)),
    }
}
