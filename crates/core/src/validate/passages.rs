//! The corpus check: streams `corpus.jsonl` and keeps only its passage ids, naming empty,
//! duplicate and whitespace-holding ids, and passages with no text (a warning).

use std::collections::HashSet;

use super::report::ValidationReport;
use crate::benchmark::{BenchmarkDir, CORPUS};
use crate::error::{InputError, Result};
use crate::model::Passage;

/// Streams the corpus; returns its passage ids.
pub(super) fn check(dir: &BenchmarkDir, r: &mut ValidationReport) -> Result<HashSet<String>> {
    let path = dir.path(CORPUS);
    let mut ids: HashSet<String> = HashSet::new();
    r.for_each_record::<Passage>(&path, |r, no, p| {
            r.passages += 1;
            if p.id.trim().is_empty() {
                r.problem(
                    "empty-passage-id",
                    InputError::new(&path, "passage id is empty")
                        .line(no)
                        .field("id"),
                );
                return;
            }
            if p.id.chars().any(|c| c.is_whitespace() && c != ' ') {
                // a tab or a line break: `mtr index` refuses it and a TREC export would rewrite it
                r.problem(
                    "passage-id-whitespace",
                    InputError::new(
                        &path,
                        format!("passage id {:?} holds a tab or a line break", p.id),
                    )
                    .line(no)
                    .field("id")
                    .hint("TREC run and qrels files are whitespace-separated: rename the passage and its gold references"),
                );
            } else if p.id.contains(' ') {
                // real collections (INSCIT: Wikipedia titles) have such ids: kept, but said
                r.warn(
                    "passage-id-space",
                    InputError::new(&path, format!("passage id {:?} holds a space", p.id))
                        .line(no)
                        .field("id")
                        .hint("`mtr index` and TREC run/qrels files cannot hold it"),
                );
            }
            if p.text.trim().is_empty() && p.title.trim().is_empty() {
                // A warning, not an error: real corpora hold such passages and real runs rank
                // them (see `mtr import`); the audit skips them as `empty_passage`.
                r.warn(
                    "empty-passage",
                    InputError::new(
                        &path,
                        format!("passage `{}` has no text, only whitespace", p.id),
                    )
                    .line(no)
                    .field("text")
                    .hint("kept: runs may rank it; the audit skips it"),
                );
            }
            if !ids.insert(p.id.clone()) {
                r.problem(
                    "duplicate-passage",
                    InputError::new(&path, format!("duplicate passage id `{}`", p.id))
                        .line(no)
                        .field("id"),
                );
            }
    })?;
    Ok(ids)
}
