//! mtr-retrieve: retrieval over corpora too large for memory, for auditing (hard negatives),
//! synthesis (corpus-wide uniqueness checks, neighbour graphs) and benchmarking.
//!
//! - [`index`]: the on-disk index folder (`mtr index`), fingerprinted by corpus and analyzer.
//! - [`bm25`]: BM25 search (tantivy) with English or Chinese analysis ([`analyzer`]).
//! - [`dense`]: embeddings, memory-mapped vectors, exact SIMD and HNSW search, kNN graphs.
//! - [`query`]: conversational query formulation (`last`, `all`, `full:N`, `window:N`, ...).
//! - [`fusion`]: reciprocal rank and weighted score fusion.
//! - [`run`]: retrieval for every turn of a benchmark, written as TREC and JSONL runs.
//! - [`realism`]: how realistic a benchmark's dialogues are (lengths, history gap, referring
//!   back, topic switches), for `mtr stats --realism` and the synthesis report.
//!
//! The crate's API summary for other crates is in `API.md`.

#![warn(unreachable_pub)]
#![warn(missing_docs)]

mod analyzer;
mod bm25;
mod corpus;
pub mod dense;
mod error;
pub mod fusion;
mod ids;
mod index;
pub mod llm;
mod open;
pub mod query;
pub mod realism;
mod retriever;
pub mod run;
mod settings;

pub use analyzer::{Analyzer, Language};
pub use bm25::Bm25Index;
pub use corpus::CorpusSource;
pub use error::{Error, Result};
pub use fusion::{Fusion, FusionRetriever, Normalization, RetrieverSpec, rrf};
pub use index::{IndexBuilder, IndexDir, IndexMeta, IndexOptions};
pub use open::{ensure_dense, ensure_index, open_retriever};
pub use query::{QueryFormulation, Rewriter};
pub use retriever::{BoxFuture, Hit, Query, Retriever};
pub use run::{RetrievedRun, RunMeta, formulate_benchmark, retrieve_benchmark, write_run_files};
pub use settings::{IndexSettings, RetrieveSettings, StatsSettings};

#[cfg(test)]
mod real_data_tests;
