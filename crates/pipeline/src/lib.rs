//! mtr-pipeline (MTR-Pipeline): curate a corpus, chunk it, walk topic paths through it and
//! let user, answerer, humanizer and verifier agents write multi-turn dialogues whose gold
//! evidence is verified unique against the whole corpus.
//!
//! Stages (private modules): [`input`] (load documents) -> `curate` (boilerplate, language,
//! length, `minhash` near-duplicates) -> `chunk` (token-aware recursive chunking) -> `vectors`
//! -> `paths` (greedy topic paths over a neighbour graph) and `cluster` (coarse k-means
//! topics) -> `generate` (breadth-first multi-agent generation, `agents` with their
//! `text_rules`, `search`) -> output and `report`. `prepare` runs the stages before
//! generation and `pipeline` the whole job ([`SynthJob`]), with resumable artefacts
//! (`workdir`); `dryrun` plans the LLM calls without making them.
//!
//! The surface below is what the binary, the end-to-end tests and the benchmarks use: the
//! job and its settings, [`synthesize`] and [`dry_run`], and the stages the benchmarks time
//! on their own.

#![warn(unreachable_pub)]
#![warn(missing_docs)]

mod agents;
mod chunk;
mod clock;
mod cluster;
mod config;
mod curate;
mod dryrun;
mod error;
#[cfg(feature = "fake")]
pub mod fake_agents;
mod generate;
// the corpus readers' folder keeps its own surface (its readers, fixtures and fields)
pub mod input;
mod job;
mod lang;
mod minhash;
mod mix;
mod paths;
mod pipeline;
mod prepare;
mod prompts;
mod repetition;
mod report;
mod search;
mod style;
mod text_rules;
mod turn_types;
mod vectors;
mod voices;
mod workdir;

pub use chunk::{ChunkOptions, bpe, chunk_corpus, parse_range};
pub use clock::{JobClock, ManualTime};
pub use config::{GenerationOptions, RelevanceJudge, SynthConfig, UniquenessQuery, VectorSource};
pub use curate::{CurationOptions, curate};
pub use dryrun::{BudgetPlan, DryRunPlan, dry_run};
pub use error::{Error, Result};
pub use job::SynthJob;
pub use lang::Language;
pub use minhash::{MinHashOptions, MinHasher, dedup};
pub use mix::{MixCounts, MixOptions};
pub use paths::{NeighbourGraph, PathOptions, greedy_paths};
pub use pipeline::{SynthOutcome, synthesize};
pub use prepare::{Prepared, prepare};
pub use prompts::SynthPrompts;
pub use repetition::RepetitionOptions;
pub use style::{LengthDistribution, ProfileName, StyleOptions, ks_critical_5pct, ks_statistic};
pub use text_rules::in_language;
pub use turn_types::Answerability;
pub use voices::{Persona, PersonaOptions, PersonaSource, SeedOptions, VoicesReport};
