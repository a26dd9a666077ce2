//! mtr-pipeline (MTR-Pipeline): curate a corpus, chunk it, walk topic paths through it and
//! let user, answerer, humanizer and verifier agents write multi-turn dialogues whose gold
//! evidence is verified unique against the whole corpus.
//!
//! Stages: [`input`] (load documents) -> [`curate`] (boilerplate, language, length,
//! [`minhash`] near-duplicates) -> [`chunk`] (token-aware recursive chunking) -> [`vectors`]
//! -> [`paths`] (greedy topic paths over a neighbour graph) and [`cluster`] (coarse k-means
//! topics) -> [`generate`] (breadth-first multi-agent generation, [`agents`] with their
//! [`text_rules`], [`search`]) -> output and [`report`]. [`prepare`] runs the stages before
//! generation and [`pipeline`] the whole [`job`], with resumable artefacts ([`workdir`]);
//! [`dryrun`] plans the LLM calls without making them.

pub mod agents;
pub mod chunk;
pub mod cluster;
pub mod config;
pub mod curate;
pub mod dryrun;
pub mod error;
#[cfg(feature = "fake")]
pub mod fake_agents;
pub mod generate;
pub mod input;
pub mod job;
pub mod lang;
pub mod minhash;
pub mod paths;
pub mod pipeline;
pub mod prepare;
pub mod prompts;
pub mod repetition;
pub mod report;
pub mod search;
pub mod style;
pub mod text_rules;
pub mod vectors;
pub mod workdir;

pub use config::SynthConfig;
pub use dryrun::{DryRunPlan, dry_run};
pub use error::{Error, Result};
pub use job::SynthJob;
pub use pipeline::{SynthOutcome, synthesize};
pub use prompts::SynthPrompts;
