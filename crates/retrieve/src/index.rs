//! The index folder `mtr index` writes: a tantivy BM25 index, the passage id table shared by
//! all retrievers of the folder, optional dense vectors, and `mtr-index.json`, the metadata
//! that fingerprints the folder (corpus content hash, analyzer, BM25 parameters). An index is
//! built once, in a temporary folder renamed into place when complete, and reopened cheaply.
//! Using it against another corpus or with another analyzer is refused with a clear error.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::UNIX_EPOCH;

use mtr_core::progress::Progress;
use mtr_core::{InputError, Passage};
use serde::{Deserialize, Serialize};
use tantivy::{Index, TantivyDocument};

use crate::analyzer::{Analyzer, Language};
use crate::bm25::{self, Bm25Index};
use crate::corpus::{CorpusSource, PassageChecker};
use crate::error::{Error, Result};
use crate::ids::{IdTable, IdTableWriter};

pub(crate) const META: &str = "mtr-index.json";
pub(crate) const BM25_DIR: &str = "bm25";
pub(crate) const DENSE_DIR: &str = "dense";
/// Version of the folder layout; an index of another version must be rebuilt.
pub(crate) const FORMAT_VERSION: u32 = 1;

/// How to build an index.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IndexOptions {
    /// `en`, `zh`, or `auto` (the benchmark's language, else detected from the corpus).
    pub language: Language,
    /// Keep passage titles and texts in the index (for `passage(id)`), at the cost of a
    /// compressed copy of the corpus on disk.
    pub store_text: bool,
    /// Indexing threads (0: the number of CPUs, at most 8).
    pub threads: usize,
    /// Indexing memory budget in bytes, shared by the threads.
    pub heap_bytes: usize,
    /// Merge the index into one segment at the end (faster queries).
    pub merge: bool,
}

impl Default for IndexOptions {
    fn default() -> Self {
        Self {
            language: Language::Auto,
            store_text: true,
            threads: 0,
            heap_bytes: 512 << 20,
            merge: true,
        }
    }
}

/// Where the indexed corpus came from, for checking later that it has not changed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SourceInfo {
    /// A path or a caller-given label.
    pub label: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_size: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_mtime_ns: Option<u128>,
    /// BLAKE3 of the corpus file's bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_hash: Option<String>,
}

/// BM25 parameters as recorded in the metadata.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Bm25Params {
    pub k1: f32,
    pub b: f32,
}

/// `mtr-index.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexMeta {
    /// The index folder's layout version.
    pub format_version: u32,
    /// The mtr version that built it.
    pub tool_version: String,
    /// BLAKE3 over every passage's `id \0 title \0 text \n`, in corpus order.
    pub corpus_hash: String,
    /// How many passages it holds.
    pub num_passages: u64,
    /// Where the corpus came from.
    pub source: SourceInfo,
    /// The analyzer the text was indexed with.
    pub analyzer: Analyzer,
    /// The analyzer's pipeline ([`Analyzer::description`]).
    pub analyzer_pipeline: String,
    /// The BM25 parameters.
    pub bm25: Bm25Params,
    /// Whether passage titles and texts are kept in the index.
    pub store_text: bool,
    /// Hash of everything above that changes results (corpus, analyzer, BM25, layout).
    pub fingerprint: String,
}

impl IndexMeta {
    fn compute_fingerprint(&self) -> String {
        mtr_core::fingerprint::hash_json(&(
            self.format_version,
            &self.corpus_hash,
            self.analyzer,
            &self.analyzer_pipeline,
            self.bm25.k1.to_bits(),
            self.bm25.b.to_bits(),
        ))
    }
}

/// Builds an index folder.
pub struct IndexBuilder {
    out: PathBuf,
    opts: IndexOptions,
}

impl IndexBuilder {
    /// A builder writing the index folder `out` with these options.
    pub fn new(out: impl AsRef<Path>, opts: IndexOptions) -> Self {
        Self {
            out: out.as_ref().to_path_buf(),
            opts,
        }
    }

