//! Corpus-wide retrieval for the uniqueness check: BM25 over every chunk of the corpus (the
//! retrieval crate's index, built once into the work dir) and, when chunk embeddings exist,
//! exact dense search over all of them; the two rankings are fused with reciprocal rank
//! fusion. Queries are history-aware: the conversation so far plus the new question, through
//! the retrieval crate's query formulation (`full:512` by default), so a question like "and
//! for part-timers?" is searched with its context.

use std::sync::Arc;

use mtr_core::{Dialogue, Turn};
use mtr_llm::Llm;
use mtr_retrieve::dense::{EmbedPrefixes, VectorMatrix, exact_top_k};
use mtr_retrieve::{Bm25Index, Hit, QueryFormulation, rrf};

use crate::config::UniquenessQuery;
use crate::error::{Error, Result};

/// Dense side of the search: chunk vectors and the embedder for queries.
pub(crate) struct DenseSide {
    pub matrix: Arc<VectorMatrix>,
    pub llm: Llm,
    pub prefixes: EmbedPrefixes,
}

/// Searches the whole chunked corpus.
pub(crate) struct CorpusSearch {
    bm25: Bm25Index,
    dense: Option<DenseSide>,
    ids: Arc<Vec<String>>,
    formulation: QueryFormulation,
}

impl CorpusSearch {
    pub(crate) fn new(
        bm25: Bm25Index,
        dense: Option<DenseSide>,
        ids: Arc<Vec<String>>,
        query: UniquenessQuery,
    ) -> Self {
        Self {
            bm25,
            dense,
            ids,
            formulation: query.formulation(),
        }
    }

    /// The BM25 index over every chunk (the realism section's history gap uses it too).
    pub(crate) fn bm25(&self) -> &Bm25Index {
        &self.bm25
    }

    pub(crate) fn uses_dense(&self) -> bool {
        self.dense.is_some()
    }

    /// The history-aware query text for `question` after the turns of `history`.
    pub(crate) fn query_text(&self, history: &[Turn], question: &str) -> Result<String> {
        let mut turns = history.to_vec();
        turns.push(Turn {
            id: "q".into(),
            user: question.into(),
            rewrite: None,
            answer: None,
            gold: Vec::new(),
            tags: Default::default(),
        });
        let d = Dialogue {
            id: "d".into(),
            turns,
            meta: Default::default(),
        };
        let (q, _) = self.formulation.formulate(&d, history.len())?;
        Ok(q)
    }

    /// The best `k` chunks for the query, fused over BM25 and dense, without `exclude`.
    pub(crate) async fn search(
        &self,
        query: &str,
        k: usize,
        exclude: &[String],
    ) -> Result<Vec<Hit>> {
        let bm25 = self.bm25.search_excluding(query, k, exclude)?;
        let Some(dense) = &self.dense else {
            return Ok(bm25);
        };
        let q = vec![format!("{}{}", dense.prefixes.query, query)];
        let mut v = dense
            .llm
            .embed(&q)
            .await?
            .into_iter()
            .next()
            .unwrap_or_default();
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            v.iter_mut().for_each(|x| *x /= norm);
        }
        if v.len() != dense.matrix.dim() {
            return Err(Error::Embedding(format!(
                "query embedding has {} dimensions, chunks {}",
                v.len(),
                dense.matrix.dim()
            )));
        }
        let dense_hits: Vec<Hit> = exact_top_k(&dense.matrix, &v, k + exclude.len())
            .into_iter()
            .filter_map(|(row, score)| {
                let id = self.ids.get(row as usize)?;
                (!exclude.contains(id)).then(|| Hit {
                    id: id.clone(),
                    score: f64::from(score),
                    ord: row,
                })
            })
            .take(k)
            .collect();
        Ok(rrf(&[bm25, dense_hits], 60.0, k))
    }
}
