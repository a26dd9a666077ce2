//! The whole synthesis job, stage by stage, each stage resumable from its fingerprinted
//! artefact in the work dir: curation -> chunking -> chunk vectors -> neighbour graph, topic
//! paths and coarse topics -> BM25 index -> breadth-first generation (checkpointed per turn
//! layer) -> the native benchmark folder and `synth_report.md`.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mtr_core::progress::Progress;
use mtr_core::{Dialogue, Manifest, Passage};
use mtr_llm::{Llm, Role, Target};
use mtr_retrieve::dense::{EmbedPrefixes, KnnOptions, VectorMatrix, knn_graph};
use mtr_retrieve::{IndexBuilder, IndexDir, IndexOptions};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::agents::Agents;
use crate::chunk::{Chunk, chunk_corpus};
use crate::cluster::{kmeans_topics, path_topics};
use crate::config::{SynthConfig, VectorSource};
use crate::curate::{CurationReport, curate};
use crate::error::{Error, Result};
use crate::generate::{
    Finish, GenState, Generator, Material, initial_state, load_state, to_core_turn,
};
use crate::input::{self, Document};
use crate::lang::Language;
use crate::paths::{NeighbourGraph, greedy_paths};
use crate::prompts::SynthPrompts;
use crate::report;
use crate::search::{CorpusSearch, DenseSide};
use crate::vectors::{self, chunk_text, lexical_vectors};
use crate::workdir::{WorkDir, fingerprint, input_fingerprint};

/// A synthesis job: where from, where to, how.
pub struct SynthJob {
    pub corpus: PathBuf,
    pub out: PathBuf,
    /// Artefacts and checkpoints (default `<out>/.mtr-synth`).
    pub work_dir: PathBuf,
    pub config: SynthConfig,
    pub prompts: SynthPrompts,
}

impl SynthJob {
    pub fn new(
        corpus: impl Into<PathBuf>,
        out: impl Into<PathBuf>,
        config: SynthConfig,
        prompts: SynthPrompts,
    ) -> Self {
        let out = out.into();
        Self {
            corpus: corpus.into(),
            work_dir: out.join(".mtr-synth"),
            out,
            config,
            prompts,
        }
    }
}

/// Where the chunk vectors came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VectorInfo {
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
    pub input_fingerprint: String,
    pub curation: CurationReport,
    pub language: Language,
    pub documents: usize,
    pub chunks: Vec<Chunk>,
    pub chunks_fingerprint: String,
    pub vectors: Vec<f32>,
    pub vector_info: VectorInfo,
    pub topics: Topics,
    pub topics_fingerprint: String,
}

#[derive(Serialize, Deserialize)]
struct CuratedMeta {
    report: CurationReport,
    language: String,
}

fn to_json<T: Serialize>(v: &T) -> serde_json::Value {
    serde_json::to_value(v).unwrap_or(serde_json::Value::Null)
}

/// Chunks above which `auto` does not embed with a *local* embedder: the bundled CPU model
/// embeds about 15 passages per second, so a 10k-chunk corpus would take over ten minutes
/// before the first question; lexical vectors take a second.
pub const AUTO_LOCAL_EMBED_LIMIT: usize = 2000;

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
    let fp_cur = fingerprint(&[
        ("input", json!(input_fp)),
        ("curation", to_json(&cfg.curation)),
        ("max_documents", json!(cfg.max_documents)),
    ]);
    let (docs, report, language) = match wd.fresh::<CuratedMeta>("curated", &fp_cur) {
        Some(m) => {
            let docs: Vec<Document> = wd.read_jsonl("curated.jsonl")?;
            (docs, m.report, Language::from_code(&m.language))
        }
        None => {
            let raw = input::load(&job.corpus)?;
            let mut c = curate(raw, &cfg.curation);
            if cfg.max_documents > 0 && c.documents.len() > cfg.max_documents {
                let cut = c.documents.len() - cfg.max_documents;
                c.documents.truncate(cfg.max_documents);
                c.report.removed.insert("max_documents".into(), cut);
                c.report.kept = c.documents.len();
            }
            wd.write_jsonl("curated.jsonl", &c.documents)?;
            wd.mark(
                "curated",
                &fp_cur,
                &CuratedMeta {
                    report: c.report.clone(),
                    language: c.language.code().to_string(),
                },
            )?;
            (c.documents, c.report, c.language)
        }
    };
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

