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
use mtr_llm::logprob::RatingMode;
use mtr_llm::{ChatRequest, ChatResult, Llm, LlmError, ParseStatus};

use crate::dimension::Dimension;
use crate::error::{AuditError, Result};
use crate::record::{
    Choice, Judgement, ParseOutcome, PickVerdict, RAW_EXCERPT_CHARS, RatingVerdict, judgement_id,
    raw_excerpt,
};

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
    /// Only this judge (index into the ensemble) judges the unit: discriminability pools are
    /// permuted per judge, so a position bias the judges share cannot add up to a majority.
    pub judge: Option<usize>,
}

/// A judge of the ensemble.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JudgeRef {
    pub name: String,
    pub model: String,
    /// How its 1-5 ratings are read (the written grade, or probability-weighted).
    pub rating_mode: RatingMode,
    /// A relevance judge (reranker, embedding model): judges alignment and discriminability
    /// by scores, nothing else (see [`crate::relevance`]).
    pub relevance: bool,
}

/// Renders the request for a unit (the same for every judge).
pub trait Render: Send + Sync {
    fn render(&self, unit: &Unit) -> Result<ChatRequest>;
    /// Prompt id (`name@version`) of a dimension.
    fn prompt_id(&self, dim: Dimension) -> String;
    /// What a relevance judge is asked for a unit (query and passages); `None` when this
    /// renderer has nothing for relevance judges.
    fn relevance(&self, _unit: &Unit) -> Result<Option<crate::relevance::RelevanceInput>> {
        Ok(None)
    }
}

/// What a judging run produced.
#[derive(Debug)]
pub struct Judged {
    /// One slot per (unit, judge, sample) in that order (units with a `judge` only for that
    /// judge); `None` = not judged (budget stop or dry run).
    pub records: Vec<Option<Judgement>>,
    /// Why submission stopped early.
    pub stopped: Option<String>,
    /// Judgements reused from an earlier run of the same audit.
    pub reused: usize,
}

