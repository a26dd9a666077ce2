//! mtr-audit (MTR-Eval): an ensemble of LLM judges scores a benchmark on query-evidence
//! alignment, evidence completeness (a seeded, position-balanced discriminability test),
//! answer faithfulness and answer quality, with confidence intervals and bias checks.
//!
//! [`audit::run`] does the whole job as the named [`stages`] (plan -> reuse -> judge -> human
//! -> score -> verify -> calibrate -> summarise -> write); the folders hold their steps by
//! concern: [`items`] (what to judge, the passages and pools, item scores, missing gold),
//! [`judges`] (prompts, calls, answers), [`statistics`] (intervals, biases, the verdict on the
//! judges), [`human`] (calibration against people), [`budget`] (`--time-budget`,
//! [`run_within`]); [`summary`], [`report`] and [`output`] are what the audit writes.

pub(crate) mod audit;
pub mod budget;
pub(crate) mod config;
pub(crate) mod dimension;
pub(crate) mod error;
pub mod human;
pub mod items;
pub(crate) mod job;
pub mod judges;
pub mod labels;
pub mod output;
pub(crate) mod paper_scale;
pub mod report;
pub mod review;
pub mod reviewed;
#[cfg(test)]
mod schema;
pub(crate) mod seed;
pub(crate) mod stages;
pub mod statistics;
pub(crate) mod summary;
#[cfg(test)]
mod tests;
pub mod triplets;

pub use audit::{run, run_within};
pub use config::{AuditSettings, NegativesQuery};
pub use dimension::Dimension;
pub use error::{AuditError, Result};
pub use job::{AuditJob, Outcome};
pub use judges::prompts::AuditPrompts;
pub use summary::Summary;
