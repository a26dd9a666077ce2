//! Chat calls: one endpoint, a load-balanced role, every judge of the ensemble, or many
//! requests as a stream. One call goes cache -> budget -> rate limits -> replica slot -> HTTP
//! with retries -> parse (re-asking with the error on failure) -> cache -> ledger; each of
//! those is a named step below.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use futures::stream::{self, Stream, StreamExt};
use serde_json::{Value, json};

use super::body::{RequestBody, cache_key, probability_rating, serialise_call};
use super::send::{read_choice, read_refusal};
use super::{JudgeVerdicts, Llm, Target};
use crate::balance::Endpoint;
use crate::cache::StoredChat;
use crate::chat::{ChatRequest, ChatResult, OutputSpec, ParseStatus, RatingSpec, Usage};
use crate::config::{Role, Sampling};
use crate::error::{LlmError, Result};
use crate::extract::parse_output;
use crate::ledger::Event;
use crate::tokens;

impl Llm {
    /// One call to the named endpoint (sampling: `req.sampling`, else the judges').
    pub async fn chat(&self, endpoint: &str, req: &ChatRequest) -> Result<ChatResult> {
        let ep = self.endpoint(endpoint)?.clone();
        let sampling = req
            .sampling
            .clone()
            .unwrap_or_else(|| self.inner.config.sampling.judges.clone());
        self.call(&ep, req, &sampling).await
    }

    /// One call to a role, load-balanced over its endpoints (fewest in flight, then round
    /// robin), with the role's sampling unless `req.sampling` is set.
    pub async fn chat_role(&self, role: Role, req: &ChatRequest) -> Result<ChatResult> {
        if role == Role::Embedder {
            return Err(LlmError::Config(
                "the embedder role does not chat; use embed()".into(),
            ));
        }
        let ep = self.pick(role)?;
        let sampling = req
            .sampling
            .clone()
            .unwrap_or_else(|| self.sampling(role).clone());
        self.call(&ep, req, &sampling).await
    }

    /// Every chat judge answers `req`, `n` samples each (sample indices 0..n), all
    /// concurrently. Relevance judges (rerank endpoints, [`Llm::reranker`]) are left out: they
    /// score passages for a query ([`Llm::rerank`]) and cannot answer a chat request.
    pub async fn judge_all(&self, req: &ChatRequest) -> Vec<JudgeVerdicts> {
        let sampling = req
            .sampling
            .clone()
            .unwrap_or_else(|| self.inner.config.sampling.judges.clone());
        let n = sampling.n.max(1);
        let chat_judges = self
            .judges()
            .iter()
            .filter(|name| self.reranker(name).is_none());
        let futs = chat_judges.map(|name| {
            let sampling = sampling.clone();
            async move {
                let ep = match self.endpoint(name) {
                    Ok(e) => e.clone(),
                    Err(e) => {
                        return JudgeVerdicts {
                            judge: name.clone(),
                            model: String::new(),
                            family: None,
                            samples: vec![Err(e)],
                        };
                    }
                };
                let samples = futures::future::join_all((0..n).map(|s| {
                    let r = req.clone().with_sample(req.sample + s);
                    let ep = ep.clone();
                    let sampling = sampling.clone();
                    async move { self.call(&ep, &r, &sampling).await }
                }))
                .await;
                JudgeVerdicts {
                    judge: name.clone(),
                    model: ep.cfg.model.clone(),
                    family: ep.cfg.family.clone(),
                    samples,
                }
            }
        });
        futures::future::join_all(futs).await
    }

    /// Runs many requests with bounded concurrency (the target's capacity, plus room for cache
    /// hits), yielding `(index, result)` as they finish. Memory stays flat for any number of
    /// requests: they are pulled from the iterator only as slots free up.
    pub fn chat_many<I>(
        &self,
        target: Target,
        requests: I,
    ) -> impl Stream<Item = (usize, Result<ChatResult>)> + Send + use<I>
    where
        I: IntoIterator<Item = ChatRequest>,
        I::IntoIter: Send,
    {
        let width = self.capacity(&target) * 2;
        let llm = self.clone();
        stream::iter(requests.into_iter().enumerate())
            .map(move |(i, r)| {
                let call = llm.spawn_chat(target.clone(), r);
                async move { (i, call.await) }
            })
            .buffer_unordered(width)
    }

