//! Hard negatives of each turn with a gold, from the benchmark's own retrievers (BM25, and
//! dense when the caller gives one): each retriever's ranking with the turn's golds excluded,
//! interleaved rank by rank so that neither drowns the other, then kept in that order unless
//! the audit rules a passage out or it is a near-duplicate of a gold (the audit's word-shingle
//! overlap, [`crate::items::missing_gold::shingle_overlap`]).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use mtr_core::{Benchmark, Passage};
use mtr_retrieve::{QueryFormulation, Retriever};

use super::audited::AuditExclusions;
use crate::error::{AuditError, Result};
use crate::items::missing_gold::shingle_overlap;

/// Turns searched at once: a batch of BM25 queries, or of embeddings, at a time.
const BATCH: usize = 256;

/// A turn with at least one relevant gold, and its query text.
#[derive(Debug, Clone)]
pub(crate) struct GoldTurn {
    pub dialogue: usize,
    pub turn: usize,
    pub query: String,
    /// Every gold id of the turn (judged non-relevant ones too: none may be a negative).
    pub gold: Vec<String>,
    /// The relevant ones (grade > 0), the positives.
    pub positives: Vec<String>,
}

/// The turns with a relevant gold and their queries in `formulation`.
pub(crate) fn gold_turns(
    bench: &Benchmark,
    formulation: &QueryFormulation,
) -> Result<Vec<GoldTurn>> {
    let mut out = Vec::new();
    for (di, d) in bench.dialogues.iter().enumerate() {
        for (ti, t) in d.turns.iter().enumerate() {
            let positives: Vec<String> = t.relevant().map(|g| g.passage_id.clone()).collect();
            if positives.is_empty() {
                continue;
            }
            let (query, _) = formulation.formulate(d, ti)?;
            out.push(GoldTurn {
                dialogue: di,
                turn: ti,
                query,
                gold: t.gold.iter().map(|g| g.passage_id.clone()).collect(),
                positives,
            });
        }
    }
    Ok(out)
}

/// Each turn's candidates, best first: the retrievers' rankings interleaved, golds left out.
pub(crate) async fn candidates(
    turns: &[GoldTurn],
    retrievers: &[Arc<dyn Retriever>],
    depth: usize,
    progress: &dyn mtr_core::progress::Progress,
) -> Result<Vec<Vec<String>>> {
    let mut rankings: Vec<Vec<Vec<String>>> = vec![Vec::new(); turns.len()];
    progress.stage(
        "mining hard negatives",
        (turns.len() * retrievers.len()) as u64,
    );
    for r in retrievers {
        for (start, chunk) in (0..).step_by(BATCH).zip(turns.chunks(BATCH)) {
            let queries: Vec<mtr_retrieve::Query> = chunk
                .iter()
                .map(|t| {
                    mtr_retrieve::Query::new(t.query.clone()).excluding(t.gold.iter().cloned())
                })
                .collect();
            let hits = r
                .search(&queries, depth)
                .await
                .map_err(|source| AuditError::Search {
                    retriever: r.name(),
                    source,
                })?;
            for (i, h) in hits.into_iter().enumerate() {
                rankings[start + i].push(h.into_iter().map(|h| h.id).collect());
            }
            progress.advance(chunk.len() as u64);
        }
    }
    progress.finish_stage();
    Ok(turns
        .iter()
        .zip(rankings)
        .map(|(t, lists)| interleave(&lists, &t.gold))
        .collect())
}

/// Rank 1 of each list, then rank 2 of each, ...; each id once, none of `gold`.
fn interleave(lists: &[Vec<String>], gold: &[String]) -> Vec<String> {
    let mut seen: HashSet<&str> = gold.iter().map(String::as_str).collect();
    let mut out = Vec::new();
    let longest = lists.iter().map(Vec::len).max().unwrap_or(0);
    for rank in 0..longest {
        for l in lists {
            if let Some(id) = l.get(rank)
                && seen.insert(id)
            {
                out.push(id.clone());
            }
        }
    }
    out
}

/// What the filters took out of the candidates while filling the negatives.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Removed {
    /// Passages the audit suggests as missing gold or a judge rated relevant for the turn.
    pub audit: usize,
    /// Near-duplicates of a positive (word 5-shingle overlap at or above the threshold).
    pub near_duplicate: usize,
}

/// The rules a negative passes.
pub(crate) struct Filter<'a> {
    pub audit: Option<&'a AuditExclusions>,
    pub near_duplicate: f64,
    pub wanted: usize,
}

impl Filter<'_> {
    /// The first `wanted` candidates that pass, and what was removed on the way.
    pub(crate) fn negatives(
        &self,
        turn_id: &str,
        candidates: &[String],
        positives: &[&Passage],
        texts: &HashMap<String, Passage>,
        removed: &mut Removed,
    ) -> Vec<String> {
        let mut out = Vec::with_capacity(self.wanted);
        for c in candidates {
            if out.len() == self.wanted {
                break;
            }
            if self.audit.is_some_and(|a| a.excludes(turn_id, c)) {
                removed.audit += 1;
                continue;
            }
            let Some(p) = texts.get(c) else { continue };
            if positives
                .iter()
                .any(|g| shingle_overlap(&g.text, &p.text) >= self.near_duplicate)
            {
                removed.near_duplicate += 1;
                continue;
            }
            out.push(c.clone());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rankings_interleave_without_golds_or_repeats() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let got = interleave(&[s(&["a", "g", "b"]), s(&["c", "a", "d", "e"])], &s(&["g"]));
        assert_eq!(got, s(&["a", "c", "b", "d", "e"]));
    }
}
