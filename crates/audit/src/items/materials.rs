//! What the judges will read: the texts of the gold passages (one streaming pass over the
//! corpus keeps only the ids needed) and, for the discriminability test, each turn's hard
//! negatives retrieved from the benchmark's own corpus with the turn's query formulation.
//!
//! Negatives come from every configured retriever (BM25, plus dense when an embedder is
//! configured), interleaved rank by rank. The turn's golds are excluded at retrieval time, and
//! a candidate whose text duplicates a gold's (or an earlier candidate's) is skipped, so no
//! passage is shown twice in one prompt.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use mtr_core::{Benchmark, Passage};
use mtr_retrieve::{Query, QueryFormulation, Retriever};
use rayon::prelude::*;

use crate::config::NegativesQuery;
use crate::error::{AuditError, Result};
use crate::items::pool::{interleave, select_negatives, text_key};
use crate::items::selection::relevant_gold;

/// Streams the corpus once and keeps the passages whose id is in `ids`.
pub(crate) fn load_passages(
    bench: &Benchmark,
    ids: &HashSet<String>,
) -> Result<HashMap<String, Passage>> {
    let mut out = HashMap::with_capacity(ids.len());
    if ids.is_empty() {
        return Ok(out);
    }
    bench.dir.for_each_passage(|_, p| {
        if ids.contains(&p.id) {
            out.insert(p.id.clone(), p);
        }
        Ok(())
    })?;
    Ok(out)
}

/// The ids of all relevant gold passages of the given dialogues.
pub(crate) fn gold_ids(bench: &Benchmark, dialogues: &[usize]) -> HashSet<String> {
    dialogues
        .iter()
        .flat_map(|&d| bench.dialogues[d].turns.iter())
        .flat_map(|t| relevant_gold(t).into_iter().map(str::to_string))
        .collect()
}

/// The query used to retrieve a turn's negatives: `auto` = the benchmark's rewrite when the
/// turn has one, else the conversation (`full:512`); otherwise any retrieval formulation name.
pub(crate) fn negative_query(
    spec: &NegativesQuery,
    bench: &Benchmark,
    dialogue: usize,
    turn: usize,
) -> Result<String> {
    let d = &bench.dialogues[dialogue];
    let t = &d.turns[turn];
    let f = match spec {
        NegativesQuery::Auto => {
            if let Some(r) = t.rewrite.as_deref().filter(|r| !r.trim().is_empty()) {
                return Ok(r.to_string());
            }
            QueryFormulation::Full {
                budget: mtr_retrieve::query::DEFAULT_FULL_BUDGET,
            }
        }
        NegativesQuery::Formulation(f) => *f,
    };
    f.formulate(d, turn)
        .map(|(q, _)| q)
        .map_err(AuditError::Retrieval)
}

/// Hard negatives per turn id (shared by every gold pool of the turn), best first.
pub(crate) struct Negatives {
    pub by_turn: BTreeMap<String, Vec<String>>,
    /// The passages of the negatives (text needed by the prompts).
    pub passages: HashMap<String, Passage>,
}

/// The negatives' queries of `turns` (dialogue index, turn index), each excluding the turn's
/// relevant golds.
pub fn negative_queries(
    bench: &Benchmark,
    turns: &[(usize, usize)],
    query_spec: &NegativesQuery,
) -> Result<Vec<Query>> {
    turns
        .iter()
        .map(|&(d, t)| {
            let turn = &bench.dialogues[d].turns[t];
            let q = negative_query(query_spec, bench, d, t)?;
            let gold: Vec<String> = relevant_gold(turn)
                .into_iter()
                .map(str::to_string)
                .collect();
            Ok(Query::new(q).excluding(gold))
        })
        .collect()
}

/// Depth retrieved per query: extra candidates so that duplicates of gold texts can be
/// skipped and still leave `m` negatives.
pub fn depth(m: usize) -> usize {
    m * 2 + 8
}

/// Candidate passage ids per query (in retriever order), and the passages they name.
pub(crate) type Candidates = (Vec<Vec<String>>, HashMap<String, Passage>);

/// Ranked candidates per query (every retriever interleaved rank by rank) and the passages of
/// all candidates not in `have`. Blocking (BM25 search and a corpus pass): run it off the
/// async workers, e.g. with [`retrieve_candidates`].
pub fn candidates_blocking(
    handle: &tokio::runtime::Handle,
    retrievers: &[Arc<dyn Retriever>],
    queries: &[Query],
    k: usize,
    dir: &mtr_core::BenchmarkDir,
    have: &HashSet<String>,
) -> Result<Candidates> {
    let mut per_retriever: Vec<Vec<Vec<String>>> = Vec::new();
    for r in retrievers {
        let hits = handle
            .block_on(r.search(queries, k))
            .map_err(|source| AuditError::Search {
                retriever: r.name().to_string(),
                source,
            })?;
        per_retriever.push(
            hits.into_iter()
                .map(|h| h.into_iter().map(|x| x.id).collect())
                .collect(),
        );
    }
    let candidates: Vec<Vec<String>> = (0..queries.len())
        .map(|i| {
            let lists: Vec<Vec<String>> = per_retriever
                .iter()
                .map(|r| r.get(i).cloned().unwrap_or_default())
                .collect();
            interleave(&lists)
        })
        .collect();
    let need: HashSet<String> = candidates
        .iter()
        .flatten()
        .filter(|id| !have.contains(*id))
        .cloned()
        .collect();
    let mut loaded = HashMap::with_capacity(need.len());
    if !need.is_empty() {
        dir.for_each_passage(|_, p| {
            if need.contains(&p.id) {
                loaded.insert(p.id.clone(), p);
            }
            Ok(())
        })?;
    }
    Ok((candidates, loaded))
}

