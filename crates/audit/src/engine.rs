//! Runs judgements against the LLM layer and turns answers into [`Judgement`] records
//! ([`crate::answer::record`]).
//!
//! Every judge gets its own stream of calls, as wide as its endpoint's capacity (replicas x
//! max concurrency, doubled so cache hits and rendering never leave a slot idle), so a slow
//! judge never starves a fast one. Prompts are rendered lazily as slots free up: memory stays
//! flat for any audit size. A budget stop (`--max-cost`) ends submission cleanly: what was
//! answered is kept, and a rerun answers the rest (finished calls come from the cache). The
//! time budget's [`Gate`] ends it the same way at its deadline, and keeps the dialogues its
//! plan did not start from being judged at all.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::stream::{self, BoxStream, StreamExt};
use mtr_core::progress::SharedProgress;
use mtr_llm::client::Target;
use mtr_llm::{ChatRequest, ChatResult, Llm, LlmError};

pub use crate::answer::record;
use crate::budget::Gate;
use crate::dimension::Dimension;
use crate::error::{AuditError, Result};
use crate::record::{Judgement, judgement_id};
pub use crate::unit::{JudgeRef, Unit};

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
    /// judge); `None` = not judged (budget stop or dry run). Boxed: a million empty slots of a
    /// dry run or Batch export take 8 MB, not the 0.5 GB of unboxed judgements.
    pub records: Vec<Option<Box<Judgement>>>,
    /// Why submission stopped early.
    pub stopped: Option<String>,
    /// Judgements reused from an earlier run of the same audit.
    pub reused: usize,
}

/// The earlier run's record of (unit, judge, sample) when it stands (see [`reusable`]).
pub(crate) fn reused_record<'e>(
    existing: &'e HashMap<String, Judgement>,
    u: &Unit,
    j: &JudgeRef,
    sample: u32,
    prompt_ids: &HashMap<Dimension, String>,
) -> Option<&'e Judgement> {
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
        sample,
    );
    existing.get(&id).filter(|old| reusable(old, u, j, prompt))
}

/// The prompt id of every dimension.
pub(crate) fn prompt_ids(render: &dyn Render) -> HashMap<Dimension, String> {
    Dimension::ALL
        .iter()
        .map(|d| (*d, render.prompt_id(*d)))
        .collect()
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
    /// `--time-budget`: the dialogues the plan starts and the deadline of new calls.
    pub gate: Gate,
}

/// One judgement to make: (unit index, judge index, sample).
pub(crate) type Job = (usize, usize, u32);

/// Judges every unit with every judge (`samples` each). `existing` holds records of an earlier
/// run by judgement id; a valid one with the same prompt, model and pool is kept as it was.
/// Progress advances by one per judgement made; the caller opens and closes the stage.
pub async fn judge_units(
    ctx: &Judging<'_>,
    units: &[Unit],
    render: &dyn Render,
    existing: &HashMap<String, Judgement>,
) -> Result<Judged> {
    let jobs = jobs_of(units, ctx.judges, ctx.samples.max(1));
    let prompt_ids = prompt_ids(render);
    let mut c = Collector {
        jobs: &jobs,
        units,
        ctx,
        prompt_ids: &prompt_ids,
        records: vec![None; jobs.len()],
        reused: 0,
        answers: HashMap::new(),
        copies: Vec::new(),
        stopped: None,
        fatal: None,
        stop: Arc::new(AtomicBool::new(false)),
    };
    let todo = c.reuse(existing);
    let streams: Vec<_> = todo
        .into_iter()
        .enumerate()
        .map(|(ji, mine)| judge_stream(ctx, &ctx.judges[ji], mine, &jobs, units, render, &c.stop))
        .collect();
    let mut all = stream::select_all(streams);
    while let Some((k, out)) = all.next().await {
        c.take(k, out);
    }
    c.fill_copies();
    if ctx.gate.ran_out() && c.records.iter().any(Option::is_none) {
        c.stopped
            .get_or_insert_with(|| "the time budget was spent".to_string());
    }
    if let Some(e) = c.fatal {
        return Err(e);
    }
    Ok(Judged {
        records: c.records,
        stopped: c.stopped,
        reused: c.reused,
    })
}

/// Every (unit, judge, sample) to judge, in that order: a unit with a `judge` only for that
/// judge, and relevance judges only in the dimensions they judge.
pub(crate) fn jobs_of(units: &[Unit], judges: &[JudgeRef], samples: u32) -> Vec<Job> {
    let mut jobs = Vec::new();
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
    jobs
}

/// One judge's calls, as wide as its endpoint's capacity (doubled), stopping when `stop` is
/// set or the time budget's gate closes. Prompts are rendered in job order: the first job with
/// a given request calls, later identical ones (two golds with the same text, say) copy its
/// answer as a cache hit, whatever the timing.
fn judge_stream<'a>(
    ctx: &Judging<'_>,
    judge: &JudgeRef,
    mine: Vec<usize>,
    jobs: &'a [Job],
    units: &'a [Unit],
    render: &'a dyn Render,
    stop: &Arc<AtomicBool>,
) -> BoxStream<'a, (usize, Result<Answer>)> {
    let judge = judge.clone();
    let width = ctx.llm.capacity(&Target::Endpoint(judge.name.clone())) * 2;
    let stop = stop.clone();
    let gate = ctx.gate.clone();
    let llm = ctx.llm.clone();
    let mut first_of: HashMap<blake3::Hash, usize> = HashMap::new();
    stream::iter(mine)
        .take_while(move |_| futures::future::ready(!stop.load(Ordering::Relaxed) && gate.open()))
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
                        std::collections::hash_map::Entry::Occupied(e) => Prepared::Copy(*e.get()),
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
                        llm.spawn_chat(Target::Endpoint(judge.name.clone()), *req)
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
        .buffer_unordered(width.max(1))
        .boxed()
}

