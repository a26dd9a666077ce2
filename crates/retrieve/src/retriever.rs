//! The one interface every retriever implements (BM25, dense, fusion), so that audit, synthesis
//! and bench can run any of them, or a fusion of several, without knowing which.
//! The trait is async (dense retrieval awaits an embedding server) and object safe.

use std::future::Future;
use std::pin::Pin;

use serde::{Deserialize, Serialize};

use crate::error::Result;

/// A boxed, sendable future (what the object-safe async methods return).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One retrieved passage. `ord` is the passage's position in the indexed corpus.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hit {
    /// The passage id.
    pub id: String,
    /// The retriever's score (higher is better).
    pub score: f64,
    /// The passage's position in the indexed corpus.
    #[serde(default)]
    pub ord: u32,
}

/// A query: the text to search for and passage ids that must not be returned (for example the
/// gold passages, when mining hard negatives). Excluded ids do not reduce the number of hits.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    /// The text to search for.
    pub text: String,
    /// Passage ids that must not be returned.
    pub exclude: Vec<String>,
}

impl Query {
    /// A query for `text` excluding nothing.
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            exclude: Vec::new(),
        }
    }
    /// The query, also excluding `ids`.
    pub fn excluding<I, S>(mut self, ids: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.exclude.extend(ids.into_iter().map(Into::into));
        self
    }
}

/// Anything that ranks passages for queries.
pub trait Retriever: Send + Sync {
    /// A stable, short name used in run names and metadata (`bm25`, `dense:<model>`, `rrf(...)`).
    fn name(&self) -> String;
    /// The top `k` hits of every query, best first (ties broken by corpus order).
    fn search<'a>(&'a self, queries: &'a [Query], k: usize)
    -> BoxFuture<'a, Result<Vec<Vec<Hit>>>>;
}

/// Sorts hits best first: score descending, then corpus order, then id (total and stable).
pub(crate) fn sort_hits(hits: &mut [Hit]) {
    hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.ord.cmp(&b.ord))
            .then_with(|| a.id.cmp(&b.id))
    });
}
