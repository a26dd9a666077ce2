//! mtr-bench: score retrievers and external runs on a multi-turn benchmark with strata,
//! bootstrap confidence intervals and paired significance tests, and render leaderboards.
//!
//! [`stages`] is the bench job from flags to summary, one function per stage; the pieces it
//! runs, in order:
//! - [`query_set`]: which turns are scored, their dialogue, position and tags;
//! - [`runs`]: external run files checked against the benchmark (overlap, unknown ids);
//! - [`score`]: per-query measure values ([`measure`] names and conventions);
//! - [`engine`]: bootstrap intervals over dialogues ([`stats`]), [`strata`], paired tests,
//!   discriminative power, [`diagnose`], [`failures`], fusion ablation;
//! - [`split`]: seeded dev/test split by dialogue;
//! - [`result`]: the `bench.json` schema; [`report`] its Markdown; [`output`] the atomic
//!   writing of a results folder;
//! - [`leaderboard`]: merging results into tables and one self-contained HTML page;
//! - [`sensitivity`]: the leaderboard under the alternative qrels an audit supports
//!   (Kendall's tau-b and tau_AP from `mtr_metrics::agreement`).

pub mod depth;
pub mod diagnose;
#[path = "job/compute.rs"]
pub mod engine;
pub mod error;
pub mod failures;
#[path = "job/assemble.rs"]
pub mod job;
pub mod leaderboard;
pub mod measure;
pub mod output;
pub mod query_set;
pub mod report;
pub mod result;
#[cfg(feature = "retrieve")]
pub mod retrievers;
pub mod runs;
pub mod score;
pub mod sensitivity;
pub mod sensitivity_report;
pub mod split;
#[path = "job/stages.rs"]
pub mod stages;
pub mod stats;
pub mod strata;
#[cfg(test)]
mod testdata;

pub use error::{BenchError, Result};
pub use measure::Measure;
