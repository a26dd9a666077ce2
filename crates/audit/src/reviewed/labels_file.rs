//! The reviewers' labels file, `AUDIT_DIR/review/labels.jsonl`, read into the effective label
//! of every (item, reviewer): one JSON object a line (`item`, `queue`, `label` (null undoes),
//! `reviewer`, `time`, `seconds`, `fingerprint`, optional `note`), the last line of an (item,
//! reviewer) wins.
//!
//! LEAD: a stand-in until `mtr_audit::review::labels::effective_labels(audit_dir)` and
//! `audit_fingerprint(summary)` of the review app land on main: replace [`effective_labels`]
//! and [`audit_fingerprint`] by those (same map type) and delete this file's reader.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::{AuditError, Result};
use crate::summary::Summary;

/// Item -> reviewer -> label: what the estimates and the corrections read.
pub type EffectiveLabels = BTreeMap<String, BTreeMap<String, String>>;

/// The folder of the review app inside an audit folder, and its labels file.
pub const REVIEW_DIR: &str = "review";
pub const LABELS_FILE: &str = "labels.jsonl";

/// `AUDIT_DIR/review/labels.jsonl`.
pub fn labels_path(audit_dir: &Path) -> PathBuf {
    audit_dir.join(REVIEW_DIR).join(LABELS_FILE)
}

#[derive(Debug, Deserialize)]
struct LabelLine {
    item: String,
    label: Option<String>,
    reviewer: String,
    #[serde(default)]
    fingerprint: Option<String>,
}

fn user_error(path: &Path, line: u64, message: String, hint: &str) -> AuditError {
    AuditError::Core(
        mtr_core::InputError::new(path, message)
            .line(line)
            .hint(hint)
            .into(),
    )
}

/// The audit's fingerprint as a labels file records it: labels are answers about one audit's
/// items, so a file from another audit (other data, config or prompts) must not be mixed in.
///
/// LEAD: stand-in for the review app's `audit_fingerprint(summary)`.
pub fn audit_fingerprint(s: &Summary) -> String {
    let mut h = blake3::Hasher::new();
    for part in [
        &s.fingerprint.data,
        &s.fingerprint.config,
        &s.fingerprint.prompts,
    ] {
        h.update(part.as_bytes());
        h.update(b"\n");
    }
    h.finalize().to_hex().to_string()
}

/// The effective labels of `audit_dir`'s labels file, `None` when there is no file. A line of
/// another audit (its `fingerprint` differs from `fingerprint`) or a malformed line is a user
/// error naming the file and line.
pub fn effective_labels(audit_dir: &Path, fingerprint: &str) -> Result<Option<EffectiveLabels>> {
    let path = labels_path(audit_dir);
    if !path.is_file() {
        return Ok(None);
    }
    let file = std::fs::File::open(&path).map_err(|e| AuditError::Output {
        path: path.clone(),
        message: e.to_string(),
    })?;
    let mut labels = EffectiveLabels::new();
    for (i, line) in std::io::BufReader::new(file).lines().enumerate() {
        let no = i as u64 + 1;
        let line = line.map_err(|e| AuditError::Output {
            path: path.clone(),
            message: e.to_string(),
        })?;
        if line.trim().is_empty() {
            continue;
        }
        let l: LabelLine = serde_json::from_str(&line).map_err(|e| {
            user_error(
                &path,
                no,
                format!("not a label: {e}"),
                "each line is one JSON object written by `mtr review`",
            )
        })?;
        if let Some(f) = l.fingerprint.as_deref()
            && f != fingerprint
        {
            return Err(user_error(
                &path,
                no,
                format!(
                    "this label was made on another audit: fingerprint {} differs from this audit's {}",
                    mtr_core::fingerprint::short(f),
                    mtr_core::fingerprint::short(fingerprint)
                ),
                "move the labels file to the audit folder it was made in, or review this audit",
            ));
        }
        let by = labels.entry(l.item).or_default();
        match l.label {
            Some(label) => by.insert(l.reviewer, label),
            None => by.remove(&l.reviewer),
        };
    }
    labels.retain(|_, by| !by.is_empty());
    Ok(Some(labels))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_line_wins_an_undo_removes_and_another_audit_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        assert!(effective_labels(dir.path(), "fp").unwrap().is_none());
        std::fs::create_dir_all(dir.path().join(REVIEW_DIR)).unwrap();
        let line = |item: &str, label: Option<&str>, who: &str, fp: &str| {
            serde_json::json!({"item": item, "queue": "sample", "label": label,
                "reviewer": who, "time": "t", "seconds": 1.5, "fingerprint": fp})
            .to_string()
        };
        let lines = [
            line("alignment|d::1|p", Some("2"), "ann", "fp"),
            line("alignment|d::1|p", Some("4"), "ann", "fp"),
            line("alignment|d::1|p", Some("3"), "bob", "fp"),
            line("alignment|d::2|p", Some("5"), "ann", "fp"),
            line("alignment|d::2|p", None, "ann", "fp"),
        ];
        std::fs::write(labels_path(dir.path()), lines.join("\n") + "\n").unwrap();
        let l = effective_labels(dir.path(), "fp").unwrap().unwrap();
        assert_eq!(l.len(), 1);
        assert_eq!(l["alignment|d::1|p"]["ann"], "4");
        assert_eq!(l["alignment|d::1|p"]["bob"], "3");
        let e = effective_labels(dir.path(), "other").unwrap_err();
        assert!(
            e.is_user_error() && e.to_string().contains("another audit"),
            "{e}"
        );
        std::fs::write(labels_path(dir.path()), "{not json\n").unwrap();
        assert!(
            effective_labels(dir.path(), "fp")
                .unwrap_err()
                .is_user_error()
        );
    }
}
