//! Qrels from columns, read as `mtr eval` reads a qrels file: grades are 32-bit integers, a
//! document judged twice for one query is an error naming the earliest repeated row and the
//! row it repeats (or the first judgement is kept with `Dedup::First`), and the result is the
//! [`EvalQrels`] every evaluation takes.
//!
//! The columns are written out as a qrels file's text in memory, a line a row, and read by
//! the qrels file reader itself (`read_qrels`: a bucket pass and a sort per query, no
//! allocation a judgement), so that every rule is the file's and a row's error is its line's.
//! Ids a TREC line cannot hold (empty, or holding whitespace; a query id starting with `#`)
//! go through a `BTreeMap` instead, with the same rules.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::io::Write as _;
use std::path::Path;

use mtr_core::InputError;

use super::IdColumn;
use super::groups::{Grouping, QueryIds};
use crate::error::{MetricsError, Result};
use crate::input::{Dedup, EvalQrels, is_space, read_qrels};

/// Qrels' columns: a row per judgement.
#[derive(Debug, Clone, Copy)]
pub struct QrelsColumns<'a> {
    /// How errors name the qrels (`qrels DataFrame`).
    pub origin: &'a Path,
    /// Each row's query.
    pub queries: QueryIds<'a>,
    /// Each row's document id.
    pub docs: IdColumn<'a>,
    /// Each row's grade (a 32-bit integer, as trec_eval reads grades).
    pub grades: &'a [i64],
}

/// Reads qrels given as columns (see the module's doc).
pub fn qrels_from_columns(qrels: &QrelsColumns<'_>, dedup: Dedup) -> Result<EvalQrels> {
    let rows = qrels.queries.rows();
    if qrels.docs.len() != rows || qrels.grades.len() != rows {
        return Err(MetricsError::invalid(format!(
            "{}: {rows} query rows, {} document ids, {} grades",
            qrels.origin.display(),
            qrels.docs.len(),
            qrels.grades.len()
        )));
    }
    let grades = grades(qrels)?;
    match trec_text(qrels, &grades) {
        Some(text) => read_qrels(&text, qrels.origin, dedup),
        None => from_map(qrels, &grades, dedup),
    }
}

/// Each row's query id, in row order.
fn for_each_row<'a>(queries: &QueryIds<'a>, mut f: impl FnMut(usize, &'a [u8])) {
    match queries {
        QueryIds::Rows(ids) => (0..ids.len()).for_each(|r| f(r, ids.get(r))),
        QueryIds::Groups { ids, ends } => {
            let mut start = 0;
            for (k, end) in ends.iter().enumerate() {
                (start..*end).for_each(|r| f(r, ids.get(k)));
                start = *end;
            }
        }
    }
}

/// The rows as a TREC qrels file (`qid 0 docno grade`, a line a row), or `None` when an id
/// cannot be a TREC token.
fn trec_text(qrels: &QrelsColumns<'_>, grades: &[i32]) -> Option<Vec<u8>> {
    fn token(id: &[u8]) -> bool {
        !id.is_empty() && !id.iter().any(|b| is_space(*b) || *b == b'\n')
    }
    let mut text = Vec::with_capacity(grades.len() * 24);
    let mut ok = true;
    let mut last: &[u8] = &[];
    for_each_row(&qrels.queries, |r, qid| {
        let doc = qrels.docs.get(r);
        if !std::ptr::eq(qid, last) {
            ok &= token(qid) && qid[0] != b'#' && !qid.starts_with(b"\xEF\xBB\xBF");
            last = qid;
        }
        ok &= token(doc);
        if ok {
            text.extend_from_slice(qid);
            text.extend_from_slice(b" 0 ");
            text.extend_from_slice(doc);
            text.push(b' ');
            // writing to a Vec cannot fail
            let _ = writeln!(text, "{}", grades[r]);
        }
    });
    ok.then_some(text)
}

/// The qrels through a `BTreeMap` per query (ids no TREC line can hold), with the file
/// reader's rules.
pub(super) fn from_map(
    qrels: &QrelsColumns<'_>,
    grades: &[i32],
    dedup: Dedup,
) -> Result<EvalQrels> {
    let groups = Grouping::new(&qrels.queries, qrels.origin)?;
    let mut out = mtr_core::Qrels::new();
    // (row, first row, query, document) of the earliest repeated judgement
    let mut first_dup: Option<(usize, usize, usize, &[u8])> = None;
    for q in 0..groups.len() {
        let mut docs: BTreeMap<&[u8], (i32, usize)> = BTreeMap::new();
        for r in groups.rows(q) {
            let doc = qrels.docs.get(r);
            match docs.entry(doc) {
                Entry::Vacant(e) => {
                    e.insert((grades[r], r));
                }
                Entry::Occupied(e) => {
                    if dedup == Dedup::Error && first_dup.is_none_or(|(d, ..)| r < d) {
                        first_dup = Some((r, e.get().1, q, doc));
                    }
                }
            }
        }
        let judged = out.entry(groups.qid(q).to_string()).or_default();
        for (doc, (grade, row)) in docs {
            let doc = std::str::from_utf8(doc).map_err(|_| {
                InputError::new(qrels.origin, "document id is not valid UTF-8")
                    .line(row as u64 + 1)
                    .field("docno")
            })?;
            judged.insert(doc.to_string(), grade);
        }
    }
    if let Some((row, first, q, doc)) = first_dup {
        return Err(duplicate(qrels.origin, groups.qid(q), doc, row, first).into());
    }
    let mut eval = EvalQrels::from_qrels(&out);
    eval.origin = qrels.origin.to_path_buf();
    Ok(eval)
}

/// The grades as i32, the first out of range (in row order) an error naming its row.
fn grades(qrels: &QrelsColumns<'_>) -> Result<Vec<i32>> {
    qrels
        .grades
        .iter()
        .enumerate()
        .map(|(r, g)| {
            i32::try_from(*g).map_err(|_| {
                InputError::new(
                    qrels.origin,
                    format!("grade {g} is out of the 32-bit range trec_eval reads"),
                )
                .line(r as u64 + 1)
                .field("grade")
                .into()
            })
        })
        .collect()
}

/// The qrels file reader's error for a repeated judgement, rows for lines.
fn duplicate(origin: &Path, qid: &str, doc: &[u8], row: usize, first: usize) -> InputError {
    InputError::new(
        origin,
        format!(
            "duplicate judgement for query `{qid}`, document `{}` (first at line {})",
            String::from_utf8_lossy(doc),
            first + 1
        ),
    )
    .line(row as u64 + 1)
    .field("docno")
    .hint("trec_eval rejects duplicate judgements; use --dedup first to keep the first")
}
