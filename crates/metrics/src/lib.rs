//! mtr-metrics: IR measures that equal trec_eval's to the last digit, and the statistics
//! (bootstrap confidence intervals, paired tests, agreement) that audit and bench report.
//! Pure computation: no async, no LLM. See `API.md` for the public surface.
//!
//! Layout: [`measure`] names and parameters, `input` fast qrels/run readers, `columnar` qrels
//! and runs from column buffers (DataFrames, dicts), `stream`
//! one-pass evaluation of contiguous TREC runs, `rank` ranking with trec_eval's tie-breaking,
//! `compute` per-query values, `eval` query sets and summaries, [`output`] trec_eval text /
//! JSON / JSONL, [`stats`] uncertainty and tests, [`agreement`] inter-annotator agreement and
//! rank correlation. The modules named in brackets are public facades; the rest is reached
//! through the re-exports below.

#![warn(unreachable_pub)]
#![warn(missing_docs)]

pub mod agreement;
mod columnar;
mod compute;
mod error;
mod eval;
mod evaluation;
#[cfg(test)]
mod golden_tests;
mod input;
pub mod measure;
pub mod output;
#[cfg(test)]
mod prop_tests;
mod rank;
pub mod stats;
mod stream;

pub use columnar::{
    IdColumn, Offsets, QrelsColumns, QueryIds, RunColumns, evaluate_columns, qrels_from_columns,
};
pub use error::{MetricsError, Result};
pub use eval::{
    Conventions, EvalOptions, Evaluation, MissingQueries, QueryScores, evaluate, evaluate_file,
    evaluate_run,
};
pub use input::{
    Compat, Dedup, EvalQrels, QrelsQuery, read_qrels, read_qrels_file, run_from_mtrag_jsonl,
};
pub use measure::{Column, Family, MeasureSet};
