//! The outcome of a validation and how a problem enters it: an error, or with `--lenient` a
//! warning counted by kind; each list keeps the first problems verbatim and counts them all.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde::ser::SerializeStruct;

use crate::error::{InputError, Result};
use crate::jsonl;

/// How many problems are kept verbatim per list (all are counted).
const KEPT: usize = 1000;

/// One problem with its kind (`duplicate-passage`, `missing-gold-passage`, ...).
#[derive(Debug, Clone)]
pub struct Issue {
    /// The problem's kind (`duplicate-passage`, `qrels-mismatch`, ...).
    pub kind: String,
    /// Where and what.
    pub error: InputError,
}

impl Serialize for Issue {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Issue", 6)?;
        st.serialize_field("kind", &self.kind)?;
        st.serialize_field("file", &self.error.file.display().to_string())?;
        st.serialize_field("line", &self.error.line)?;
        st.serialize_field("field", &self.error.field)?;
        st.serialize_field("message", &self.error.message)?;
        st.serialize_field("hint", &self.error.hint)?;
        st.end()
    }
}

/// The outcome of a validation.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ValidationReport {
    /// Problems that fail validation (the first few).
    pub errors: Vec<Issue>,
    /// Problems that do not (the first few).
    pub warnings: Vec<Issue>,
    /// Errors in all.
    pub error_count: u64,
    /// Warnings in all.
    pub warning_count: u64,
    /// Lenient mode: problems by kind (the records a lenient consumer would skip).
    pub skipped: BTreeMap<String, u64>,
    /// Passages read.
    pub passages: u64,
    /// Dialogues read.
    pub dialogues: usize,
    /// Turns read.
    pub turns: usize,
    /// Turns with at least one judgement.
    pub judged_turns: usize,
    /// Lines of `qrels.tsv` read.
    pub qrels_pairs: usize,
    #[serde(skip)]
    lenient: bool,
}

impl ValidationReport {
    /// True when no problem is an error.
    pub fn is_ok(&self) -> bool {
        self.error_count == 0
    }

    pub(super) fn new(lenient: bool) -> Self {
        Self {
            lenient,
            ..Default::default()
        }
    }

    pub(super) fn problem(&mut self, kind: &str, error: InputError) {
        if self.lenient {
            *self.skipped.entry(kind.to_string()).or_default() += 1;
            self.warn(kind, error);
        } else {
            self.error_count += 1;
            if self.errors.len() < KEPT {
                self.errors.push(Issue {
                    kind: kind.into(),
                    error,
                });
            }
        }
    }

    pub(super) fn warn(&mut self, kind: &str, error: InputError) {
        self.warning_count += 1;
        if self.warnings.len() < KEPT {
            self.warnings.push(Issue {
                kind: kind.into(),
                error,
            });
        }
    }

    /// Calls `f(self, line, record)` for each record of a JSONL file; a malformed line is a
    /// `malformed-record` problem and is skipped.
    pub(super) fn for_each_record<T: DeserializeOwned>(
        &mut self,
        path: &Path,
        mut f: impl FnMut(&mut Self, u64, T),
    ) -> Result<()> {
        for line in jsonl::records::<T>(path)? {
            match line? {
                jsonl::Line::Record(no, rec) => f(self, no, rec),
                jsonl::Line::Malformed(e) => self.problem("malformed-record", e),
            }
        }
        Ok(())
    }
}
