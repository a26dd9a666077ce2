//! `mtr.evaluate`'s keyword flags as `mtr eval`'s options, and the measures as the caller
//! spelled them: a measure that names one value (`nDCG@10`, `map`) is keyed as written; one
//! that names several (`P.5,10`, `official`, `all`) is keyed by trec_eval's column names.

use std::collections::HashMap;

use mtr_metrics::{Compat, Dedup, EvalOptions, MeasureSet, MissingQueries};
use pyo3::prelude::*;

use crate::errors::Failure;

/// The flags of `mtr eval` that change the numbers, as the Python layer passes them (its
/// keyword names checked and defaults filled in `python/mtr/_evaluate.py`).
#[derive(Debug, FromPyObject)]
#[pyo3(from_item_all)]
pub struct Flags {
    complete: bool,
    intersect: bool,
    relevance_level: i64,
    max_docs: Option<usize>,
    compat: String,
    dedup: String,
}

/// The measures to compute and the key each column is returned under.
pub struct Measures {
    pub set: MeasureSet,
    keys: HashMap<String, String>,
}

impl Measures {
    /// The caller's key for a trec_eval column name.
    pub fn key<'a>(&'a self, column: &'a str) -> &'a str {
        self.keys.get(column).map_or(column, String::as_str)
    }
}

/// Parses the measures (trec_eval or ir_measures spelling); none is trec_eval's official set.
pub fn measures(specs: &[String]) -> Result<Measures, Failure> {
    if specs.is_empty() {
        return Ok(Measures {
            set: MeasureSet::official(),
            keys: HashMap::new(),
        });
    }
    let mut keys = HashMap::new();
    for spec in specs {
        let columns = MeasureSet::parse([spec])?.columns();
        if let [only] = columns.as_slice() {
            keys.insert(only.name.clone(), spec.clone());
        }
    }
    Ok(Measures {
        set: MeasureSet::parse(specs)?,
        keys,
    })
}

/// `mtr eval`'s options from the flags, with the CLI's checks (`-c` and `--intersect`
/// exclude each other; compat and dedup are closed vocabularies).
pub fn eval_options(measures: MeasureSet, flags: &Flags) -> Result<EvalOptions, Failure> {
    let missing = match (flags.complete, flags.intersect) {
        (true, true) => {
            return Err(Failure::Argument(
                "complete=True and intersect=True exclude each other (as -c and --intersect do)"
                    .into(),
            ));
        }
        (true, false) => MissingQueries::Complete,
        (false, true) => MissingQueries::Intersect,
        (false, false) => MissingQueries::Error,
    };
    let compat = match flags.compat.as_str() {
        "trec_eval_10" => Compat::TrecEval10,
        "trec_eval_9" => Compat::TrecEval9,
        other => {
            return Err(Failure::Argument(format!(
                "compat={other:?}: expected \"trec_eval_10\" or \"trec_eval_9\""
            )));
        }
    };
    let dedup = match flags.dedup.as_str() {
        "error" => Dedup::Error,
        "first" => Dedup::First,
        other => {
            return Err(Failure::Argument(format!(
                "dedup={other:?}: expected \"error\" or \"first\""
            )));
        }
    };
    Ok(EvalOptions {
        measures,
        relevance_level: flags.relevance_level,
        missing,
        max_docs: flags.max_docs,
        compat,
        dedup,
    })
}
