//! Everything before generation, stage by stage, each resumable from its fingerprinted
//! artefact in the work dir: curation -> chunking -> chunk vectors -> neighbour graph, topic
//! paths and coarse topics. Its result, [`Prepared`], is read by generation, the dry run and
//! the report; it lives here, below all three, so none of them imports the orchestration file.

use mtr_core::progress::Progress;
use mtr_llm::{Llm, Role};
use mtr_retrieve::dense::{EmbedPrefixes, KnnOptions, VectorMatrix, knn_graph};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::chunk::{Chunk, chunk_corpus};
use crate::cluster::{kmeans_topics, path_topics};
use crate::config::{SynthConfig, VectorSource};
use crate::curate::{CurationReport, curate};
use crate::error::{Error, Result};
use crate::input::{self, Document, InputReport, ReadOptions, Unreadable};
use crate::job::SynthJob;
use crate::lang::Language;
use crate::paths::{NeighbourGraph, greedy_paths};
use crate::vectors::{self, chunk_text, lexical_vectors};
use crate::workdir::{WorkDir, fingerprint, input_fingerprint, to_json};

/// Where the chunk vectors came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct VectorInfo {
    /// `lexical` or `embedder:<model>`.
    pub source: String,
    pub dim: usize,
}

/// Topic paths and coarse topics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Topics {
    pub paths: Vec<Vec<u32>>,
    pub chunk_topics: Vec<usize>,
    pub path_topics: Vec<usize>,
    pub topics: usize,
    /// `exact` or `hnsw`, and the neighbours per chunk actually used.
    pub graph_method: String,
    pub graph_k: usize,
    pub graph_recall_at_10: Option<f64>,
}

/// Everything before generation.
pub struct Prepared {
    pub(crate) input_fingerprint: String,
    /// What curation kept and removed.
    pub curation: CurationReport,
    /// What reading the corpus found (files, documents, the sample drawn, records skipped).
    pub input: InputReport,
    pub(crate) language: Language,
    /// Documents kept.
    pub documents: usize,
    /// The chunks, in corpus order.
    pub chunks: Vec<Chunk>,
    pub(crate) chunks_fingerprint: String,
    pub(crate) vectors: Vec<f32>,
    pub(crate) vector_info: VectorInfo,
    /// Topic paths and coarse topics.
    pub topics: Topics,
    pub(crate) topics_fingerprint: String,
}

#[derive(Serialize, Deserialize)]
struct CuratedMeta {
    report: CurationReport,
    language: String,
    #[serde(default)]
    input: InputReport,
}

/// Chunks above which `auto` does not embed with a *local* embedder: the bundled CPU model
/// embeds about 15 passages per second, so a 10k-chunk corpus would take over ten minutes
/// before the first question; lexical vectors take a second.
pub(crate) const AUTO_LOCAL_EMBED_LIMIT: usize = 2000;

/// Decides the vector source: the embedder when asked for, or with `auto` when one is
/// configured (a local one only up to [`AUTO_LOCAL_EMBED_LIMIT`] chunks); never in dry runs.
fn use_embedder(
    cfg: &SynthConfig,
    llm: Option<&Llm>,
    dry_run: bool,
    chunks: usize,
) -> Result<bool> {
    let has = llm.is_some_and(|l| !l.role_endpoints(Role::Embedder).is_empty());
    match cfg.vectors {
        VectorSource::Lexical => Ok(false),
        VectorSource::Auto => {
            let local = llm.is_some_and(|l| {
                let names = l.role_endpoints(Role::Embedder);
                l.endpoints()
                    .iter()
                    .any(|e| e.local && names.contains(&e.name))
            });
            if has && local && chunks > AUTO_LOCAL_EMBED_LIMIT && !dry_run {
                tracing::info!(
                    "{chunks} chunks: using lexical vectors instead of the local embedder (pass --vectors embedder to embed them anyway)"
                );
                return Ok(false);
            }
            Ok(has && !dry_run)
        }
        VectorSource::Embedder if !has => Err(Error::param(
            "vectors",
            "`embedder` needs an embedder role in [llm.roles]",
        )),
        VectorSource::Embedder => Ok(!dry_run),
    }
}

