//! Dense vectors of an index folder's passages: `INDEX/dense/<model>/vectors.f32` (one
//! L2-normalised row per passage, in the folder's corpus order) and `meta.json` (model,
//! dimension, prefixes, the corpus hash they were computed for). Embedding goes through the
//! cache in `INDEX/dense/<model>/cache/`, so an interrupted build resumes where it stopped.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use hnsw_rs::prelude::Hnsw;
use mtr_core::progress::Progress;
use mtr_core::{InputError, Passage};
use serde::{Deserialize, Serialize};

use super::cache::EmbeddingCache;
use super::embedder::{EmbedPrefixes, Embedder};
use super::exact::{dot, exact_top_k_batch};
use super::knn::{HnswOptions, UnitDot, build_hnsw, sort_neighbours};
use super::matrix::{VectorMatrix, normalize_row};
use crate::error::{Error, Result};
use crate::ids::IdTable;
use crate::index::{DENSE_DIR, IndexDir};
use crate::retriever::Hit;

const VECTORS: &str = "vectors.f32";
const META: &str = "meta.json";

/// How to embed and search.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DenseOptions {
    /// Texts per embedding request.
    pub batch_size: usize,
    /// Requests in flight at once (1 for a local single-threaded server).
    pub concurrency: usize,
    /// Prefixes; `None` picks them from the model name ([`EmbedPrefixes::for_model`]).
    pub prefixes: Option<EmbedPrefixes>,
    /// Search exactly up to this many vectors, with HNSW above.
    pub hnsw_threshold: usize,
    /// The HNSW settings used above the threshold.
    pub hnsw: HnswOptions,
}

impl Default for DenseOptions {
    fn default() -> Self {
        Self {
            batch_size: 32,
            concurrency: 1,
            prefixes: None,
            hnsw_threshold: 4_000_000,
            hnsw: HnswOptions::default(),
        }
    }
}

/// `dense/<model>/meta.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DenseMeta {
    /// The embedding model's id.
    pub model: String,
    /// The vectors' dimension.
    pub dim: usize,
    /// How many vectors (one per passage, in corpus order).
    pub count: u64,
    /// The prefixes the passages were embedded with (and queries must be).
    pub prefixes: EmbedPrefixes,
    /// The BM25 index's corpus hash: vectors of another corpus are not reused.
    pub corpus_hash: String,
    /// Whether the vectors are L2-normalised (always true for vectors mtr writes).
    pub normalized: bool,
}

