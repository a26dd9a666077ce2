//! mtr-audit (MTR-Eval): an ensemble of LLM judges scores a benchmark on query-evidence
//! alignment, evidence completeness (a seeded, position-balanced discriminability test),
//! answer faithfulness and answer quality, with confidence intervals and bias checks.
//!
//! [`run`] does the whole job as the named [`stages`] (plan -> reuse -> judge -> human
//! -> score -> verify -> calibrate -> summarise -> write); the folders hold their steps by
//! concern: [`items`] (what to judge, the passages and pools, item scores, missing gold),
//! [`judges`] (prompts, calls, answers), [`statistics`] (intervals, biases, the verdict on the
//! judges), [`human`] (calibration against people), [`budget`] (`--time-budget`,
//! [`run_within`]); [`summary`], [`report`] and [`output`] are what the audit writes.

#![warn(unreachable_pub)]
#![warn(missing_docs)]

pub mod budget;
mod config;
mod dimension;
mod error;
pub mod holes;
pub mod human;
pub mod items;
mod job;
pub mod judges;
pub mod label_edits;
pub mod output;
mod paper_scale;
pub mod report;
pub mod review_estimates;
pub mod review_queue;
mod run;
#[cfg(test)]
mod schema;
mod seed;
mod stages;
pub mod statistics;
mod summary;
#[cfg(test)]
mod tests;
pub mod triplets;

pub use config::{AuditSettings, NegativesQuery};
pub use dimension::Dimension;
pub use error::{AuditError, Result};
pub use job::{AuditJob, Outcome};
pub use judges::prompts::AuditPrompts;
pub use run::{run, run_within};
pub use summary::Summary;