    /// Indexes a corpus file or benchmark (streamed; checked for empty/duplicate ids and empty
    /// texts with file and line in the error).
    pub fn build(&self, src: &CorpusSource, progress: &dyn Progress) -> Result<IndexDir> {
        let analyzer = src.resolve_analyzer(self.opts.language)?;
        let path = src.corpus_path();
        let md = std::fs::metadata(&path).map_err(|e| Error::io(&path, e))?;
        let info = SourceInfo {
            label: path.display().to_string(),
            path: Some(std::fs::canonicalize(&path).unwrap_or(path.clone())),
            file_size: Some(md.len()),
            file_mtime_ns: mtime_ns(&md),
            file_hash: Some(mtr_core::fingerprint::hash_file(&path)?),
        };
        self.build_with(analyzer, info, &path, progress, |sink| src.for_each(sink))
    }

    /// Indexes passages from any iterator (for example generated chunks). `label` names the
    /// input in errors and in the metadata; the passage at position i is reported as line i + 1.
    pub fn build_from_passages<I>(
        &self,
        passages: I,
        label: &str,
        progress: &dyn Progress,
    ) -> Result<IndexDir>
    where
        I: IntoIterator<Item = mtr_core::Result<Passage>>,
    {
        let mut iter = passages.into_iter();
        let mut head = Vec::new();
        let analyzer = match self.opts.language {
            Language::En => Analyzer::English,
            Language::Zh => Analyzer::Chinese,
            Language::Auto => {
                for p in iter.by_ref().take(200) {
                    head.push(p?);
                }
                Analyzer::detect(head.iter().map(|p| p.text.as_str()))
            }
        };
        let info = SourceInfo {
            label: label.to_string(),
            ..Default::default()
        };
        self.build_with(analyzer, info, Path::new(label), progress, |sink| {
            let mut line = 0u64;
            for p in head.into_iter().map(Ok).chain(iter) {
                line += 1;
                sink(line, p?)?;
            }
            Ok(())
        })
    }

    /// Builds the folder from `feed`'s passages: a BM25 index and the id table in a
    /// temporary folder beside the target, the metadata, then the move into place.
    fn build_with<F>(
        &self,
        analyzer: Analyzer,
        source: SourceInfo,
        origin: &Path,
        progress: &dyn Progress,
        feed: F,
    ) -> Result<IndexDir>
    where
        F: FnOnce(&mut dyn FnMut(u64, Passage) -> Result<()>) -> Result<()>,
    {
        let tmp = self.staging_dir()?;
        let bm25_dir = tmp.path().join(BM25_DIR);
        std::fs::create_dir_all(&bm25_dir).map_err(|e| Error::io(&bm25_dir, e))?;
        let mut bm25 = Bm25Writer::create(&bm25_dir, analyzer, &self.opts)?;
        let mut checker = PassageChecker::new(origin);
        let mut ids = IdTableWriter::create(tmp.path())?;
        progress.stage("indexing passages (bm25)", 0);
        let mut pending = 0u64;
        feed(&mut |line, p: Passage| {
            checker.check(line, &p)?;
            let ord = ids.push(&p.id)?;
            bm25.add(&p, ord)?;
            pending += 1;
            if pending == 1000 {
                progress.advance(pending);
                pending = 0;
            }
            Ok(())
        })?;
        progress.advance(pending);
        progress.finish_stage();
        let (num_passages, corpus_hash) = checker.finish()?;
        ids.commit()?;
        bm25.commit(progress)?;

        let mut meta = IndexMeta {
            format_version: FORMAT_VERSION,
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            corpus_hash,
            num_passages,
            source,
            analyzer,
            analyzer_pipeline: analyzer.description().to_string(),
            bm25: Bm25Params {
                k1: bm25::K1,
                b: bm25::B,
            },
            store_text: self.opts.store_text,
            fingerprint: String::new(),
        };
        meta.fingerprint = meta.compute_fingerprint();
        let json = serde_json::to_vec_pretty(&meta).map_err(|e| Error::Internal(e.to_string()))?;
        mtr_core::atomic::write_atomic(tmp.path().join(META), &json)?;
        self.move_into_place(tmp)?;
        tracing::info!(passages = num_passages, analyzer = ?analyzer, out = %self.out.display(), "index built");
        IndexDir::open(&self.out)
    }