/// The folder name of a model's vectors (the model id with unsafe characters replaced).
pub(crate) fn model_slug(model: &str) -> String {
    model
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Embeds texts (prefixes already applied) through an optional cache, in batches, keeping order.
pub(crate) async fn embed_texts(
    embedder: &dyn Embedder,
    cache: &LazyCache,
    texts: &[String],
    batch_size: usize,
    concurrency: usize,
) -> Result<Vec<Vec<f32>>> {
    let mut out: Vec<Option<Vec<f32>>> = Vec::with_capacity(texts.len());
    let mut missing = Vec::new();
    for (i, t) in texts.iter().enumerate() {
        let hit = match cache.get_existing(&embedder.model())? {
            Some(c) => c.get(t)?,
            None => None,
        };
        if hit.is_none() {
            missing.push(i);
        }
        out.push(hit);
    }
    let batches: Vec<Vec<usize>> = missing
        .chunks(batch_size.max(1))
        .map(<[usize]>::to_vec)
        .collect();
    for group in batches.chunks(concurrency.max(1)) {
        let inputs: Vec<Vec<String>> = group
            .iter()
            .map(|b| b.iter().map(|&i| texts[i].clone()).collect())
            .collect();
        let results =
            futures::future::try_join_all(inputs.iter().map(|inp| embedder.embed(inp))).await?;
        for ((batch, inp), vecs) in group.iter().zip(&inputs).zip(results) {
            if vecs.len() != inp.len() {
                return Err(Error::embed(
                    &embedder.model(),
                    format!("returned {} vectors for {} texts", vecs.len(), inp.len()),
                ));
            }
            if let Some(v) = vecs.first()
                && let Some(c) = cache.get_or_open(&embedder.model(), v.len())?
            {
                c.put(inp, &vecs)?;
            }
            for (&i, v) in batch.iter().zip(vecs) {
                out[i] = Some(v);
            }
        }
    }
    out.into_iter()
        .map(|v| v.ok_or_else(|| Error::Internal("an embedding went missing".into())))
        .collect()
}

/// An embedding cache opened when the vector dimension is first known.
#[derive(Debug, Default)]
pub(crate) struct LazyCache {
    dir: Option<PathBuf>,
    cache: OnceLock<EmbeddingCache>,
}

impl LazyCache {
    /// A cache in `dir` (`None`: no caching).
    pub(crate) fn new(dir: Option<PathBuf>) -> Self {
        Self {
            dir,
            cache: OnceLock::new(),
        }
    }

    fn get_existing(&self, model: &str) -> Result<Option<&EmbeddingCache>> {
        if let Some(c) = self.cache.get() {
            return Ok(Some(c));
        }
        let Some(dir) = &self.dir else {
            return Ok(None);
        };
        match EmbeddingCache::recorded_dim(dir, model) {
            Some(dim) => self.get_or_open(model, dim),
            None => Ok(None),
        }
    }

    fn get_or_open(&self, model: &str, dim: usize) -> Result<Option<&EmbeddingCache>> {
        if let Some(c) = self.cache.get() {
            return Ok(Some(c));
        }
        let Some(dir) = &self.dir else {
            return Ok(None);
        };
        let c = EmbeddingCache::open(dir, model, dim)?;
        Ok(Some(self.cache.get_or_init(|| c)))
    }
}

/// The dense vectors of an index folder, memory-mapped.
pub struct DenseIndex {
    dir: PathBuf,
    meta: DenseMeta,
    vectors: VectorMatrix,
    ids: Arc<IdTable>,
    hnsw_threshold: usize,
    hnsw_opts: HnswOptions,
    hnsw: OnceLock<Hnsw<'static, f32, UnitDot>>,
}

impl std::fmt::Debug for DenseIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DenseIndex")
            .field("dir", &self.dir)
            .field("meta", &self.meta)
            .finish()
    }
}

/// Fills `buf` with the next `chunk` passages' texts (with the passage prefix), each checked
/// against the index folder's id at its position (`done` passages came before).
fn fill_chunk<I>(
    idx: &IndexDir,
    iter: &mut I,
    done: u64,
    chunk: usize,
    prefix: &str,
    buf: &mut Vec<String>,
) -> Result<()>
where
    I: Iterator<Item = Result<Passage>>,
{
    for p in iter.by_ref() {
        let p = p?;
        let position = done + buf.len() as u64;
        let expected = u32::try_from(position).ok().and_then(|o| idx.ids().get(o));
        if expected != Some(p.id.as_str()) {
            return Err(InputError::new(
                idx.root(),
                format!("passage `{}` at position {position} is not the indexed corpus' passage there ({expected:?})", p.id),
            )
            .hint("embed the same corpus the index was built from")
            .into());
        }
        buf.push(format!("{prefix}{}", crate::bm25::body_text(&p)));
        if buf.len() == chunk {
            break;
        }
    }
    Ok(())
}

/// Appends the vectors, L2-normalised, as little-endian f32 rows; every row must have the
/// first one's dimension (`dim`, 0 before the first).
fn write_rows(
    out: &mut mtr_core::atomic::AtomicFile,
    path: &std::path::Path,
    model: &str,
    vecs: Vec<Vec<f32>>,
    dim: &mut usize,
) -> Result<()> {
    for mut v in vecs {
        if *dim == 0 {
            *dim = v.len();
        }
        if v.len() != *dim || *dim == 0 {
            return Err(Error::embed(
                model,
                format!("returned a {}-d vector after {}-d ones", v.len(), *dim),
            ));
        }
        normalize_row(&mut v);
        let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        out.write_all(&bytes).map_err(|e| Error::io(path, e))?;
    }
    Ok(())
}

impl DenseIndex {
    /// Where a model's vectors live in an index folder.
    pub(crate) fn dir_for(idx: &IndexDir, model: &str) -> PathBuf {
        idx.root().join(DENSE_DIR).join(model_slug(model))
    }

