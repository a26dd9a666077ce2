//! The audit folder: `items.jsonl` (every judgement), `summary.json`, `report.md`,
//! `report.html`, `suggested_qrels.tsv` (and `human_items.jsonl` with `--human-labels`).
//! Every file is written atomically and in a fixed order, so the same inputs and seed give
//! byte-identical files.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use mtr_core::atomic::{AtomicFile, write_atomic};
use mtr_core::jsonl::JsonlWriter;

use crate::aggregate::Suggestion;
use crate::error::{AuditError, Result};
use crate::record::Judgement;
use crate::summary::Summary;

pub const ITEMS: &str = "items.jsonl";
pub const HUMAN_ITEMS: &str = "human_items.jsonl";
pub const SUMMARY: &str = "summary.json";
pub const REPORT_MD: &str = "report.md";
pub const REPORT_HTML: &str = "report.html";
pub const SUGGESTED_QRELS: &str = "suggested_qrels.tsv";

fn io(path: &Path, e: impl std::fmt::Display) -> AuditError {
    AuditError::Output {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

/// Judgements of an earlier run in `dir/name`, by id. A missing file gives none; an
/// unreadable one is reported and ignored (its judgements are redone, from the LLM cache).
pub fn read_existing(dir: &Path, name: &str) -> HashMap<String, Judgement> {
    let p = dir.join(name);
    if !p.is_file() {
        return HashMap::new();
    }
    match mtr_core::jsonl::read_all::<Judgement>(&p) {
        Ok(v) => v.into_iter().map(|j| (j.id.clone(), j)).collect(),
        Err(e) => {
            tracing::warn!("ignoring {}: {e}", p.display());
            HashMap::new()
        }
    }
}

pub fn write_judgements(path: &Path, judgements: &[Judgement]) -> Result<()> {
    let mut w = JsonlWriter::create(path)?;
    for j in judgements {
        w.write(j)?;
    }
    w.commit()?;
    Ok(())
}

/// `suggested_qrels.tsv`: a BEIR-style header, then `turn passage 1 votes picks gold`.
/// `cut -f1-3` gives BEIR qrels to merge after human review.
pub fn write_suggestions(path: &Path, suggestions: &[Suggestion]) -> Result<()> {
    let mut f = AtomicFile::create(path)?;
    let mut body = String::from("query-id\tcorpus-id\tscore\tvotes\tpicks\tinstead-of\n");
    for s in suggestions {
        body.push_str(&format!(
            "{}\t{}\t1\t{}\t{}\t{}\n",
            s.turn_id, s.passage_id, s.votes, s.picks, s.gold_passage_id
        ));
    }
    f.write_all(body.as_bytes()).map_err(|e| io(path, e))?;
    f.commit()?;
    Ok(())
}

pub fn write_summary(path: &Path, s: &Summary) -> Result<()> {
    let mut text = serde_json::to_string_pretty(s).map_err(|e| io(path, e))?;
    text.push('\n');
    write_atomic(path, text.as_bytes())?;
    Ok(())
}

pub fn read_summary(path: &Path) -> Result<Summary> {
    let text = mtr_core::jsonl::read_text(path)?;
    serde_json::from_str(&text).map_err(|e| {
        AuditError::Core(
            mtr_core::InputError::new(path, format!("not an audit summary: {e}"))
                .line(e.line() as u64)
                .into(),
        )
    })
}

/// Renders and writes `report.md` and `report.html` from a summary.
pub fn write_reports(dir: &Path, s: &Summary) -> Result<()> {
    write_atomic(dir.join(REPORT_MD), crate::report::markdown(s).as_bytes())?;
    write_atomic(dir.join(REPORT_HTML), crate::report::html(s).as_bytes())?;
    Ok(())
}
