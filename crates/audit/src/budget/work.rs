//! Each planned dialogue's remaining work for the time budget's plan: the judgements it needs,
//! those an earlier run's `items.jsonl` already holds, and the calls of the others, estimated
//! one by one as the dry run does ([`mtr_llm::Llm::estimate`]: counted prompt tokens, expected
//! answer tokens, cached calls free). A request identical to an earlier one of the same judge
//! is copied by the engine, not called, so it is not counted either. Each judge's calls pass,
//! in the order its stream sends them, through a model of its servers' prompt caches
//! ([`mtr_llm::prompt_cache`]), as in the engine: the prompt tokens a slot holds already are
//! not timed. Relevance judges (rerankers) answer in one short call without an answer to
//! write: they are not timed.

use std::collections::HashMap;

use mtr_llm::budget::{Work, add_calls};

use crate::error::{AuditError, Result};
use crate::judges::engine::{Job, Judging, Render, Unit, jobs_of, prompt_ids, reused_record};
use crate::judges::record::Judgement;

/// What one dialogue still needs.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct DialogueWork {
    /// Judgements the dialogue needs (every unit, judge and sample).
    pub jobs: usize,
    /// Of them, those an earlier run made.
    pub reused: usize,
    /// The calls of the others, per endpoint.
    pub calls: Work,
}

impl DialogueWork {
    /// Every judgement was made by an earlier run.
    pub(crate) fn done_before(&self) -> bool {
        self.jobs > 0 && self.reused == self.jobs
    }
}

/// Adds the work of `units` (judged by `ctx`'s judges and rendered by `render`) to `into`, by
/// dialogue id.
pub(crate) fn estimate(
    ctx: &Judging<'_>,
    units: &[Unit],
    render: &dyn Render,
    existing: &HashMap<String, Judgement>,
    into: &mut HashMap<String, DialogueWork>,
) -> Result<()> {
    let jobs = jobs_of(units, ctx.judges, ctx.samples.max(1));
    let prompts = prompt_ids(render);
    let mut first_of: Vec<std::collections::HashSet<blake3::Hash>> =
        vec![Default::default(); ctx.judges.len()];
    // each judge's calls in the order its stream sends them: what its prompt caches hold
    let mut prompt_caches: Vec<_> = ctx
        .judges
        .iter()
        .map(|j| ctx.llm.prompt_cache_model(&j.name))
        .collect();
    // jobs come unit by unit: a unit is rendered once for all its judges and samples
    let mut rendered: Option<(usize, mtr_llm::ChatRequest)> = None;
    for &Job {
        unit: ui,
        judge: ji,
        sample,
    } in &jobs
    {
        let (u, judge) = (&units[ui], &ctx.judges[ji]);
        let w = into.entry(u.dialogue_id.clone()).or_default();
        w.jobs += 1;
        if reused_record(existing, u, judge, sample, &prompts).is_some() {
            w.reused += 1;
            continue;
        }
        if judge.relevance {
            continue;
        }
        if rendered.as_ref().is_none_or(|(i, _)| *i != ui) {
            rendered = Some((ui, render.render(u)?));
        }
        let Some((_, req)) = &rendered else {
            continue;
        };
        let mut req = req.clone().with_sample(sample);
        let body = serde_json::to_vec(&req).map_err(|e| AuditError::Internal(e.to_string()))?;
        if !first_of[ji].insert(blake3::hash(&body)) {
            continue;
        }
        req.planned_cached_share = prompt_caches[ji].as_mut().map(|m| m.next_request(&req));
        let p = ctx.llm.estimate(&judge.name, &req)?;
        add_calls(&mut w.calls, &judge.name, &p);
    }
    Ok(())
}