fn reusable(old: &Judgement, unit: &Unit, judge: &JudgeRef, prompt: &str) -> bool {
    old.ok()
        && old.model == judge.model
        && old.prompt == prompt
        && old.pool == unit.pool
        && old.gold_position == unit.gold_position
        && (!unit.dimension.is_rating() || old.rating_mode.unwrap_or_default() == judge.rating_mode)
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
/// Progress advances by one per judgement made; the caller opens and closes the stage.
pub async fn judge_units(
    ctx: &Judging<'_>,
    units: &[Unit],
    render: &dyn Render,
    existing: &HashMap<String, Judgement>,
) -> Result<Judged> {
    let (llm, judges, progress) = (ctx.llm, ctx.judges, ctx.progress);
    let samples = ctx.samples.max(1);
    let mut jobs: Vec<(usize, usize, u32)> = Vec::new();
    for (ui, u) in units.iter().enumerate() {
        for (ji, judge) in judges.iter().enumerate() {
            if u.judge.is_some_and(|only| only != ji)
                || (judge.relevance && !crate::relevance::judges(u.dimension))
            {
                continue;
            }
            for s in 0..samples {
                jobs.push((ui, ji, s));
            }
        }
    }
    let mut records: Vec<Option<Judgement>> = vec![None; jobs.len()];
    let mut todo: Vec<Vec<usize>> = vec![Vec::new(); judges.len()];
    let mut reused = 0;
    let prompt_ids: HashMap<Dimension, String> = Dimension::ALL
        .iter()
        .map(|d| (*d, render.prompt_id(*d)))
        .collect();
    for (k, &(ui, ji, s)) in jobs.iter().enumerate() {
        let (u, j) = (&units[ui], &judges[ji]);
        let prompt = if j.relevance {
            crate::relevance::PROMPT_ID
        } else {
            prompt_ids[&u.dimension].as_str()
        };
        let id = judgement_id(
            u.dimension,
            &u.turn_id,
            u.passage_id.as_deref(),
            u.trial,
            &j.name,
            s,
        );
        match existing.get(&id) {
            Some(old) if reusable(old, u, j, prompt) => {
                records[k] = Some(old.clone());
                reused += 1;
            }
            _ => todo[ji].push(k),
        }
    }
    let jobs = &jobs;
    let stop = Arc::new(AtomicBool::new(false));
    let stopped: Arc<std::sync::Mutex<Option<String>>> = Arc::new(std::sync::Mutex::new(None));
    let fatal: Arc<std::sync::Mutex<Option<AuditError>>> = Arc::new(std::sync::Mutex::new(None));
    let mut streams = Vec::new();
    for (ji, mine) in todo.into_iter().enumerate() {
        let judge = judges[ji].clone();
        let width = llm.capacity(&mtr_llm::client::Target::Endpoint(judge.name.clone())) * 2;
        let stop2 = stop.clone();
        let llm = llm.clone();
        // prompts rendered in job order: the first job with a given request calls, later
        // identical ones (two golds with the same text, say) copy its answer as a cache hit,
        // whatever the timing
        let mut first_of: HashMap<blake3::Hash, usize> = HashMap::new();
        let s = stream::iter(mine)
            .take_while(move |_| futures::future::ready(!stop2.load(Ordering::Relaxed)))
            .map(move |k| {
                let (ui, _, sample) = jobs[k];
                let prepared = if judge.relevance {
                    // a renderer without relevance inputs (human calibration): not judged
                    render
                        .relevance(&units[ui])
                        .map(|input| input.map_or(Prepared::Skip, Prepared::Relevance))
                } else {
                    render.render(&units[ui]).and_then(|req| {
                        let req = req.with_sample(sample);
                        let body = serde_json::to_vec(&req)
                            .map_err(|e| AuditError::Internal(e.to_string()))?;
                        Ok(match first_of.entry(blake3::hash(&body)) {
                            std::collections::hash_map::Entry::Occupied(e) => {
                                Prepared::Copy(*e.get())
                            }
                            std::collections::hash_map::Entry::Vacant(v) => {
                                v.insert(k);
                                Prepared::Call(Box::new(req))
                            }
                        })
                    })
                };
                let llm = llm.clone();
                let judge = judge.clone();
                // the call runs in its own task (`Llm::spawn_chat`): this stream's task only
                // renders prompts and collects answers
                async move {
                    let out = match prepared {
                        Ok(Prepared::Call(req)) => Ok(Answer::Called(
                            llm.spawn_chat(
                                mtr_llm::client::Target::Endpoint(judge.name.clone()),
                                *req,
                            )
                            .await,
                        )),
                        Ok(Prepared::Copy(k0)) => Ok(Answer::CopyOf(k0)),
                        Ok(Prepared::Skip) => Ok(Answer::Skipped),
                        Ok(Prepared::Relevance(input)) => Ok(Answer::Relevance(
                            crate::relevance::judge(&llm, &judge, &units[ui], sample, input).await,
                        )),
                        Err(e) => Err(e),
                    };
                    (k, out)
                }
            })
            .buffer_unordered(width.max(1));
        streams.push(s.boxed());
    }
    let mut answers: HashMap<usize, std::result::Result<ChatResult, String>> = HashMap::new();
    let mut copies: Vec<(usize, usize)> = Vec::new();
    let mut all = stream::select_all(streams);
    while let Some((k, out)) = all.next().await {
        let (ui, ji, sample) = jobs[k];
        let unit = &units[ui];
        let judge = &judges[ji];
        let prompt = &prompt_ids[&unit.dimension];
        let res = match out {
            Ok(Answer::Called(r)) => r,
            Ok(Answer::Relevance(Ok(j))) => {
                progress.advance(1);
                records[k] = Some(j);
                continue;
            }
            Ok(Answer::Relevance(Err(e))) => Err(e),
            Ok(Answer::Skipped) => {
                progress.advance(1);
                continue;
            }
            Ok(Answer::CopyOf(k0)) => {
                copies.push((k, k0));
                continue;
            }
            Err(e) => {
                stop.store(true, Ordering::Relaxed);
                if let Ok(mut f) = fatal.lock() {
                    f.get_or_insert(e);
                }
                continue;
            }
        };
        let res: std::result::Result<ChatResult, String> = match res {
            Ok(r) => Ok(r),
            Err(LlmError::DryRun) => {
                progress.advance(1);
                continue;
            }
            Err(LlmError::Batched) => {
                // queued for the Batch API: the judgement is made on the next pass
                progress.advance(1);
                if let Ok(mut s) = stopped.lock() {
                    s.get_or_insert_with(|| "judgements queued for the Batch API".to_string());
                }
                continue;
            }
            Err(e) if e.is_budget_stop() => {
                stop.store(true, Ordering::Relaxed);
                if let Ok(mut s) = stopped.lock() {
                    s.get_or_insert_with(|| e.to_string());
                }
                continue;
            }
            Err(e @ (LlmError::Provider { .. } | LlmError::Parse { .. })) => Err(e.to_string()),
            Err(e) => {
                stop.store(true, Ordering::Relaxed);
                if let Ok(mut f) = fatal.lock() {
                    f.get_or_insert(AuditError::Llm(e.to_string()));
                }
                continue;
            }
        };
        // token and cost usage reach the progress display through the LLM client itself
        progress.advance(1);
        // whether the LLM cache answered depends on earlier (interrupted) runs: not recorded,
        // so items.jsonl is the same whatever the interruptions
        let own = res.clone().map(|mut r| {
            r.cached = false;
            r
        });
        records[k] = Some(record(unit, judge, sample, prompt, own));
        answers.insert(k, res);
    }
    copies.sort_unstable();
    for (k, k0) in copies {
        let Some(res) = answers.get(&k0) else {
            continue;
        };
        let (ui, ji, sample) = jobs[k];
        let unit = &units[ui];
        let copied = res.clone().map(|mut r| {
            r.cached = true;
            r.cost_usd = 0.0;
            r.answer_cost_usd = 0.0;
            r
        });
        progress.advance(1);
        records[k] = Some(record(
            unit,
            &judges[ji],
            sample,
            &prompt_ids[&unit.dimension],
            copied,
        ));
    }
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

/// A unit's request, rendered: to call, or identical to an earlier job's.
enum Prepared {
    Call(Box<ChatRequest>),
    Copy(usize),
    /// A relevance judge's query and passages.
    Relevance(crate::relevance::RelevanceInput),
    /// Nothing for a relevance judge to judge.
    Skip,
}

/// What came back for a job. Short-lived (one per job, consumed at once), so the size
/// difference between the variants costs nothing worth a heap allocation per call.
#[allow(clippy::large_enum_variant)]
enum Answer {
    Called(std::result::Result<ChatResult, LlmError>),
    CopyOf(usize),
    /// A relevance judge's record (a provider failure is already a failed record).
    Relevance(std::result::Result<Judgement, LlmError>),
    Skipped,
}

/// Turns an LLM answer (or a per-item failure, as its message) into a record. Values outside
/// the schema's range count as failures, never as scores.
pub fn record(
    unit: &Unit,
    judge: &JudgeRef,
    sample: u32,
    prompt: &str,
    res: std::result::Result<ChatResult, String>,
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
        abstention: None,
        score: None,
        rating_mode: unit.dimension.is_rating().then_some(judge.rating_mode),
        rating_distribution: None,
        parse_status: ParseOutcome::Failed,
        parse_detail: None,
        raw_excerpt: None,
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
            j.parse_detail = Some(e);
            return j;
        }
    };
    j.model = r.model.clone();
    j.prompt_tokens = r.usage.prompt_tokens;
    j.completion_tokens = r.usage.completion_tokens;
    j.cost_usd = r.answer_cost_usd;
    j.cache_hit = r.cached;
    j.cache_key = r.key.clone();
    let (outcome, detail) = match &r.status {
        ParseStatus::Ok => (ParseOutcome::Ok, None),
        ParseStatus::Extracted { method } => (ParseOutcome::Extracted, Some(method.clone())),
        ParseStatus::Failed { error } => {
            j.parse_detail = Some(error.clone());
            j.raw_excerpt = raw_excerpt(&r.text, RAW_EXCERPT_CHARS);
            if let Some(refusal) = &r.refusal {
                j.parse_status = ParseOutcome::Refused;
                j.parse_detail = Some("the provider refused to answer".into());
                j.raw_excerpt = raw_excerpt(refusal, RAW_EXCERPT_CHARS);
            }
            return j;
        }
    };
    let text = r.text.clone();
    let fail = |mut j: Judgement, why: String| {
        j.parse_status = ParseOutcome::Failed;
        j.parse_detail = Some(why);
        j.score = None;
        j.pick_position = None;
        j.pick_passage_id = None;
        j.abstention = None;
        j.raw_excerpt = raw_excerpt(&text, RAW_EXCERPT_CHARS);
        j
    };
    if unit.dimension.is_rating()
        && let Some(d) = &r.rating
    {
        // read from the token probabilities: the score is the probability-weighted grade; a
        // whole generated answer still carries its justification, a prefilled one none
        j.score = Some(d.mean);
        j.rating_distribution = Some(d.clone());
        j.justification = r.parse::<RatingVerdict>().ok().map(|v| v.justification);
    } else if unit.dimension.is_rating() {
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
            Ok(PickVerdict {
                justification,
                choice: Choice::Abstain(a),
            }) => {
                j.abstention = Some(a);
                j.justification = Some(justification);
            }
            Ok(PickVerdict {
                justification,
                choice: Choice::Passage(c),
            }) if c >= 1 && (c as usize) <= pool.len() => {
                let pos = c as usize;
                j.pick_position = Some(pos);
                j.pick_passage_id = Some(pool[pos - 1].clone());
                j.score = Some(if Some(pos) == unit.gold_position {
                    1.0
                } else {
                    0.0
                });
                j.justification = Some(justification);
            }
            Ok(PickVerdict {
                choice: Choice::Passage(c),
                ..
            }) => {
                return fail(j, format!("choice {c} is outside 1-{}", pool.len()));
            }
            Err(e) => return fail(j, e.to_string()),
        }
    }
    j.parse_status = outcome;
    j.parse_detail = detail;
    j
}