    /// Starts one call as its own task and returns its result. Callers that keep many calls
    /// in flight from one task (a `buffer_unordered` stream) should use this rather than
    /// [`Llm::chat`]: response handling then spreads over every worker thread instead of
    /// funnelling through the consumer's task. Dropping the future cancels the call.
    pub fn spawn_chat(
        &self,
        target: Target,
        req: ChatRequest,
    ) -> impl Future<Output = Result<ChatResult>> + Send + use<> {
        let llm = self.clone();
        let req = scoped(req);
        let task = tokio::spawn(async move { llm.chat_target(&target, &req).await });
        let guard = AbortOnDrop(task.abort_handle());
        async move {
            let _guard = guard;
            task.await
                .unwrap_or_else(|e| Err(LlmError::Unsupported(format!("call task failed: {e}"))))
        }
    }

    /// Starts the calls `reqs` as one task that makes them one after the other, and returns
    /// their results in order: for calls that end at once (a dry run plans them, an export
    /// writes them to its file), where a task per call ([`Llm::spawn_chat`]) costs more in
    /// waking the runtime's workers than the call itself. Each call is the one
    /// [`Llm::spawn_chat`] makes. Dropping the future cancels the calls not yet made.
    pub fn spawn_chats(
        &self,
        target: Target,
        reqs: Vec<ChatRequest>,
    ) -> impl Future<Output = Vec<Result<ChatResult>>> + Send + use<> {
        let llm = self.clone();
        let n = reqs.len();
        let reqs: Vec<ChatRequest> = reqs.into_iter().map(scoped).collect();
        let task = tokio::spawn(async move {
            let mut out = Vec::with_capacity(reqs.len());
            for req in reqs {
                out.push(llm.chat_target(&target, &req).await);
            }
            out
        });
        let guard = AbortOnDrop(task.abort_handle());
        async move {
            let _guard = guard;
            task.await.unwrap_or_else(|e| {
                (0..n)
                    .map(|_| Err(LlmError::Unsupported(format!("call task failed: {e}"))))
                    .collect()
            })
        }
    }

    /// One call to `target`, an endpoint or a role.
    async fn chat_target(&self, target: &Target, req: &ChatRequest) -> Result<ChatResult> {
        match target {
            Target::Endpoint(n) => self.chat(n, req).await,
            Target::Role(role) => self.chat_role(*role, req).await,
        }
    }

    async fn call(
        &self,
        ep: &Arc<Endpoint>,
        req: &ChatRequest,
        sampling: &Sampling,
    ) -> Result<ChatResult> {
        ep.load.fetch_add(1, Ordering::Relaxed);
        let r = self.call_inner(ep, req, sampling).await;
        ep.load.fetch_sub(1, Ordering::Relaxed);
        r
    }

    /// One call, step by step: the dry-run estimate, the cache, the Batch API queue, the
    /// budget, the exchanges with the endpoint, then the answer booked and cached.
    async fn call_inner(
        &self,
        ep: &Endpoint,
        req: &ChatRequest,
        sampling: &Sampling,
    ) -> Result<ChatResult> {
        // serialised straight from the request: the body's `Value` is built only for a call
        // that is sent or queued
        let body = RequestBody::new(&ep.cfg, req, sampling);
        // a Batch call may be written to a file: its parts serialised once, for key and line
        let serialised = (self.inner.options.batch && !self.inner.options.dry_run)
            .then(|| serialise_call(&ep.cfg.model, req, &body));
        let key = match &serialised {
            Some(s) => s.key.clone(),
            None => cache_key(&ep.cfg.model, req, &body),
        };
        if self.inner.options.dry_run {
            let p = self.estimate_inner(ep, req, sampling, &key);
            self.record_plan(&ep.cfg.name, p);
            return Err(LlmError::DryRun);
        }
        if let Some(hit) = self.cached_answer(&ep.cfg.name, req, &key)? {
            return Ok(hit);
        }
        let probability = probability_rating(&ep.cfg, req);
        // a probability rating needs the response's logprobs, which batch results do not
        // carry through the cache: those requests are sent now (one token each on a server
        // that continues a prefilled answer)
        if self.inner.options.batch && probability.is_none() {
            return self.enqueue_batch(ep, req, body, key, serialised.as_ref());
        }
        let reserved = self.reserve_call(ep, req, sampling)?;
        let answer = self
            .ask(ep, req, body.into_value(), &reserved, probability.as_ref())
            .await?;
        self.settle_answer(ep, req, key, reserved.estimate, answer)
    }

