//! Retriever training data from a benchmark (`mtr export --to triplets`): for every turn with
//! a relevant gold, its query (in a chosen formulation, history included as `full` gives it),
//! its gold passages as positives and hard negatives mined from the benchmark's own BM25 and
//! dense indexes, as FlagEmbedding or sentence-transformers read them.
//!
//! It lives in the audit crate because the audit is what makes mined negatives trustworthy:
//! BM25 mining is full of false negatives, exactly the missing golds the audit finds. The
//! audit is read as plain data from its folder ([`audited`]); the near-duplicate test is the
//! audit's own word-shingle overlap; the retrievers are the ones the audit mines its pools
//! with. A negative is never a gold of its turn, never a passage the audit rules out for that
//! turn, never a near-duplicate of a positive. Splits are by dialogue and seeded ([`split`]).

mod audited;
mod export;
mod mine;
mod split;
mod write;

pub use audited::AuditExclusions;
pub use export::{NEAR_DUPLICATE, SplitFile, TripletOptions, TripletReport, export};
pub use mine::Removed;
pub use split::SplitSpec;
pub use write::{TripletForm, split_path};

#[cfg(test)]
mod tests;
