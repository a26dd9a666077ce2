//! How a unit of the benchmark becomes a judge's request: the turn in its dialogue, the
//! passages or answer the unit's dimension shows, fitted to the judges' context. The judge
//! stage and the missing-gold check render through it (the human calibration set has its own
//! renderer, [`crate::human::calibration::HumanRender`]).

use std::collections::HashMap;

use mtr_core::{Benchmark, Passage};
use mtr_llm::ChatRequest;

use crate::dimension::Dimension;
use crate::error::{AuditError, Result};
use crate::items::selection;
use crate::judges::engine::{Render, Unit};
use crate::judges::prompts::{
    AuditPrompts, ContextBudget, Fitted, TurnView, fit_to, passage_display,
};

/// Renders benchmark units (`Unit::source` indexes `subjects`).
pub(crate) struct BenchRender<'a> {
    pub bench: &'a Benchmark,
    pub passages: &'a HashMap<String, Passage>,
    pub prompts: &'a AuditPrompts,
    /// (dialogue index, turn index) per unit source.
    pub subjects: &'a [(usize, usize)],
    /// The judges' context: prompts are shortened to fit it.
    pub budget: Option<ContextBudget>,
    /// The judges (indices into the ensemble) whose discriminability picks are read from
    /// label probabilities (`[audit.letter_picks]`): their pools' requests carry the labels
    /// as a 1..N scale under `choice`, which an endpoint reading probabilities prefills.
    pub letter_judges: &'a [usize],
}

impl BenchRender<'_> {
    fn text(&self, id: &str) -> Result<String> {
        self.passages
            .get(id)
            .map(passage_display)
            .ok_or_else(|| AuditError::Internal(format!("passage `{id}` was not loaded")))
    }

    /// The unit's request, its history shortened to the judges' context (or too long).
    pub(crate) fn fitted(&self, u: &Unit) -> Result<Fitted> {
        let (d, t) = self.subjects[u.source];
        let dialogue = &self.bench.dialogues[d];
        let turn = &dialogue.turns[t];
        let view = TurnView::new(dialogue, t);
        let answer = turn.answer.as_deref().unwrap_or_default();
        let what: Vec<String> = match u.dimension {
            Dimension::Alignment => vec![self.text(u.passage_id.as_deref().unwrap_or_default())?],
            Dimension::Completeness => u
                .pool
                .as_deref()
                .unwrap_or_default()
                .iter()
                .map(|id| self.text(id))
                .collect::<Result<Vec<_>>>()?,
            Dimension::Faithfulness => selection::relevant_gold(turn)
                .into_iter()
                .filter_map(|g| self.passages.get(g))
                .map(passage_display)
                .collect(),
            Dimension::Quality => Vec::new(),
        };
        let render = |v: &TurnView<'_>| match u.dimension {
            Dimension::Alignment => self
                .prompts
                .alignment(v, what.first().map(String::as_str).unwrap_or_default()),
            Dimension::Completeness => {
                let req = self.prompts.completeness(v, &what)?;
                Ok(match u.judge {
                    Some(ji) if self.letter_judges.contains(&ji) => {
                        req.with_rating("choice", 1, what.len() as i64)
                    }
                    _ => req,
                })
            }
            Dimension::Faithfulness => self.prompts.faithfulness(v, &what, answer),
            Dimension::Quality => self.prompts.quality(v, answer),
        };
        fit_to(self.budget.as_ref(), &view, &render)
    }
}

impl Render for BenchRender<'_> {
    fn render(&self, u: &Unit) -> Result<ChatRequest> {
        self.fitted(u)?.request(|tokens, limit| {
            format!(
                "a prompt of {} needs {tokens} tokens of {limit} (it was screened out)",
                u.turn_id
            )
        })
    }
    fn prompt_id(&self, dim: Dimension) -> String {
        self.prompts.get(dim).id()
    }
    fn relevance(&self, u: &Unit) -> Result<Option<crate::judges::relevance::RelevanceInput>> {
        let (d, t) = self.subjects[u.source];
        let dialogue = &self.bench.dialogues[d];
        let turn = &dialogue.turns[t];
        let previous = t.checked_sub(1).map(|p| dialogue.turns[p].user.as_str());
        let ids: Vec<&str> = match u.dimension {
            Dimension::Completeness => u
                .pool
                .as_deref()
                .unwrap_or_default()
                .iter()
                .map(String::as_str)
                .collect(),
            _ => u.passage_id.as_deref().into_iter().collect(),
        };
        Ok(Some(crate::judges::relevance::RelevanceInput {
            query: crate::judges::relevance::query(previous, &turn.user, turn.rewrite.as_deref()),
            passages: ids
                .into_iter()
                .map(|id| self.text(id))
                .collect::<Result<_>>()?,
        }))
    }
}