    /// The cached answer to `key`, unless there is no cache or `--refresh` is set.
    fn cached_answer(
        &self,
        name: &str,
        req: &ChatRequest,
        key: &str,
    ) -> Result<Option<ChatResult>> {
        let Some(cache) = &self.inner.cache else {
            return Ok(None);
        };
        if self.inner.options.refresh {
            return Ok(None);
        }
        // an export's calls end at once: an empty cache is not asked a million times
        let hit = if self.inner.options.batch && self.is_exporting() {
            cache.get_chat_unless_empty(key)?
        } else {
            cache.get_chat(key)?
        };
        let Some(hit) = hit else {
            return Ok(None);
        };
        self.inner.ledger.event(name, Event::CacheHit);
        Ok(Some(ChatResult {
            value: hit.value,
            text: hit.text,
            status: hit.status,
            usage: hit.usage,
            cost_usd: 0.0,
            answer_cost_usd: hit.cost_usd,
            cached: true,
            endpoint: name.to_string(),
            model: hit.model,
            sample: req.sample,
            attempts: 0,
            key: key.to_string(),
            finish_reason: hit.finish_reason,
            refusal: None,
            rating: hit.rating,
        }))
    }

    /// Reserves the call's worst-case cost in the budget.
    fn reserve_call(
        &self,
        ep: &Endpoint,
        req: &ChatRequest,
        sampling: &Sampling,
    ) -> Result<Reserved> {
        // Counting costs a tokenizer pass: only when a price or a token limit needs it.
        let priced = ep.cfg.price_in_per_mtok > 0.0
            || ep.cfg.price_out_per_mtok > 0.0
            || ep.cfg.tokens_per_minute.is_some();
        let prompt_est = if priced {
            tokens::count_messages(&ep.cfg.model, &req.messages)
        } else {
            0
        };
        let max_out = u64::from(sampling.max_tokens.unwrap_or(1024));
        let estimate = ep.cfg.cost(prompt_est, max_out);
        self.inner.ledger.reserve(&ep.cfg.name, estimate)?;
        Ok(Reserved {
            tokens: prompt_est + max_out,
            estimate,
        })
    }

