//! `mtr stats DIR [--format text|json]`: describes a benchmark (dialogues, turns, turns per
//! dialogue, gold per turn, query and history lengths in tokens, languages, tag and
//! answerability counts). Any supported format is accepted (imported into the cache first).
//! `--realism` measures how realistic its dialogues are instead (question lengths, the
//! history gap under BM25, referring back, topic switches; `mtr_retrieve::realism`), and
//! `--compare OTHER` puts a second benchmark beside it.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use mtr_core::BenchmarkDir;
use mtr_retrieve::realism::{self, IntervalOptions, Realism, RealismInput};
use mtr_retrieve::{CorpusSource, IndexOptions, StatsSettings};

use super::Ctx;
use super::common::{FormatArgs, ImportFlags};
use super::open::{emit, open_benchmark};
use crate::config::flags::section_flags;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The benchmark folder (native, or any format `mtr import` reads).
    pub dir: PathBuf,
    /// Measure realism per language, with intervals over dialogues: question length, the
    /// history gap (BM25 recall@10 of the gold with the rewrite or history minus with the
    /// question alone), follow-ups that refer back, topic switches. Builds the benchmark's
    /// BM25 index when missing (as `mtr bench` does).
    #[arg(long)]
    pub realism: bool,
    /// With --realism: a second benchmark measured the same way, in a column beside the first.
    #[arg(long, value_name = "OTHER", requires = "realism")]
    pub compare: Option<PathBuf>,
    #[command(flatten)]
    pub settings: StatsFlags,
    #[command(flatten)]
    pub format: FormatArgs,
    #[command(flatten)]
    pub import: ImportFlags,
}

section_flags! {
    /// The flags over `[stats]`; each default is `StatsSettings::default()`'s.
    pub struct StatsFlags for StatsSettings {
        /// With --realism: bootstrap resamples of the intervals.
        #[arg(requires = "realism")]
        resamples: Option<usize> => "resamples",
        /// With --realism: seed of the bootstrap.
        #[arg(requires = "realism")]
        seed: Option<u64> => "seed",
    }
}

pub async fn run(ctx: &Ctx, args: Args) -> anyhow::Result<ExitCode> {
    // read first, so that a bad value stops the command before any work
    let settings: StatsSettings = ctx.config.settings(&args.settings)?;
    let dir = open_benchmark(ctx, &args.dir, &args.import.options())?;
    if args.realism {
        return run_realism(ctx, &args, &settings, &dir);
    }
    let stats = mtr_core::stats::compute(&dir)
        .with_context(|| format!("computing statistics of {}", dir.root().display()))?;
    if args.format.json() {
        emit(&(serde_json::to_string_pretty(&stats)? + "\n"))?;
    } else {
        emit(&stats.render_text())?;
    }
    Ok(ExitCode::SUCCESS)
}

fn run_realism(
    ctx: &Ctx,
    args: &Args,
    settings: &StatsSettings,
    dir: &BenchmarkDir,
) -> anyhow::Result<ExitCode> {
    let intervals = IntervalOptions {
        resamples: settings.resamples,
        seed: settings.seed,
        ..Default::default()
    };
    let mut measured = vec![measure_realism(ctx, dir, intervals)?];
    if let Some(other) = &args.compare {
        let other = open_benchmark(ctx, other, &args.import.options())?;
        measured.push(measure_realism(ctx, &other, intervals)?);
    }
    if args.format.json() {
        emit(&(serde_json::to_string_pretty(&measured)? + "\n"))?;
    } else {
        let refs: Vec<&Realism> = measured.iter().collect();
        emit(&realism::render::render(&refs))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// One benchmark's realism, with its BM25 index (built into `BENCH/.mtr/index` or the cache
/// when missing).
fn measure_realism(
    ctx: &Ctx,
    dir: &BenchmarkDir,
    intervals: IntervalOptions,
) -> anyhow::Result<Realism> {
    let root = dir.root();
    let manifest = dir.manifest()?;
    let dialogues = dir
        .dialogues()
        .with_context(|| format!("reading the dialogues of {}", root.display()))?;
    let index_path = mtr_bench::job::default_index_path(root, &manifest.fingerprint);
    let src = CorpusSource::Benchmark(dir.clone());
    let idx = mtr_retrieve::ensure_index(
        &src,
        &index_path,
        &IndexOptions::default(),
        ctx.progress.as_ref(),
    )
    .with_context(|| format!("opening the BM25 index of {}", root.display()))?;
    let bm25 = idx.bm25()?;
    let name = if manifest.name.is_empty() {
        dir.display_name()
    } else {
        manifest.name
    };
    let input = RealismInput {
        name,
        bm25: Some(&bm25),
        intervals,
    };
    realism::measure(&dialogues, &input)
        .with_context(|| format!("measuring the realism of {}", root.display()))
}
