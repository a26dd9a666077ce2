//! pytrec_eval-style dicts (`{qid: {docid: grade}}`, `{qid: {docid: score}}`) read into the
//! column buffers a DataFrame gives (`columns.rs`): one pass over the entries with the GIL,
//! each id's UTF-8 appended to one buffer (no `String` an entry), each query a group of rows.
//! The evaluation that follows runs without the GIL. A run's documents keep the dict's order,
//! which only matters for exact score ties with equal docnos (impossible: a dict's keys are
//! distinct), so the ranking is the one a file gives.

use mtr_core::InputError;
use numpy::Element;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::columns::{Ids, OwnedIds, Queries, Table, Values};
use crate::errors::Failure;
use crate::utf8::Utf8;

/// `{qid: {docid: grade}}` as qrels; grades must be 32-bit integers (trec_eval reads integers).
pub fn qrels<'py>(origin: &str, dict: &Bound<'py, PyDict>) -> Result<Table<'py, i64>, Failure> {
    read(origin, dict, "grade is not a 32-bit integer", |g| {
        g.extract::<i32>().ok().map(i64::from)
    })
}

/// `{qid: {docid: score}}` as a run; scores are numbers (read as float64).
pub fn run<'py>(origin: &str, dict: &Bound<'py, PyDict>) -> Result<Table<'py, f64>, Failure> {
    read(origin, dict, "score is not a number", |s| s.extract().ok())
}

/// The entries in dict order; `value` reads one (`None`: the error `bad`, naming the entry).
fn read<'py, T: Element>(
    origin: &str,
    dict: &Bound<'py, PyDict>,
    bad: &str,
    value: impl Fn(&Bound<'_, PyAny>) -> Option<T>,
) -> Result<Table<'py, T>, Failure> {
    let utf8 = Utf8::new(dict.py());
    let mut qids = OwnedIds::with_capacity(dict.len());
    let mut ends = Vec::with_capacity(dict.len());
    let mut docs = OwnedIds::with_capacity(0);
    let mut values = Vec::new();
    for (q, inner) in dict.iter() {
        let q = key(origin, &q, "qid")?;
        qids.push_str(utf8, q).map_err(|e| text(origin, e))?;
        let Ok(inner) = inner.cast::<PyDict>() else {
            return Err(InputError::new(
                origin,
                "a query's documents must be a dict {docid: value}",
            )
            .field(format!("[{:?}]", q.to_string_lossy()))
            .into());
        };
        if values.is_empty() {
            // the first query's size times the queries: one allocation where queries are alike
            let rows = inner.len() * dict.len();
            docs = OwnedIds::with_capacity(rows);
            values.reserve(rows);
        }
        for (d, v) in inner.iter() {
            let d = key(origin, &d, "docid")?;
            docs.push_str(utf8, d).map_err(|e| text(origin, e))?;
            let Some(x) = value(&v) else {
                let (q, d) = (q.to_string_lossy(), d.to_string_lossy());
                return Err(InputError::new(origin, bad)
                    .field(format!("[{q:?}][{d:?}]"))
                    .into());
            };
            values.push(x);
        }
        ends.push(values.len());
    }
    Ok(Table {
        origin: origin.into(),
        queries: Queries::Groups(qids, ends),
        docs: Ids::Owned(docs),
        values: Values::Owned(values),
    })
}

fn key<'a, 'py>(
    origin: &str,
    k: &'a Bound<'py, PyAny>,
    what: &str,
) -> Result<&'a Bound<'py, PyString>, Failure> {
    k.cast::<PyString>().map_err(|_| {
        InputError::new(origin, format!("{what} is not a str"))
            .field(what)
            .hint("pytrec_eval's dicts are keyed by str")
            .into()
    })
}

fn text(origin: &str, e: PyErr) -> Failure {
    Failure::Internal(format!("{origin}: an id is not text: {e}"))
}