    /// Embeds every passage of the index folder's corpus (`passages` must be that corpus, in
    /// order: each id is checked against the folder's id table) and writes the vectors.
    pub async fn build<I>(
        idx: &IndexDir,
        embedder: &dyn Embedder,
        opts: &DenseOptions,
        passages: I,
        progress: &dyn Progress,
    ) -> Result<DenseIndex>
    where
        I: IntoIterator<Item = Result<Passage>>,
    {
        let model = embedder.model();
        let prefixes = opts
            .prefixes
            .clone()
            .unwrap_or_else(|| EmbedPrefixes::for_model(&model));
        let dir = Self::dir_for(idx, &model);
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        let cache = LazyCache::new(Some(dir.join("cache")));
        let mut out = mtr_core::atomic::AtomicFile::create(dir.join(VECTORS))?;
        let total = idx.meta().num_passages;
        progress.stage(&format!("embedding passages ({model})"), total);
        // One round of concurrent requests between progress updates: a local embedder does
        // ~15 passages/s, so four rounds (as before) left the bar still for half a minute.
        let chunk = opts.batch_size.max(1) * opts.concurrency.max(1);
        let (mut count, mut dim) = (0u64, 0usize);
        let mut buf: Vec<String> = Vec::with_capacity(chunk);
        let mut iter = passages.into_iter();
        loop {
            buf.clear();
            fill_chunk(idx, &mut iter, count, chunk, &prefixes.passage, &mut buf)?;
            if buf.is_empty() {
                break;
            }
            let vecs =
                embed_texts(embedder, &cache, &buf, opts.batch_size, opts.concurrency).await?;
            write_rows(&mut out, &dir.join(VECTORS), &model, vecs, &mut dim)?;
            count += buf.len() as u64;
            progress.advance(buf.len() as u64);
        }
        progress.finish_stage();
        if count != total {
            return Err(InputError::new(
                idx.root(),
                format!("{count} passages given, the index has {total}"),
            )
            .hint("embed the same corpus the index was built from")
            .into());
        }
        out.commit()?;
        let meta = DenseMeta {
            model: model.clone(),
            dim,
            count,
            prefixes,
            corpus_hash: idx.meta().corpus_hash.clone(),
            normalized: true,
        };
        let json = serde_json::to_vec_pretty(&meta).map_err(|e| Error::Internal(e.to_string()))?;
        mtr_core::atomic::write_atomic(dir.join(META), &json)?;
        Self::open_with(idx, &model, opts)
    }

    /// Opens a model's vectors in an index folder.
    pub fn open(idx: &IndexDir, model: &str) -> Result<DenseIndex> {
        Self::open_with(idx, model, &DenseOptions::default())
    }

    pub(crate) fn open_with(
        idx: &IndexDir,
        model: &str,
        opts: &DenseOptions,
    ) -> Result<DenseIndex> {
        let dir = Self::dir_for(idx, model);
        let meta_path = dir.join(META);
        if !meta_path.is_file() {
            return Err(InputError::new(
                idx.root(),
                format!("no dense vectors for model `{model}` in this index"),
            )
            .hint("build them with `mtr index SRC -o INDEX --dense`")
            .into());
        }
        let text = mtr_core::jsonl::read_text(&meta_path)?;
        let meta: DenseMeta =
            serde_json::from_str(&text).map_err(|e| Error::index(&meta_path, e))?;
        if meta.corpus_hash != idx.meta().corpus_hash {
            return Err(InputError::new(
                &meta_path,
                "these vectors were computed for another corpus than the index's",
            )
            .hint("re-run `mtr index ... --dense` (cached embeddings are reused)")
            .into());
        }
        let vectors = VectorMatrix::open(&dir.join(VECTORS), meta.dim)?;
        if vectors.len() as u64 != meta.count || meta.count != idx.meta().num_passages {
            return Err(Error::index(
                &dir,
                format!(
                    "{} vectors for {} passages",
                    vectors.len(),
                    idx.meta().num_passages
                ),
            ));
        }
        Ok(DenseIndex {
            dir,
            meta,
            vectors,
            ids: idx.ids().clone(),
            hnsw_threshold: opts.hnsw_threshold,
            hnsw_opts: opts.hnsw.clone(),
            hnsw: OnceLock::new(),
        })
    }