/// The BM25 index over all chunks (built once into the work dir).
fn bm25_index(wd: &WorkDir, prepared: &Prepared, progress: &dyn Progress) -> Result<IndexDir> {
    let fp = fingerprint(&[
        ("chunks", json!(prepared.chunks_fingerprint)),
        ("language", json!(prepared.language.code())),
    ]);
    let dir = wd.path("index");
    if wd.fresh::<usize>("index", &fp).is_some()
        && let Ok(idx) = IndexDir::open(&dir)
    {
        return Ok(idx);
    }
    let language = match prepared.language.code() {
        "en" => mtr_retrieve::Language::En,
        "zh" => mtr_retrieve::Language::Zh,
        _ => mtr_retrieve::Language::Auto,
    };
    let opts = IndexOptions {
        language,
        store_text: false,
        ..Default::default()
    };
    let idx = IndexBuilder::new(&dir, opts).build_from_passages(
        prepared.chunks.iter().map(|c| Ok(c.to_passage())),
        "synth-chunks",
        progress,
    )?;
    wd.mark("index", &fp, &prepared.chunks.len())?;
    Ok(idx)
}

/// What a finished (or budget-stopped) run produced.
#[derive(Debug, Clone)]
pub struct SynthOutcome {
    pub out: PathBuf,
    pub dialogues: usize,
    pub turns: usize,
    pub stats: report::SynthStats,
    pub budget_stopped: bool,
    pub layers_done: usize,
}

/// Runs the whole job.
pub async fn synthesize(
    job: &SynthJob,
    llm: &Llm,
    progress: &dyn Progress,
) -> Result<SynthOutcome> {
    let cfg = &job.config;
    let prepared = prepare(job, Some(llm), false, progress).await?;
    let wd = WorkDir::create(&job.work_dir)?;
    let g = &cfg.generation;
    let verifier = match &g.verifier {
        Some(v) => v.clone(),
        None => llm.judges().first().cloned().ok_or_else(|| {
            Error::param(
                "generation.verifier",
                "no verifier endpoint: set [synth.generation] verifier or [llm.roles] judges",
            )
        })?,
    };
    if llm.config().endpoint(&verifier).is_none() {
        return Err(Error::param(
            "generation.verifier",
            format!("no endpoint named `{verifier}`"),
        ));
    }
    let ids: Arc<Vec<String>> = Arc::new(prepared.chunks.iter().map(|c| c.id.clone()).collect());
    let search = if g.uniqueness.enabled {
        progress.stage("bm25 index", prepared.chunks.len() as u64);
        let idx = bm25_index(&wd, &prepared, progress)?;
        progress.finish_stage();
        let dense = if prepared.vector_info.source.starts_with("embedder:") {
            let model = llm.embedding_model().unwrap_or_default();
            Some(DenseSide {
                matrix: Arc::new(VectorMatrix::from_rows(
                    prepared.vector_info.dim,
                    prepared.vectors.clone(),
                )?),
                llm: llm.clone(),
                prefixes: EmbedPrefixes::for_model(&model),
            })
        } else {
            None
        };
        Some(CorpusSearch::new(
            idx.bm25()?,
            dense,
            ids.clone(),
            &g.uniqueness.query,
        )?)
    } else {
        None
    };
    let by_id: HashMap<String, u32> = prepared
        .chunks
        .iter()
        .enumerate()
        .map(|(i, c)| (c.id.clone(), i as u32))
        .collect();
    let material = Material {
        chunks: &prepared.chunks,
        by_id: &by_id,
        paths: &prepared.topics.paths,
        path_topics: &prepared.topics.path_topics,
    };
    let state_fp = fingerprint(&[
        ("topics", json!(prepared.topics_fingerprint)),
        ("generation", to_json(g)),
        ("dialogues", json!(cfg.dialogues)),
        ("turns", json!(cfg.turns)),
        ("seed", json!(cfg.seed)),
        ("prompts", json!(job.prompts.hash())),
        ("llm", json!(llm.config().results_hash())),
        ("verifier", json!(verifier)),
        (
            "dense",
            json!(search.as_ref().is_some_and(|s| s.uses_dense())),
        ),
    ]);
    let state_path = wd.path("state.json");
    let mut state = match load_state(&state_path, &state_fp)? {
        Some(s) => {
            tracing::info!(
                "resuming after {} of {} turn layers",
                s.layers_done,
                cfg.turns
            );
            s
        }
        None => initial_state(
            state_fp.clone(),
            &material,
            cfg.dialogues,
            cfg.turns,
            g.switch_share,
            cfg.seed,
        ),
    };
    let concurrency = if g.concurrency > 0 {
        g.concurrency
    } else {
        // a turn makes about 3 generator calls among 6-7 calls in all: 4x the generator's
        // capacity in dialogues keeps it busy while the others wait on judges and retrieval
        (llm.capacity(&Target::Role(Role::Generator)) * 4).max(8)
    };
    let generator = Generator {
        agents: Agents {
            llm,
            prompts: &job.prompts,
            opts: g,
            language: &prepared.language,
            verifier: verifier.clone(),
        },
        search: search.as_ref(),
        material,
        opts: g,
        progress,
        concurrency,
    };
    let finish = generator.run(&mut state, cfg.turns, &state_path).await?;
    let budget_stopped = matches!(finish, Finish::BudgetStopped { .. });
    write_output(job, llm, &prepared, &state, &verifier, budget_stopped)
}

