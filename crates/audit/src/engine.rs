//! Runs judgements against the LLM layer and turns answers into [`Judgement`] records.
//!
//! Every judge gets its own stream of calls, as wide as its endpoint's capacity (replicas x
//! max concurrency, doubled so cache hits and rendering never leave a slot idle), so a slow
//! judge never starves a fast one. Prompts are rendered lazily as slots free up: memory stays
//! flat for any audit size. A budget stop (`--max-cost`) ends submission cleanly: what was
//! answered is kept, and a rerun answers the rest (finished calls come from the cache).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::stream::{self, StreamExt};
use mtr_core::progress::SharedProgress;
use mtr_llm::{ChatRequest, ChatResult, Llm, LlmError, ParseStatus};

use crate::dimension::Dimension;
use crate::error::{AuditError, Result};
use crate::record::{Judgement, ParseOutcome, PickVerdict, RatingVerdict, judgement_id};

/// One thing to judge, the same for every judge: an item (and trial, for completeness).
#[derive(Debug, Clone, PartialEq)]
pub struct Unit {
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
}

/// A judge of the ensemble.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JudgeRef {
    pub name: String,
    pub model: String,
}

/// Renders the request for a unit (the same for every judge).
pub trait Render: Send + Sync {
    fn render(&self, unit: &Unit) -> Result<ChatRequest>;
    /// Prompt id (`name@version`) of a dimension.
    fn prompt_id(&self, dim: Dimension) -> String;
}

/// What a judging run produced.
#[derive(Debug)]
pub struct Judged {
    /// One slot per (unit, judge, sample) in that order; `None` = not judged (budget stop or
    /// dry run).
    pub records: Vec<Option<Judgement>>,
    /// Why submission stopped early.
    pub stopped: Option<String>,
    /// Judgements reused from an earlier run of the same audit.
    pub reused: usize,
}

/// Index of a (unit, judge, sample) slot.
pub fn slot(unit: usize, judge: usize, sample: u32, judges: usize, samples: u32) -> usize {
    (unit * judges + judge) * samples as usize + sample as usize
}

fn reusable(old: &Judgement, unit: &Unit, judge: &JudgeRef, prompt: &str) -> bool {
    old.ok()
        && old.model == judge.model
        && old.prompt == prompt
        && old.pool == unit.pool
        && old.gold_position == unit.gold_position
}

/// Who judges: the client, the ensemble, self-consistency samples per judge, progress.
pub struct Judging<'a> {
    pub llm: &'a Llm,
    pub judges: &'a [JudgeRef],
    pub samples: u32,
    pub progress: &'a SharedProgress,
}

/// Judges every unit with every judge (`samples` each). `existing` holds records of an earlier
/// run by judgement id; a valid one with the same prompt, model and pool is kept as it was.
pub async fn judge_units(
    ctx: &Judging<'_>,
    units: &[Unit],
    render: &dyn Render,
    existing: &HashMap<String, Judgement>,
    stage: &str,
) -> Result<Judged> {
    let (llm, judges, progress) = (ctx.llm, ctx.judges, ctx.progress);
    let samples = ctx.samples.max(1);
    let total = units.len() * judges.len() * samples as usize;
    let mut records: Vec<Option<Judgement>> = vec![None; total];
    let mut todo: Vec<Vec<(usize, u32)>> = vec![Vec::new(); judges.len()];
    let mut reused = 0;
    let prompt_ids: HashMap<Dimension, String> = Dimension::ALL
        .iter()
        .map(|d| (*d, render.prompt_id(*d)))
        .collect();
    for (ui, u) in units.iter().enumerate() {
        for (ji, j) in judges.iter().enumerate() {
            for s in 0..samples {
                let id = judgement_id(
                    u.dimension,
                    &u.turn_id,
                    u.passage_id.as_deref(),
                    u.trial,
                    &j.name,
                    s,
                );
                match existing.get(&id) {
                    Some(old) if reusable(old, u, j, &prompt_ids[&u.dimension]) => {
                        records[slot(ui, ji, s, judges.len(), samples)] = Some(old.clone());
                        reused += 1;
                    }
                    _ => todo[ji].push((ui, s)),
                }
            }
        }
    }
    let pending: usize = todo.iter().map(Vec::len).sum();
    progress.stage(stage, pending as u64);
    let stop = Arc::new(AtomicBool::new(false));
    let stopped: Arc<std::sync::Mutex<Option<String>>> = Arc::new(std::sync::Mutex::new(None));
    let fatal: Arc<std::sync::Mutex<Option<AuditError>>> = Arc::new(std::sync::Mutex::new(None));
    let mut streams = Vec::new();
    for (ji, jobs) in todo.into_iter().enumerate() {
        let judge = judges[ji].clone();
        let width = llm.capacity(&mtr_llm::client::Target::Endpoint(judge.name.clone())) * 2;
        let stop2 = stop.clone();
        let llm = llm.clone();
        let s = stream::iter(jobs)
            .take_while(move |_| futures::future::ready(!stop2.load(Ordering::Relaxed)))
            .map(move |(ui, sample)| {
                let llm = llm.clone();
                let judge = judge.clone();
                async move {
                    let res = match render.render(&units[ui]) {
                        Ok(req) => {
                            let req = req.with_sample(sample);
                            Ok(llm.chat(&judge.name, &req).await)
                        }
                        Err(e) => Err(e),
                    };
                    (ui, ji, sample, res)
                }
            })
            .buffer_unordered(width.max(1));
        streams.push(s.boxed());
    }
    let mut all = stream::select_all(streams);
    while let Some((ui, ji, sample, res)) = all.next().await {
        let unit = &units[ui];
        let judge = &judges[ji];
        let res = match res {
            Ok(r) => r,
            Err(e) => {
                stop.store(true, Ordering::Relaxed);
                if let Ok(mut f) = fatal.lock() {
                    f.get_or_insert(e);
                }
                continue;
            }
        };
        let rec = match res {
            Ok(r) => Some(record(
                unit,
                judge,
                sample,
                &prompt_ids[&unit.dimension],
                Ok(r),
            )),
            Err(LlmError::DryRun) => None,
            Err(e) if e.is_budget_stop() => {
                stop.store(true, Ordering::Relaxed);
                if let Ok(mut s) = stopped.lock() {
                    s.get_or_insert_with(|| e.to_string());
                }
                None
            }
            Err(e @ (LlmError::Provider { .. } | LlmError::Parse { .. })) => Some(record(
                unit,
                judge,
                sample,
                &prompt_ids[&unit.dimension],
                Err(e),
            )),
            Err(e) => {
                stop.store(true, Ordering::Relaxed);
                if let Ok(mut f) = fatal.lock() {
                    f.get_or_insert(AuditError::Llm(e.to_string()));
                }
                None
            }
        };
        // token and cost usage reach the progress display through the LLM client itself
        progress.advance(1);
        records[slot(ui, ji, sample, judges.len(), samples)] = rec;
    }
    progress.finish_stage();
    if let Some(e) = fatal.lock().ok().and_then(|mut f| f.take()) {
        return Err(e);
    }
    let stopped = stopped.lock().ok().and_then(|mut s| s.take());
    Ok(Judged {
        records,
        stopped,
        reused,
    })
}

