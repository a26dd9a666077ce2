//! The bench job, from flags to summary, in the order `mtr bench` runs it; the binary only
//! parses flags, opens the LLM client when a stage needs one, and prints:
//!
//! 1. [`settings`]: measures and statistics checked before any work;
//! 2. [`prepare`]: the benchmark, its evaluation set and split;
//! 3. [`load_externals`]: external runs, refused before any retrieval when they do not fit;
//! 4. [`plan_retrieval`], [`open_index`], [`retrieve`]: the runs of the retriever specs x query
//!    formulations (the embedder and rewriter come from the LLM client the binary opens);
//! 5. [`score`]: [`compute`] (intervals, tests, diagnostics, failures) assembled into a result,
//!    then the label sensitivity under an audit's qrels;
//! 6. [`crate::output::write_results`]: the results folder;
//! 7. [`summary`]: the text the command prints.
//!
//! `stages.rs` holds the stages, `assemble.rs` the preparation and the result's assembly,
//! `compute.rs` the statistics over the scored systems, `config.rs` the `[bench]` section
//! ([`BenchSettings`]) the job's settings come from.

mod assemble;
mod compute;
mod config;
mod stages;

pub use assemble::Outcome;
pub use assemble::{Prepared, Provenance, SplitRequest, prepare, today};
pub use compute::AblationInput;
pub use compute::{SystemInput, compute};
pub use config::{BenchSettings, Settings};
#[cfg(feature = "retrieve")]
pub use stages::{RetrievalPlan, open_index, plan_retrieval, retrieve};
pub use stages::{default_index_path, load_externals, score, settings, summary};