/// The native benchmark folder and the report.
fn write_output(
    job: &SynthJob,
    llm: &Llm,
    prepared: &Prepared,
    state: &GenState,
    verifier: &str,
    budget_stopped: bool,
) -> Result<SynthOutcome> {
    let cfg = &job.config;
    let dialogues: Vec<Dialogue> = state
        .dialogues
        .iter()
        .filter(|d| !d.turns.is_empty())
        .map(|d| {
            let mut meta = serde_json::Map::new();
            meta.insert("path".into(), d.start_path.into());
            meta.insert(
                "topic".into(),
                format!("topic-{}", prepared.topics.path_topics[d.start_path]).into(),
            );
            if let (Some(at), Some(p)) = (d.switch_at, d.switch_path) {
                meta.insert("switch_turn_planned".into(), (at + 1).into());
                meta.insert("switch_path".into(), p.into());
            }
            meta.insert("cost_usd".into(), json!(round6(d.log.cost())));
            meta.insert("calls".into(), d.log.calls().into());
            Dialogue {
                id: d.id.clone(),
                turns: d
                    .turns
                    .iter()
                    .enumerate()
                    .map(|(i, t)| to_core_turn(&d.id, i + 1, t))
                    .collect(),
                meta,
            }
        })
        .collect();
    let stats = report::SynthStats::compute(cfg, prepared, state);
    let mut roles_models: BTreeMap<String, String> = BTreeMap::new();
    for (role, models) in &stats.models {
        roles_models.insert(role.clone(), models.join(","));
    }
    let generator_models: Vec<String> = ["user", "humanizer", "answerer"]
        .iter()
        .filter_map(|r| stats.models.get(*r))
        .flatten()
        .cloned()
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    if !generator_models.is_empty() {
        roles_models.insert("generator".into(), generator_models.join(","));
    }
    if let Some(m) = llm.config().endpoint(verifier).map(|e| e.model.clone()) {
        roles_models.entry("verifier".into()).or_insert(m);
    }
    if let Some(m) = llm
        .embedding_model()
        .filter(|_| prepared.vector_info.source.starts_with("embedder:"))
    {
        roles_models.insert("embedder".into(), m);
    }
    let name = cfg.name.clone().unwrap_or_else(|| {
        job.out
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "synth".into())
    });
    let fp = mtr_core::fingerprint::Fingerprint {
        data: prepared.input_fingerprint.clone(),
        config: mtr_core::fingerprint::hash_json(cfg),
        prompts: job.prompts.hash(),
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        git_commit: None,
    };
    let mut extra = toml::Table::new();
    let synth = json!({
        "corpus": job.corpus.display().to_string(),
        "corpus_fingerprint": prepared.input_fingerprint,
        "seed": cfg.seed,
        "dialogues_requested": cfg.dialogues,
        "turns_requested": cfg.turns,
        "layers_done": state.layers_done,
        "budget_stopped": budget_stopped,
        "vectors": prepared.vector_info.source,
        "graph": {"method": prepared.topics.graph_method, "k": prepared.topics.graph_k},
        "verifier": verifier,
        "models": stats.models,
        "prompts": job.prompts.hashes(),
        "llm_config_hash": llm.config().results_hash(),
        "fingerprint": fp,
        "parameters": cfg,
    });
    match toml::Value::try_from(tomlable(synth)) {
        Ok(toml::Value::Table(t)) => {
            extra.insert("synth".into(), toml::Value::Table(t));
        }
        Ok(_) => {}
        Err(e) => {
            return Err(Error::Internal(format!(
                "synthesis record for benchmark.toml: {e}"
            )));
        }
    }
    let manifest = Manifest {
        name,
        version: "1".into(),
        language: prepared.language.code().to_string(),
        source: "mtr-synth".into(),
        license: cfg
            .license
            .clone()
            .unwrap_or_else(|| "see the source corpus".into()),
        description: format!(
            "Synthesized by mtr synth (MTR-Pipeline) from {}: {} dialogues, {} turns, uniqueness verified against all {} chunks.",
            job.corpus.display(),
            dialogues.len(),
            stats.turns,
            prepared.chunks.len()
        ),
        fingerprint: String::new(),
        generator: roles_models,
        extra,
    };
    let corpus = prepared
        .chunks
        .iter()
        .map(|c| Ok::<Passage, mtr_core::Error>(c.to_passage()));
    let dir = mtr_core::benchmark::write_benchmark(&job.out, manifest, &dialogues, corpus)?;
    let text = report::render(
        cfg,
        prepared,
        state,
        &stats,
        &llm.ledger(),
        budget_stopped,
        &job.corpus,
        &fp,
    );
    mtr_core::atomic::write_atomic(dir.path("synth_report.md"), text.as_bytes())?;
    Ok(SynthOutcome {
        out: job.out.clone(),
        dialogues: dialogues.len(),
        turns: stats.turns,
        stats,
        budget_stopped,
        layers_done: state.layers_done,
    })
}

fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// Makes JSON representable in TOML: nulls are dropped (TOML has none) and integers beyond
/// TOML's signed 64-bit range (a large seed) become strings.
fn tomlable(v: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, tomlable(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(
            a.into_iter()
                .filter(|v| !v.is_null())
                .map(tomlable)
                .collect(),
        ),
        Value::Number(n) if n.is_u64() && n.as_i64().is_none() => Value::String(n.to_string()),
        other => other,
    }
}

/// Used by the command to default the work dir next to the output.
pub fn default_work_dir(out: &Path) -> PathBuf {
    out.join(".mtr-synth")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::VectorSource;

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
        assert_eq!(p1.chunks.len(), 24);
        assert_eq!(p1.curation.stripped_sections, 5);
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

    #[test]
    fn toml_cannot_hold_null_or_huge_integers() {
        let v = tomlable(
            json!({"a": null, "b": [1, null], "seed": u64::MAX, "c": {"d": null, "e": 2}}),
        );
        assert_eq!(
            v,
            json!({"b": [1], "seed": u64::MAX.to_string(), "c": {"e": 2}})
        );
        assert!(toml::Value::try_from(v).is_ok());
    }
}