/// Turns an LLM answer (or a per-item failure) into a record. Values outside the schema's
/// range count as failures, never as scores.
pub fn record(
    unit: &Unit,
    judge: &JudgeRef,
    sample: u32,
    prompt: &str,
    res: std::result::Result<ChatResult, LlmError>,
) -> Judgement {
    let mut j = Judgement {
        id: judgement_id(
            unit.dimension,
            &unit.turn_id,
            unit.passage_id.as_deref(),
            unit.trial,
            &judge.name,
            sample,
        ),
        dimension: unit.dimension,
        judge: judge.name.clone(),
        model: judge.model.clone(),
        dialogue_id: unit.dialogue_id.clone(),
        turn_id: unit.turn_id.clone(),
        turn: unit.turn,
        passage_id: unit.passage_id.clone(),
        trial: unit.trial,
        sample,
        pool: unit.pool.clone(),
        gold_position: unit.gold_position,
        pick_position: None,
        pick_passage_id: None,
        score: None,
        parse_status: ParseOutcome::Failed,
        parse_detail: None,
        justification: None,
        prompt: prompt.to_string(),
        prompt_tokens: 0,
        completion_tokens: 0,
        cost_usd: 0.0,
        cache_hit: false,
        cache_key: String::new(),
    };
    let r = match res {
        Ok(r) => r,
        Err(e) => {
            j.parse_detail = Some(e.to_string());
            return j;
        }
    };
    j.model = r.model.clone();
    j.prompt_tokens = r.usage.prompt_tokens;
    j.completion_tokens = r.usage.completion_tokens;
    j.cost_usd = r.cost_usd;
    j.cache_hit = r.cached;
    j.cache_key = r.key.clone();
    let (outcome, detail) = match &r.status {
        ParseStatus::Ok => (ParseOutcome::Ok, None),
        ParseStatus::Extracted { method } => (ParseOutcome::Extracted, Some(method.clone())),
        ParseStatus::Failed { error } => {
            j.parse_detail = Some(error.clone());
            return j;
        }
    };
    let fail = |mut j: Judgement, why: String| {
        j.parse_status = ParseOutcome::Failed;
        j.parse_detail = Some(why);
        j.score = None;
        j
    };
    if unit.dimension.is_rating() {
        match r.parse::<RatingVerdict>() {
            Ok(v) if (1..=5).contains(&v.rating) => {
                j.score = Some(v.rating as f64);
                j.justification = Some(v.justification);
            }
            Ok(v) => return fail(j, format!("rating {} is outside 1-5", v.rating)),
            Err(e) => return fail(j, e.to_string()),
        }
    } else {
        let pool = unit.pool.as_deref().unwrap_or_default();
        match r.parse::<PickVerdict>() {
            Ok(v) if v.choice >= 1 && (v.choice as usize) <= pool.len() => {
                let pos = v.choice as usize;
                j.pick_position = Some(pos);
                j.pick_passage_id = Some(pool[pos - 1].clone());
                j.score = Some(if Some(pos) == unit.gold_position {
                    1.0
                } else {
                    0.0
                });
                j.justification = Some(v.justification);
            }
            Ok(v) => {
                return fail(
                    j,
                    format!("choice {} is outside 1-{}", v.choice, pool.len()),
                );
            }
            Err(e) => return fail(j, e.to_string()),
        }
    }
    j.parse_status = outcome;
    j.parse_detail = detail;
    j
}
