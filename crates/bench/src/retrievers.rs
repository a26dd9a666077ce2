//! Runs for retriever specs x query formulations, produced with the retrieval crate. Every leaf
//! retriever (BM25, dense) searches once per formulation at the depth fusion needs; standalone
//! systems take the top `k` of that list and fusions fuse it, so a spec that appears both alone
//! and inside a fusion is not searched twice, and the fusion's leave-one-out runs (the ablation)
//! cost no extra retrieval.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use mtr_core::progress::Progress;
use mtr_core::{Benchmark, Run};
use mtr_retrieve::dense::Embedder;
use mtr_retrieve::{
    Hit, IndexDir, Query, QueryFormulation, Retriever, RetrieverSpec, Rewriter,
    formulate_benchmark, open_retriever,
};
use serde::Serialize;

use crate::error::{BenchError, Result};
use crate::job::{AblationInput, SystemInput};
use crate::query_set::QuerySet;
use crate::result::SystemKind;

/// Queries sent to a retriever per call.
const BATCH: usize = 64;

/// What the retrievers run on.
pub(crate) struct RetrievalSetup<'a> {
    pub bench: &'a Benchmark,
    pub set: &'a QuerySet,
    pub index: &'a IndexDir,
    pub embedder: Option<Arc<dyn Embedder>>,
    pub rewriter: Option<&'a dyn Rewriter>,
    /// Rank depth of every run.
    pub k: usize,
    pub progress: &'a dyn Progress,
}

/// Hits per scored query (in the set's query order) of one spec.
type Hits = Vec<Vec<Hit>>;
/// Query text per qid.
type Queries = BTreeMap<String, String>;

/// Depth each leaf is searched to: what a fusion of depth `k` asks its parts for.
pub(crate) fn leaf_depth(k: usize) -> usize {
    (2 * k).max(100)
}

/// One formulation's queries (scored qids only) and every leaf's hits for them.
struct Formulated {
    formulation: QueryFormulation,
    queries: Queries,
    hits: BTreeMap<String, Hits>,
}

/// A retrieval error under the system's name; a bad input is the input's error, under no
/// retriever's name.
fn retrieval_error(system: &str, e: mtr_retrieve::Error) -> BenchError {
    match e {
        mtr_retrieve::Error::Core(c) if c.is_user_error() => BenchError::Core(c),
        source => BenchError::Retrieve {
            system: system.to_string(),
            source,
        },
    }
}

/// Runs every spec with every formulation. Returns the systems (spec-major, formulations in
/// the order given) and the ablation inputs of fusion specs.
pub(crate) async fn run_all(
    setup: &RetrievalSetup<'_>,
    specs: &[RetrieverSpec],
    formulations: &[QueryFormulation],
) -> Result<(Vec<SystemInput>, Vec<AblationInput>)> {
    let opened = open_leaves(setup, specs)?;
    let mut by_formulation = Vec::new();
    for f in formulations {
        by_formulation.push(search_leaves(setup, &opened, f).await?);
    }
    let index_record = IndexRecord {
        index: setup.index.fingerprint().to_string(),
        embedder: setup.embedder.as_ref().map(|e| e.model()),
        k: setup.k,
        leaf_depth: leaf_depth(setup.k),
    };
    let mut systems = Vec::new();
    let mut ablations = Vec::new();
    for spec in specs {
        let display = open_retriever(spec, setup.index, setup.embedder.clone())
            .map_err(|e| retrieval_error(&spec.to_string(), e))?
            .name();
        for formulated in &by_formulation {
            let system = system_of(setup, spec, &display, formulated, &index_record)?;
            if let RetrieverSpec::Fusion { method, parts } = spec {
                ablations.push(AblationInput {
                    system: system.name.clone(),
                    without: leave_one_out(setup, *method, parts, &formulated.hits)?,
                });
            }
            systems.push(system);
        }
    }
    Ok((systems, ablations))
}

/// Every leaf retriever of `specs`, opened once.
fn open_leaves(
    setup: &RetrievalSetup<'_>,
    specs: &[RetrieverSpec],
) -> Result<BTreeMap<String, Box<dyn Retriever>>> {
    let mut leaves: BTreeSet<String> = BTreeSet::new();
    for s in specs {
        collect_leaves(s, &mut leaves);
    }
    let mut opened = BTreeMap::new();
    for leaf in &leaves {
        let spec: RetrieverSpec = leaf
            .parse()
            .map_err(|e: String| BenchError::option("--retriever", e))?;
        let r = open_retriever(&spec, setup.index, setup.embedder.clone())
            .map_err(|e| retrieval_error(leaf, e))?;
        opened.insert(leaf.clone(), r);
    }
    Ok(opened)
}

