//! [`Llm`], the client every crate uses: calls one endpoint, a load-balanced role, or every
//! judge of the ensemble; embeds texts; plans dry runs; keeps the ledger. One call goes
//! cache -> budget -> rate limits -> replica slot -> HTTP with retries -> parse (re-asking
//! with the error on failure) -> cache -> ledger.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use futures::stream::{self, Stream, StreamExt};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::balance::Endpoint;
use crate::cache::{Cache, StoredChat};
use crate::chat::{
    ChatMessage, ChatRequest, ChatResult, OutputSpec, ParseStatus, RatingSpec, Usage,
};
use crate::config::{LlmConfig, LlmOptions, Role, Sampling, default_cache_path};
use crate::error::{LlmError, Result};
use crate::extract::parse_output;
use crate::ledger::{Event, Ledger, LedgerSnapshot};
use crate::plan::{Plan, PlannedEndpoint};
use crate::retry::Delays;
use crate::tokens;

/// An input's position and its embedding.
type Indexed = (usize, Vec<f32>);

/// Texts per `/v1/embeddings` request.
const EMBED_BATCH: usize = 64;

/// Alternatives asked for per generated token when a rating is read from probabilities
/// (enough to hold every grade of a 1-5 scale next to the non-grade tokens; OpenAI allows 20).
const RATING_TOP_LOGPROBS: u32 = 10;

/// How a request's rating is read from token probabilities on this endpoint, if it is: the
/// scale, and the start of the answer sent prefilled (`""`: the whole answer is generated).
fn probability_rating<'a>(
    ep: &crate::config::EndpointConfig,
    req: &'a ChatRequest,
) -> Option<(&'a RatingSpec, String)> {
    let spec = req
        .rating
        .as_ref()
        .filter(|_| ep.rating_mode == crate::logprob::RatingMode::Probability)?;
    let prefilled = if ep.continues_assistant {
        crate::logprob::prefill(&spec.key)
    } else {
        String::new()
    };
    Some((spec, prefilled))
}

/// Completion tokens of a prefilled probability rating: the grade.
const PREFILLED_RATING_TOKENS: u32 = 1;

/// True when `req`'s rating is read on `ep` by continuing a prefilled answer (one token).
fn continues_prefilled_rating(ep: &crate::config::EndpointConfig, req: &ChatRequest) -> bool {
    probability_rating(ep, req).is_some_and(|(_, prefilled)| !prefilled.is_empty())
}

/// The LLM client. Cheap to clone; share it across tasks.
#[derive(Clone)]
pub struct Llm {
    inner: Arc<Inner>,
}

struct Inner {
    config: LlmConfig,
    options: LlmOptions,
    endpoints: BTreeMap<String, Arc<Endpoint>>,
    cache: Option<Cache>,
    ledger: Ledger,
    plan: Mutex<Plan>,
    batch_queue: Mutex<BTreeMap<String, Vec<batch::Queued>>>,
    /// `--export-batch`: the file cache misses are written to (see `client/batch_file.rs`).
    export: Mutex<Option<batch_file::Exporter>>,
}

/// A configured endpoint, as reported to callers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EndpointInfo {
    pub name: String,
    pub model: String,
    pub family: Option<String>,
    pub replicas: usize,
    pub supports_json_schema: bool,
    /// True for the embedded local default.
    pub local: bool,
    /// Context size in tokens, when known (`context_tokens`).
    pub context_tokens: Option<u32>,
    /// How its ratings are read (`rating_mode`).
    pub rating_mode: crate::logprob::RatingMode,
}

/// One judge's answers to one item (`n` samples).
#[derive(Debug)]
pub struct JudgeVerdicts {
    pub judge: String,
    pub model: String,
    pub family: Option<String>,
    pub samples: Vec<Result<ChatResult, LlmError>>,
}

/// Where a batch of calls goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Endpoint(String),
    Role(Role),
}

