//! What `mtr judge` writes in its folder: `judgements.jsonl` (one [`HoleVerdict`] a line, in
//! hole order), `summary.json` ([`HoleSummary`]) and `report.md` / `report.html`. The audit
//! that judged the holes keeps its own folder, `audit/`, where a rerun resumes.

use std::path::Path;

use super::effect::HoleSummary;
use super::verdicts::HoleVerdict;
use crate::error::Result;
use crate::report::doc::{self, Block};

/// The verdicts' file name.
pub const JUDGEMENTS: &str = "judgements.jsonl";
/// The summary's file name.
pub const SUMMARY: &str = "summary.json";

/// Writes `judgements.jsonl`, `summary.json`, `report.md` and `report.html` atomically.
pub(crate) fn write_outputs(dir: &Path, verdicts: &[HoleVerdict], s: &HoleSummary) -> Result<()> {
    let mut lines = String::new();
    for v in verdicts {
        lines.push_str(&serde_json::to_string(v).map_err(|e| json_error(dir, e))?);
        lines.push('\n');
    }
    mtr_core::atomic::write_atomic(dir.join(JUDGEMENTS), lines.as_bytes())?;
    let mut json = serde_json::to_string_pretty(s).map_err(|e| json_error(dir, e))?;
    json.push('\n');
    mtr_core::atomic::write_atomic(dir.join(SUMMARY), json.as_bytes())?;
    let blocks = report(s);
    mtr_core::atomic::write_atomic(dir.join("report.md"), doc::to_markdown(&blocks).as_bytes())?;
    mtr_core::atomic::write_atomic(
        dir.join("report.html"),
        doc::to_html("Holes judged", &blocks).as_bytes(),
    )?;
    Ok(())
}

/// Reads `judgements.jsonl` back.
pub fn read_verdicts(dir: &Path) -> Result<Vec<HoleVerdict>> {
    Ok(mtr_core::jsonl::read_all(dir.join(JUDGEMENTS))?)
}

fn json_error(dir: &Path, e: serde_json::Error) -> crate::AuditError {
    crate::AuditError::Output {
        path: dir.to_path_buf(),
        message: e.to_string(),
    }
}

fn f(x: Option<&f64>) -> String {
    x.map_or_else(|| "-".into(), |v| format!("{v:.4}"))
}

/// The report: what was judged, then per run Judged@K and its measures before and after.
fn report(s: &HoleSummary) -> Vec<Block> {
    let k = s.depth;
    let mut b = vec![
        Block::Heading(1, format!("Holes in the top {k}")),
        Block::Para(format!(
            "{} distinct unjudged passages in the runs' top {k} (holes); {} judged, {} judged relevant.{}",
            s.holes,
            s.judged,
            s.relevant,
            if s.complete {
                ""
            } else {
                " **Incomplete**: run the same command again to judge the rest; judged holes are not paid again."
            }
        )),
    ];
    let (p, n) = (format!("P_{k}"), format!("ndcg_cut_{k}"));
    let rows = s
        .runs
        .iter()
        .map(|r| {
            vec![
                r.run.clone(),
                r.holes.to_string(),
                r.relevant_holes.to_string(),
                format!("{:.3}", r.judged_before),
                format!("{:.3}", r.judged_after),
                f(r.original.get(&p)),
                f(r.filled.get(&p)),
                f(r.original.get(&n)),
                f(r.filled.get(&n)),
            ]
        })
        .collect();
    b.push(Block::Table {
        head: vec![
            "Run".into(),
            "Holes".into(),
            "Relevant holes".into(),
            format!("Judged@{k}"),
            format!("Judged@{k} filled"),
            format!("P@{k}"),
            format!("P@{k} filled"),
            format!("nDCG@{k}"),
            format!("nDCG@{k} filled"),
        ],
        rows,
    });
    if !s.kendall_tau.is_empty() {
        b.push(Block::List(
            s.kendall_tau
                .iter()
                .map(|(m, t)| {
                    format!(
                        "Kendall's tau-b of the runs' order by {m}, original against filled: {t:.3}"
                    )
                })
                .collect(),
        ));
    }
    b
}
