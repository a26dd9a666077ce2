//! Dense retrieval as a [`Retriever`]: embeds queries (with the model's query prefix, through
//! a cache) and searches the index folder's vectors.

use std::sync::Arc;

use super::embedder::{EmbedPrefixes, Embedder};
use super::vectors::{DenseIndex, LazyCache, embed_texts};
use crate::error::Result;
use crate::retriever::{BoxFuture, Hit, Query, Retriever};

/// A dense index searched with query embeddings from an [`Embedder`].
pub struct DenseRetriever {
    index: Arc<DenseIndex>,
    embedder: Arc<dyn Embedder>,
    prefixes: EmbedPrefixes,
    cache: LazyCache,
    batch_size: usize,
}

impl DenseRetriever {
    /// Query embeddings are cached next to the index's vectors (`dense/<model>/cache`).
    pub fn new(index: Arc<DenseIndex>, embedder: Arc<dyn Embedder>) -> Self {
        let prefixes = index.meta().prefixes.clone();
        let cache = LazyCache::new(Some(index.dir().join("cache")));
        Self {
            index,
            embedder,
            prefixes,
            cache,
            batch_size: 32,
        }
    }

    /// The index it searches.
    pub fn index(&self) -> &DenseIndex {
        &self.index
    }
}

impl Retriever for DenseRetriever {
    fn name(&self) -> String {
        format!("dense:{}", self.index.meta().model)
    }

    fn search<'a>(
        &'a self,
        queries: &'a [Query],
        k: usize,
    ) -> BoxFuture<'a, Result<Vec<Vec<Hit>>>> {
        Box::pin(async move {
            let texts: Vec<String> = queries
                .iter()
                .map(|q| format!("{}{}", self.prefixes.query, q.text))
                .collect();
            let vecs = embed_texts(
                self.embedder.as_ref(),
                &self.cache,
                &texts,
                self.batch_size,
                1,
            )
            .await?;
            let exclude: Vec<Vec<String>> = queries.iter().map(|q| q.exclude.clone()).collect();
            self.index.search_batch(&vecs, k, &exclude)
        })
    }
}
