//! Whole-benchmark retrieval: formulate a query for every turn, retrieve, and produce an
//! [`mtr_core::Run`] whose name and metadata say which retriever and which formulation made it.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use mtr_core::progress::Progress;
use mtr_core::{Benchmark, InputError, Run};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::query::{QueryFormulation, Rewriter};
use crate::retriever::{Query, Retriever};

/// Queries sent to the retriever per call (progress granularity and batching for dense).
const QUERY_BATCH: usize = 64;

/// What made a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunMeta {
    /// The run's name, `<retriever>.<formulation>`.
    pub name: String,
    /// The retriever's name.
    pub retriever: String,
    /// The query formulation's name.
    pub formulation: String,
    /// Passages retrieved per query.
    pub k: usize,
    /// The index folder's fingerprint (corpus + analyzer), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_fingerprint: Option<String>,
    /// The benchmark's data fingerprint.
    pub benchmark_fingerprint: String,
    /// Turns of a `rewrite` run that had no gold rewrite and used the user utterance.
    pub rewrite_fallbacks: usize,
    /// The rewriter (`llm-rewrite` runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewriter: Option<String>,
    /// Queries in the run (one per turn).
    pub num_queries: usize,
}

/// A run with its queries and metadata.
#[derive(Debug, Clone)]
pub struct RetrievedRun {
    /// The run's name, `<retriever>.<formulation>`.
    pub name: String,
    /// The ranked passages per query.
    pub run: Run,
    /// Query text per query id.
    pub queries: BTreeMap<String, String>,
    /// What made the run.
    pub meta: RunMeta,
}

/// The run name: `<retriever>.<formulation>` (e.g. `bm25.full:512`).
pub fn run_name(retriever: &str, formulation: &QueryFormulation) -> String {
    format!("{retriever}.{}", formulation.name())
}

/// The query of every turn of a benchmark, in benchmark order, and the number of `rewrite`
/// fallbacks. A `rewrite` formulation on a benchmark without any gold rewrite is a user error.
pub async fn formulate_benchmark(
    bench: &Benchmark,
    formulation: &QueryFormulation,
    rewriter: Option<&dyn Rewriter>,
) -> Result<(Vec<(String, String)>, usize)> {
    if *formulation == QueryFormulation::Rewrite
        && !bench
            .dialogues
            .iter()
            .flat_map(|d| &d.turns)
            .any(|t| t.rewrite.is_some())
    {
        return Err(InputError::new(
            bench.dir.path(mtr_core::benchmark::DIALOGUES),
            "no turn has a gold rewrite",
        )
        .field("rewrite")
        .hint("use another --query (last, all, full, window:N, llm-rewrite)")
        .into());
    }
    let mut out = Vec::with_capacity(bench.turn_count());
    let mut fallbacks = 0;
    for d in &bench.dialogues {
        for i in 0..d.turns.len() {
            let (text, fell_back) = formulation.formulate_with(d, i, rewriter).await?;
            fallbacks += usize::from(fell_back);
            out.push((d.turns[i].id.clone(), text));
        }
    }
    Ok((out, fallbacks))
}

/// Retrieves the top `k` passages for every turn of `bench`.
pub async fn retrieve_benchmark(
    bench: &Benchmark,
    retriever: &dyn Retriever,
    formulation: &QueryFormulation,
    k: usize,
    rewriter: Option<&dyn Rewriter>,
    progress: &dyn Progress,
) -> Result<RetrievedRun> {
    let (queries, fallbacks) = formulate_benchmark(bench, formulation, rewriter).await?;
    let name = run_name(&retriever.name(), formulation);
    progress.stage(&format!("retrieving ({name})"), queries.len() as u64);
    let mut run = Run::new();
    for chunk in queries.chunks(QUERY_BATCH) {
        let qs: Vec<Query> = chunk.iter().map(|(_, t)| Query::new(t.clone())).collect();
        let results = retriever.search(&qs, k).await?;
        if results.len() != qs.len() {
            return Err(Error::Internal(format!(
                "{} returned {} result lists for {} queries",
                retriever.name(),
                results.len(),
                qs.len()
            )));
        }
        for ((qid, _), hits) in chunk.iter().zip(results) {
            run.insert(
                qid.clone(),
                hits.into_iter().map(|h| (h.id, h.score)).collect(),
            );
        }
        progress.advance(chunk.len() as u64);
    }
    progress.finish_stage();
    if fallbacks > 0 {
        tracing::warn!(
            turns = fallbacks,
            "turns without a gold rewrite used their user utterance"
        );
    }
    let meta = RunMeta {
        name: name.clone(),
        retriever: retriever.name(),
        formulation: formulation.name(),
        k,
        index_fingerprint: None,
        benchmark_fingerprint: bench.manifest.fingerprint.clone(),
        rewrite_fallbacks: fallbacks,
        rewriter: rewriter.map(|r| r.name()),
        num_queries: queries.len(),
    };
    Ok(RetrievedRun {
        name,
        run,
        queries: queries.into_iter().collect(),
        meta,
    })
}

