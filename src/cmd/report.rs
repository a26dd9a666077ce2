//! `mtr report DIR`: re-renders the reports of an output folder from its result file, with no
//! benchmark and no LLM: `report.md` and `report.html` of an audit folder (from
//! `summary.json`, plus the "Reviewed" estimates written into it when reviewers' labels exist in
//! `DIR/review/labels.jsonl`), `report.md` of a bench folder (from `bench.json`); e.g. after upgrading mtr
//! or to regenerate reports deleted by hand.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use super::Ctx;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// An audit output folder (holding `summary.json`) or a bench output folder (holding
    /// `bench.json`).
    pub dir: PathBuf,
    /// Print the Markdown report to stdout instead of the paths written.
    #[arg(long)]
    pub print: bool,
}

pub async fn run(_ctx: &Ctx, args: Args) -> anyhow::Result<ExitCode> {
    let summary_path = args.dir.join(mtr_audit::output::SUMMARY);
    let bench_path = args.dir.join(mtr_bench::output::RESULT_FILE);
    if !summary_path.is_file() && bench_path.is_file() {
        return bench_report(&args, bench_path);
    }
    if !summary_path.is_file() {
        return Err(anyhow::Error::new(mtr_core::Error::from(
            mtr_core::InputError::new(
                &args.dir,
                "neither summary.json nor bench.json: not an audit or bench output folder",
            )
            .hint("pass the folder `mtr audit -o DIR` or `mtr bench -o DIR` wrote"),
        )));
    }
    let audit_error = |e| match e {
        mtr_audit::AuditError::Core(c) => anyhow::Error::new(c),
        e => anyhow::Error::new(e),
    };
    let mut summary = mtr_audit::output::read_summary(&summary_path).map_err(audit_error)?;
    // Reviewers' labels (`review/labels.jsonl`): the "Reviewed" estimates join the summary.
    if mtr_audit::review_estimates::attach(&args.dir, &mut summary).map_err(audit_error)? {
        mtr_audit::output::write_summary(&summary_path, &summary)
            .with_context(|| format!("writing {}", summary_path.display()))?;
    }
    mtr_audit::output::write_reports(&args.dir, &summary)
        .with_context(|| format!("writing reports in {}", args.dir.display()))?;
    if args.print {
        print!("{}", mtr_audit::report::markdown(&summary));
    } else {
        println!("{}", args.dir.join(mtr_audit::output::REPORT_MD).display());
        println!(
            "{}",
            args.dir.join(mtr_audit::output::REPORT_HTML).display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// A bench folder: `report.md` again from `bench.json`.
fn bench_report(args: &Args, bench_path: PathBuf) -> anyhow::Result<ExitCode> {
    let mut loaded = mtr_bench::leaderboard::load(&[bench_path]).map_err(|e| match e {
        mtr_bench::BenchError::Core(c) => anyhow::Error::new(c),
        e => anyhow::Error::new(e),
    })?;
    let Some((_, result)) = loaded.pop() else {
        anyhow::bail!("no result read from {}", args.dir.display());
    };
    let md = mtr_bench::report::markdown(&result);
    let path = args.dir.join(mtr_bench::output::REPORT_FILE);
    mtr_core::atomic::write_atomic(&path, md.as_bytes())
        .with_context(|| format!("writing {}", path.display()))?;
    if args.print {
        print!("{md}");
    } else {
        println!("{}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}
