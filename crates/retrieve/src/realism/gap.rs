//! The history gap: how much a turn needs its conversation, measured by retrieval rather
//! than by a judge. For every turn with relevant gold, BM25's recall@10 of that gold with
//! the question alone and with the question made whole (its standalone rewrite, or the
//! user's questions so far where the turn has none); the gap is the second minus the first,
//! so a positive gap is what the history adds. A benchmark whose questions stand on their
//! own has a gap near zero.

use mtr_core::Dialogue;

use crate::bm25::Bm25Index;
use crate::error::Result;
use crate::query::QueryFormulation;
use crate::retriever::Query;

/// The depth recall is measured at.
pub const DEPTH: usize = 10;

/// One judged turn's recalls.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TurnGap {
    /// Index of the dialogue in the slice given.
    pub dialogue: usize,
    /// Recall@10 with the question alone.
    pub alone: f64,
    /// Recall@10 with the question made whole.
    pub whole: f64,
    /// True when the whole question was the turn's rewrite, false when it was the history.
    pub rewrite: bool,
}

/// The recalls of every judged turn of `dialogues`, in order.
pub(crate) fn turn_gaps(dialogues: &[&Dialogue], bm25: &Bm25Index) -> Result<Vec<TurnGap>> {
    let history = QueryFormulation::All;
    let mut alone = Vec::new();
    let mut whole = Vec::new();
    let mut meta = Vec::new();
    for (d, dialogue) in dialogues.iter().enumerate() {
        for (i, turn) in dialogue.turns.iter().enumerate() {
            let gold: Vec<&str> = turn.relevant().map(|g| g.passage_id.as_str()).collect();
            if gold.is_empty() {
                continue;
            }
            let rewrite = turn.rewrite.as_deref().filter(|r| !r.trim().is_empty());
            let context = match rewrite {
                Some(r) => r.to_string(),
                None => history.formulate(dialogue, i)?.0,
            };
            alone.push(Query::new(turn.user.clone()));
            whole.push(Query::new(context));
            meta.push((d, gold, rewrite.is_some()));
        }
    }
    let hits_alone = bm25.search_batch(&alone, DEPTH)?;
    let hits_whole = bm25.search_batch(&whole, DEPTH)?;
    let recall = |hits: &[crate::retriever::Hit], gold: &[&str]| {
        let found = gold
            .iter()
            .filter(|g| hits.iter().any(|h| h.id == **g))
            .count();
        found as f64 / gold.len() as f64
    };
    Ok(meta
        .into_iter()
        .zip(hits_alone.iter().zip(&hits_whole))
        .map(|((dialogue, gold, rewrite), (a, w))| TurnGap {
            dialogue,
            alone: recall(a, &gold),
            whole: recall(w, &gold),
            rewrite,
        })
        .collect())
}