    /// A temporary folder beside the target (so the final rename stays on one file system),
    /// once the target is known to be replaceable.
    fn staging_dir(&self) -> Result<tempfile::TempDir> {
        let parent = match self.out.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        std::fs::create_dir_all(&parent).map_err(|e| Error::io(&parent, e))?;
        check_replaceable(&self.out)?;
        tempfile::Builder::new()
            .prefix(".mtr-index-")
            .tempdir_in(&parent)
            .map_err(|e| Error::io(&parent, e))
    }

    /// Replaces the target with the complete folder `tmp`, keeping the embeddings of the
    /// index it replaces (they are cached by text and model).
    fn move_into_place(&self, tmp: tempfile::TempDir) -> Result<()> {
        let old_dense = self.out.join(DENSE_DIR);
        if old_dense.is_dir() {
            std::fs::rename(&old_dense, tmp.path().join(DENSE_DIR))
                .map_err(|e| Error::io(&old_dense, e))?;
        }
        if self.out.exists() {
            std::fs::remove_dir_all(&self.out).map_err(|e| Error::io(&self.out, e))?;
        }
        let kept = tmp.keep();
        std::fs::rename(&kept, &self.out).map_err(|e| Error::io(&self.out, e))
    }
}

/// The tantivy BM25 index being written, with the fields a passage fills.
struct Bm25Writer {
    dir: PathBuf,
    index: Index,
    writer: tantivy::IndexWriter<TantivyDocument>,
    f_id: tantivy::schema::Field,
    f_ord: tantivy::schema::Field,
    f_body: tantivy::schema::Field,
    /// Title and text, where the index stores them.
    stored: Option<(tantivy::schema::Field, tantivy::schema::Field)>,
    /// Merge the segments into one on commit ([`IndexOptions::merge`]).
    merge: bool,
}

impl Bm25Writer {
    /// An empty index in `dir` with `analyzer`'s schema.
    fn create(dir: &Path, analyzer: Analyzer, opts: &IndexOptions) -> Result<Self> {
        let schema = bm25::schema(analyzer, opts.store_text);
        // Documents sorted by corpus ordinal: indexing threads split the corpus into segments
        // as timing decides, and without a sort the merged segment's document order (and with
        // it the order in which block-max WAND adds up term scores, so the last bit of a
        // score and the order of near-ties) would differ from one build to the next.
        let settings = tantivy::IndexSettings {
            sort_by_field: Some(tantivy::IndexSortByField {
                field: bm25::F_ORD.to_string(),
                order: tantivy::Order::Asc,
            }),
            ..Default::default()
        };
        let index = Index::builder()
            .schema(schema.clone())
            .settings(settings)
            .create_in_dir(dir)
            .map_err(|e| Error::index(dir, e))?;
        analyzer.register(index.tokenizers());
        let threads = match opts.threads {
            0 => std::thread::available_parallelism()
                .map_or(1, |n| n.get())
                .min(8),
            n => n,
        };
        let heap = opts.heap_bytes.max(threads * (20 << 20));
        let writer = index
            .writer_with_num_threads::<TantivyDocument>(threads, heap)
            .map_err(|e| Error::index(dir, e))?;
        let field = |n: &str| schema.get_field(n).map_err(|e| Error::index(dir, e));
        let stored = if opts.store_text {
            Some((field(bm25::F_TITLE)?, field(bm25::F_TEXT)?))
        } else {
            None
        };
        Ok(Self {
            dir: dir.to_path_buf(),
            f_id: field(bm25::F_ID)?,
            f_ord: field(bm25::F_ORD)?,
            f_body: field(bm25::F_BODY)?,
            stored,
            merge: opts.merge,
            index,
            writer,
        })
    }

