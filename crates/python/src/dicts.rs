//! Qrels and runs from pytrec_eval-style dicts (`{qid: {docid: grade}}`,
//! `{qid: {docid: score}}`). Reading them needs the GIL; the evaluation that follows does not.
//! A run's documents keep the dict's order, which only matters for exact score ties with equal
//! docnos (impossible: a dict's keys are distinct), so the ranking is the one a file gives.

use mtr_core::InputError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::errors::Failure;

/// `{qid: {docid: grade}}` as qrels; grades must be integers (trec_eval reads integers).
pub fn qrels(origin: &str, dict: &Bound<'_, PyDict>) -> Result<mtr_core::Qrels, Failure> {
    let mut qrels = mtr_core::Qrels::new();
    for (q, docs) in dict.iter() {
        let qid = id(origin, &q, "qid")?;
        let docs = inner(origin, &docs, &qid)?;
        let judged = qrels.entry(qid.clone()).or_default();
        for (d, g) in docs.iter() {
            let doc = id(origin, &d, "docid")?;
            let grade: i32 = g.extract().map_err(|_| {
                InputError::new(origin, "grade is not a 32-bit integer")
                    .field(format!("[{qid:?}][{doc:?}]"))
            })?;
            judged.insert(doc, grade);
        }
    }
    Ok(qrels)
}

/// `{qid: {docid: score}}` as a run; scores are numbers (read as float64).
pub fn run(origin: &str, dict: &Bound<'_, PyDict>) -> Result<mtr_core::Run, Failure> {
    let mut run = mtr_core::Run::new();
    for (q, docs) in dict.iter() {
        let qid = id(origin, &q, "qid")?;
        let docs = inner(origin, &docs, &qid)?;
        let mut ranked = Vec::with_capacity(docs.len());
        for (d, s) in docs.iter() {
            let doc = id(origin, &d, "docid")?;
            let score: f64 = s.extract().map_err(|_| {
                InputError::new(origin, "score is not a number")
                    .field(format!("[{qid:?}][{doc:?}]"))
            })?;
            ranked.push((doc, score));
        }
        run.entry(qid).or_default().extend(ranked);
    }
    Ok(run)
}

fn id(origin: &str, key: &Bound<'_, PyAny>, what: &str) -> Result<String, Failure> {
    let s = key.cast::<PyString>().map_err(|_| {
        InputError::new(origin, format!("{what} is not a str"))
            .field(what)
            .hint("pytrec_eval's dicts are keyed by str")
    })?;
    s.to_cow()
        .map(|c| c.into_owned())
        .map_err(|e| Failure::Internal(format!("{origin}: {what}: {e}")))
}

fn inner<'py>(
    origin: &str,
    docs: &Bound<'py, PyAny>,
    qid: &str,
) -> Result<Bound<'py, PyDict>, Failure> {
    docs.cast::<PyDict>().cloned().map_err(|_| {
        InputError::new(origin, "a query's documents must be a dict {docid: value}")
            .field(format!("[{qid:?}]"))
            .into()
    })
}