/// Formulates the scored queries with `f` and searches every leaf at the depth fusion needs.
async fn search_leaves(
    setup: &RetrievalSetup<'_>,
    opened: &BTreeMap<String, Box<dyn Retriever>>,
    f: &QueryFormulation,
) -> Result<Formulated> {
    let scored: BTreeSet<&str> = setup.set.queries.iter().map(|q| q.qid.as_str()).collect();
    let (all, _fallbacks) = formulate_benchmark(setup.bench, f, setup.rewriter)
        .await
        .map_err(|e| retrieval_error(&f.name(), e))?;
    let queries: Queries = all
        .into_iter()
        .filter(|(q, _)| scored.contains(q.as_str()))
        .collect();
    // Queries in the set's order (a scored qid absent from the dialogues gets no query).
    let ordered: Vec<(&str, Option<&String>)> = setup
        .set
        .queries
        .iter()
        .map(|q| (q.qid.as_str(), queries.get(&q.qid)))
        .collect();
    let mut hits: BTreeMap<String, Hits> = BTreeMap::new();
    for (leaf, r) in opened {
        let name = format!("{}.{}", r.name(), f.name());
        hits.insert(
            leaf.clone(),
            search(setup, r.as_ref(), &name, &ordered).await?,
        );
    }
    Ok(Formulated {
        formulation: *f,
        queries,
        hits,
    })
}

/// One leaf's hits for the queries in order (none for a qid without a query).
async fn search(
    setup: &RetrievalSetup<'_>,
    r: &dyn Retriever,
    name: &str,
    ordered: &[(&str, Option<&String>)],
) -> Result<Hits> {
    setup
        .progress
        .stage(&format!("retrieving ({name})"), ordered.len() as u64);
    let mut out: Hits = Vec::with_capacity(ordered.len());
    for chunk in ordered.chunks(BATCH) {
        let qs: Vec<Query> = chunk
            .iter()
            .map(|(_, t)| Query::new(t.cloned().unwrap_or_default()))
            .collect();
        let res = r
            .search(&qs, leaf_depth(setup.k))
            .await
            .map_err(|e| retrieval_error(name, e))?;
        if res.len() != qs.len() {
            return Err(BenchError::Internal(format!(
                "{name}: {} result lists for {} queries",
                res.len(),
                qs.len()
            )));
        }
        for ((_, text), h) in chunk.iter().zip(res) {
            out.push(if text.is_some() { h } else { Vec::new() });
        }
        setup.progress.advance(chunk.len() as u64);
    }
    setup.progress.finish_stage();
    Ok(out)
}

/// The system of `spec` under one formulation: its run and what fingerprints it.
fn system_of(
    setup: &RetrievalSetup<'_>,
    spec: &RetrieverSpec,
    display: &str,
    formulated: &Formulated,
    index: &IndexRecord,
) -> Result<SystemInput> {
    let f = formulated.formulation;
    let fused = hits_of(spec, &formulated.hits, setup.k)?;
    let config = ConfigRecord {
        spec: spec.to_string(),
        formulation: f.name(),
        index,
    };
    Ok(SystemInput {
        name: format!("{display}.{}", f.name()),
        kind: SystemKind::Retriever,
        retriever: Some(spec.to_string()),
        formulation: Some(f.name()),
        source: None,
        config_hash: mtr_core::fingerprint::hash_json(&config),
        prompt_hash: (f == QueryFormulation::LlmRewrite)
            .then(|| {
                setup
                    .rewriter
                    .map(|r| mtr_core::fingerprint::hash_bytes(r.name().as_bytes()))
            })
            .flatten(),
        run: to_run(setup.set, &fused),
        queries: formulated.queries.clone(),
    })
}

/// A fusion's runs without each of its parts in turn (the ablation), by the part left out.
fn leave_one_out(
    setup: &RetrievalSetup<'_>,
    method: mtr_retrieve::Fusion,
    parts: &[(RetrieverSpec, f64)],
    hits: &BTreeMap<String, Hits>,
) -> Result<Vec<(String, Run)>> {
    let mut without = Vec::new();
    for i in 0..parts.len() {
        let rest: Vec<(RetrieverSpec, f64)> = parts
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .map(|(_, p)| p.clone())
            .collect();
        let reduced = if rest.len() == 1 {
            rest[0].0.clone()
        } else {
            RetrieverSpec::Fusion {
                method,
                parts: rest,
            }
        };
        without.push((
            parts[i].0.to_string(),
            to_run(setup.set, &hits_of(&reduced, hits, setup.k)?),
        ));
    }
    Ok(without)
}