/// One line of the JSONL run file.
#[derive(Serialize)]
struct JsonlRecord<'a> {
    qid: &'a str,
    query: &'a str,
    run: &'a str,
    hits: Vec<JsonlHit<'a>>,
}

#[derive(Serialize)]
struct JsonlHit<'a> {
    id: &'a str,
    score: f64,
}

/// The paths [`write_run_files`] writes for a TREC path: `run.trec`, `run.trec.jsonl`,
/// `run.trec.meta.json`.
pub fn run_file_paths(trec: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let with = |ext: &str| {
        let mut s = trec.as_os_str().to_os_string();
        s.push(ext);
        PathBuf::from(s)
    };
    (trec.to_path_buf(), with(".jsonl"), with(".meta.json"))
}

/// Writes the TREC run (tag = run name), the JSONL run with query texts and scores, and the
/// metadata, each atomically.
pub fn write_run_files(out: &RetrievedRun, trec: &Path) -> Result<()> {
    let (trec, jsonl, meta) = run_file_paths(trec);
    let tag: String = out
        .name
        .chars()
        .map(|c| if c.is_whitespace() { '_' } else { c })
        .collect();
    mtr_core::trec::write_run(&trec, &out.run, &tag)?;
    let mut w = mtr_core::jsonl::JsonlWriter::create(&jsonl)?;
    for (qid, docs) in &out.run {
        let hits = docs
            .iter()
            .map(|(id, score)| JsonlHit { id, score: *score })
            .collect();
        let query = out.queries.get(qid).map_or("", String::as_str);
        w.write(&JsonlRecord {
            qid,
            query,
            run: &out.name,
            hits,
        })?;
    }
    w.commit()?;
    let mut f = mtr_core::atomic::AtomicFile::create(&meta)?;
    serde_json::to_writer_pretty(&mut f, &out.meta).map_err(|e| Error::Internal(e.to_string()))?;
    f.write_all(b"\n").map_err(|e| Error::io(&meta, e))?;
    f.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dense::{DenseIndex, DenseOptions, DenseRetriever, HashEmbedder};
    use crate::fusion::{Fusion, FusionRetriever};
    use crate::index::{IndexBuilder, IndexOptions};
    use mtr_core::progress::NoProgress;
    use mtr_core::{Dialogue, Gold, Manifest, Passage, Tags, Turn};
    use std::sync::Arc;

    fn bench(dir: &Path) -> Benchmark {
        let p = |id: &str, text: &str| {
            Ok(Passage {
                id: id.into(),
                title: String::new(),
                text: text.into(),
                doc_id: None,
                meta: Default::default(),
            })
        };
        let t = |id: &str, user: &str, rewrite: Option<&str>, gold: &str| Turn {
            id: id.into(),
            user: user.into(),
            rewrite: rewrite.map(Into::into),
            answer: Some("An answer.".into()),
            gold: vec![Gold {
                passage_id: gold.into(),
                grade: 1,
            }],
            tags: Tags::default(),
        };
        let d = Dialogue {
            id: "d".into(),
            turns: vec![
                t("d::1", "How do guinea pigs sleep?", None, "gp"),
                t(
                    "d::2",
                    "And what do they eat?",
                    Some("What do guinea pigs eat?"),
                    "food",
                ),
            ],
            meta: Default::default(),
        };
        let corpus = vec![
            p(
                "gp",
                "Guinea pigs sleep in short naps with their eyes open.",
            ),
            p("food", "Guinea pigs eat hay, fresh vegetables and pellets."),
            p("cat", "Cats eat meat and sleep sixteen hours a day."),
        ];
        let m = Manifest {
            name: "t".into(),
            language: "en".into(),
            ..Default::default()
        };
        mtr_core::benchmark::write_benchmark(dir, m, &[d], corpus)
            .unwrap()
            .load()
            .unwrap()
    }

    #[tokio::test]
    async fn bm25_dense_and_fusion_runs_with_files() {
        let tmp = tempfile::tempdir().unwrap();
        let b = bench(&tmp.path().join("b"));
        let src = crate::CorpusSource::Benchmark(b.dir.clone());
        let idx = IndexBuilder::new(tmp.path().join("i"), IndexOptions::default())
            .build(&src, &NoProgress)
            .unwrap();
        let bm25 = idx.bm25().unwrap();

        let f: QueryFormulation = "rewrite".parse().unwrap();
        let out = retrieve_benchmark(&b, &bm25, &f, 2, None, &NoProgress)
            .await
            .unwrap();
        assert_eq!(out.name, "bm25.rewrite");
        assert_eq!(out.meta.rewrite_fallbacks, 1);
        assert_eq!(out.run["d::2"][0].0, "food");
        assert_eq!(out.queries["d::2"], "What do guinea pigs eat?");

        let embedder = Arc::new(HashEmbedder { dim: 64 });
        let dense = DenseIndex::build(
            &idx,
            embedder.as_ref(),
            &DenseOptions::default(),
            src.passages().unwrap(),
            &NoProgress,
        )
        .await
        .unwrap();
        assert_eq!(dense.meta().count, 3);
        let dense = DenseRetriever::new(Arc::new(dense), embedder.clone());
        let out = retrieve_benchmark(&b, &dense, &"last".parse().unwrap(), 3, None, &NoProgress)
            .await
            .unwrap();
        assert_eq!(out.name, "dense:hash-64.last");
        assert_eq!(out.run["d::1"].len(), 3);

        let fused = FusionRetriever::new(
            vec![(Box::new(bm25.clone()), 1.0), (Box::new(dense), 1.0)],
            Fusion::Rrf { k: 60.0 },
        );
        let out = retrieve_benchmark(&b, &fused, &"all".parse().unwrap(), 2, None, &NoProgress)
            .await
            .unwrap();
        assert_eq!(out.name, "rrf(bm25,dense:hash-64).all");
        let run_path = tmp.path().join("out/run.trec");
        write_run_files(&out, &run_path).unwrap();
        let back = mtr_core::trec::read_run(&run_path).unwrap();
        assert_eq!(back.keys().collect::<Vec<_>>(), ["d::1", "d::2"]);
        let text = std::fs::read_to_string(&run_path).unwrap();
        assert!(
            text.lines()
                .all(|l| l.split_whitespace().count() == 6
                    && l.ends_with("rrf(bm25,dense:hash-64).all")),
            "{text}"
        );
        let (_, jsonl, meta) = run_file_paths(&run_path);
        let first: serde_json::Value = serde_json::from_str(
            std::fs::read_to_string(jsonl)
                .unwrap()
                .lines()
                .next()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(first["query"], "How do guinea pigs sleep?");
        let meta: RunMeta = serde_json::from_str(&std::fs::read_to_string(meta).unwrap()).unwrap();
        assert_eq!(meta.formulation, "all");

        // The same benchmark without any rewrite: `rewrite` is a user error.
        let mut no_rw = b.clone();
        no_rw.dialogues[0].turns[1].rewrite = None;
        let e = retrieve_benchmark(
            &no_rw,
            &bm25,
            &QueryFormulation::Rewrite,
            2,
            None,
            &NoProgress,
        )
        .await
        .unwrap_err();
        assert!(
            e.is_user_error() && e.to_string().contains("no turn has a gold rewrite"),
            "{e}"
        );
    }
}
