//! `mtr validate DIR [--lenient]`: checks a benchmark and lists every problem with file, line
//! and field. A folder in another supported format is imported first (into the import cache),
//! which applies the importer's checks, and the result is validated. Exit status 2 when there
//! are errors; with `--lenient` problems are warnings and the summary counts the records a
//! lenient reader skips.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use mtr_core::formats::ImportOptions;
use mtr_core::validate::{Issue, ValidateOptions, ValidationReport, validate};

use super::Ctx;
use super::common::FormatArgs;
use super::open::{emit, open_benchmark};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The benchmark folder (native, or any format `mtr import` reads).
    pub dir: PathBuf,
    /// Report problems as warnings and count the records that would be skipped.
    #[arg(long)]
    pub lenient: bool,
    #[command(flatten)]
    pub format: FormatArgs,
    /// How many problems to print (all are counted).
    #[arg(long, default_value_t = 50)]
    pub max_errors: usize,
    /// MTRAG sources: validate only this domain.
    #[arg(long)]
    pub domain: Option<String>,
}

pub async fn run(ctx: &Ctx, args: Args) -> anyhow::Result<ExitCode> {
    let opts = ImportOptions {
        lenient: args.lenient,
        domain: args.domain.clone(),
        ..Default::default()
    };
    let dir = open_benchmark(ctx, &args.dir, &opts)?;
    let report = validate(
        &dir,
        &ValidateOptions {
            lenient: args.lenient,
        },
    )
    .with_context(|| format!("validating {}", dir.root().display()))?;
    if args.format.json() {
        emit(&(serde_json::to_string_pretty(&report)? + "\n"))?;
    } else {
        emit(&render_text(
            &report,
            &dir.root().display().to_string(),
            args.max_errors,
        ))?;
    }
    Ok(if report.is_ok() {
        ExitCode::SUCCESS
    } else {
        crate::exit::Status::Input.into()
    })
}

fn issue(o: &mut String, level: &str, i: &Issue) {
    let _ = writeln!(o, "{level}[{}]: {}", i.kind, i.error);
}

fn render_text(r: &ValidationReport, root: &str, max: usize) -> String {
    let mut buf = String::new();
    let o = &mut buf;
    for i in r.errors.iter().take(max) {
        issue(o, "error", i);
    }
    if r.error_count as usize > max {
        let _ = writeln!(o, "... and {} more error(s)", r.error_count as usize - max);
    }
    for i in r.warnings.iter().take(max) {
        issue(o, "warning", i);
    }
    if r.warning_count as usize > max {
        let _ = writeln!(
            o,
            "... and {} more warning(s)",
            r.warning_count as usize - max
        );
    }
    let _ = writeln!(
        o,
        "{root}: {} passages, {} dialogues, {} turns ({} with gold), {} qrels judgements",
        r.passages, r.dialogues, r.turns, r.judged_turns, r.qrels_pairs
    );
    if !r.skipped.is_empty() {
        let parts: Vec<String> = r.skipped.iter().map(|(k, n)| format!("{k} {n}")).collect();
        let _ = writeln!(o, "skipped records (--lenient): {}", parts.join(", "));
    }
    if r.is_ok() {
        let _ = writeln!(o, "valid ({} warning(s))", r.warning_count);
    } else {
        let _ = writeln!(
            o,
            "INVALID: {} error(s), {} warning(s)",
            r.error_count, r.warning_count
        );
    }
    buf
}