/// Curation, chunking, vectors, graph, paths and topics (no chat calls; the embedder is called
/// only when `embed` is true).
pub async fn prepare(
    job: &SynthJob,
    llm: Option<&Llm>,
    dry_run: bool,
    progress: &dyn Progress,
) -> Result<Prepared> {
    let cfg = &job.config;
    cfg.validate()?;
    let wd = WorkDir::create(&job.work_dir)?;
    let input_fp = input_fingerprint(&job.corpus)?;

    // 1. curation
    progress.stage("curate", 0);
    let mut parts = vec![
        ("input", json!(input_fp)),
        ("curation", to_json(&cfg.curation_options())),
        ("max_documents", json!(cfg.max_documents)),
    ];
    // left out when unset, so work dirs from before them keep their fingerprint
    if cfg.max_documents > 0 {
        parts.push(("sample", json!({ "reservoir_seed": cfg.seed })));
    }
    if !cfg.corpus_fields.is_empty() {
        parts.push(("corpus_fields", to_json(&cfg.corpus_fields)));
    }
    if cfg.skip_bad {
        parts.push(("skip_bad", json!(true)));
    }
    let fp_cur = fingerprint(&parts);
    let (docs, report, input_report, language) = curated(job, &wd, &fp_cur)?;
    progress.finish_stage();
    if docs.is_empty() {
        return Err(mtr_core::Error::from(
            mtr_core::InputError::new(
                &job.corpus,
                format!("curation kept no document (removed: {:?})", report.removed),
            )
            .hint("check the corpus language and the [synth.curation] length bounds"),
        )
        .into());
    }

    // 2. chunking
    progress.stage("chunk", docs.len() as u64);
    let fp_chunks = fingerprint(&[
        ("curated", json!(fp_cur)),
        ("chunking", to_json(&cfg.chunking)),
    ]);
    let chunks: Vec<Chunk> = match wd.fresh::<usize>("chunks", &fp_chunks) {
        Some(_) => wd.read_jsonl("chunks.jsonl")?,
        None => {
            let chunks =
                chunk_corpus(&docs, &cfg.chunking).map_err(|m| Error::param("chunking", m))?;
            wd.write_jsonl("chunks.jsonl", &chunks)?;
            wd.mark("chunks", &fp_chunks, &chunks.len())?;
            chunks
        }
    };
    progress.advance(docs.len() as u64);
    progress.finish_stage();
    if chunks.is_empty() {
        return Err(Error::param("chunking", "no chunks were produced"));
    }

    // 3. vectors
    let embed = use_embedder(cfg, llm, dry_run, chunks.len())?;
    let source = match (embed, llm.and_then(|l| l.embedding_model())) {
        (true, Some(m)) => format!("embedder:{m}"),
        _ => "lexical".to_string(),
    };
    progress.stage("embed chunks", chunks.len() as u64);
    let fp_vec = fingerprint(&[("chunks", json!(fp_chunks)), ("source", json!(source))]);
    let (vecs, vector_info) = match wd.fresh::<VectorInfo>("vectors", &fp_vec) {
        Some(info) => (wd.read_f32("vectors.f32")?, info),
        None => {
            let texts: Vec<String> = chunks.iter().map(chunk_text).collect();
            let (v, dim) = match (embed, llm) {
                (true, Some(llm)) => {
                    let prefix =
                        EmbedPrefixes::for_model(&llm.embedding_model().unwrap_or_default())
                            .passage;
                    let texts: Vec<String> = texts.iter().map(|t| format!("{prefix}{t}")).collect();
                    vectors::embed_texts(llm, &texts, progress).await?
                }
                _ => (lexical_vectors(&texts), vectors::LEXICAL_DIM),
            };
            let info = VectorInfo {
                source: source.clone(),
                dim,
            };
            wd.write_f32("vectors.f32", &v)?;
            wd.mark("vectors", &fp_vec, &info)?;
            (v, info)
        }
    };
    progress.finish_stage();

    // 4. neighbour graph, topic paths, coarse topics
    progress.stage("topic paths", 0);
    let fp_topics = fingerprint(&[
        ("vectors", json!(fp_vec)),
        ("paths", to_json(&cfg.paths)),
        ("topics", to_json(&cfg.topics)),
        ("seed", json!(cfg.seed)),
    ]);
    let topics = match wd.fresh::<usize>("topics", &fp_topics) {
        Some(_) => wd.read_json::<Topics>("topics.json")?,
        None => {
            let t = build_topics(&vecs, vector_info.dim, cfg)?;
            wd.write_json("topics.json", &t)?;
            wd.mark("topics", &fp_topics, &t.paths.len())?;
            t
        }
    };
    progress.finish_stage();
    Ok(Prepared {
        input_fingerprint: input_fp,
        curation: report,
        input: input_report,
        language,
        documents: docs.len(),
        chunks,
        chunks_fingerprint: fp_chunks,
        vectors: vecs,
        vector_info,
        topics,
        topics_fingerprint: fp_topics,
    })
}

