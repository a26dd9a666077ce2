//! Stage 9, write: the output folder (`items.jsonl`, `suggested_qrels.tsv`,
//! `verify_items.jsonl`, `summary.json`, `report.md`, `report.html`; `human_items.jsonl` is
//! written by the calibrate stage). Every file is written atomically ([`crate::output`]).

use std::path::Path;

use crate::error::{AuditError, Result};
use crate::output;
use crate::stages::score::Scored;
use crate::stages::verify::Verified;
use crate::summary::Summary;

/// Writes the audit folder `dir`.
pub fn write(dir: &Path, summary: &Summary, scored: &Scored, verified: &Verified) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| AuditError::Output {
        path: dir.to_path_buf(),
        message: e.to_string(),
    })?;
    output::write_judgements(&dir.join(output::ITEMS), &scored.judgements)?;
    output::write_suggestions(&dir.join(output::SUGGESTED_QRELS), &verified.suggested)?;
    output::write_judgements(&dir.join(output::VERIFY_ITEMS), &verified.records)?;
    crate::summary::write_summary(&dir.join(crate::summary::SUMMARY), summary)?;
    output::write_reports(dir, summary)
}
