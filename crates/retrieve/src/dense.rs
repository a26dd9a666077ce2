//! Dense retrieval: embeddings from an [`Embedder`] (the LLM layer's `embedder` role), stored
//! as one memory-mapped file of f32 vectors in corpus order, searched exactly with SIMD dot
//! products and a top-k heap, or approximately with HNSW above a size threshold. Also the
//! k-nearest-neighbour graph of a set of vectors (synthesis samples related chunks with it).

mod cache;
mod dense_retriever;
mod embedder;
mod exact;
mod knn;
mod matrix;
mod vectors;

pub use dense_retriever::DenseRetriever;
pub use embedder::{EmbedPrefixes, Embedder, HashEmbedder};
pub use exact::{dot, exact_top_k, exact_top_k_batch, simd_level};
pub use knn::{HnswOptions, KnnGraph, KnnMethod, KnnOptions, knn_graph};
pub use matrix::VectorMatrix;
pub use vectors::{DenseIndex, DenseMeta, DenseOptions};