#[cfg(test)]
mod tests {
    use super::*;
    use mtr_llm::Usage;

    fn unit(dim: Dimension) -> Unit {
        Unit {
            dimension: dim,
            dialogue_id: "d".into(),
            turn_id: "d::1".into(),
            turn: 1,
            passage_id: Some("g".into()),
            trial: Some(0),
            pool: Some(vec!["x".into(), "g".into()]),
            gold_position: Some(2),
            source: 0,
            judge: None,
        }
    }

    fn answer(text: &str, status: ParseStatus, refusal: Option<&str>) -> ChatResult {
        ChatResult {
            value: serde_json::from_str(text).ok(),
            text: text.into(),
            status,
            usage: Usage::default(),
            cost_usd: 0.0,
            answer_cost_usd: 0.0,
            cached: false,
            endpoint: "a".into(),
            model: "a-model".into(),
            sample: 0,
            attempts: 1,
            key: "k".into(),
            finish_reason: Some("stop".into()),
            refusal: refusal.map(Into::into),
            rating: None,
        }
    }

    fn judge() -> JudgeRef {
        JudgeRef {
            name: "a".into(),
            model: "a-model".into(),
            rating_mode: RatingMode::Generated,
            relevance: false,
        }
    }

    #[test]
    fn abstentions_are_valid_answers_without_a_pick() {
        let u = unit(Dimension::Completeness);
        let r = answer(
            r#"{"justification": "neither", "choice": "none"}"#,
            ParseStatus::Ok,
            None,
        );
        let j = record(&u, &judge(), 0, "p@2", Ok(r));
        assert!(j.ok());
        assert_eq!(j.abstention, Some(crate::record::Abstention::None));
        assert_eq!(
            (j.score, j.pick_position, j.pick_passage_id),
            (None, None, None)
        );
        let r = answer(
            r#"{"justification": "both", "choice": "several"}"#,
            ParseStatus::Ok,
            None,
        );
        let j = record(&u, &judge(), 0, "p@2", Ok(r));
        assert_eq!(j.abstention, Some(crate::record::Abstention::Several));
        let r = answer(
            r#"{"justification": "g", "choice": 2}"#,
            ParseStatus::Ok,
            None,
        );
        let j = record(&u, &judge(), 0, "p@2", Ok(r));
        assert_eq!((j.score, j.abstention), (Some(1.0), None));
    }