/// The curated documents, the curation report, what reading found and the corpus language:
/// loaded from the work dir when `fp_cur` matches, else read (a seeded uniform sample of
/// `max_documents` when set) and curated.
fn curated(
    job: &SynthJob,
    wd: &WorkDir,
    fp_cur: &str,
) -> Result<(Vec<Document>, CurationReport, InputReport, Language)> {
    let cfg = &job.config;
    if let Some(m) = wd.fresh::<CuratedMeta>("curated", fp_cur) {
        // a run that skipped unreadable files is not resumed under --strict
        strict_check(job, &m.input)?;
        let docs: Vec<Document> = wd.read_jsonl("curated.jsonl")?;
        return Ok((docs, m.report, m.input, Language::from_code(&m.language)));
    }
    let loaded = input::read_with(
        &job.corpus,
        &ReadOptions {
            fields: cfg.corpus_fields.clone(),
            max_documents: cfg.max_documents,
            seed: cfg.seed,
            skip_bad: cfg.skip_bad,
        },
        job.unreadable,
    )?;
    announce_read(job, &loaded.report);
    let c = curate(loaded.documents, &cfg.curation_options());
    wd.write_jsonl("curated.jsonl", &c.documents)?;
    wd.mark(
        "curated",
        fp_cur,
        &CuratedMeta {
            report: c.report.clone(),
            language: c.language.code().to_string(),
            input: loaded.report.clone(),
        },
    )?;
    Ok((c.documents, c.report, loaded.report, c.language))
}

/// The read's summary line, and each corpus file skipped with its reason: told to the
/// command when it has something to say (a sample, records or files skipped), else logged.
fn announce_read(job: &SynthJob, report: &InputReport) {
    let mut lines = vec![report.summary()];
    lines.extend(
        report
            .skipped
            .iter()
            .map(|s| format!("skipped {}: {}", s.file, s.reason)),
    );
    let worth_saying = report.sample.is_some() || job.config.skip_bad || !report.skipped.is_empty();
    for line in lines {
        match &job.announce {
            Some(say) if worth_saying => say(&line),
            _ => tracing::info!("{line}"),
        }
    }
}

/// Under `--strict`, the first file an earlier read of the same corpus skipped fails the job.
fn strict_check(job: &SynthJob, report: &InputReport) -> Result<()> {
    match report.skipped.first() {
        Some(s) if job.unreadable == Unreadable::Fail => Err(mtr_core::Error::from(
            mtr_core::InputError::new(corpus_file(&job.corpus, &s.file), s.reason.clone())
                .hint("leave --strict out to skip unreadable files (they are listed)"),
        )
        .into()),
        _ => Ok(()),
    }
}

/// The path of `file` (relative to the corpus folder, or the corpus file's own folder).
fn corpus_file(corpus: &std::path::Path, file: &str) -> std::path::PathBuf {
    if corpus.is_dir() {
        corpus.join(file)
    } else {
        corpus.to_path_buf()
    }
}