impl std::fmt::Debug for Llm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Llm")
            .field(
                "endpoints",
                &self.inner.endpoints.keys().collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl Llm {
    /// Builds the client. With no `[[llm.endpoints]]`, configures the embedded local default
    /// (servers start lazily on first use; `LlmError::Local` if not installed).
    pub async fn new(config: LlmConfig, options: LlmOptions) -> Result<Self> {
        let (config, locals) = if config.is_local_default() {
            crate::local::default_setup(config)?
        } else {
            (config, BTreeMap::new())
        };
        config.validate()?;
        register_secrets(&config);
        let mut endpoints = BTreeMap::new();
        for e in &config.endpoints {
            let local = locals.get(&e.name).cloned().unwrap_or_default();
            endpoints.insert(e.name.clone(), Arc::new(Endpoint::new(e.clone(), local)?));
        }
        let cache = if options.no_cache {
            None
        } else {
            let path = options
                .cache_path
                .clone()
                .or_else(|| config.cache.clone())
                .unwrap_or_else(default_cache_path);
            if options.dry_run && !path.exists() {
                // a dry run writes nothing: without a cache there is simply nothing cached yet
                None
            } else {
                Some(Cache::open(path)?)
            }
        };
        let ledger = Ledger::new(options.max_cost.or(config.max_cost));
        if let Some(c) = &cache {
            ledger.attach(c.spend_sink());
        }
        for e in &config.endpoints {
            ledger.register(&e.name, &e.model);
        }
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                options,
                endpoints,
                cache,
                ledger,
                plan: Mutex::new(Plan::default()),
                batch_queue: Mutex::new(BTreeMap::new()),
                export: Mutex::new(None),
            }),
        })
    }

    /// The effective configuration (with the local default filled in).
    pub fn config(&self) -> &LlmConfig {
        &self.inner.config
    }

    pub fn options(&self) -> &LlmOptions {
        &self.inner.options
    }

    pub fn endpoints(&self) -> Vec<EndpointInfo> {
        self.inner
            .endpoints
            .values()
            .map(|e| EndpointInfo {
                name: e.cfg.name.clone(),
                model: e.cfg.model.clone(),
                family: e.cfg.family.clone(),
                replicas: if e.local.is_empty() {
                    e.cfg.replicas().len()
                } else {
                    e.local.len()
                },
                supports_json_schema: e.cfg.supports_json_schema,
                local: !e.local.is_empty(),
                context_tokens: e.cfg.context_tokens,
                rating_mode: if e.cfg.rerank.is_some() {
                    crate::logprob::RatingMode::Relevance
                } else {
                    e.cfg.rating_mode
                },
            })
            .collect()
    }

    /// Endpoint names of a role.
    pub fn role_endpoints(&self, role: Role) -> &[String] {
        let r = &self.inner.config.roles;
        match role {
            Role::Judges => &r.judges,
            Role::Generator => &r.generator,
            Role::Embedder => &r.embedder,
        }
    }

    /// The judges of the ensemble (endpoint names).
    pub fn judges(&self) -> &[String] {
        self.role_endpoints(Role::Judges)
    }

    /// Sampling of a role (`embedder` has none; judges' is returned).
    pub fn sampling(&self, role: Role) -> &Sampling {
        match role {
            Role::Generator => &self.inner.config.sampling.generator,
            _ => &self.inner.config.sampling.judges,
        }
    }

    /// The model of the embedder role (for index fingerprints).
    pub fn embedding_model(&self) -> Option<String> {
        self.role_endpoints(Role::Embedder)
            .first()
            .and_then(|n| self.inner.endpoints.get(n))
            .map(|e| e.cfg.model.clone())
    }

    /// Slots of a target (replicas x max_concurrency summed): a good buffer size for callers.
    pub fn capacity(&self, target: &Target) -> usize {
        let names: Vec<&String> = match target {
            Target::Endpoint(n) => vec![n],
            Target::Role(r) => self.role_endpoints(*r).iter().collect(),
        };
        names
            .iter()
            .filter_map(|n| self.inner.endpoints.get(*n))
            .map(|e| e.capacity())
            .sum::<usize>()
            .max(1)
    }

    /// The ledger so far.
    pub fn ledger(&self) -> LedgerSnapshot {
        self.inner.ledger.snapshot()
    }

    /// The dry-run plan so far, with each endpoint's wall time estimated from its configured
    /// speed and rate limits.
    pub fn plan(&self) -> Plan {
        let mut plan = self
            .inner
            .plan
            .lock()
            .map(|p| p.clone())
            .unwrap_or_default();
        for (name, p) in plan.endpoints.iter_mut() {
            if let Some(ep) = self.inner.endpoints.get(name) {
                p.seconds_expected = crate::plan::estimate_seconds(&ep.cfg, p);
            }
        }
        plan
    }

    /// The cache, unless `--no-cache`.
    pub fn cache(&self) -> Option<&Cache> {
        self.inner.cache.as_ref()
    }

    fn endpoint(&self, name: &str) -> Result<&Arc<Endpoint>> {
        self.inner.endpoints.get(name).ok_or_else(|| {
            LlmError::Config(format!(
                "no endpoint named `{name}` (known: {})",
                self.inner
                    .endpoints
                    .keys()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
    }

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

    fn pick(&self, role: Role) -> Result<Arc<Endpoint>> {
        let names = self.role_endpoints(role);
        let mut best: Option<&Arc<Endpoint>> = None;
        for n in names {
            let e = self.endpoint(n)?;
            if best.is_none_or(|b| e.load.load(Ordering::Relaxed) < b.load.load(Ordering::Relaxed))
            {
                best = Some(e);
            }
        }
        best.cloned()
            .ok_or_else(|| LlmError::Config(format!("[llm.roles] {role} lists no endpoint")))
    }

    /// Every judge answers `req`, `n` samples each (sample indices 0..n), all concurrently.
    pub async fn judge_all(&self, req: &ChatRequest) -> Vec<JudgeVerdicts> {
        let sampling = req
            .sampling
            .clone()
            .unwrap_or_else(|| self.inner.config.sampling.judges.clone());
        let n = sampling.n.max(1);
        let futs = self.judges().iter().map(|name| {
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
        // the conversation scope is task-local: it goes with the request into the new task
        let req = match crate::affinity::key_of(&req) {
            Some(k) => req.with_affinity(k),
            None => req,
        };
        let task = tokio::spawn(async move {
            match &target {
                Target::Endpoint(n) => llm.chat(n, &req).await,
                Target::Role(role) => llm.chat_role(*role, &req).await,
            }
        });
        let guard = AbortOnDrop(task.abort_handle());
        async move {
            let _guard = guard;
            task.await
                .unwrap_or_else(|e| Err(LlmError::Unsupported(format!("call task failed: {e}"))))
        }
    }

    /// Estimate of one call to `endpoint` (no side effects).
    /// Expected wall time of `p` on `endpoint` from its configured speed and rate limits
    /// (see [`crate::plan::estimate_seconds`]); None when unknown.
    pub fn estimate_seconds(&self, endpoint: &str, p: &PlannedEndpoint) -> Option<f64> {
        let ep = self.inner.endpoints.get(endpoint)?;
        crate::plan::estimate_seconds(&ep.cfg, p)
    }

    pub fn estimate(&self, endpoint: &str, req: &ChatRequest) -> Result<PlannedEndpoint> {
        let ep = self.endpoint(endpoint)?;
        let sampling = req
            .sampling
            .clone()
            .unwrap_or_else(|| self.inner.config.sampling.judges.clone());
        let body = request_body(&ep.cfg, req, &sampling);
        let key = cache_key(&ep.cfg.model, req, &body);
        Ok(self.estimate_inner(ep, req, &sampling, &key))
    }

    fn estimate_inner(
        &self,
        ep: &Endpoint,
        req: &ChatRequest,
        sampling: &Sampling,
        key: &str,
    ) -> PlannedEndpoint {
        let cached = self
            .inner
            .cache
            .as_ref()
            .is_some_and(|c| !self.inner.options.refresh && c.contains_chat(key));
        let mut p = PlannedEndpoint {
            model: ep.cfg.model.clone(),
            ..Default::default()
        };
        if cached {
            p.cached = 1;
            return p;
        }
        let prompt = tokens::count_messages(&ep.cfg.model, &req.messages);
        let max_out = if continues_prefilled_rating(&ep.cfg, req) {
            u64::from(PREFILLED_RATING_TOKENS)
        } else {
            u64::from(sampling.max_tokens.unwrap_or(1024))
        };
        let expected = self
            .inner
            .cache
            .as_ref()
            .and_then(|c| {
                c.mean_completion_tokens(&ep.cfg.model, req.prompt.as_ref().map(|p| p.id.as_str()))
            })
            .map(|m| (m.round() as u64).min(max_out))
            .unwrap_or(max_out);
        let discount = if self.inner.options.batch {
            ep.cfg.batch_discount
        } else {
            1.0
        };
        p.calls = 1;
        p.prompt_tokens = prompt;
        p.completion_tokens_max = max_out;
        p.completion_tokens_expected = expected;
        p.cost_max_usd = ep.cfg.cost(prompt, max_out) * discount;
        p.cost_expected_usd = ep.cfg.cost(prompt, expected) * discount;
        p
    }

    fn record_plan(&self, endpoint: &str, p: PlannedEndpoint) {
        if let Ok(mut plan) = self.inner.plan.lock() {
            let e = plan.endpoints.entry(endpoint.to_string()).or_default();
            e.model = p.model;
            e.calls += p.calls;
            e.cached += p.cached;
            e.prompt_tokens += p.prompt_tokens;
            e.completion_tokens_max += p.completion_tokens_max;
            e.completion_tokens_expected += p.completion_tokens_expected;
            e.cost_max_usd += p.cost_max_usd;
            e.cost_expected_usd += p.cost_expected_usd;
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

    async fn call_inner(
        &self,
        ep: &Endpoint,
        req: &ChatRequest,
        sampling: &Sampling,
    ) -> Result<ChatResult> {
        let name = ep.cfg.name.as_str();
        let mut body = request_body(&ep.cfg, req, sampling);
        let key = cache_key(&ep.cfg.model, req, &body);
        if self.inner.options.dry_run {
            let p = self.estimate_inner(ep, req, sampling, &key);
            self.record_plan(name, p);
            return Err(LlmError::DryRun);
        }
        if let Some(cache) = &self.inner.cache
            && !self.inner.options.refresh
            && let Some(hit) = cache.get_chat(&key)?
        {
            self.inner.ledger.event(name, Event::CacheHit);
            return Ok(ChatResult {
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
                key,
                finish_reason: hit.finish_reason,
                refusal: None,
                rating: hit.rating,
            });
        }
        let probability = probability_rating(&ep.cfg, req);
        // a probability rating needs the response's logprobs, which batch results do not
        // carry through the cache: those requests are sent now (one token each on a server
        // that continues a prefilled answer)
        if self.inner.options.batch && probability.is_none() {
            return self.enqueue_batch(ep, req, body, key);
        }
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
        self.inner.ledger.reserve(name, estimate)?;

        let mut usage = Usage::default();
        let mut attempts = 0u32;
        let mut parse_round = 0u32;
        let mut refusal = None;
        let mut rating = None;
        let pin = crate::affinity::key_of(req)
            .filter(|_| ep.cfg.slot_affinity)
            .map(|k| crate::affinity::key_hash(&k));
        let (text, value, status, finish_reason) = loop {
            let resp = match self
                .send_with(ep, &body, prompt_est + max_out, false, pin)
                .await
            {
                Ok((v, n)) => {
                    attempts += n;
                    v
                }
                Err(e) => {
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
                    return Err(e);
                }
            };
            let (text, finish_reason, u) = read_choice(&resp, &ep.cfg.model, &body);
            usage.prompt_tokens += u.prompt_tokens;
            usage.completion_tokens += u.completion_tokens;
            // a refusal is an answer, not an unparsable one: recorded as such, never re-asked
            if let Some(r) = read_refusal(&resp) {
                refusal = Some(r.clone());
                break (
                    r,
                    None,
                    ParseStatus::Failed {
                        error: "the provider refused to answer".into(),
                    },
                    finish_reason,
                );
            }
            if let Some((spec, prefilled)) = &probability {
                let dist = crate::logprob::rating_distribution(
                    &resp, prefilled, &spec.key, spec.lo, spec.hi,
                );
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
                    (Some(_), true) => parse_output(&req.output, &text),
                };
                if status.is_ok() {
                    rating = dist;
                }
                break (format!("{prefilled}{text}"), value, status, finish_reason);
            }
            let (value, mut status) = parse_output(&req.output, &text);
            if let (ParseStatus::Failed { error }, Some("length")) =
                (&status, finish_reason.as_deref())
            {
                status = ParseStatus::Failed {
                    error: format!("{error} (the answer was cut at max_tokens)"),
                };
            }
            let ParseStatus::Failed { error } = &status else {
                break (text, value, status, finish_reason);
            };
            if parse_round >= self.inner.config.retry.parse_retries {
                break (text, value, status, finish_reason);
            }
            parse_round += 1;
            self.inner.ledger.event(name, Event::ParseRetry);
            tracing::debug!(endpoint = name, error = %error, "unparsable answer; asking again");
            let fix = match &req.output {
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
        };
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
        match &status {
            ParseStatus::Failed { error } => {
                self.inner.ledger.event(name, Event::ParseFailed);
                self.inner.ledger.note_error(name, error);
                tracing::warn!(endpoint = name, error = %error, "answer could not be parsed after retries; recorded as failed");
            }
            ParseStatus::Extracted { .. } => self.inner.ledger.event(name, Event::Extracted),
            ParseStatus::Ok => {}
        }
        if status.is_ok()
            && let Some(cache) = &self.inner.cache
        {
            let stored = StoredChat {
                value: value.clone(),
                text: text.clone(),
                status: status.clone(),
                usage,
                cost_usd: cost,
                model: ep.cfg.model.clone(),
                finish_reason: finish_reason.clone(),
                rating: rating.clone(),
            };
            cache.put_chat(&key, req.prompt.as_ref().map(|p| p.id.as_str()), &stored)?;
        }
        Ok(ChatResult {
            value,
            text,
            status,
            usage,
            cost_usd: cost,
            answer_cost_usd: cost,
            cached: false,
            endpoint: name.to_string(),
            model: ep.cfg.model.clone(),
            sample: req.sample,
            attempts,
            key,
            finish_reason,
            refusal,
            rating,
        })
    }

    /// After a failed attempt at `ep`: reconnects a local server that did not answer, then
    /// waits for the next retry (Ok) or, when the error is final or the retries are spent,
    /// returns it as the endpoint's provider error. `what` names the exchange in the log.
    pub(crate) async fn retry_or_fail(
        &self,
        ep: &Endpoint,
        err: crate::retry::AttemptError,
        delays: &mut Delays,
        attempts: u32,
        what: &str,
    ) -> Result<()> {
        let wait = if err.retryable {
            delays.next(&err)
        } else {
            None
        };
        if err.status.is_none() && !ep.local.is_empty() {
            ep.recover_local().await?;
        }
        match wait {
            Some(d) => {
                self.inner.ledger.event(&ep.cfg.name, Event::Retry);
                tracing::debug!(endpoint = %ep.cfg.name, status = ?err.status, wait_ms = d.as_millis() as u64, "retrying {what}: {}", err.message);
                tokio::time::sleep(d).await;
                Ok(())
            }
            None => Err(LlmError::Provider {
                endpoint: ep.cfg.name.clone(),
                status: err.status,
                message: err.message,
                attempts,
            }),
        }
    }

    /// One HTTP exchange with retries; returns the response JSON and the attempts made. A
    /// pinned call (`pin`, see [`crate::affinity`]) goes to its conversation's replica and
    /// carries its slot (`id_slot`, with `cache_prompt`).
    async fn send_with(
        &self,
        ep: &Endpoint,
        body: &Value,
        tokens: u64,
        embeddings: bool,
        pin: Option<u64>,
    ) -> Result<(Value, u32)> {
        let mut delays = Delays::new(&self.inner.config.retry);
        let mut attempts = 0u32;
        loop {
            ep.rate_limit(tokens).await;
            let slot = ep.slot(pin).await?;
            attempts += 1;
            let res = if embeddings {
                slot.replica.embeddings(body).await
            } else if let Some(id) = slot.id_slot {
                let mut pinned = body.clone();
                if let Some(o) = pinned.as_object_mut() {
                    o.insert("id_slot".into(), json!(id));
                    o.insert("cache_prompt".into(), json!(true));
                }
                slot.replica.chat(&pinned).await
            } else {
                slot.replica.chat(body).await
            };
            if let Err(e) = &res {
                tracing::debug!(endpoint = %ep.cfg.name, replica = %crate::redact::mask_url_credentials(&slot.replica.url), status = ?e.status, "attempt failed: {}", e.message);
            }
            drop(slot);
            let err = match res {
                Ok(v) if embeddings || v.pointer("/choices/0").is_some() => {
                    return Ok((v, attempts));
                }
                Ok(v) => crate::retry::AttemptError {
                    status: None,
                    retry_after: None,
                    message: crate::redact::redact_owned(format!(
                        "response without choices: {}",
                        v.to_string().chars().take(200).collect::<String>()
                    )),
                    retryable: true,
                },
                Err(e) => e,
            };
            self.retry_or_fail(ep, err, &mut delays, attempts, "request")
                .await?;
        }
    }

    /// Embeds `texts` with the embedder role (order kept; cached per model and text).
    pub async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let ep = self.pick(Role::Embedder)?;
        let model = ep.cfg.model.clone();
        let keys: Vec<String> = texts.iter().map(|t| embed_key(&model, t)).collect();
        let mut out: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        if let Some(cache) = &self.inner.cache
            && !self.inner.options.refresh
        {
            for (i, k) in keys.iter().enumerate() {
                out[i] = cache.get_embedding(k)?;
                if out[i].is_some() {
                    self.inner.ledger.event(&ep.cfg.name, Event::CacheHit);
                }
            }
        }
        let missing: Vec<usize> = (0..texts.len()).filter(|i| out[*i].is_none()).collect();
        if self.inner.options.dry_run {
            let tok: u64 = missing
                .iter()
                .map(|i| tokens::count_text(&model, &texts[*i]))
                .sum();
            self.record_plan(
                &ep.cfg.name,
                PlannedEndpoint {
                    model: model.clone(),
                    calls: missing.len().div_ceil(EMBED_BATCH) as u64,
                    cached: (texts.len() - missing.len()) as u64,
                    prompt_tokens: tok,
                    cost_expected_usd: ep.cfg.cost(tok, 0),
                    cost_max_usd: ep.cfg.cost(tok, 0),
                    ..Default::default()
                },
            );
            return Err(LlmError::DryRun);
        }
        let width = ep.capacity().max(1);
        let chunks: Vec<Vec<usize>> = missing.chunks(EMBED_BATCH).map(|c| c.to_vec()).collect();
        let results: Vec<Result<Vec<Indexed>>> = stream::iter(chunks)
            .map(|idx| {
                let ep = ep.clone();
                let model = model.clone();
                async move {
                    let input: Vec<&str> = idx.iter().map(|i| texts[*i].as_str()).collect();
                    let tok: u64 = input.iter().map(|t| tokens::count_text(&model, t)).sum();
                    let estimate = ep.cfg.cost(tok, 0);
                    self.inner.ledger.reserve(&ep.cfg.name, estimate)?;
                    let body = json!({"model": model, "input": input, "encoding_format": "float"});
                    let resp = match self.send_with(&ep, &body, tok, true, None).await {
                        Ok((v, _)) => v,
                        Err(e) => {
                            self.inner.ledger.release(estimate);
                            self.inner.ledger.event(&ep.cfg.name, Event::ProviderFailed);
                            return Err(e);
                        }
                    };
                    let used = resp
                        .pointer("/usage/prompt_tokens")
                        .and_then(Value::as_u64)
                        .unwrap_or(tok);
                    self.inner
                        .ledger
                        .settle(&ep.cfg.name, estimate, used, 0, ep.cfg.cost(used, 0));
                    let data = resp
                        .get("data")
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default();
                    let mut vecs: Vec<Option<Vec<f32>>> = vec![None; idx.len()];
                    for (pos, d) in data.iter().enumerate() {
                        let at = d
                            .get("index")
                            .and_then(Value::as_u64)
                            .map(|x| x as usize)
                            .unwrap_or(pos);
                        let v: Option<Vec<f32>> =
                            d.get("embedding").and_then(Value::as_array).map(|a| {
                                a.iter()
                                    .filter_map(Value::as_f64)
                                    .map(|f| f as f32)
                                    .collect()
                            });
                        if let (Some(slot), Some(v)) = (vecs.get_mut(at), v) {
                            *slot = Some(v);
                        }
                    }
                    idx.iter()
                        .zip(vecs)
                        .map(|(i, v)| {
                            v.map(|v| (*i, v)).ok_or_else(|| LlmError::Provider {
                                endpoint: ep.cfg.name.clone(),
                                status: None,
                                message: format!(
                                    "the embeddings response has no vector for input {i}"
                                ),
                                attempts: 1,
                            })
                        })
                        .collect()
                }
            })
            .buffered(width)
            .collect()
            .await;
        let mut fresh = Vec::new();
        for r in results {
            for (i, v) in r? {
                fresh.push((keys[i].clone(), v.clone()));
                out[i] = Some(v);
            }
        }
        if let Some(cache) = &self.inner.cache
            && !fresh.is_empty()
        {
            cache.put_embeddings(&model, &fresh)?;
        }
        out.into_iter()
            .enumerate()
            .map(|(i, v)| {
                v.ok_or_else(|| LlmError::Unsupported(format!("no embedding for input {i}")))
            })
            .collect()
    }
}

/// Registers every configured key and every `base_url` password with [`crate::redact`], so
/// that no provider echo of them reaches a stored record or a log line.
fn register_secrets(config: &LlmConfig) {
    for e in &config.endpoints {
        if let Some(var) = &e.api_key_env
            && let Ok(key) = std::env::var(var)
        {
            crate::redact::register_secret(&key);
        }
        for u in std::iter::once(&e.base_url).chain(&e.base_urls) {
            crate::redact::register_url_credentials(u);
        }
    }
}

struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The JSON body of a chat request for this endpoint (`response_format` per its abilities).
fn request_body(ep: &crate::config::EndpointConfig, req: &ChatRequest, s: &Sampling) -> Value {
    let mut body = json!({
        "model": ep.model,
        "messages": req.messages.iter().map(|m| json!({"role": m.role, "content": m.content})).collect::<Vec<_>>(),
        "stream": false,
    });
    let obj = match body.as_object_mut() {
        Some(o) => o,
        None => return body,
    };
    if let Some(t) = s.temperature {
        obj.insert("temperature".into(), json!(t));
    }
    if let Some(p) = s.top_p {
        obj.insert("top_p".into(), json!(p));
    }
    if let Some(seed) = s.seed {
        obj.insert(
            "seed".into(),
            json!(seed.wrapping_add(u64::from(req.sample))),
        );
    }
    if let Some(m) = s.max_tokens {
        obj.insert("max_tokens".into(), json!(m));
    }
    let probability = probability_rating(ep, req);
    if let Some((_, prefilled)) = &probability {
        if let Value::Object(f) = crate::logprob::request_fields(RATING_TOP_LOGPROBS) {
            obj.extend(f);
        }
        if !prefilled.is_empty() {
            // the answer so far is `{"rating": `; its next token is the grade
            if let Some(Value::Array(msgs)) = obj.get_mut("messages") {
                msgs.push(json!({"role": "assistant", "content": prefilled}));
            }
            obj.insert("max_tokens".into(), json!(PREFILLED_RATING_TOKENS));
        }
    }
    match &req.output {
        // a prefilled answer is read token by token: no grammar around it
        _ if continues_prefilled_rating(ep, req) => {}
        OutputSpec::Schema(schema) if ep.supports_json_schema => {
            obj.insert(
                "response_format".into(),
                json!({"type": "json_schema", "json_schema": {"name": schema.name, "schema": crate::schema_caps::adapt(&schema.schema, ep.max_string_length, ep.verdict_first, ep.string_patterns), "strict": true}}),
            );
        }
        OutputSpec::Schema(_) | OutputSpec::Json if ep.json_mode => {
            obj.insert("response_format".into(), json!({"type": "json_object"}));
        }
        _ => {}
    }
    if let Some(Value::Object(extra)) = &ep.extra_body {
        for (k, v) in extra {
            obj.insert(k.clone(), v.clone());
        }
    }
    body
}

/// Content-addressed key: model + body (messages, sampling, response_format, extras) + output
/// spec + sample index.
fn cache_key(model: &str, req: &ChatRequest, body: &Value) -> String {
    let mut h = blake3::Hasher::new();
    h.update(b"mtr-llm chat v1\0");
    h.update(model.as_bytes());
    h.update(b"\0");
    h.update(body.to_string().as_bytes());
    h.update(b"\0");
    h.update(
        serde_json::to_string(&req.output)
            .unwrap_or_default()
            .as_bytes(),
    );
    h.update(format!("\0{}", req.sample).as_bytes());
    h.finalize().to_hex().to_string()
}

fn embed_key(model: &str, text: &str) -> String {
    let mut h = blake3::Hasher::new();
    h.update(b"mtr-llm embed v1\0");
    h.update(model.as_bytes());
    h.update(b"\0");
    h.update(text.as_bytes());
    h.finalize().to_hex().to_string()
}

/// The first choice's refusal message (OpenAI `message.refusal`), when the provider refused.
pub(crate) fn read_refusal(resp: &Value) -> Option<String> {
    resp.pointer("/choices/0/message/refusal")
        .and_then(Value::as_str)
        .filter(|r| !r.trim().is_empty())
        .map(|r| crate::redact::redact_owned(r.to_string()))
}

/// Text, finish reason and usage of the first choice (usage counted when not reported).
pub(crate) fn read_choice(
    resp: &Value,
    model: &str,
    body: &Value,
) -> (String, Option<String>, Usage) {
    // a secret echoed in an answer is masked before it can reach the cache or an output
    let text = crate::redact::redact_owned(
        resp.pointer("/choices/0/message/content")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
    );
    let finish = resp
        .pointer("/choices/0/finish_reason")
        .and_then(Value::as_str)
        .map(str::to_string);
    let prompt = resp
        .pointer("/usage/prompt_tokens")
        .and_then(Value::as_u64)
        .unwrap_or_else(|| {
            let msgs: Vec<ChatMessage> = body
                .get("messages")
                .and_then(|m| serde_json::from_value(m.clone()).ok())
                .unwrap_or_default();
            tokens::count_messages(model, &msgs)
        });
    let completion = resp
        .pointer("/usage/completion_tokens")
        .and_then(Value::as_u64)
        .unwrap_or_else(|| tokens::count_text(model, &text));
    (
        text,
        finish,
        Usage {
            prompt_tokens: prompt,
            completion_tokens: completion,
        },
    )
}

mod batch;
mod batch_file;
mod rerank;
pub mod spend;
pub use batch::BatchReport;
pub use batch_file::{ExportReport, ExportedModel, ImportError, ImportReport};

#[cfg(test)]
mod tests;