    #[test]
    fn refusals_have_their_own_status_and_failures_keep_the_raw_answer() {
        let u = unit(Dimension::Alignment);
        let refusal = "I'm sorry, I can't help with that. ".repeat(20);
        let r = answer(
            &refusal,
            ParseStatus::Failed {
                error: "the provider refused to answer".into(),
            },
            Some(&refusal),
        );
        let j = record(&u, &judge(), 0, "p@1", Ok(r));
        assert_eq!(j.parse_status, ParseOutcome::Refused);
        assert!(!j.ok() && j.score.is_none());
        let ex = j.raw_excerpt.unwrap();
        assert!(ex.starts_with("I'm sorry") && ex.chars().count() <= RAW_EXCERPT_CHARS + 3);
        // an unparsable answer is failed, its text kept (cut at a character boundary)
        let prose = format!("Je pense que la réponse est bonne. {}", "é".repeat(400));
        let r = answer(
            &prose,
            ParseStatus::Failed {
                error: "not valid JSON".into(),
            },
            None,
        );
        let j = record(&u, &judge(), 0, "p@1", Ok(r));
        assert_eq!(j.parse_status, ParseOutcome::Failed);
        assert_eq!(j.parse_detail.as_deref(), Some("not valid JSON"));
        assert!(j.raw_excerpt.as_deref().unwrap().starts_with("Je pense"));
        // a rating outside the scale fails, with the answer kept
        let r = answer(
            r#"{"justification": "x", "rating": 9}"#,
            ParseStatus::Ok,
            None,
        );
        let j = record(&u, &judge(), 0, "p@1", Ok(r));
        assert_eq!(j.parse_status, ParseOutcome::Failed);
        assert!(j.raw_excerpt.unwrap().contains("\"rating\": 9"));
    }
}
