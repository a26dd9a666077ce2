//! Stage 9, write: the output folder (`items.jsonl`, `suggested_qrels.tsv`,
//! `verify_items.jsonl`, `human_items.jsonl` with an MTRAG calibration set, `summary.json`,
//! `report.md`, `report.html`). Every file is written atomically ([`crate::output`]).

use std::path::Path;

use crate::error::{AuditError, Result};
use crate::judges::record::Judgement;
use crate::output;
use crate::stages::score::Scored;
use crate::stages::verify::Verified;
use crate::summary::Summary;

/// Writes the audit folder `dir` (`human`: the calibration set's judgements).
pub(crate) fn write(
    dir: &Path,
    summary: &Summary,
    scored: &Scored,
    verified: &Verified,
    human: Option<&[Judgement]>,
) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| AuditError::Output {
        path: dir.to_path_buf(),
        message: e.to_string(),
    })?;
    output::write_judgements(&dir.join(output::ITEMS), &scored.judgements)?;
    output::write_judgements(&dir.join(output::VERIFY_ITEMS), &verified.records)?;
    if let Some(h) = human {
        output::write_judgements(&dir.join(output::HUMAN_ITEMS), h)?;
    }
    output::write_suggestions(&dir.join(output::SUGGESTED_QRELS), &verified.suggested)?;
    crate::summary::write_summary(&dir.join(crate::summary::SUMMARY), summary)?;
    output::write_reports(dir, summary)
}
