//! `mtr.evaluate`'s compiled core: the inputs read into mtr-metrics' types (dicts with the
//! GIL, everything else without), then the functions `mtr eval` calls
//! (`read_qrels_file`, `evaluate_file` for files; `evaluate_run` for tables and dicts), then the
//! numbers handed back keyed as the caller wrote the measures.

use std::path::PathBuf;

use mtr_metrics::{Column, Compat, EvalQrels, Evaluation, Family};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};

use crate::columns::Table;
use crate::dicts;
use crate::errors::Failure;
use crate::options::{self, Flags, Measures};

/// One input as the Python layer describes it.
enum Input<M> {
    Path(PathBuf),
    Table(Table),
    /// Already read (a dict).
    Read(M),
}

/// What the evaluation gives back: the summary, and per query values when asked for.
type Output<'py> = (Bound<'py, PyDict>, Option<Bound<'py, PyDict>>);

/// Evaluates `run` against `qrels` as `mtr eval` does. Each input is `("path", str)`,
/// `("columns", origin, rows, qids, docnos, values)` or `("dict", origin, dict)`.
#[pyfunction]
#[pyo3(signature = (qrels, run, measures, per_query, flags))]
pub fn evaluate<'py>(
    py: Python<'py>,
    qrels: &Bound<'py, PyTuple>,
    run: &Bound<'py, PyTuple>,
    measures: Vec<String>,
    per_query: bool,
    flags: Flags,
) -> PyResult<Output<'py>> {
    let measures = options::measures(&measures).map_err(|f| f.into_py(py))?;
    let opts = options::eval_options(measures.set.clone(), &flags).map_err(|f| f.into_py(py))?;
    let qrels = input(qrels, dicts::qrels).map_err(|f| f.into_py(py))?;
    let run = input(run, dicts::run).map_err(|f| f.into_py(py))?;
    let ev = py
        .detach(|| compute(qrels, run, &opts))
        .map_err(|f| f.into_py(py))?;
    output(py, &ev, &measures, per_query)
}

fn input<M>(
    t: &Bound<'_, PyTuple>,
    read_dict: fn(&str, &Bound<'_, PyDict>) -> Result<M, Failure>,
) -> Result<Input<M>, Failure> {
    let bad = |e: PyErr| Failure::Internal(format!("malformed input description: {e}"));
    let kind: String = t.get_item(0).and_then(|k| k.extract()).map_err(bad)?;
    match kind.as_str() {
        "path" => Ok(Input::Path(
            t.get_item(1).and_then(|p| p.extract()).map_err(bad)?,
        )),
        "columns" => {
            let bytes = |i: usize| -> Result<Vec<u8>, Failure> {
                let item = t.get_item(i).map_err(bad)?;
                let b = item.cast::<PyBytes>().map_err(|e| bad(e.into()))?;
                Ok(b.as_bytes().to_vec())
            };
            Ok(Input::Table(Table {
                origin: t.get_item(1).and_then(|o| o.extract()).map_err(bad)?,
                rows: t.get_item(2).and_then(|r| r.extract()).map_err(bad)?,
                qids: bytes(3)?,
                docs: bytes(4)?,
                values: bytes(5)?,
            }))
        }
        "dict" => {
            let origin: String = t.get_item(1).and_then(|o| o.extract()).map_err(bad)?;
            let item = t.get_item(2).map_err(bad)?;
            let dict = item.cast::<PyDict>().map_err(|e| bad(e.into()))?;
            Ok(Input::Read(read_dict(&origin, dict)?))
        }
        other => Err(Failure::Internal(format!("unknown input kind {other:?}"))),
    }
}

/// The evaluation itself, run without the GIL.
fn compute(
    qrels: Input<mtr_core::Qrels>,
    run: Input<mtr_core::Run>,
    opts: &mtr_metrics::EvalOptions,
) -> Result<Evaluation, Failure> {
    let qrels = match qrels {
        Input::Path(p) => mtr_metrics::read_qrels_file(&p, opts.dedup)?,
        Input::Table(t) => EvalQrels::from_qrels(&t.to_qrels(opts.dedup)?),
        Input::Read(q) => EvalQrels::from_qrels(&q),
    };
    match run {
        Input::Path(p) => Ok(mtr_metrics::evaluate_file(&qrels, &p, opts)?),
        Input::Read(r) => Ok(mtr_metrics::evaluate_run(&qrels, &r, opts)?),
        Input::Table(t) => {
            let r = t.to_run()?;
            mtr_metrics::evaluate_run(&qrels, &r, opts).map_err(|e| {
                // the in-memory run has no lines: name the frame's rows instead
                match (&e, t.duplicate_error(None, "document")) {
                    (mtr_metrics::MetricsError::Input(_), Some(dup)) => dup.into(),
                    _ => e.into(),
                }
            })
        }
    }
}

fn output<'py>(
    py: Python<'py>,
    ev: &Evaluation,
    measures: &Measures,
    per_query: bool,
) -> PyResult<Output<'py>> {
    let summary = PyDict::new(py);
    for (c, v) in ev.columns.iter().zip(&ev.summary) {
        let key = measures.key(&c.name);
        if c.family == Family::RunId {
            summary.set_item(key, ev.run_id.as_deref())?;
        } else if is_integer(c) {
            summary.set_item(key, *v as i64)?;
        } else {
            summary.set_item(key, *v)?;
        }
    }
    if !per_query {
        return Ok((summary, None));
    }
    // trec_eval 9 averages -c's missing queries in but does not print them per query
    let hide_missing = ev.conventions.compat == Compat::TrecEval9.name();
    let queries = PyDict::new(py);
    for q in ev.queries.iter().filter(|q| !(hide_missing && q.missing)) {
        let values = PyDict::new(py);
        for (c, v) in ev.columns.iter().zip(&q.values) {
            if !c.per_query {
                continue;
            }
            let key = measures.key(&c.name);
            if is_integer(c) {
                values.set_item(key, *v as i64)?;
            } else {
                values.set_item(key, *v)?;
            }
        }
        queries.set_item(&q.qid, values)?;
    }
    Ok((summary, Some(queries)))
}

/// The columns trec_eval prints as integers (`%ld`): the counts.
fn is_integer(c: &Column) -> bool {
    matches!(
        c.family,
        Family::NumQ | Family::NumRet | Family::NumRel | Family::NumRelRet
    )
}
