//! Human review of an audit (`mtr review AUDIT_DIR`), everything but the HTTP server: what a
//! reviewer is shown and what their answers are stored as, all inside `AUDIT_DIR/review/`.
//!
//! - [`key`]: the one name of a reviewable item (`dimension|turn|passage`,
//!   `missing|turn|candidate`, `gold|turn|gold`), shared with the estimator;
//! - [`units`]: the audited units read back from `items.jsonl` (what the judges saw);
//! - [`sample`]: the seeded random sample, stratified by dimension, stored once in
//!   `review/sample.jsonl` so it never changes;
//! - [`flagged`]: the probable missing golds and flagged golds, most confident first;
//! - [`labels`]: the append-only `review/labels.jsonl` and the effective label of each item;
//! - [`tsv`]: `--print-sample`, `--import`, `--export`;
//! - [`card`]: what one card shows, from the benchmark's texts.

pub mod card;
pub mod flagged;
pub(crate) mod key;
pub mod label_log;
pub mod random_sample;
pub mod tsv;
pub mod units;

pub use key::ItemKey;
pub use label_log::{audit_fingerprint, effective_labels};

use std::path::{Path, PathBuf};

use crate::error::{AuditError, Result};
use crate::summary::Summary;

/// The review folder inside an audit folder.
pub(crate) const REVIEW_DIR: &str = "review";

/// `AUDIT_DIR/review`.
pub(crate) fn review_dir(audit_dir: &Path) -> PathBuf {
    audit_dir.join(REVIEW_DIR)
}

/// Which queue an item is reviewed in.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Queue {
    /// The seeded random sample (for estimates): the reviewer answers blind.
    Sample,
    /// The flagged items (for corrections): the judges' reasons are shown.
    Flagged,
}

impl Queue {
    /// The name in `labels.jsonl` and the API.
    pub fn name(self) -> &'static str {
        match self {
            Queue::Sample => "sample",
            Queue::Flagged => "flagged",
        }
    }

    /// The queue of a name ([`Queue::name`]); `None` for an unknown one.
    pub fn parse(s: &str) -> Option<Queue> {
        match s {
            "sample" => Some(Queue::Sample),
            "flagged" => Some(Queue::Flagged),
            _ => None,
        }
    }
}

/// The audit's summary, or a user error saying the folder is not an audit folder.
pub fn read_audit_summary(audit_dir: &Path) -> Result<Summary> {
    let path = audit_dir.join(crate::summary::SUMMARY);
    if !path.is_file() {
        return Err(user_error(
            audit_dir,
            "not an audit folder: it has no summary.json",
            "give the output folder of `mtr audit` (-o DIR)",
        ));
    }
    crate::summary::read_summary(&path)
}

/// A user error (exit 2) about `path`.
pub(crate) fn user_error(path: &Path, message: impl Into<String>, hint: &str) -> AuditError {
    AuditError::Core(mtr_core::InputError::new(path, message).hint(hint).into())
}

/// An I/O failure on `path` (not the user's fault).
pub(crate) fn io_error(path: &Path, e: impl std::fmt::Display) -> AuditError {
    AuditError::Output {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}
