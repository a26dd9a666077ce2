//! What the engine judges and who judges it: a [`Unit`] (an item, and a trial for
//! completeness) and a [`JudgeRef`] of the ensemble. Apart from the engine so that the modules
//! that make judgements of a unit (the engine, relevance judges, the answer reader) share them
//! without importing each other.

use mtr_llm::logprob::RatingMode;

use crate::dimension::Dimension;

/// One thing to judge, the same for every judge: an item (and trial, for completeness).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Unit {
    pub dimension: Dimension,
    pub dialogue_id: String,
    pub turn_id: String,
    /// 1-based turn number.
    pub turn: usize,
    pub passage_id: Option<String>,
    pub trial: Option<usize>,
    /// Passage ids in display order (completeness).
    pub pool: Option<Vec<String>>,
    /// 1-based gold position in `pool`.
    pub gold_position: Option<usize>,
    /// Index into whatever the renderer renders from (benchmark item, human item).
    pub source: usize,
    /// Only this judge (index into the ensemble) judges the unit: discriminability pools are
    /// permuted per judge, so a position bias the judges share cannot add up to a majority.
    pub judge: Option<usize>,
}

/// A judge of the ensemble.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JudgeRef {
    pub name: String,
    pub model: String,
    /// How its 1-5 ratings are read (the written grade, or probability-weighted).
    pub rating_mode: RatingMode,
    /// A relevance judge (reranker, embedding model): judges alignment and discriminability
    /// by scores, nothing else (see [`crate::judges::relevance`]).
    pub relevance: bool,
}