    /// Sends the request until it has a usable answer, a refusal, a probability rating, or
    /// its parse retries are spent; an unparsable answer is re-asked with the error.
    async fn ask(
        &self,
        ep: &Endpoint,
        req: &ChatRequest,
        mut body: Value,
        reserved: &Reserved,
        probability: Option<&(&RatingSpec, String)>,
    ) -> Result<Answer> {
        let name = ep.cfg.name.as_str();
        let mut usage = Usage::default();
        let mut attempts = 0u32;
        let mut parse_round = 0u32;
        let pin = crate::affinity::key_of(req)
            .filter(|_| ep.cfg.slot_affinity)
            .map(|k| crate::affinity::key_hash(&k));
        loop {
            let start_by = req.start_by.filter(|_| attempts == 0);
            let resp = match self
                .send_with(ep, &body, reserved.tokens, false, pin, start_by)
                .await
            {
                Ok((v, n)) => {
                    attempts += n;
                    v
                }
                // never sent: nothing failed, the reservation is given back
                Err(LlmError::NotStarted) => {
                    self.inner.ledger.release(reserved.estimate);
                    return Err(LlmError::NotStarted);
                }
                Err(e) => {
                    self.fail_call(ep, reserved.estimate, usage, &e);
                    return Err(e);
                }
            };
            let (text, finish_reason, u) = read_choice(&resp, &ep.cfg.model, &body);
            self.note_server_work(name, &resp, u.prompt_tokens);
            usage.prompt_tokens += u.prompt_tokens;
            usage.completion_tokens += u.completion_tokens;
            let mut answer = Answer {
                text,
                value: None,
                status: ParseStatus::Ok,
                finish_reason,
                usage,
                attempts,
                refusal: None,
                rating: None,
            };
            // a refusal is an answer, not an unparsable one: recorded as such, never re-asked
            if let Some(r) = read_refusal(&resp) {
                answer.refusal = Some(r.clone());
                answer.text = r;
                answer.status = ParseStatus::Failed {
                    error: "the provider refused to answer".into(),
                };
                return Ok(answer);
            }
            if let Some((spec, prefilled)) = probability {
                return Ok(read_probability_rating(req, &resp, spec, prefilled, answer));
            }
            let (value, status) = parse_answer(&req.output, &answer.text, &answer.finish_reason);
            answer.value = value;
            answer.status = status;
            let ParseStatus::Failed { error } = &answer.status else {
                return Ok(answer);
            };
            if parse_round >= self.inner.config.retry.parse_retries {
                return Ok(answer);
            }
            parse_round += 1;
            self.inner.ledger.event(name, Event::ParseRetry);
            tracing::debug!(endpoint = name, error = %error, "unparsable answer; asking again");
            ask_again(&mut body, &req.output, error, &answer.text);
        }
    }

    /// Books a call that failed at the provider: the reservation released, the tokens already
    /// spent on earlier rounds added, the failure counted and noted.
    fn fail_call(&self, ep: &Endpoint, estimate: f64, usage: Usage, e: &LlmError) {
        let name = ep.cfg.name.as_str();
        self.inner.ledger.release(estimate);
        if usage.total() > 0 {
            self.inner.ledger.add_usage(
                name,
                usage.prompt_tokens,
                usage.completion_tokens,
                ep.cfg.cost(usage.prompt_tokens, usage.completion_tokens),
            );
        }
        self.inner.ledger.event(name, Event::ProviderFailed);
        self.inner.ledger.note_error(name, &e.to_string());
    }

    /// Books an answer: settled in the ledger, shown as progress, its parse status counted,
    /// cached when it parsed, returned as the call's result.
    fn settle_answer(
        &self,
        ep: &Endpoint,
        req: &ChatRequest,
        key: String,
        estimate: f64,
        a: Answer,
    ) -> Result<ChatResult> {
        let name = ep.cfg.name.as_str();
        let usage = a.usage;
        let cost = ep.cfg.cost(usage.prompt_tokens, usage.completion_tokens);
        self.inner.ledger.settle(
            name,
            estimate,
            usage.prompt_tokens,
            usage.completion_tokens,
            cost,
        );
        if let Some(p) = &self.inner.options.progress {
            p.usage(usage.total(), cost);
        }
        match &a.status {
            ParseStatus::Failed { error } => {
                self.inner.ledger.event(name, Event::ParseFailed);
                self.inner.ledger.note_error(name, error);
                tracing::warn!(endpoint = name, error = %error, "answer could not be parsed after retries; recorded as failed");
            }
            ParseStatus::Extracted { .. } => self.inner.ledger.event(name, Event::Extracted),
            ParseStatus::Ok => {}
        }
        if a.status.is_ok()
            && let Some(cache) = &self.inner.cache
        {
            let stored = StoredChat {
                value: a.value.clone(),
                text: a.text.clone(),
                status: a.status.clone(),
                usage,
                cost_usd: cost,
                model: ep.cfg.model.clone(),
                finish_reason: a.finish_reason.clone(),
                rating: a.rating.clone(),
            };
            cache.put_chat(&key, req.prompt.as_ref().map(|p| p.id.as_str()), &stored)?;
        }
        Ok(ChatResult {
            value: a.value,
            text: a.text,
            status: a.status,
            usage,
            cost_usd: cost,
            answer_cost_usd: cost,
            cached: false,
            endpoint: name.to_string(),
            model: ep.cfg.model.clone(),
            sample: req.sample,
            attempts: a.attempts,
            key,
            finish_reason: a.finish_reason,
            refusal: a.refusal,
            rating: a.rating,
        })
    }
}