fn build_topics(vecs: &[f32], dim: usize, cfg: &SynthConfig) -> Result<Topics> {
    let matrix = VectorMatrix::from_rows(dim, vecs.to_vec())?;
    let n = matrix.len();
    let k = cfg.paths.k.min(n.saturating_sub(1)).max(1);
    let graph = knn_graph(&matrix, k, &KnnOptions::default())?;
    let method = format!("{:?}", graph.method).to_lowercase();
    let ng = NeighbourGraph::from_lists(
        graph
            .neighbours
            .iter()
            .map(|l| l.iter().map(|(id, _)| *id).collect::<Vec<_>>()),
        k,
    );
    let paths = greedy_paths(&ng, &cfg.paths, cfg.seed);
    let chunk_topics = kmeans_topics(vecs, dim, &cfg.topics, cfg.seed)?;
    let pt = path_topics(&paths, &chunk_topics);
    Ok(Topics {
        topics: cfg.topics.effective_k(n),
        paths,
        chunk_topics,
        path_topics: pt,
        graph_method: method,
        graph_k: k,
        graph_recall_at_10: graph.recall_at_10,
    })
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::*;
    use crate::prompts::SynthPrompts;

    fn job(out: &Path, cfg: SynthConfig) -> SynthJob {
        let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpora/en");
        SynthJob::new(corpus, out, cfg, SynthPrompts::builtin().unwrap())
    }

    fn mtime(p: PathBuf) -> std::time::SystemTime {
        std::fs::metadata(p).unwrap().modified().unwrap()
    }

    #[tokio::test]
    async fn stages_are_reused_until_their_inputs_change() {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = SynthConfig {
            vectors: VectorSource::Lexical,
            ..Default::default()
        };
        let j = job(&tmp.path().join("out"), cfg.clone());
        let p1 = prepare(&j, None, false, &mtr_core::progress::NoProgress)
            .await
            .unwrap();
        // the handbook's Markdown by section: 104 sections, of which 5 are boilerplate (`See
        // also`, `References`, `External links`) and 9 under 30 words
        assert_eq!(p1.curation.input, 104);
        assert_eq!(p1.curation.stripped_sections, 5);
        assert_eq!(p1.curation.removed["too_short"], 9);
        assert_eq!(p1.chunks.len(), 90);
        assert!(p1.chunks.iter().all(|c| c.id.contains(".md#")));
        let wd = |n: &str| j.work_dir.join(n);
        let (c1, t1) = (mtime(wd("chunks.jsonl")), mtime(wd("topics.json")));
        std::thread::sleep(std::time::Duration::from_millis(20));
        // same settings: everything is loaded, nothing rewritten, same result
        let p2 = prepare(&j, None, false, &mtr_core::progress::NoProgress)
            .await
            .unwrap();
        assert_eq!(
            (mtime(wd("chunks.jsonl")), mtime(wd("topics.json"))),
            (c1, t1)
        );
        assert_eq!(p2.chunks, p1.chunks);
        assert_eq!(p2.topics, p1.topics);
        // another seed: chunks are kept, paths are recomputed
        let mut cfg2 = cfg.clone();
        cfg2.seed = 9;
        let p3 = prepare(
            &job(&tmp.path().join("out"), cfg2),
            None,
            false,
            &mtr_core::progress::NoProgress,
        )
        .await
        .unwrap();
        assert_eq!(mtime(wd("chunks.jsonl")), c1);
        assert_ne!(mtime(wd("topics.json")), t1);
        assert_ne!(p3.topics.paths, p1.topics.paths);
        // other chunk sizes: chunks are recomputed
        let mut cfg3 = cfg;
        cfg3.chunking.min_tokens = 64;
        cfg3.chunking.max_tokens = 128;
        let p4 = prepare(
            &job(&tmp.path().join("out"), cfg3),
            None,
            false,
            &mtr_core::progress::NoProgress,
        )
        .await
        .unwrap();
        assert!(p4.chunks.len() > 60, "{}", p4.chunks.len());
        // every chunk is in exactly one path
        let mut seen: Vec<u32> = p4.topics.paths.iter().flatten().copied().collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..p4.chunks.len() as u32).collect::<Vec<_>>());
    }
}