    /// Adds passage `p` with its corpus ordinal.
    fn add(&mut self, p: &Passage, ord: u32) -> Result<()> {
        let mut doc = TantivyDocument::default();
        doc.add_text(self.f_id, &p.id);
        doc.add_u64(self.f_ord, u64::from(ord));
        doc.add_text(self.f_body, bm25::body_text(p));
        if let Some((ft, fx)) = self.stored {
            doc.add_text(ft, &p.title);
            doc.add_text(fx, &p.text);
        }
        self.writer
            .add_document(doc)
            .map_err(|e| Error::index(&self.dir, e))?;
        Ok(())
    }

    /// Commits the documents and, where asked, merges the segments into one.
    fn commit(mut self, progress: &dyn Progress) -> Result<()> {
        let dir = &self.dir;
        self.writer.commit().map_err(|e| Error::index(dir, e))?;
        if self.merge {
            let segments = self
                .index
                .searchable_segment_ids()
                .map_err(|e| Error::index(dir, e))?;
            if segments.len() > 1 {
                progress.stage("merging index segments", 0);
                self.writer
                    .merge(&segments)
                    .wait()
                    .map_err(|e| Error::index(dir, e))?;
                progress.finish_stage();
            }
        }
        self.writer
            .wait_merging_threads()
            .map_err(|e| Error::index(dir, e))
    }
}

/// Refuses to replace anything but an mtr index or an empty folder.
fn check_replaceable(out: &Path) -> Result<()> {
    if !out.exists() {
        return Ok(());
    }
    if out.is_dir() {
        let empty = std::fs::read_dir(out)
            .map_err(|e| Error::io(out, e))?
            .next()
            .is_none();
        if empty || out.join(META).is_file() {
            return Ok(());
        }
    }
    Err(InputError::new(
        out,
        "exists and is not an mtr index; refusing to overwrite it",
    )
    .hint("choose another output folder or remove this one")
    .into())
}

fn mtime_ns(md: &std::fs::Metadata) -> Option<u128> {
    md.modified()
        .ok()?
        .duration_since(UNIX_EPOCH)
        .ok()
        .map(|d| d.as_nanos())
}

/// An opened index folder.
#[derive(Debug, Clone)]
pub struct IndexDir {
    root: PathBuf,
    meta: IndexMeta,
    ids: Arc<IdTable>,
    bm25: Arc<OnceLock<Bm25Index>>,
}

