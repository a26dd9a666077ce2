//! Runs judgements against the LLM layer and turns answers into [`Judgement`] records
//! ([`crate::judges::answer::record`]).
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

use crate::budget::Gate;
use crate::dimension::Dimension;
use crate::error::{AuditError, Result};
pub(crate) use crate::judges::answer::record;
use crate::judges::record::{Judgement, judgement_id};
pub(crate) use crate::judges::unit::{JudgeRef, Unit};

mod rendering;

use rendering::{RENDER_CHUNK, Shared, render_chunk, render_threads, request_identity};
#[cfg(test)]
use rendering::{RENDERS_KEPT, request_hash};

/// Renders the request for a unit (the same for every judge).
pub(crate) trait Render: Send + Sync {
    fn render(&self, unit: &Unit) -> Result<ChatRequest>;
    /// Prompt id (`name@version`) of a dimension.
    fn prompt_id(&self, dim: Dimension) -> String;
    /// What a relevance judge is asked for a unit (query and passages); `None` when this
    /// renderer has nothing for relevance judges.
    fn relevance(&self, _unit: &Unit) -> Result<Option<crate::judges::relevance::RelevanceInput>> {
        Ok(None)
    }
    /// Told of each request the judging rendered for unit `ui` of the units being judged (a
    /// unit may be rendered more than once): a renderer that records prompt lengths while
    /// judging ([`crate::judges::context::Recording`]) reads them here instead of rendering the units
    /// a second time.
    fn rendered(&self, _ui: usize, _unit: &Unit, _req: &ChatRequest) {}
}

/// What a judging run produced.
#[derive(Debug)]
pub(crate) struct Judged {
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
        crate::judges::relevance::PROMPT_ID
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
pub(crate) struct Judging<'a> {
    pub llm: &'a Llm,
    pub judges: &'a [JudgeRef],
    pub samples: u32,
    pub progress: &'a SharedProgress,
    /// `--time-budget`: the dialogues the plan starts and the deadline of new calls.
    pub gate: Gate,
}

/// One judgement to make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Job {
    /// Index of the unit in the units judged.
    pub(crate) unit: usize,
    /// Index of the judge in the ensemble.
    pub(crate) judge: usize,
    /// Self-consistency sample, from 0.
    pub(crate) sample: u32,
}

/// Judges every unit with every judge (`samples` each). `existing` holds records of an earlier
/// run by judgement id; a valid one with the same prompt, model and pool is kept as it was.
/// Progress advances by one per judgement made; the caller opens and closes the stage.
pub(crate) async fn judge_units(
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
    let shared = Shared::new(render, units.len(), &todo, &jobs, ctx.judges);
    let streams: Vec<_> = todo
        .into_iter()
        .enumerate()
        .map(|(ji, mine)| judge_stream(ctx, &ctx.judges[ji], mine, &jobs, units, &shared, &c.stop))
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
                || (judge.relevance && !crate::judges::relevance::judges(u.dimension))
            {
                continue;
            }
            for s in 0..samples {
                jobs.push(Job {
                    unit: ui,
                    judge: ji,
                    sample: s,
                });
            }
        }
    }
    jobs
}

