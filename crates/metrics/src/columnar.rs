//! Evaluation from columns: qrels and runs handed over as column buffers (a DataFrame's
//! arrays, Arrow's string layout, or a dict read into the same shape), not as
//! `mtr_core::{Qrels, Run}`. Those hold a `String` a row in a `BTreeMap`; ten million rows
//! cost more to build than to evaluate. Here the ids stay in the caller's buffers, each query
//! id is interned once, and the rows go to the same ranking, scoring and summary as
//! `mtr eval`'s readers (`evaluate_source`), so the numbers are the file path's to the bit.
//!
//! Parts: `ids` (a column of ids: bytes and offsets), `groups` (which rows belong to which
//! query), `run` (the run as a [`crate::input::RunSource`] and [`evaluate_columns`]),
//! `qrels` ([`qrels_from_columns`]).

mod groups;
mod ids;
mod qrels_columns;
mod run;
#[cfg(test)]
mod tests;

pub use groups::QueryIds;
pub use ids::{IdColumn, Offsets};
pub use qrels_columns::{QrelsColumns, qrels_from_columns};
pub use run::{RunColumns, evaluate_columns};
