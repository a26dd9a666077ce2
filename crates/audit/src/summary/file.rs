//! `summary.json` on disk: its file name in the audit folder, and the one writer and reader
//! (pretty JSON with a final newline, written atomically).

use std::path::Path;

use mtr_core::atomic::write_atomic;

use super::Summary;
use crate::error::{AuditError, Result};

/// The summary's file name in an audit folder.
pub const SUMMARY: &str = "summary.json";

fn io(path: &Path, e: impl std::fmt::Display) -> AuditError {
    AuditError::Output {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

/// Writes `summary.json` atomically.
pub fn write_summary(path: &Path, s: &Summary) -> Result<()> {
    let mut text = serde_json::to_string_pretty(s).map_err(|e| io(path, e))?;
    text.push('\n');
    write_atomic(path, text.as_bytes())?;
    Ok(())
}

/// Reads `summary.json` back (a user error when it does not parse).
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