/// One judge's calls, as wide as its endpoint's capacity (doubled; where calls end at once, a
/// dry run or an export, a chunk of calls per task, [`run_batch`]), stopping when `stop` is
/// set or the time budget's gate closes. Prompts are rendered a chunk of jobs at a time on
/// several threads ([`render_chunk`]) and taken in job order: the first job with a given
/// request calls, later identical ones (two golds with the same text, say) copy its answer as
/// a cache hit, whatever the timing.
fn judge_stream<'a>(
    ctx: &Judging<'_>,
    judge: &JudgeRef,
    mine: Vec<usize>,
    jobs: &'a [Job],
    units: &'a [Unit],
    shared: &'a Shared<'a>,
    stop: &Arc<AtomicBool>,
) -> BoxStream<'a, (usize, Result<Answer>)> {
    let render = shared.render;
    let judge = judge.clone();
    let stop = stop.clone();
    let gate = ctx.gate.clone();
    let llm = ctx.llm.clone();
    let at_once = answers_at_once(&llm, &judge);
    let width = llm.capacity(&Target::Endpoint(judge.name.clone())) * 2;
    let relevance = judge.relevance;
    let mut dedup = Dedup {
        render,
        units,
        jobs,
        relevance,
        first_of: HashMap::new(),
        // the judge's calls go out in this order: what its servers' prompt caches will hold
        // (only a dry run's plan reads it; real calls and exports leave it alone)
        prompt_cache: llm
            .is_dry_run()
            .then(|| llm.prompt_cache_model(&judge.name))
            .flatten(),
    };
    let prepared = rendered_in_order(shared, units, jobs, mine, relevance)
        .take_while(move |_| futures::future::ready(!stop.load(Ordering::Relaxed) && gate.open()))
        .map(move |(k, rendered)| (k, dedup.prepare(k, rendered)));
    if at_once {
        // calls that end at once: a chunk's calls made one after the other in one task (a task
        // per call would cost more in waking the runtime's workers than the call itself), while
        // this stream's task renders the next chunks
        let target = Target::Endpoint(judge.name.clone());
        prepared
            .ready_chunks(RENDER_CHUNK)
            .map(move |batch| run_batch(&llm, &judge, &target, units, jobs, batch))
            .buffer_unordered(CHUNKS_IN_FLIGHT)
            .flat_map(stream::iter)
            .boxed()
    } else {
        // a call admitted before the deadline may wait behind slow answers (of this stream
        // or another judging run on the same endpoint) for a server slot: the client does not
        // send it once the deadline has passed
        let gate = ctx.gate.clone();
        prepared
            .map(move |(k, prepared)| {
                let llm = llm.clone();
                let judge = judge.clone();
                let gate = gate.clone();
                let ui = jobs[k].unit;
                let sample = jobs[k].sample;
                // the call runs in its own task (`Llm::spawn_chat`): this stream's task only
                // renders prompts and collects answers
                async move {
                    let out = match prepared {
                        Ok(Prepared::Call(req)) => Ok(call(&llm, &judge, &gate, *req).await),
                        Ok(other) => {
                            answer_without_call(&llm, &judge, &units[ui], sample, other).await
                        }
                        Err(e) => Err(e),
                    };
                    (k, out)
                }
            })
            .buffer_unordered(width.max(1))
            .boxed()
    }
}

/// One judge's jobs rendered a chunk at a time on several threads (a relevance judge's inputs
/// are read one by one later), in job order.
fn rendered_in_order<'a>(
    shared: &'a Shared<'a>,
    units: &'a [Unit],
    jobs: &'a [Job],
    mine: Vec<usize>,
    relevance: bool,
) -> impl futures::Stream<Item = (usize, Option<Result<(ChatRequest, blake3::Hash)>>)> + 'a {
    let threads = render_threads();
    let chunks: Vec<Vec<usize>> = mine.chunks(RENDER_CHUNK).map(<[usize]>::to_vec).collect();
    stream::iter(chunks)
        .map(move |chunk| {
            let rendered = if relevance {
                Vec::new()
            } else {
                render_chunk(shared, units, jobs, &chunk, threads)
            };
            let mut rendered = rendered.into_iter();
            stream::iter(
                chunk
                    .into_iter()
                    .map(move |k| (k, rendered.next()))
                    .collect::<Vec<_>>(),
            )
        })
        .flatten()
}

/// One call, not sent once the gate's deadline has passed (then [`Answer::NotStarted`]).
async fn call(llm: &Llm, judge: &JudgeRef, gate: &Gate, req: ChatRequest) -> Answer {
    let req = req.start_by(gate.deadline());
    match llm
        .spawn_chat(Target::Endpoint(judge.name.clone()), req)
        .await
    {
        Err(LlmError::NotStarted) => {
            gate.note_ran_out();
            Answer::NotStarted
        }
        answer => Answer::Called(answer),
    }
}

/// Chunks of calls that end at once a judge's stream keeps going ([`run_batch`]).
const CHUNKS_IN_FLIGHT: usize = 4;

/// Whether every call of `judge` ends as soon as it is made: a dry run plans it, an export
/// writes it to the file (but still sends a probability rating: not for a judge that reads
/// ratings so).
fn answers_at_once(llm: &Llm, judge: &JudgeRef) -> bool {
    llm.is_dry_run()
        || (llm.is_exporting() && judge.rating_mode != mtr_llm::logprob::RatingMode::Probability)
}

