//! `mtr import FORMAT SRC -o DIR`: converts a benchmark from a published format (MTRAG, BEIR,
//! TREC, TopiOCQA, QReCC, INSCIT, TREC CAsT/iKAT) into mtr's native folder. `FORMAT` may be
//! `auto`. Bad records stop the import with an error naming file, line and field, unless
//! `--lenient`, which skips them and counts them in the summary.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use mtr_core::BenchmarkDir;
use mtr_core::formats::{self, Format, Grouping, ImportOptions, ImportReport};

use super::Ctx;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Source format: mtrag, beir, trec, topiocqa, qrecc, inscit, cast (also iKAT), or auto.
    #[arg(value_parser = parse_format)]
    pub format: FormatArg,
    /// The source folder (or file, for single-file formats).
    pub src: PathBuf,
    /// The native benchmark folder to write (created; an existing benchmark is replaced).
    #[arg(short, long)]
    pub output: PathBuf,
    #[command(flatten)]
    pub import: ImportFlags,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Import options shared by every command that reads a benchmark in any format.
#[derive(Debug, Clone, clap::Args)]
pub struct ImportFlags {
    /// MTRAG: import only this domain (clapnq, govt, cloud, fiqa); all domains by default.
    #[arg(long)]
    pub domain: Option<String>,
    /// Which split: BEIR qrels split (test, dev, ...) or part of the data file's name.
    #[arg(long)]
    pub split: Option<String>,
    /// Skip bad records with a warning instead of failing (counted in the summary).
    #[arg(long)]
    pub lenient: bool,
    /// BEIR/TREC: how query ids become dialogues (auto, single, conversational).
    #[arg(long, default_value = "auto", value_parser = parse_grouping)]
    pub group: Grouping,
    /// The corpus file or folder, for formats whose collection ships separately.
    #[arg(long)]
    pub corpus: Option<PathBuf>,
    /// The qrels file (CAsT/iKAT, TREC), when not beside the topics.
    #[arg(long)]
    pub qrels: Option<PathBuf>,
    /// The benchmark's name in its manifest.
    #[arg(long)]
    pub name: Option<String>,
}

impl ImportFlags {
    pub fn options(&self) -> ImportOptions {
        ImportOptions {
            domain: self.domain.clone(),
            split: self.split.clone(),
            lenient: self.lenient,
            grouping: self.group,
            name: self.name.clone(),
            corpus: self.corpus.clone(),
            qrels: self.qrels.clone(),
        }
    }
}

/// A format or `auto`.
#[derive(Debug, Clone, Copy)]
pub struct FormatArg(pub Option<Format>);

fn parse_format(s: &str) -> Result<FormatArg, String> {
    if s.eq_ignore_ascii_case("auto") {
        return Ok(FormatArg(None));
    }
    s.parse::<Format>().map(|f| FormatArg(Some(f)))
}

fn parse_grouping(s: &str) -> Result<Grouping, String> {
    s.parse()
}

/// Opens any supported benchmark file or folder as a native benchmark, importing it into the
/// cache when needed (see `mtr_core::formats::open_any`).
pub fn open_benchmark(
    ctx: &Ctx,
    path: &Path,
    opts: &ImportOptions,
) -> anyhow::Result<BenchmarkDir> {
    formats::open_any_with(path, None, opts, &*ctx.progress)
        .with_context(|| format!("opening benchmark {}", path.display()))
}

/// Writes a command's result to stdout. A closed pipe (`mtr stats B | head`) is not an error.
pub fn emit(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

pub async fn run(ctx: &Ctx, args: Args) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let format = match args.format.0 {
        Some(f) => f,
        None => formats::detect(&args.src)
            .with_context(|| format!("detecting the format of {}", args.src.display()))?,
    };
    let opts = args.import.options();
    let report = formats::import(format, &args.src, &args.output, &opts, &*ctx.progress)
        .with_context(|| format!("importing {} as {format}", args.src.display()))?;
    let secs = started.elapsed().as_secs_f64();
    let mut o = String::new();
    if args.json {
        let mut v = serde_json::to_value(&report)?;
        if let Some(obj) = v.as_object_mut() {
            obj.insert("seconds".into(), serde_json::json!(secs));
        }
        let _ = writeln!(o, "{}", serde_json::to_string_pretty(&v)?);
    } else {
        summary(&mut o, &report, secs);
    }
    emit(&o)?;
    Ok(ExitCode::SUCCESS)
}

fn summary(o: &mut String, r: &ImportReport, secs: f64) {
    let _ = writeln!(
        o,
        "imported {} into {} in {secs:.2} s: {} dialogues, {} turns ({} with gold), {} passages, {} qrels judgements",
        r.format,
        r.out.display(),
        r.dialogues,
        r.turns,
        r.judged_turns,
        r.passages,
        r.qrels_pairs
    );
    let _ = writeln!(o, "fingerprint {}", r.fingerprint);
    if !r.skipped.is_empty() {
        let parts: Vec<String> = r.skipped.iter().map(|(k, n)| format!("{k} {n}")).collect();
        let _ = writeln!(o, "skipped records (--lenient): {}", parts.join(", "));
    }
    if r.warning_count > 0 {
        let _ = writeln!(o, "{} warning(s); the first:", r.warning_count);
        for w in r.warnings.iter().take(10) {
            let _ = writeln!(o, "  warning: {w}");
        }
    }
}