/// [`candidates_blocking`] on tokio's blocking pool, so judging can go on meanwhile.
pub(crate) async fn retrieve_candidates(
    retrievers: Vec<Arc<dyn Retriever>>,
    queries: Vec<Query>,
    k: usize,
    dir: mtr_core::BenchmarkDir,
    have: HashSet<String>,
) -> Result<Candidates> {
    let handle = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        candidates_blocking(&handle, &retrievers, &queries, k, &dir, &have)
    })
    .await
    .map_err(|e| AuditError::Internal(format!("retrieval task: {e}")))?
}

/// Picks each turn's `m` negatives from its candidates. `gold` holds the gold passages,
/// `loaded` the candidates' passages (the returned [`Negatives`] keeps those it uses). The
/// turns are picked for on every core (each turn's pick is its own: the same as one by one).
pub(crate) fn select_pools(
    bench: &Benchmark,
    turns: &[(usize, usize)],
    candidates: &[Vec<String>],
    gold: &HashMap<String, Passage>,
    mut loaded: HashMap<String, Passage>,
    m: usize,
) -> Negatives {
    let text_of = |id: &str| {
        gold.get(id)
            .or_else(|| loaded.get(id))
            .map(|p| p.text.as_str())
    };
    let picked: Vec<(&String, Vec<String>)> = turns
        .par_iter()
        .zip(candidates.par_iter())
        .map(|(&(d, t), candidates)| {
            let turn = &bench.dialogues[d].turns[t];
            let exclude: HashSet<&str> = relevant_gold(turn).into_iter().collect();
            let gold_texts: HashSet<String> = exclude
                .iter()
                .filter_map(|g| gold.get(*g))
                .map(|p| text_key(&p.text))
                .collect();
            let negs = select_negatives(
                candidates.iter().map(String::as_str),
                &exclude,
                &text_of,
                &gold_texts,
                m,
            );
            (&turn.id, negs)
        })
        .collect();
    let by_turn: BTreeMap<String, Vec<String>> = picked
        .into_iter()
        .map(|(id, negs)| (id.clone(), negs))
        .collect();
    let used: HashSet<&String> = by_turn.values().flatten().collect();
    loaded.retain(|id, _| used.contains(id));
    Negatives {
        by_turn,
        passages: loaded,
    }
}

/// The retrieval index of the benchmark's corpus in `index_dir`: opened when it exists and was
/// built from this corpus, else (re)built there. Use `.bm25()` for the BM25 retriever.
pub fn corpus_index(
    bench: &Benchmark,
    index_dir: &std::path::Path,
    progress: &dyn mtr_core::progress::Progress,
) -> Result<mtr_retrieve::IndexDir> {
    let src = mtr_retrieve::CorpusSource::Benchmark(bench.dir.clone());
    if index_dir.join("mtr-index.json").is_file()
        && let Ok(idx) = mtr_retrieve::IndexDir::open(index_dir)
        && idx.check_corpus(&src).is_ok()
    {
        return Ok(idx);
    }
    if index_dir.exists() {
        std::fs::remove_dir_all(index_dir).map_err(|e| AuditError::Output {
            path: index_dir.to_path_buf(),
            message: e.to_string(),
        })?;
    }
    let opts = mtr_retrieve::IndexOptions {
        store_text: false,
        ..Default::default()
    };
    mtr_retrieve::IndexBuilder::new(index_dir, opts)
        .build(&src, progress)
        .map_err(retrieval_error)
}

/// A BM25 retriever over [`corpus_index`].
pub fn bm25_index(
    bench: &Benchmark,
    index_dir: &std::path::Path,
    progress: &dyn mtr_core::progress::Progress,
) -> Result<mtr_retrieve::Bm25Index> {
    corpus_index(bench, index_dir, progress)?
        .bm25()
        .map_err(retrieval_error)
}

/// Retrieval errors: bad input stays a user error.
pub(crate) fn retrieval_error(e: mtr_retrieve::Error) -> AuditError {
    if e.is_user_error() {
        AuditError::Core(e.into())
    } else {
        AuditError::Retrieval(e)
    }
}