/// The answers of a batch of prepared jobs whose calls end at once: the calls made in one
/// task ([`Llm::spawn_chats`], started now), in job order, the other jobs answered as
/// [`answer_without_call`] does.
fn run_batch<'a>(
    llm: &Llm,
    judge: &JudgeRef,
    target: &Target,
    units: &'a [Unit],
    jobs: &'a [Job],
    batch: Vec<(usize, Result<Prepared>)>,
) -> impl Future<Output = Vec<(usize, Result<Answer>)>> + Send + use<'a> {
    let mut requests = Vec::new();
    let mut rest = Vec::with_capacity(batch.len());
    for (k, prepared) in batch {
        match prepared {
            Ok(Prepared::Call(req)) => {
                requests.push(*req);
                rest.push((k, None));
            }
            other => rest.push((k, Some(other))),
        }
    }
    let calls = llm.spawn_chats(target.clone(), requests);
    let (llm, judge) = (llm.clone(), judge.clone());
    async move {
        let mut answers = calls.await.into_iter();
        let mut out = Vec::with_capacity(rest.len());
        for (k, prepared) in rest {
            let Job {
                unit: ui, sample, ..
            } = jobs[k];
            let answer = match prepared {
                None => match answers.next() {
                    Some(r) => Ok(Answer::Called(r)),
                    None => Err(AuditError::Internal(format!("job {k} has no answer"))),
                },
                Some(Ok(p)) => answer_without_call(&llm, &judge, &units[ui], sample, p).await,
                Some(Err(e)) => Err(e),
            };
            out.push((k, answer));
        }
        out
    }
}

/// What a prepared job that calls nothing itself gives: a copy of an earlier job's answer, a
/// skip, or a relevance judge's record.
async fn answer_without_call(
    llm: &Llm,
    judge: &JudgeRef,
    unit: &Unit,
    sample: u32,
    prepared: Prepared,
) -> Result<Answer> {
    Ok(match prepared {
        Prepared::Copy(k0) => Answer::CopyOf(k0),
        Prepared::Relevance(input) => Answer::Relevance(
            crate::judges::relevance::judge(llm, judge, unit, sample, input).await,
        ),
        Prepared::Skip => Answer::Skipped,
        Prepared::Call(_) => {
            return Err(AuditError::Internal("a call was left unmade".into()));
        }
    })
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
        for (
            k,
            &Job {
                unit: ui,
                judge: ji,
                sample: s,
            },
        ) in self.jobs.iter().enumerate()
        {
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
            // the deadline passed while the call waited for a slot: not judged, as a job the
            // gate kept out of the stream
            Ok(Answer::NotStarted) => return,
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
                self.fatal.get_or_insert(AuditError::Llm(e));
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
        let Job {
            unit: ui,
            judge: ji,
            sample,
        } = self.jobs[k];
        let unit = &self.units[ui];
        let prompt = &self.prompt_ids[&unit.dimension];
        record(unit, &self.ctx.judges[ji], sample, prompt, res)
    }
}

/// Turns one judge's rendered jobs, in job order, into what to do with each: the first job
/// with a given request calls, later identical ones copy its answer.
struct Dedup<'a> {
    render: &'a dyn Render,
    units: &'a [Unit],
    jobs: &'a [Job],
    relevance: bool,
    first_of: HashMap<blake3::Hash, usize>,
    prompt_cache: Option<mtr_llm::prompt_cache::PromptCacheModel>,
}

impl Dedup<'_> {
    fn prepare(
        &mut self,
        k: usize,
        rendered: Option<Result<(ChatRequest, blake3::Hash)>>,
    ) -> Result<Prepared> {
        let Job {
            unit: ui, sample, ..
        } = self.jobs[k];
        if self.relevance {
            // a renderer without relevance inputs (human calibration): not judged
            return self
                .render
                .relevance(&self.units[ui])
                .map(|input| input.map_or(Prepared::Skip, Prepared::Relevance));
        }
        let (req, rendered) = rendered
            .unwrap_or_else(|| Err(AuditError::Internal(format!("job {k} was not rendered"))))?;
        let req = req.with_sample(sample);
        Ok(
            match self.first_of.entry(request_identity(&rendered, sample)) {
                std::collections::hash_map::Entry::Occupied(e) => Prepared::Copy(*e.get()),
                std::collections::hash_map::Entry::Vacant(v) => {
                    v.insert(k);
                    let mut req = req;
                    req.planned_cached_share =
                        self.prompt_cache.as_mut().map(|m| m.next_request(&req));
                    Prepared::Call(Box::new(req))
                }
            },
        )
    }
}

/// A unit's request, rendered: to call, or identical to an earlier job's.
enum Prepared {
    Call(Box<ChatRequest>),
    Copy(usize),
    /// A relevance judge's query and passages.
    Relevance(crate::judges::relevance::RelevanceInput),
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
    /// A call the time budget's deadline kept from being sent.
    NotStarted,
}

#[cfg(test)]
mod tests;