    /// What `meta.json` holds.
    pub fn meta(&self) -> &DenseMeta {
        &self.meta
    }

    /// The passages' vectors, one row per passage in corpus order.
    pub fn vectors(&self) -> &VectorMatrix {
        &self.vectors
    }

    /// The model's folder, `dense/<model>` of the index folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether searches use HNSW (more vectors than the threshold) rather than exact search.
    pub(crate) fn uses_hnsw(&self) -> bool {
        self.vectors.len() > self.hnsw_threshold
    }

    /// Top-k passages for one query vector (normalised here), best first.
    pub fn search(&self, query: &[f32], k: usize) -> Result<Vec<Hit>> {
        Ok(self
            .search_batch(&[query.to_vec()], k, &[])?
            .pop()
            .unwrap_or_default())
    }

    /// Top-k passages for many query vectors; `exclude[i]` (if present) lists ids that query i
    /// must not return.
    pub(crate) fn search_batch(
        &self,
        queries: &[Vec<f32>],
        k: usize,
        exclude: &[Vec<String>],
    ) -> Result<Vec<Vec<Hit>>> {
        let queries: Vec<Vec<f32>> = queries
            .iter()
            .map(|q| {
                let mut q = q.clone();
                normalize_row(&mut q);
                q
            })
            .collect();
        if let Some(q) = queries.iter().find(|q| q.len() != self.meta.dim) {
            return Err(Error::embed(
                &self.meta.model,
                format!(
                    "query vector has {} values, the index {}",
                    q.len(),
                    self.meta.dim
                ),
            ));
        }
        let extra = exclude.iter().map(Vec::len).max().unwrap_or(0);
        let k = k.min(self.vectors.len());
        let raw: Vec<Vec<(u32, f32)>> = if self.uses_hnsw() {
            let hnsw = self.hnsw()?;
            let ef = self.hnsw_opts.ef_search.max(k + extra);
            queries
                .iter()
                .map(|q| {
                    let mut nb: Vec<(u32, f32)> = hnsw
                        .search(q, k + extra, ef)
                        .into_iter()
                        .map(|n| (n.d_id as u32, dot(q, self.vectors.row(n.d_id))))
                        .collect();
                    sort_neighbours(&mut nb);
                    nb
                })
                .collect()
        } else {
            exact_top_k_batch(&self.vectors, &queries, k + extra)
        };
        raw.into_iter()
            .enumerate()
            .map(|(qi, rows)| {
                let ex = exclude.get(qi);
                let mut hits = Vec::with_capacity(k);
                for (row, score) in rows {
                    let id = self
                        .ids
                        .get(row)
                        .ok_or_else(|| Error::index(&self.dir, format!("row {row} has no id")))?;
                    if ex.is_some_and(|ex| ex.iter().any(|e| e == id)) {
                        continue;
                    }
                    hits.push(Hit {
                        id: id.to_string(),
                        score: f64::from(score),
                        ord: row,
                    });
                    if hits.len() == k {
                        break;
                    }
                }
                Ok(hits)
            })
            .collect()
    }

    fn hnsw(&self) -> Result<&Hnsw<'static, f32, UnitDot>> {
        if let Some(h) = self.hnsw.get() {
            return Ok(h);
        }
        tracing::info!(
            vectors = self.vectors.len(),
            "building HNSW graph for dense search"
        );
        let h = build_hnsw(&self.vectors, &self.hnsw_opts)?;
        Ok(self.hnsw.get_or_init(|| h))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dense::HashEmbedder;
    use crate::index::{IndexBuilder, IndexOptions};
    use mtr_core::progress::NoProgress;

    fn passages(texts: &[(&str, &str)]) -> Vec<mtr_core::Result<Passage>> {
        texts
            .iter()
            .map(|(id, t)| {
                Ok(Passage {
                    id: (*id).into(),
                    title: String::new(),
                    text: (*t).into(),
                    doc_id: None,
                    meta: Default::default(),
                })
            })
            .collect()
    }

    /// Counts progress updates.
    #[derive(Default)]
    struct Updates(std::sync::Mutex<Vec<u64>>);

