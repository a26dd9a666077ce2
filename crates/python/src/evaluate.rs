//! `mtr.evaluate`'s compiled core: the inputs taken as they are (paths; a DataFrame's column
//! arrays, borrowed; dicts read into column buffers with the GIL), then, without the GIL,
//! the functions `mtr eval` calls (`read_qrels_file`, `evaluate_file` for files; mtr-metrics'
//! `qrels_from_columns`, `evaluate_columns` for tables and dicts, which rank and average with
//! the same code), then the numbers handed back keyed as the caller wrote the measures.

use std::path::{Path, PathBuf};

use mtr_metrics::{Column, Compat, EvalOptions, EvalQrels, Evaluation, Family};
use numpy::Element;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};

use crate::columns::Table;
use crate::dicts;
use crate::errors::Failure;
use crate::options::{self, Flags, Measures};

/// One input as the Python layer describes it.
enum Input<'py, T: Element> {
    Path(PathBuf),
    /// A DataFrame's columns or a dict read into columns.
    Table(Table<'py, T>),
}

/// What the evaluation gives back: the summary, and per query values when asked for.
type Output<'py> = (Bound<'py, PyDict>, Option<Bound<'py, PyDict>>);

/// Evaluates `run` against `qrels` as `mtr eval` does. Each input is `("path", str)`,
/// `("columns", origin, qids, docnos, values)` (see `columns.rs`) or `("dict", origin, dict)`.
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
    let ev = compute(py, &qrels, &run, &opts).map_err(|f| f.into_py(py))?;
    output(py, &ev, &measures, per_query)
}

fn input<'py, T: Element>(
    t: &Bound<'py, PyTuple>,
    read_dict: fn(&str, &Bound<'py, PyDict>) -> Result<Table<'py, T>, Failure>,
) -> Result<Input<'py, T>, Failure> {
    let bad = |e: PyErr| Failure::Internal(format!("malformed input description: {e}"));
    let kind: String = t.get_item(0).and_then(|k| k.extract()).map_err(bad)?;
    match kind.as_str() {
        "path" => Ok(Input::Path(
            t.get_item(1).and_then(|p| p.extract()).map_err(bad)?,
        )),
        "columns" => Ok(Input::Table(Table::from_description(t)?)),
        "dict" => {
            let origin: String = t.get_item(1).and_then(|o| o.extract()).map_err(bad)?;
            let item = t.get_item(2).map_err(bad)?;
            let dict = item.cast::<PyDict>().map_err(|e| bad(e.into()))?;
            Ok(Input::Table(read_dict(&origin, dict)?))
        }
        other => Err(Failure::Internal(format!("unknown input kind {other:?}"))),
    }
}

/// A path or columns, borrowed: what runs without the GIL.
enum Source<'a, C> {
    Path(&'a Path),
    Columns(C),
}

impl<'py, T: Element> Input<'py, T> {
    fn source<'a, C>(
        &'a self,
        columns: impl FnOnce(&'a Table<'py, T>) -> Result<C, Failure>,
    ) -> Result<Source<'a, C>, Failure> {
        Ok(match self {
            Input::Path(p) => Source::Path(p),
            Input::Table(t) => Source::Columns(columns(t)?),
        })
    }
}

/// The evaluation itself, run without the GIL; a table's errors name its rows.
fn compute(
    py: Python<'_>,
    qrels: &Input<'_, i64>,
    run: &Input<'_, f64>,
    opts: &EvalOptions,
) -> Result<Evaluation, Failure> {
    let q = qrels.source(Table::qrels_columns)?;
    let r = run.source(Table::run_columns)?;
    let ev = py.detach(|| -> Result<Evaluation, mtr_metrics::MetricsError> {
        let qrels: EvalQrels = match &q {
            Source::Path(p) => mtr_metrics::read_qrels_file(p, opts.dedup)?,
            Source::Columns(c) => mtr_metrics::qrels_from_columns(c, opts.dedup)?,
        };
        match &r {
            Source::Path(p) => mtr_metrics::evaluate_file(&qrels, p, opts),
            Source::Columns(c) => mtr_metrics::evaluate_columns(&qrels, c, opts),
        }
    });
    ev.map_err(|e| python_words(e.into(), &[qrels as &dyn Origin, run as &dyn Origin]))
}

/// An error in Python's words: the flag as `dedup="first"`, and a table's "line" its row.
fn python_words(f: Failure, tables: &[&dyn Origin]) -> Failure {
    let Failure::Input(mut ie) = f else { return f };
    if let Some(h) = &mut ie.hint {
        *h = h.replace("--dedup first", "dedup=\"first\"");
    }
    if tables
        .iter()
        .any(|t| t.table_origin() == Some(ie.file.as_path()))
    {
        ie.message = ie.message.replace("(first at line ", "(first at row ");
    }
    Failure::Input(ie)
}

/// The name a table input goes by in errors (none for a path: its lines are lines).
trait Origin {
    fn table_origin(&self) -> Option<&Path>;
}

impl<T: Element> Origin for Input<'_, T> {
    fn table_origin(&self) -> Option<&Path> {
        match self {
            Input::Path(_) => None,
            Input::Table(t) => Some(&t.origin),
        }
    }
}

fn output<'py>(
    py: Python<'py>,
    ev: &Evaluation,
    measures: &Measures,
    per_query: bool,
) -> PyResult<Output<'py>> {
    // each key made once, not once a query
    let keys: Vec<Bound<'py, PyString>> = ev
        .columns
        .iter()
        .map(|c| PyString::new(py, measures.key(&c.name)))
        .collect();
    let summary = PyDict::new(py);
    for ((c, key), v) in ev.columns.iter().zip(&keys).zip(&ev.summary) {
        if c.family == Family::RunId {
            summary.set_item(key, ev.run_id.as_deref())?;
        } else {
            set_value(&summary, key, c, *v)?;
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
        for ((c, key), v) in ev.columns.iter().zip(&keys).zip(&q.values) {
            if c.per_query {
                set_value(&values, key, c, *v)?;
            }
        }
        queries.set_item(&q.qid, values)?;
    }
    Ok((summary, Some(queries)))
}

fn set_value(d: &Bound<'_, PyDict>, key: &Bound<'_, PyString>, c: &Column, v: f64) -> PyResult<()> {
    if is_integer(c) {
        d.set_item(key, v as i64)
    } else {
        d.set_item(key, v)
    }
}

/// The columns trec_eval prints as integers (`%ld`): the counts.
fn is_integer(c: &Column) -> bool {
    matches!(
        c.family,
        Family::NumQ | Family::NumRet | Family::NumRel | Family::NumRelRet
    )
}