/// The hits of a spec at depth `k`: a leaf's list cut to `k`, a fusion's parts fused.
fn hits_of(spec: &RetrieverSpec, leaves: &BTreeMap<String, Hits>, k: usize) -> Result<Hits> {
    match spec {
        RetrieverSpec::Fusion { parts, .. } => {
            let part_hits = parts
                .iter()
                .map(|(p, _)| hits_of(p, leaves, leaf_depth(k)))
                .collect::<Result<Vec<_>>>()?;
            let n = part_hits.first().map_or(0, Vec::len);
            Ok((0..n)
                .map(|qi| {
                    let rankings: Vec<Vec<Hit>> = part_hits.iter().map(|h| h[qi].clone()).collect();
                    spec.fuse(&rankings, k)
                })
                .collect())
        }
        leaf => {
            let h = leaves
                .get(&leaf.to_string())
                .ok_or_else(|| BenchError::Internal(format!("no hits for `{leaf}`")))?;
            Ok(h.iter()
                .map(|l| l.iter().take(k).cloned().collect())
                .collect())
        }
    }
}

fn collect_leaves(spec: &RetrieverSpec, out: &mut BTreeSet<String>) {
    match spec {
        RetrieverSpec::Fusion { parts, .. } => {
            parts.iter().for_each(|(p, _)| collect_leaves(p, out))
        }
        leaf => {
            out.insert(leaf.to_string());
        }
    }
}

fn to_run(set: &QuerySet, hits: &Hits) -> Run {
    set.queries
        .iter()
        .zip(hits)
        .filter(|(_, h)| !h.is_empty())
        .map(|(q, h)| {
            (
                q.qid.clone(),
                h.iter().map(|x| (x.id.clone(), x.score)).collect(),
            )
        })
        .collect()
}

#[derive(Debug, Serialize)]
struct IndexRecord {
    index: String,
    embedder: Option<String>,
    k: usize,
    leaf_depth: usize,
}

#[derive(Debug, Serialize)]
struct ConfigRecord<'a> {
    spec: String,
    formulation: String,
    index: &'a IndexRecord,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata;
    use mtr_retrieve::IndexOptions;

    /// BM25 over the real clapnq corpus with a fusion of two BM25 formulations is not possible
    /// (one spec, one formulation), so fuse bm25 with itself at different weights: the ablation
    /// of a fusion of identical parts contributes nothing, and standalone bm25 equals
    /// `retrieve_benchmark`'s run.
    #[tokio::test]
    async fn bm25_runs_match_retrieve_benchmark_and_ablation_is_consistent() {
        let Some(dir) = testdata::clapnq() else {
            return;
        };
        let prepared = crate::job::prepare(&dir, None).unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let src = mtr_retrieve::CorpusSource::detect(dir.root()).unwrap();
        let idx = mtr_retrieve::ensure_index(
            &src,
            &tmp.path().join("index"),
            &IndexOptions::default(),
            &mtr_core::progress::NoProgress,
        )
        .unwrap();
        let setup = RetrievalSetup {
            bench: &prepared.bench,
            set: &prepared.set,
            index: &idx,
            embedder: None,
            rewriter: None,
            k: 20,
            progress: &mtr_core::progress::NoProgress,
        };
        let specs: Vec<RetrieverSpec> = vec![
            "bm25".parse().unwrap(),
            "rrf(bm25,bm25=0.5)".parse().unwrap(),
        ];
        let forms: Vec<QueryFormulation> =
            vec!["rewrite".parse().unwrap(), "last".parse().unwrap()];
        let (systems, ablations) = run_all(&setup, &specs, &forms).await.unwrap();
        let names: Vec<&str> = systems.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "bm25.rewrite",
                "bm25.last",
                "rrf(bm25,bm25=0.5).rewrite",
                "rrf(bm25,bm25=0.5).last"
            ]
        );
        let bm25 = idx.bm25().unwrap();
        let reference = mtr_retrieve::retrieve_benchmark(
            &prepared.bench,
            &bm25,
            &forms[0],
            20,
            None,
            &mtr_core::progress::NoProgress,
        )
        .await
        .unwrap();
        for q in &prepared.set.queries {
            let ours: Vec<&str> = systems[0].run[&q.qid]
                .iter()
                .map(|(d, _)| d.as_str())
                .collect();
            let theirs: Vec<&str> = reference.run[&q.qid]
                .iter()
                .map(|(d, _)| d.as_str())
                .collect();
            assert_eq!(ours, theirs, "{}", q.qid);
        }
        assert_eq!(ablations.len(), 2);
        assert_eq!(ablations[0].without.len(), 2);
        // Fusing a ranking with itself keeps its order: each leave-one-out run ranks as bm25.
        for (_, run) in &ablations[0].without {
            for q in prepared.set.queries.iter().take(20) {
                let a: Vec<&str> = run[&q.qid].iter().map(|(d, _)| d.as_str()).collect();
                let b: Vec<&str> = systems[0].run[&q.qid]
                    .iter()
                    .map(|(d, _)| d.as_str())
                    .collect();
                assert_eq!(a, b);
            }
        }
        assert!(systems[0].queries.values().next().is_some());
        assert_ne!(systems[0].config_hash, systems[1].config_hash);
    }
}