    impl Progress for Updates {
        fn stage(&self, _name: &str, _total: u64) {}
        fn advance(&self, n: u64) {
            self.0.lock().unwrap().push(n);
        }
    }

    #[tokio::test]
    async fn embedding_reports_progress_after_every_round_of_requests() {
        let tmp = tempfile::tempdir().unwrap();
        let ids: Vec<String> = (0..20).map(|i| format!("p{i:02}")).collect();
        let corpus: Vec<(&str, &str)> = ids.iter().map(|i| (i.as_str(), "some text")).collect();
        let idx = IndexBuilder::new(tmp.path().join("i"), IndexOptions::default())
            .build_from_passages(passages(&corpus), "t", &NoProgress)
            .unwrap();
        let updates = Updates::default();
        let opts = DenseOptions {
            batch_size: 2,
            concurrency: 2,
            ..DenseOptions::default()
        };
        DenseIndex::build(
            &idx,
            &HashEmbedder { dim: 8 },
            &opts,
            passages(&corpus)
                .into_iter()
                .map(|p| p.map_err(Error::from)),
            &updates,
        )
        .await
        .unwrap();
        // 20 passages, 2 requests of 2 texts in flight: an update every 4 passages
        assert_eq!(updates.0.into_inner().unwrap(), vec![4; 5]);
    }

    #[tokio::test]
    async fn build_cache_exact_hnsw_and_mismatch() {
        let tmp = tempfile::tempdir().unwrap();
        let corpus = [
            ("a", "red apples and pears"),
            ("b", "fast cars on roads"),
            ("c", "green pears"),
            ("d", "slow boats"),
        ];
        let idx = IndexBuilder::new(tmp.path().join("i"), IndexOptions::default())
            .build_from_passages(passages(&corpus), "t", &NoProgress)
            .unwrap();
        let e = HashEmbedder { dim: 32 };
        let built = DenseIndex::build(
            &idx,
            &e,
            &DenseOptions::default(),
            passages(&corpus)
                .into_iter()
                .map(|p| p.map_err(Error::from)),
            &NoProgress,
        )
        .await
        .unwrap();
        assert_eq!((built.meta().count, built.meta().dim), (4, 32));
        assert_eq!(built.meta().prefixes, EmbedPrefixes::default());
        let q = e.vector("pears");
        let exact = built.search(&q, 2).unwrap();
        assert_eq!(built.search(&q, usize::MAX).unwrap().len(), 4);
        assert!(matches!(exact[0].id.as_str(), "a" | "c"), "{exact:?}");
        let ex = built
            .search_batch(std::slice::from_ref(&q), 2, &[vec![exact[0].id.clone()]])
            .unwrap();
        assert_eq!(ex[0].len(), 2);
        assert!(ex[0].iter().all(|h| h.id != exact[0].id));

        let hnsw = DenseIndex::open_with(
            &idx,
            "hash-32",
            &DenseOptions {
                hnsw_threshold: 0,
                ..Default::default()
            },
        )
        .unwrap();
        assert!(hnsw.uses_hnsw());
        assert_eq!(hnsw.search(&q, 2).unwrap()[0].id, exact[0].id);

        // Passages out of order are refused; so are vectors of another corpus.
        let mut swapped = corpus;
        swapped.swap(0, 1);
        let err = DenseIndex::build(
            &idx,
            &e,
            &DenseOptions::default(),
            passages(&swapped)
                .into_iter()
                .map(|p| p.map_err(Error::from)),
            &NoProgress,
        )
        .await
        .unwrap_err();
        assert!(
            err.is_user_error() && err.to_string().contains("not the indexed corpus"),
            "{err}"
        );
        let other = IndexBuilder::new(tmp.path().join("i"), IndexOptions::default())
            .build_from_passages(passages(&corpus[..3]), "t", &NoProgress)
            .unwrap();
        let err = DenseIndex::open(&other, "hash-32").unwrap_err();
        assert!(
            err.is_user_error() && err.to_string().contains("another corpus"),
            "{err}"
        );
        let err = DenseIndex::open(&other, "nope").unwrap_err();
        assert!(
            err.is_user_error() && err.to_string().contains("no dense vectors"),
            "{err}"
        );
    }
}
