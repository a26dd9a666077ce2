//! A run as columns, evaluated by `mtr eval`'s own code: the rows grouped by query become a
//! [`RunSource`] whose candidates borrow the caller's buffers (no copy of a document id), and
//! [`evaluate_columns`] hands it to `evaluate_source`, the function every run reader goes
//! through. A row's "line" is its position counting from 1, so a duplicate document is named
//! by its row.

use std::path::Path;

use super::IdColumn;
use super::groups::{Grouping, QueryIds};
use crate::error::{MetricsError, Result};
use crate::eval::{EvalOptions, Evaluation, evaluate_source};
use crate::input::{Cand, Compat, EvalQrels, RunSource};

/// A run's columns: a row per retrieved document.
#[derive(Debug, Clone, Copy)]
pub struct RunColumns<'a> {
    /// How errors name the run (`run DataFrame`).
    pub origin: &'a Path,
    /// Each row's query.
    pub queries: QueryIds<'a>,
    /// Each row's document id.
    pub docs: IdColumn<'a>,
    /// Each row's score.
    pub scores: &'a [f64],
}

/// Evaluates a run given as columns against qrels, as [`crate::evaluate_file`] evaluates a
/// run file: documents ranked by score descending, ties by docno descending (the row order
/// does not matter), the same measures and summary, to the bit.
pub fn evaluate_columns(
    qrels: &EvalQrels,
    run: &RunColumns<'_>,
    opts: &EvalOptions,
) -> Result<Evaluation> {
    let source = ColumnRun::new(run)?;
    evaluate_source(qrels, &source, opts)
}

/// The run as the evaluation reads it.
struct ColumnRun<'a> {
    origin: &'a Path,
    groups: Grouping<'a>,
    docs: IdColumn<'a>,
    scores: &'a [f64],
}

impl<'a> ColumnRun<'a> {
    fn new(run: &RunColumns<'a>) -> Result<Self> {
        let rows = run.queries.rows();
        if run.docs.len() != rows || run.scores.len() != rows {
            return Err(MetricsError::invalid(format!(
                "{}: {rows} query rows, {} document ids, {} scores",
                run.origin.display(),
                run.docs.len(),
                run.scores.len()
            )));
        }
        Ok(ColumnRun {
            origin: run.origin,
            groups: Grouping::new(&run.queries, run.origin)?,
            docs: run.docs,
            scores: run.scores,
        })
    }
}

impl RunSource for ColumnRun<'_> {
    fn len(&self) -> usize {
        self.groups.len()
    }
    fn find(&self, qid: &[u8]) -> Option<usize> {
        self.groups.find(qid)
    }
    fn candidates<'s>(&'s self, i: usize, compat: Compat, out: &mut Vec<Cand<'s>>) -> Result<()> {
        out.extend(self.groups.rows(i).map(|r| Cand {
            doc: self.docs.get(r),
            score: compat.score(self.scores[r]),
            line: r as u64 + 1,
            rel: 0,
        }));
        Ok(())
    }
    fn run_id(&self) -> Option<&str> {
        None
    }
    fn origin(&self) -> &Path {
        self.origin
    }
    fn num_lines(&self) -> usize {
        self.scores.len()
    }
    fn extent(&self, i: usize) -> (usize, usize) {
        self.groups.extent(i)
    }
}