/// The token budget of one call: tokens for the rate limiter, cost reserved in the ledger.
struct Reserved {
    tokens: u64,
    estimate: f64,
}

/// What a call's exchanges ended with, before it is booked.
struct Answer {
    text: String,
    value: Option<Value>,
    status: ParseStatus,
    finish_reason: Option<String>,
    usage: Usage,
    attempts: u32,
    refusal: Option<String>,
    rating: Option<crate::logprob::RatingDistribution>,
}

/// Reads a rating from the response's token probabilities: the grade of a prefilled answer,
/// else the generated answer parsed as usual; the distribution kept when the value parsed.
fn read_probability_rating(
    req: &ChatRequest,
    resp: &Value,
    spec: &RatingSpec,
    prefilled: &str,
    mut answer: Answer,
) -> Answer {
    let dist = crate::logprob::rating_distribution(resp, prefilled, &spec.key, spec.lo, spec.hi);
    let (value, status) = match (&dist, prefilled.is_empty()) {
        (None, _) => (
            None,
            ParseStatus::Failed {
                error: format!(
                    "no token probabilities for a {}-{} grade at `{}` (does the endpoint return logprobs?)",
                    spec.lo, spec.hi, spec.key
                ),
            },
        ),
        // the prefilled answer ends at the grade: that is the whole value
        (Some(d), false) => (
            d.written.map(|g| json!({spec.key.as_str(): g})),
            ParseStatus::Ok,
        ),
        (Some(_), true) => parse_output(&req.output, &answer.text),
    };
    if status.is_ok() {
        answer.rating = dist;
    }
    // llama.cpp servers that echo the prefilled part in the answer's content (the embedded
    // one does) already hold it: prefixing it again stored `{"rating": {"rating": 4`
    if !answer.text.starts_with(prefilled) {
        answer.text = format!("{prefilled}{}", answer.text);
    }
    answer.value = value;
    answer.status = status;
    answer
}

/// Parses an answer against the call's output spec; a failure says when the answer was cut at
/// `max_tokens`.
fn parse_answer(
    output: &OutputSpec,
    text: &str,
    finish_reason: &Option<String>,
) -> (Option<Value>, ParseStatus) {
    let (value, mut status) = parse_output(output, text);
    if let (ParseStatus::Failed { error }, Some("length")) = (&status, finish_reason.as_deref()) {
        status = ParseStatus::Failed {
            error: format!("{error} (the answer was cut at max_tokens)"),
        };
    }
    (value, status)
}

/// Appends the unusable answer and a request to fix it to the conversation.
fn ask_again(body: &mut Value, output: &OutputSpec, error: &str, text: &str) {
    let fix = match output {
        OutputSpec::Schema(s) => format!(
            "Your previous answer could not be used: {error}. Reply again with only a JSON object matching this schema, no other text:\n{}",
            s.schema
        ),
        _ => format!(
            "Your previous answer could not be used: {error}. Reply again with only valid JSON, no other text."
        ),
    };
    if let Some(Value::Array(msgs)) = body.get_mut("messages") {
        msgs.push(json!({"role": "assistant", "content": text}));
        msgs.push(json!({"role": "user", "content": fix}));
    }
}

struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// `req` with the conversation scope of the calling task: the scope is task-local, so it goes
/// with the request into the task that makes the call.
fn scoped(req: ChatRequest) -> ChatRequest {
    match crate::affinity::key_of(&req) {
        Some(k) => req.with_affinity(k),
        None => req,
    }
}
