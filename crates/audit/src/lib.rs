//! mtr-audit (MTR-Eval): an ensemble of LLM judges scores a benchmark on query-evidence
//! alignment, evidence completeness (a seeded, position-balanced discriminability test),
//! answer faithfulness and answer quality, with confidence intervals and bias checks.
//!
//! [`audit::run`] does the whole job as the named [`stages`] (plan -> reuse -> judge -> verify
//! -> calibrate -> summarise -> write); the modules are their steps: [`plan`] (what to judge),
//! [`materials`] (passages, hard negatives), [`pool`] (balanced permutations), [`prompts`],
//! [`engine`] (calls), [`aggregate`] (item scores, missing gold), [`stats`], [`human`]
//! (calibration), [`summary`], [`report`] and [`output`] (the folder); [`budget`] plans
//! `--time-budget` ([`run_within`]).

pub mod aggregate;
pub mod answer;
pub mod audit;
pub mod budget;
pub mod calibrate;
pub mod config;
pub mod context;
pub mod dimension;
pub mod engine;
pub mod error;
pub mod failures;
pub mod family;
pub mod human;
pub mod human_labels;
pub mod interval;
pub mod labels;
pub mod letters;
pub mod materials;
pub mod output;
pub mod paper_scale;
pub mod plan;
pub mod pool;
pub mod prompts;
pub mod record;
pub mod relevance;
pub mod render;
pub mod report;
pub mod resample;
pub mod schema;
pub mod seed;
pub mod separation;
pub mod stages;
pub mod stats;
pub mod summary;
#[cfg(test)]
mod testkit;
#[cfg(test)]
mod tests_budget;
#[cfg(test)]
mod tests_context;
#[cfg(test)]
mod tests_fake;
#[cfg(test)]
mod tests_letters;
#[cfg(test)]
mod tests_relevance;
pub mod unit;
pub mod verdict;
pub mod verify;

pub use audit::{AuditJob, Outcome, run, run_within};
pub use config::AuditSettings;
pub use dimension::Dimension;
pub use error::{AuditError, Result};
pub use prompts::AuditPrompts;
pub use summary::Summary;
