//! `mtr stats DIR [--format text|json]`: describes a benchmark (dialogues, turns, turns per
//! dialogue, gold per turn, query and history lengths in tokens, languages, tag and
//! answerability counts). Any supported format is accepted (imported into the cache first).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use super::Ctx;
use super::common::{FormatArgs, ImportFlags};
use super::open::{emit, open_benchmark};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The benchmark folder (native, or any format `mtr import` reads).
    pub dir: PathBuf,
    #[command(flatten)]
    pub format: FormatArgs,
    #[command(flatten)]
    pub import: ImportFlags,
}

pub async fn run(ctx: &Ctx, args: Args) -> anyhow::Result<ExitCode> {
    let dir = open_benchmark(ctx, &args.dir, &args.import.options())?;
    let stats = mtr_core::stats::compute(&dir)
        .with_context(|| format!("computing statistics of {}", dir.root().display()))?;
    if args.format.json() {
        emit(&(serde_json::to_string_pretty(&stats)? + "\n"))?;
    } else {
        emit(&stats.render_text())?;
    }
    Ok(ExitCode::SUCCESS)
}
