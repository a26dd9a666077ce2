//! `mtr leaderboard`: merge bench results into a leaderboard site: Markdown and CSV tables,
//! `leaderboard.json`, and one self-contained HTML page (sortable table, confidence-interval
//! error bars, turn-depth curves, per-stratum charts, trends).

use std::path::PathBuf;
use std::process::ExitCode;

use super::Ctx;
use super::common::{Folder, FormatArgs, Output};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Bench results: `bench.json` files written by `mtr bench`, or folders holding one.
    #[arg(required = true, value_name = "RESULT")]
    pub results: Vec<PathBuf>,
    #[command(flatten)]
    pub output: Output<Folder>,
    #[command(flatten)]
    pub print: FormatArgs,
}

pub async fn run(_ctx: &Ctx, args: Args) -> anyhow::Result<ExitCode> {
    let files: Vec<PathBuf> = args
        .results
        .iter()
        .map(|p| {
            if p.is_dir() {
                p.join(mtr_bench::output::RESULT_FILE)
            } else {
                p.clone()
            }
        })
        .collect();
    let results = mtr_bench::leaderboard::load(&files)?;
    let lb = mtr_bench::leaderboard::merge(&results)?;
    let written = mtr_bench::leaderboard::write_site(args.output.path(), &lb)?;
    for w in &lb.warnings {
        tracing::warn!("{w}");
    }
    if args.print.json() {
        let boards: Vec<serde_json::Value> = lb
            .boards
            .iter()
            .map(|b| {
                serde_json::json!({
                    "benchmark": b.benchmark,
                    "part": b.part,
                    "systems": b.rows.len(),
                    "main_measure": b.main_measure,
                    "trends": b.trends.len(),
                })
            })
            .collect();
        let v = serde_json::json!({"boards": boards, "written": written, "warnings": lb.warnings});
        super::open::emit(&(serde_json::to_string_pretty(&v)? + "\n"))?;
        return Ok(ExitCode::SUCCESS);
    }
    use std::fmt::Write as _;
    let mut text = String::new();
    for b in &lb.boards {
        let _ = writeln!(
            text,
            "{}{}: {} systems, ranked by {}{}",
            b.benchmark,
            b.part.as_ref().map_or(String::new(), |p| format!(" ({p})")),
            b.rows.len(),
            b.main_measure,
            if b.trends.is_empty() {
                String::new()
            } else {
                format!(", {} trends", b.trends.len())
            }
        );
    }
    for p in written {
        let _ = writeln!(text, "wrote {}", p.display());
    }
    super::open::emit(&text)?;
    Ok(ExitCode::SUCCESS)
}