/// Collects the answers of a judging run into its records.
struct Collector<'a> {
    jobs: &'a [Job],
    units: &'a [Unit],
    ctx: &'a Judging<'a>,
    prompt_ids: &'a HashMap<Dimension, String>,
    records: Vec<Option<Box<Judgement>>>,
    reused: usize,
    /// Answers by job, for the jobs that copy them.
    answers: HashMap<usize, std::result::Result<ChatResult, String>>,
    /// (job, job whose answer it copies).
    copies: Vec<(usize, usize)>,
    /// Why submission stopped early (budget, Batch API).
    stopped: Option<String>,
    /// The first error that ends the run.
    fatal: Option<AuditError>,
    /// Set to end every judge's submission.
    stop: Arc<AtomicBool>,
}

impl Collector<'_> {
    /// Keeps the reusable records of an earlier run; the other jobs, per judge, to judge.
    fn reuse(&mut self, existing: &HashMap<String, Judgement>) -> Vec<Vec<usize>> {
        let mut todo: Vec<Vec<usize>> = vec![Vec::new(); self.ctx.judges.len()];
        for (k, &(ui, ji, s)) in self.jobs.iter().enumerate() {
            let (u, j) = (&self.units[ui], &self.ctx.judges[ji]);
            match reused_record(existing, u, j, s, self.prompt_ids) {
                Some(old) => {
                    self.records[k] = Some(Box::new(old.clone()));
                    self.reused += 1;
                }
                // a dialogue the time budget's plan does not start is not judged
                None if !self.ctx.gate.allows(&u.dialogue_id) => {}
                None => todo[ji].push(k),
            }
        }
        todo
    }

    /// Records what came back for job `k` (copies wait for [`Self::fill_copies`]).
    fn take(&mut self, k: usize, out: Result<Answer>) {
        let progress = self.ctx.progress;
        let res = match out {
            Ok(Answer::Called(r)) => r,
            Ok(Answer::Relevance(Ok(j))) => {
                progress.advance(1);
                self.records[k] = Some(Box::new(j));
                return;
            }
            Ok(Answer::Relevance(Err(e))) => Err(e),
            Ok(Answer::Skipped) => {
                progress.advance(1);
                return;
            }
            Ok(Answer::CopyOf(k0)) => {
                self.copies.push((k, k0));
                return;
            }
            Err(e) => {
                self.stop.store(true, Ordering::Relaxed);
                self.fatal.get_or_insert(e);
                return;
            }
        };
        let Some(res) = self.settle(res) else {
            return;
        };
        // token and cost usage reach the progress display through the LLM client itself
        progress.advance(1);
        // whether the LLM cache answered depends on earlier (interrupted) runs: not recorded,
        // so items.jsonl is the same whatever the interruptions
        let own = res.clone().map(|mut r| {
            r.cached = false;
            r
        });
        self.records[k] = Some(Box::new(self.record(k, own)));
        self.answers.insert(k, res);
    }

    /// A call's outcome: an answer or a per-item failure to record, or `None` when nothing is
    /// recorded (dry run, queued for the Batch API, budget stop, an error that ends the run).
    fn settle(
        &mut self,
        res: std::result::Result<ChatResult, LlmError>,
    ) -> Option<std::result::Result<ChatResult, String>> {
        match res {
            Ok(r) => Some(Ok(r)),
            Err(LlmError::DryRun) => {
                self.ctx.progress.advance(1);
                None
            }
            Err(LlmError::Batched) => {
                // queued for the Batch API: the judgement is made on the next pass
                self.ctx.progress.advance(1);
                self.stopped
                    .get_or_insert_with(|| "judgements queued for the Batch API".to_string());
                None
            }
            Err(e) if e.is_budget_stop() => {
                self.stop.store(true, Ordering::Relaxed);
                self.stopped.get_or_insert_with(|| e.to_string());
                None
            }
            Err(e @ (LlmError::Provider { .. } | LlmError::Parse { .. })) => {
                Some(Err(e.to_string()))
            }
            Err(e) => {
                self.stop.store(true, Ordering::Relaxed);
                self.fatal.get_or_insert(AuditError::Llm(e.to_string()));
                None
            }
        }
    }

    /// Jobs whose request was identical to an earlier job's get its answer, as a cache hit.
    fn fill_copies(&mut self) {
        let mut copies = std::mem::take(&mut self.copies);
        copies.sort_unstable();
        for (k, k0) in copies {
            let Some(res) = self.answers.get(&k0) else {
                continue;
            };
            let copied = res.clone().map(|mut r| {
                r.cached = true;
                r.cost_usd = 0.0;
                r.answer_cost_usd = 0.0;
                r
            });
            self.ctx.progress.advance(1);
            self.records[k] = Some(Box::new(self.record(k, copied)));
        }
    }

    fn record(&self, k: usize, res: std::result::Result<ChatResult, String>) -> Judgement {
        let (ui, ji, sample) = self.jobs[k];
        let unit = &self.units[ui];
        let prompt = &self.prompt_ids[&unit.dimension];
        record(unit, &self.ctx.judges[ji], sample, prompt, res)
    }
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