impl IndexDir {
    /// Opens an index folder (reads the metadata and maps the id table; BM25 opens lazily).
    pub fn open(root: impl AsRef<Path>) -> Result<Self> {
        let root = root.as_ref().to_path_buf();
        let meta_path = root.join(META);
        if !meta_path.is_file() {
            return Err(
                InputError::new(&root, "not an mtr index (no mtr-index.json)")
                    .hint("build one with `mtr index BENCH_OR_CORPUS -o INDEX`")
                    .into(),
            );
        }
        let text = mtr_core::jsonl::read_text(&meta_path)?;
        let version: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| InputError::new(&meta_path, format!("unreadable index metadata: {e}")))?;
        let found = version
            .get("format_version")
            .and_then(serde_json::Value::as_u64);
        if found != Some(u64::from(FORMAT_VERSION)) {
            return Err(InputError::new(
                &meta_path,
                format!("index format version {found:?}, this mtr reads version {FORMAT_VERSION}"),
            )
            .hint("rebuild the index with `mtr index`")
            .into());
        }
        let meta: IndexMeta = serde_json::from_value(version)
            .map_err(|e| InputError::new(&meta_path, format!("unreadable index metadata: {e}")))?;
        if meta.fingerprint != meta.compute_fingerprint() {
            return Err(InputError::new(
                &meta_path,
                "the metadata was edited (its fingerprint does not match)",
            )
            .hint("rebuild the index with `mtr index`")
            .into());
        }
        let ids = IdTable::open(&root)?;
        if ids.len() as u64 != meta.num_passages {
            return Err(Error::index(
                &root,
                format!(
                    "ids.txt has {} ids, metadata says {}",
                    ids.len(),
                    meta.num_passages
                ),
            ));
        }
        Ok(Self {
            root,
            meta,
            ids: Arc::new(ids),
            bm25: Arc::new(OnceLock::new()),
        })
    }

    /// The index folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// What `mtr-index.json` holds.
    pub fn meta(&self) -> &IndexMeta {
        &self.meta
    }

    /// The fingerprint recorded in runs made with this index.
    pub fn fingerprint(&self) -> &str {
        &self.meta.fingerprint
    }

    /// The passage ids, by corpus ordinal.
    pub fn ids(&self) -> &Arc<IdTable> {
        &self.ids
    }

    /// The BM25 index (opened once, then shared).
    pub fn bm25(&self) -> Result<Bm25Index> {
        if let Some(b) = self.bm25.get() {
            return Ok(b.clone());
        }
        let b = Bm25Index::open(
            &self.root.join(BM25_DIR),
            self.meta.analyzer,
            self.ids.clone(),
        )?;
        Ok(self.bm25.get_or_init(|| b).clone())
    }

    /// Refuses a query-side language other than the one the index was built with.
    pub fn check_analyzer(&self, language: Language) -> Result<()> {
        if language == Language::Auto || language == self.meta.analyzer.language() {
            return Ok(());
        }
        Err(InputError::new(
            self.root.join(META),
            format!(
                "the index was built with the `{}` analyzer but `{language}` was requested for queries",
                self.meta.analyzer.language()
            ),
        )
        .field("analyzer")
        .hint(format!("rebuild with `mtr index --language {language}`, or query with `--language {}`", self.meta.analyzer.language()))
        .into())
    }

    /// Refuses a corpus other than the indexed one. Fast when the file is unchanged (same size
    /// and modification time); otherwise compares the file hash, then the passage content hash.
    pub fn check_corpus(&self, src: &CorpusSource) -> Result<()> {
        let path = src.corpus_path();
        let md = std::fs::metadata(&path).map_err(|e| Error::io(&path, e))?;
        let s = &self.meta.source;
        if s.file_size == Some(md.len())
            && s.file_mtime_ns.is_some()
            && s.file_mtime_ns == mtime_ns(&md)
        {
            return Ok(());
        }
        if s.file_hash.is_some()
            && s.file_size == Some(md.len())
            && s.file_hash.as_deref() == Some(mtr_core::fingerprint::hash_file(&path)?.as_str())
        {
            return Ok(());
        }
        let hash = crate::corpus::content_hash(src)?;
        if hash == self.meta.corpus_hash {
            return Ok(());
        }
        Err(InputError::new(
            &path,
            format!(
                "this corpus differs from the one indexed in {} (corpus hash {} vs {})",
                self.root.display(),
                mtr_core::fingerprint::short(&hash),
                mtr_core::fingerprint::short(&self.meta.corpus_hash)
            ),
        )
        .hint("rebuild the index with `mtr index` for this corpus")
        .into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mtr_core::progress::NoProgress;

    use crate::Query;

    fn p(id: &str, title: &str, text: &str) -> mtr_core::Result<Passage> {
        Ok(Passage {
            id: id.into(),
            title: title.into(),
            text: text.into(),
            doc_id: None,
            meta: Default::default(),
        })
    }

    fn small_index(dir: &Path) -> IndexDir {
        let corpus = vec![
            p(
                "c1",
                "Arizona Cardinals",
                "The Arizona Cardinals play at State Farm Stadium in Glendale.",
            ),
            p(
                "c2",
                "Chicago",
                "Chicago is a city in Illinois with many stadiums.",
            ),
            p("c3", "", "Cats are small domesticated carnivorous mammals."),
            p("c4", "", "The cardinal is a bird; cardinals are red."),
        ];
        IndexBuilder::new(
            dir.join("idx"),
            IndexOptions {
                threads: 1,
                ..Default::default()
            },
        )
        .build_from_passages(corpus, "test", &NoProgress)
        .unwrap()
    }

    #[test]
    fn build_open_search_exclude_fetch() {
        let tmp = tempfile::tempdir().unwrap();
        let idx = small_index(tmp.path());
        assert_eq!(idx.meta().analyzer, Analyzer::English);
        assert_eq!(idx.meta().num_passages, 4);
        let idx = IndexDir::open(tmp.path().join("idx")).unwrap();
        let bm25 = idx.bm25().unwrap();
        let hits = bm25
            .search("Where do the Arizona cardinals play?", 10)
            .unwrap();
        assert_eq!(hits[0].id, "c1");
        assert!(hits.iter().any(|h| h.id == "c4"));
        assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
        let ex = bm25
            .search_excluding("arizona cardinals", 1, &["c1"])
            .unwrap();
        assert_eq!(ex.len(), 1);
        assert_eq!(ex[0].id, "c4");
        assert!(bm25.search("the of and", 10).unwrap().is_empty());
        assert_eq!(bm25.search("cardinals", usize::MAX).unwrap().len(), 2);
        let got = bm25.passage("c2").unwrap().unwrap();
        assert!(got.text.starts_with("Chicago is"));
        assert_eq!(got.title, "Chicago");
        assert_eq!(bm25.passage_by_ord(2).unwrap().unwrap().id, "c3");
        assert!(bm25.passage("nope").unwrap().is_none());
    }

    /// A batch with repeated queries (searched once) gives each query the hits of searching it
    /// alone.
    #[test]
    fn a_batch_with_repeated_queries_gives_each_its_own_search() {
        let tmp = tempfile::tempdir().unwrap();
        let bm25 = small_index(tmp.path()).bm25().unwrap();
        let texts = [
            "arizona cardinals",
            "cardinals",
            "chicago city",
            "arizona cardinals",
        ];
        let queries: Vec<Query> = texts
            .iter()
            .flat_map(|t| [Query::new(*t), Query::new(*t).excluding(["c1"])])
            .chain([Query::new("cardinals"), Query::new("the of")])
            .collect();
        let batch = bm25.search_batch(&queries, 3).unwrap();
        assert_eq!(batch.len(), queries.len());
        for (q, hits) in queries.iter().zip(&batch) {
            assert_eq!(
                hits,
                &bm25.search_excluding(&q.text, 3, &q.exclude).unwrap()
            );
        }
        assert_eq!(batch[0], batch[6]);
        assert_ne!(batch[0], batch[1]);
        assert!(batch[9].is_empty());
    }

    #[test]
    fn ties_follow_corpus_order() {
        let tmp = tempfile::tempdir().unwrap();
        let corpus: Vec<_> = (0..50)
            .map(|i| p(&format!("d{i:02}"), "", "same words here"))
            .collect();
        let idx = IndexBuilder::new(
            tmp.path().join("i"),
            IndexOptions {
                threads: 2,
                ..Default::default()
            },
        )
        .build_from_passages(corpus, "ties", &NoProgress)
        .unwrap();
        let hits = idx.bm25().unwrap().search("words", 5).unwrap();
        let ids: Vec<_> = hits.iter().map(|h| h.id.as_str()).collect();
        assert_eq!(ids, ["d00", "d01", "d02", "d03", "d04"]);
    }

    /// Whatever the indexing threads do, the built index holds the documents in corpus order,
    /// so two builds of one corpus score every query bit for bit alike.
    #[test]
    fn documents_are_in_corpus_order_whatever_the_threads() {
        let tmp = tempfile::tempdir().unwrap();
        let words = [
            "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta",
        ];
        let corpus = || {
            (0..4000).map(move |i: usize| {
                let text: Vec<&str> = (0..12)
                    .map(|j| words[(i * 7 + j * (i % 5 + 1)) % 8])
                    .collect();
                p(&format!("d{i:05}"), "", &text.join(" "))
            })
        };
        let build = |name: &str| {
            IndexBuilder::new(
                tmp.path().join(name),
                IndexOptions {
                    threads: 4,
                    ..Default::default()
                },
            )
            .build_from_passages(corpus(), "order", &NoProgress)
            .unwrap()
        };
        let (a, b) = (build("a"), build("b"));
        for idx in [&a, &b] {
            let index = tantivy::Index::open_in_dir(idx.root.join(BM25_DIR)).unwrap();
            let searcher = index.reader().unwrap().searcher();
            assert_eq!(searcher.segment_readers().len(), 1);
            let ords = searcher.segment_readers()[0]
                .fast_fields()
                .u64(bm25::F_ORD)
                .unwrap();
            let seq: Vec<u64> = (0..4000).map(|d| ords.first(d).unwrap()).collect();
            assert!(seq.iter().enumerate().all(|(i, &o)| o == i as u64));
        }
        for q in ["alpha beta gamma", "delta epsilon zeta eta", "theta alpha"] {
            let (ha, hb) = (
                a.bm25().unwrap().search(q, 50).unwrap(),
                b.bm25().unwrap().search(q, 50).unwrap(),
            );
            let bits = |h: &[crate::Hit]| -> Vec<(String, u64)> {
                h.iter()
                    .map(|x| (x.id.clone(), x.score.to_bits()))
                    .collect()
            };
            assert_eq!(bits(&ha), bits(&hb));
        }
    }

    #[test]
    fn bad_corpora_are_user_errors() {
        let tmp = tempfile::tempdir().unwrap();
        let b = IndexBuilder::new(tmp.path().join("i"), IndexOptions::default());
        let e = b
            .build_from_passages(Vec::new(), "empty", &NoProgress)
            .unwrap_err();
        assert!(
            e.is_user_error() && e.to_string().contains("no passages"),
            "{e}"
        );
        let e = b
            .build_from_passages(vec![p("a", "", "x"), p("a", "", "y")], "dup", &NoProgress)
            .unwrap_err();
        assert!(
            e.is_user_error() && e.to_string().contains("duplicate passage id `a`"),
            "{e}"
        );
        // A whitespace-only text is real data (MTRAG has such passages): indexed, not refused.
        IndexBuilder::new(tmp.path().join("blank"), IndexOptions::default())
            .build_from_passages(
                vec![p("a", "", "x"), p("b", "t", " ")],
                "empty-text",
                &NoProgress,
            )
            .unwrap();
        assert!(
            !tmp.path().join("i").exists(),
            "a failed build leaves nothing behind"
        );
        let e = IndexDir::open(tmp.path()).unwrap_err();
        assert!(
            e.is_user_error() && e.to_string().contains("not an mtr index"),
            "{e}"
        );
    }

    #[test]
    fn mismatched_settings_and_corpus_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let idx = small_index(tmp.path());
        idx.check_analyzer(Language::En).unwrap();
        idx.check_analyzer(Language::Auto).unwrap();
        let e = idx.check_analyzer(Language::Zh).unwrap_err();
        assert!(
            e.is_user_error() && e.to_string().contains("built with the `en` analyzer"),
            "{e}"
        );

        let file = tmp.path().join("c.jsonl");
        std::fs::write(&file, "{\"id\":\"a\",\"text\":\"hello world\"}\n").unwrap();
        let src = CorpusSource::detect(&file).unwrap();
        let idx = IndexBuilder::new(tmp.path().join("j"), IndexOptions::default())
            .build(&src, &NoProgress)
            .unwrap();
        idx.check_corpus(&src).unwrap();
        std::fs::write(&file, "{\"id\":\"a\", \"text\":\"hello world\"}\n").unwrap();
        idx.check_corpus(&src).unwrap();
        std::fs::write(&file, "{\"id\":\"a\",\"text\":\"hello there\"}\n").unwrap();
        let e = idx.check_corpus(&src).unwrap_err();
        assert!(
            e.is_user_error() && e.to_string().contains("differs from the one indexed"),
            "{e}"
        );

        let meta = tmp.path().join("j").join(META);
        let edited = std::fs::read_to_string(&meta)
            .unwrap()
            .replace("\"english\"", "\"chinese\"");
        std::fs::write(&meta, edited).unwrap();
        let e = IndexDir::open(tmp.path().join("j")).unwrap_err();
        assert!(
            e.is_user_error() && e.to_string().contains("fingerprint"),
            "{e}"
        );
    }
}
