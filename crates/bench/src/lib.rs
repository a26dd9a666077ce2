//! mtr-bench: score retrievers and external runs on a multi-turn benchmark with strata,
//! bootstrap confidence intervals and paired significance tests, and render leaderboards.
//!
//! [`job`] is the bench job from flags to summary, one function per stage; the pieces it
//! runs, in order:
//! - [`query_set`]: which turns are scored, their dialogue, position and tags;
//! - [`runs`]: external run files checked against the benchmark (overlap, unknown ids);
//! - [`score`]: per-query measure values ([`measure`] names and conventions);
//! - `job/compute.rs`: bootstrap intervals over dialogues ([`stats`]), [`strata`], paired
//!   tests, discriminative power, [`diagnose`], [`failures`], fusion ablation;
//! - [`split`]: seeded dev/test split by dialogue;
//! - [`result`]: the `bench.json` schema; [`report`] its Markdown; [`output`] the atomic
//!   writing of a results folder;
//! - [`leaderboard`]: merging results into tables and one self-contained HTML page;
//! - [`holes`]: Judged@K and the measures with the holes of the top K filled
//!   (`--fill-holes K`);
//! - [`sensitivity`]: the leaderboard under the alternative qrels an audit supports
//!   (Kendall's tau-b and tau_AP from `mtr_metrics::agreement`).

#![warn(unreachable_pub)]
#![warn(missing_docs)]

mod depth;
mod diagnose;
mod error;
mod failures;
pub mod holes;
pub mod job;
pub mod leaderboard;
mod measure;
pub mod output;
mod query_set;
pub mod report;
mod result;
#[cfg(feature = "retrieve")]
mod retrievers;
mod runs;
mod score;
pub mod sensitivity;
mod sensitivity_report;
mod split;
pub mod stats;
mod strata;
#[cfg(test)]
mod testdata;

pub use error::{BenchError, Result};
pub use measure::Measure;
pub use query_set::{Part, QuerySet};
pub use result::{BenchResult, SystemKind};
pub use score::Scorer;
pub use strata::Strata;
