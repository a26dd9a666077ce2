//! `mtr import FORMAT SRC -o DIR`: converts a benchmark from a published format (MTRAG, BEIR,
//! TREC, TopiOCQA, QReCC, INSCIT, TREC CAsT/iKAT) into mtr's native folder. `FORMAT` may be
//! `auto`. Bad records stop the import with an error naming file, line and field, unless
//! `--lenient`, which skips them and counts them in the summary.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use mtr_core::formats::{self, Format, ImportReport};

use super::Ctx;
use super::common::{FormatArgs, ImportFlags};
use super::open::emit;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Source format: mtrag, beir, trec, topiocqa, qrecc, inscit, cast (also iKAT), chatrag,
    /// coral, doc2dial, quac, hf (a Hugging Face / MTEB dataset folder), or auto.
    #[arg(id = "source_format", value_name = "FORMAT", value_parser = parse_format)]
    pub format: FormatArg,
    /// The source folder (or file, for single-file formats).
    pub src: PathBuf,
    #[command(flatten)]
    pub output: super::common::Output<Written>,
    #[command(flatten)]
    pub import: ImportFlags,
    #[command(flatten)]
    pub print: FormatArgs,
}

/// What `mtr import -o` names.
#[derive(Debug, Clone, Default)]
pub struct Written;

impl super::common::OutputKind for Written {
    const VALUE_NAME: &'static str = "DIR";
    const HELP: &'static str =
        "The native benchmark folder to write (created; an existing benchmark is replaced)";
    const REQUIRED: bool = true;
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

pub async fn run(ctx: &Ctx, args: Args) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let format = match args.format.0 {
        Some(f) => f,
        None => formats::detect(&args.src)
            .with_context(|| format!("detecting the format of {}", args.src.display()))?,
    };
    let opts = args.import.options();
    let report = formats::import(format, &args.src, args.output.path(), &opts, &*ctx.progress)
        .with_context(|| format!("importing {} as {format}", args.src.display()))?;
    let secs = started.elapsed().as_secs_f64();
    let mut o = String::new();
    if args.print.json() {
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
