//! What the judges judge: the plan of items ([`plan`]), the passages they read
//! ([`materials`]), the discriminability pools ([`pool`]), the item scores made of the
//! judgements ([`aggregate`]) and the missing-gold check ([`missing_gold`]).

pub(crate) mod aggregate;
pub(crate) mod materials;
pub(crate) mod missing_gold;
pub(crate) mod pool;
pub(crate) mod selection;

pub use aggregate::SuggestionVerdict;
pub use materials::{bm25_index, candidates_blocking, corpus_index, depth, negative_queries};
