//! `mtr report DIR`: re-renders `report.md` and `report.html` of an audit folder from its
//! `summary.json` (no benchmark, no LLM needed), e.g. after upgrading mtr or to regenerate
//! reports deleted by hand.

#![allow(clippy::print_stdout)] // results go to stdout (see the team brief)

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use super::Ctx;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// An audit output folder (holding `summary.json`).
    pub dir: PathBuf,
    /// Print the Markdown report to stdout as well.
    #[arg(long)]
    pub print: bool,
}

pub async fn run(_ctx: &Ctx, args: Args) -> anyhow::Result<ExitCode> {
    let summary_path = args.dir.join(mtr_audit::output::SUMMARY);
    if !summary_path.is_file() {
        return Err(anyhow::Error::new(mtr_core::Error::from(
            mtr_core::InputError::new(&args.dir, "no summary.json: not an audit output folder")
                .hint("pass the folder `mtr audit -o DIR` wrote"),
        )));
    }
    let summary = mtr_audit::output::read_summary(&summary_path).map_err(|e| match e {
        mtr_audit::AuditError::Core(c) => anyhow::Error::new(c),
        e => anyhow::Error::new(e),
    })?;
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
