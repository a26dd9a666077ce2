//! A scripted fake OpenAI-compatible server for tests and benchmarks (axum on 127.0.0.1, random
//! port, in-process). It answers `/v1/chat/completions` from a closure or a script, injects
//! latency, 429 with `Retry-After`, 500, hangs (client timeouts), malformed response bodies and
//! broken JSON content, counts calls, and serves `/v1/models` and `/v1/embeddings` with
//! deterministic embeddings (hashed words and character trigrams, L2-normalised) so similar
//! texts get similar vectors.
//!
//! Behind the cargo feature `fake` (tests and benchmarks only); the requests and replies it is
//! scripted with are in [`crate::fake`], which re-exports this module's public items.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};

use crate::config::EndpointConfig;
use crate::error::{LlmError, Result};
use crate::fake::{FakeReply, FakeRequest, default_reply, fake_embedding};

type Responder = Arc<dyn Fn(&FakeRequest) -> FakeReply + Send + Sync>;
/// Scores passages for a query on the rerank routes.
type Scorer = Arc<dyn Fn(&str, &[String]) -> Vec<f64> + Send + Sync>;

/// A stage of the Batch API life cycle at which the fake can hold a request until
/// [`FakeServer::release_batch`], so a test can kill the client exactly there (see
/// [`FakeServer::hold_batch`] and [`FakeServer::wait_held`]). A held request is answered 503
/// when released, having done nothing more than its stage says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchStage {
    /// `POST /v1/files` arrived; the file is not stored.
    Upload,
    /// `POST /v1/batches` arrived; no batch is created.
    BeforeCreate,
    /// The batch was created; its answer is not sent.
    AfterCreate,
    /// `GET /v1/batches/{id}` arrived (the batch exists and is not collected).
    Poll,
    /// `GET /v1/files/{id}/content` arrived (a finished batch's output).
    Download,
}

/// Random faults injected before the responder runs (fractions of requests, deterministic by
/// seed and request number).
#[derive(Debug, Clone, Default)]
pub struct Faults {
    pub rate_429: f64,
    pub rate_500: f64,
    pub rate_hang: f64,
    pub rate_malformed_body: f64,
    /// Replace the content with JSON cut in the middle.
    pub rate_broken_content: f64,
    /// Answer with the first half of the content and `finish_reason: length`.
    pub rate_length: f64,
    /// A 401 whose error body echoes the request's `Authorization` header (as some
    /// providers do): the key must be masked wherever mtr stores or logs the error.
    pub rate_echo_auth: f64,
    /// A 200 whose body has no `choices`.
    pub rate_no_choices: f64,
    /// `Retry-After` seconds sent with injected 429s.
    pub retry_after_s: f64,
    pub seed: u64,
}

/// Configures and starts a [`FakeServer`].
pub struct FakeBuilder {
    responder: Option<Responder>,
    scorer: Option<Scorer>,
    rerank_failures: u64,
    script: VecDeque<FakeReply>,
    latency: Duration,
    faults: Faults,
    dims: usize,
    models: Vec<String>,
    record: bool,
    port: u16,
}

impl Default for FakeBuilder {
    fn default() -> Self {
        Self {
            responder: None,
            scorer: None,
            rerank_failures: 0,
            script: VecDeque::new(),
            latency: Duration::ZERO,
            faults: Faults::default(),
            dims: 256,
            models: vec!["fake-model".into()],
            record: false,
            port: 0,
        }
    }
}

impl FakeBuilder {
    /// Answers every chat request not answered by the script. Default: a minimal valid
    /// instance of the requested schema, or `"ok"`.
    pub fn respond(
        mut self,
        f: impl Fn(&FakeRequest) -> FakeReply + Send + Sync + 'static,
    ) -> Self {
        self.responder = Some(Arc::new(f));
        self
    }
    /// Scores the passages of each rerank request (`/v1/rerank`, `/rerank`, `/v1/score`,
    /// `/score`), prefixes included. Default: the cosine of their [`fake_embedding`]s.
    pub fn rerank(
        mut self,
        f: impl Fn(&str, &[String]) -> Vec<f64> + Send + Sync + 'static,
    ) -> Self {
        self.scorer = Some(Arc::new(f));
        self
    }
    /// Answers the first `n` rerank requests with HTTP 503 (retry tests).
    pub fn rerank_failures(mut self, n: u64) -> Self {
        self.rerank_failures = n;
        self
    }
    /// Replies used in order for the first requests, before the responder.
    pub fn script(mut self, replies: impl IntoIterator<Item = FakeReply>) -> Self {
        self.script.extend(replies);
        self
    }
    /// Latency added to every request.
    pub fn latency(mut self, d: Duration) -> Self {
        self.latency = d;
        self
    }
    pub fn latency_ms(self, ms: u64) -> Self {
        self.latency(Duration::from_millis(ms))
    }
    pub fn faults(mut self, f: Faults) -> Self {
        self.faults = f;
        self
    }
    /// Embedding dimensions (default 256).
    pub fn dims(mut self, dims: usize) -> Self {
        self.dims = dims.max(8);
        self
    }
    /// Model ids listed by `/v1/models`.
    pub fn models(mut self, models: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.models = models.into_iter().map(Into::into).collect();
        self
    }
    /// Keep every chat and embedding request body (see [`FakeServer::requests`],
    /// [`FakeServer::embedding_requests`]).
    pub fn record(mut self, yes: bool) -> Self {
        self.record = yes;
        self
    }
    /// A fixed port (default: a free random one).
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// Binds 127.0.0.1 and serves in a background task until the server is dropped.
    pub async fn start(self) -> Result<FakeServer> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", self.port))
            .await
            .map_err(|e| LlmError::Unsupported(format!("fake server cannot bind: {e}")))?;
        let addr = listener
            .local_addr()
            .map_err(|e| LlmError::Unsupported(e.to_string()))?;
        let state = Arc::new(Shared {
            responder: self.responder.unwrap_or_else(|| Arc::new(default_reply)),
            scorer: self.scorer.unwrap_or_else(|| Arc::new(default_scores)),
            rerank_failures: self.rerank_failures,
            rerank_calls: AtomicU64::new(0),
            reranks: Mutex::new(Vec::new()),
            script: Mutex::new(self.script),
            latency: self.latency,
            faults: self.faults,
            dims: self.dims,
            models: self.models,
            record: self.record,
            recorded: Mutex::new(Vec::new()),
            embedded: Mutex::new(Vec::new()),
            chat_calls: AtomicU64::new(0),
            embedding_calls: AtomicU64::new(0),
            model_calls: AtomicU64::new(0),
            injected: AtomicU64::new(0),
            files: Mutex::new(Default::default()),
            batches: Mutex::new(Default::default()),
            batch_calls: AtomicU64::new(0),
            hold: Mutex::new(None),
            hold_chat_from: AtomicU64::new(u64::MAX),
            held: tokio::sync::watch::channel(0).0,
            released: tokio::sync::watch::channel(0).0,
        });
        let app = Router::new()
            .route("/v1/models", get(models))
            .route("/models", get(models))
            .route("/health", get(|| async { "ok" }))
            .route("/v1/chat/completions", post(chat))
            .route("/chat/completions", post(chat))
            .route("/v1/rerank", post(rerank))
            .route("/rerank", post(rerank))
            .route("/v1/score", post(score))
            .route("/score", post(score))
            .route("/v1/embeddings", post(embeddings))
            .route("/embeddings", post(embeddings))
            .route("/v1/files", post(upload_file))
            .route("/v1/files/{id}/content", get(file_content))
            .route("/v1/batches", post(create_batch).get(list_batches))
            .route("/v1/batches/{id}", get(get_batch))
            .with_state(state.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(FakeServer {
            base_url: format!("http://{addr}/v1"),
            state,
            task,
        })
    }
}

struct Shared {
    responder: Responder,
    scorer: Scorer,
    rerank_failures: u64,
    rerank_calls: AtomicU64,
    /// Every rerank request: path kind (`rerank` or `score`), body, `Authorization` header.
    reranks: Mutex<Vec<FakeRerank>>,
    script: Mutex<VecDeque<FakeReply>>,
    latency: Duration,
    faults: Faults,
    dims: usize,
    models: Vec<String>,
    record: bool,
    recorded: Mutex<Vec<Value>>,
    /// Embedding request bodies (with `record(true)`).
    embedded: Mutex<Vec<Value>>,
    chat_calls: AtomicU64,
    embedding_calls: AtomicU64,
    model_calls: AtomicU64,
    injected: AtomicU64,
    /// Batch API state: uploaded and produced files, batches (with how often each was polled).
    files: Mutex<std::collections::BTreeMap<String, Vec<u8>>>,
    batches: Mutex<std::collections::BTreeMap<String, (Value, u32)>>,
    batch_calls: AtomicU64,
    /// The Batch API stage held (see [`BatchStage`]), requests held so far, and releases.
    hold: Mutex<Option<BatchStage>>,
    /// Chat requests from this number on (0-based) are held until a release (`u64::MAX`: none).
    hold_chat_from: AtomicU64,
    held: tokio::sync::watch::Sender<u64>,
    released: tokio::sync::watch::Sender<u64>,
}

impl Shared {
    /// Holds the request when `stage` is held: waits for the release, then true (answer 503).
    async fn held_at(&self, stage: BatchStage) -> bool {
        let holding = self.hold.lock().map(|h| *h == Some(stage)).unwrap_or(false);
        if !holding {
            return false;
        }
        let mut released = self.released.subscribe();
        self.held.send_modify(|n| *n += 1);
        let _ = released.changed().await;
        true
    }

    /// Holds chat request `n` while chat requests from [`FakeServer::hold_chat_from`] on are
    /// held: waits for the release, then answers it as usual.
    async fn chat_held(&self, n: u64) {
        // subscribed before the check: a release between the two cannot be missed
        let mut released = self.released.subscribe();
        if n < self.hold_chat_from.load(Ordering::SeqCst) {
            return;
        }
        self.held.send_modify(|k| *k += 1);
        let _ = released.changed().await;
    }
}

/// A running fake server; stops when dropped.
pub struct FakeServer {
    base_url: String,
    state: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeServer {
    pub fn builder() -> FakeBuilder {
        FakeBuilder::default()
    }

    /// `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// An endpoint config pointing here (concurrency 16, timeout 10 s, free, json_schema on).
    pub fn endpoint(&self, name: &str, model: &str) -> EndpointConfig {
        let mut e = EndpointConfig::new(name, &self.base_url, model);
        e.timeout_s = 10.0;
        e
    }

    /// Chat requests received (every attempt, faults included).
    pub fn chat_calls(&self) -> u64 {
        self.state.chat_calls.load(Ordering::Relaxed)
    }
    /// Embedding requests received.
    pub fn embedding_calls(&self) -> u64 {
        self.state.embedding_calls.load(Ordering::Relaxed)
    }
    /// Rerank requests received (`/rerank` and `/score`, all attempts).
    pub fn rerank_calls(&self) -> u64 {
        self.state.rerank_calls.load(Ordering::Relaxed)
    }
    /// Every rerank request received, in order.
    pub fn rerank_requests(&self) -> Vec<FakeRerank> {
        self.state
            .reranks
            .lock()
            .map(|r| r.clone())
            .unwrap_or_default()
    }
    /// `/v1/models` requests received.
    pub fn model_calls(&self) -> u64 {
        self.state.model_calls.load(Ordering::Relaxed)
    }
    /// Batch API requests received (file uploads, batch creations and polls).
    pub fn batch_calls(&self) -> u64 {
        self.state.batch_calls.load(Ordering::Relaxed)
    }
    /// Batches created (each `POST /v1/batches` that created one).
    pub fn batches_created(&self) -> usize {
        self.state.batches.lock().map(|b| b.len()).unwrap_or(0)
    }
    /// Holds the next Batch API requests of `stage` until [`FakeServer::release_batch`].
    pub fn hold_batch(&self, stage: BatchStage) {
        if let Ok(mut h) = self.state.hold.lock() {
            *h = Some(stage);
        }
    }
    /// Waits until a request is held at the stage given to [`FakeServer::hold_batch`].
    pub async fn wait_held(&self) {
        let mut rx = self.state.held.subscribe();
        let _ = rx.wait_for(|n| *n > 0).await;
    }
    /// Stops holding: held requests are answered 503, later ones normally.
    pub fn release_batch(&self) {
        if let Ok(mut h) = self.state.hold.lock() {
            *h = None;
        }
        self.state.held.send_replace(0);
        self.state.released.send_modify(|n| *n += 1);
    }
    /// Holds chat requests from the `n`-th (0-based) on until [`FakeServer::release_chat`]:
    /// a test can stop a job after exactly `n` calls, whatever the machine's speed
    /// ([`FakeServer::wait_held`] tells when the first one is held).
    pub fn hold_chat_from(&self, n: u64) {
        self.state.hold_chat_from.store(n, Ordering::SeqCst);
    }
    /// Stops holding chat requests: held ones and later ones are answered as usual.
    pub fn release_chat(&self) {
        self.state.hold_chat_from.store(u64::MAX, Ordering::SeqCst);
        self.state.held.send_replace(0);
        self.state.released.send_modify(|n| *n += 1);
    }
    /// Requests answered by an injected fault.
    pub fn injected_faults(&self) -> u64 {
        self.state.injected.load(Ordering::Relaxed)
    }
    /// Recorded chat request bodies (with `record(true)`).
    pub fn requests(&self) -> Vec<Value> {
        self.state
            .recorded
            .lock()
            .map(|r| r.clone())
            .unwrap_or_default()
    }
    /// Recorded embedding request bodies, in arrival order (with `record(true)`).
    pub fn embedding_requests(&self) -> Vec<Value> {
        self.state
            .embedded
            .lock()
            .map(|r| r.clone())
            .unwrap_or_default()
    }
}

async fn models(State(s): State<Arc<Shared>>) -> Response {
    s.model_calls.fetch_add(1, Ordering::Relaxed);
    let data: Vec<Value> = s
        .models
        .iter()
        .map(|m| json!({"id": m, "object": "model", "owned_by": "mtr-fake"}))
        .collect();
    axum::Json(json!({"object": "list", "data": data})).into_response()
}

/// Deterministic uniform number in [0, 1) from seed and n (splitmix64).
fn unit(seed: u64, n: u64, salt: u64) -> f64 {
    let mut z =
        seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ salt.wrapping_mul(0xD1B5_4A32_D192_ED03);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

fn injected(f: &Faults, n: u64) -> Option<FakeReply> {
    let u = unit(f.seed, n, 1);
    let mut edge = 0.0;
    let mut hit = |rate: f64| {
        edge += rate;
        rate > 0.0 && u < edge
    };
    if hit(f.rate_429) {
        return Some(FakeReply::rate_limited(f.retry_after_s));
    }
    if hit(f.rate_500) {
        return Some(FakeReply::server_error());
    }
    if hit(f.rate_hang) {
        return Some(FakeReply::Hang);
    }
    if hit(f.rate_malformed_body) {
        return Some(FakeReply::RawBody(
            "{\"id\": \"fake\", \"choices\": [{\"message\": {\"role\": \"assist".into(),
        ));
    }
    None
}

async fn chat(
    State(s): State<Arc<Shared>>,
    headers: axum::http::HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let n = s.chat_calls.fetch_add(1, Ordering::Relaxed);
    s.chat_held(n).await;
    if !s.latency.is_zero() {
        tokio::time::sleep(s.latency).await;
    }
    let body: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => return error_response(400, None, &format!("invalid JSON body: {e}")),
    };
    if s.record
        && let Ok(mut r) = s.recorded.lock()
    {
        r.push(body.clone());
    }
    let (req, reply) = decide(&s, n, body);
    let reply = header_and_finish_faults(&s, n, &headers, reply);
    render(reply, &req).await
}

/// The faults that need the request's headers or the decided reply: an error echoing
/// `Authorization`, a body without choices, an answer cut at `max_tokens`.
fn header_and_finish_faults(
    s: &Shared,
    n: u64,
    headers: &axum::http::HeaderMap,
    reply: FakeReply,
) -> FakeReply {
    let f = &s.faults;
    // only answers not already replaced by another fault
    if !matches!(reply, FakeReply::Content(_)) {
        return reply;
    }
    let hit = |rate: f64, salt: u64| {
        let yes = rate > 0.0 && unit(f.seed, n, salt) < rate;
        if yes {
            s.injected.fetch_add(1, Ordering::Relaxed);
        }
        yes
    };
    if hit(f.rate_echo_auth, 4) {
        let auth = headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("(none)");
        return FakeReply::Status {
            status: 401,
            retry_after_s: None,
            message: format!("Incorrect API key provided: {auth}"),
        };
    }
    if hit(f.rate_no_choices, 5) {
        return FakeReply::RawBody("{\"id\": \"fake\", \"object\": \"chat.completion\"}".into());
    }
    match reply {
        FakeReply::Content(text) if hit(f.rate_length, 3) => {
            let half: String = text.chars().take(text.chars().count() / 2).collect();
            FakeReply::Truncated(half)
        }
        other => other,
    }
}

/// The request as the responder sees it, and the reply (faults, script, responder).
fn decide(s: &Shared, n: u64, body: Value) -> (FakeRequest, FakeReply) {
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let role_content = |role: &str| {
        messages
            .iter()
            .rev()
            .find(|m| m.get("role").and_then(Value::as_str) == Some(role))
            .and_then(|m| m.get("content").and_then(Value::as_str))
            .map(str::to_string)
    };
    let req = FakeRequest {
        n,
        model: body
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        last_user: role_content("user").unwrap_or_default(),
        system: role_content("system"),
        schema: body.pointer("/response_format/json_schema/schema").cloned(),
        seed: body.get("seed").and_then(Value::as_u64),
        body,
    };
    let reply = match injected(&s.faults, n) {
        Some(r) => {
            s.injected.fetch_add(1, Ordering::Relaxed);
            r
        }
        None => {
            let scripted = s.script.lock().ok().and_then(|mut q| q.pop_front());
            let mut r = scripted.unwrap_or_else(|| (s.responder)(&req));
            if s.faults.rate_broken_content > 0.0
                && unit(s.faults.seed, n, 2) < s.faults.rate_broken_content
            {
                s.injected.fetch_add(1, Ordering::Relaxed);
                r = FakeReply::Content("{\"grade\": 2, \"reason\": \"the passage".into());
            }
            r
        }
    };
    (req, reply)
}

fn render(
    reply: FakeReply,
    req: &FakeRequest,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Response> + Send + '_>> {
    Box::pin(async move {
        match reply {
            FakeReply::Content(text) => completion(req, &text, "stop"),
            FakeReply::Truncated(text) => completion(req, &text, "length"),
            FakeReply::Refusal(text) => axum::Json(refusal_json(req, &text)).into_response(),
            FakeReply::WithLogprobs(text, logprobs) => {
                let mut v = completion_json(req, &text, "stop");
                v["choices"][0]["logprobs"] = logprobs;
                axum::Json(v).into_response()
            }
            FakeReply::Status {
                status,
                retry_after_s,
                message,
            } => error_response(status, retry_after_s, &message),
            FakeReply::Hang => {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                error_response(504, None, "hung")
            }
            FakeReply::RawBody(b) => {
                (StatusCode::OK, [("content-type", "application/json")], b).into_response()
            }
            FakeReply::Delay(d, inner) => {
                tokio::time::sleep(d).await;
                render(*inner, req).await
            }
        }
    })
}

fn approx_tokens(s: &str) -> u64 {
    (s.chars().count() as u64).div_ceil(4)
}

fn completion_json(req: &FakeRequest, text: &str, finish: &str) -> Value {
    let prompt: u64 = req
        .body
        .get("messages")
        .and_then(Value::as_array)
        .map(|ms| {
            ms.iter()
                .map(|m| {
                    4 + approx_tokens(m.get("content").and_then(Value::as_str).unwrap_or_default())
                })
                .sum()
        })
        .unwrap_or(0);
    let out = approx_tokens(text);
    json!({
        "id": format!("fake-{}", req.n),
        "object": "chat.completion",
        "created": 0,
        "model": req.model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": out, "total_tokens": prompt + out}
    })
}

/// A chat completion whose message is a refusal (`content: null`, `refusal: text`).
fn refusal_json(req: &FakeRequest, text: &str) -> Value {
    let mut v = completion_json(req, "", "stop");
    if let Some(m) = v.pointer_mut("/choices/0/message") {
        m["content"] = Value::Null;
        m["refusal"] = Value::String(text.to_string());
    }
    v
}

fn completion(req: &FakeRequest, text: &str, finish: &str) -> Response {
    axum::Json(completion_json(req, text, finish)).into_response()
}

fn error_response(status: u16, retry_after_s: Option<f64>, message: &str) -> Response {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut r = (code, axum::Json(json!({"error": {"message": message, "type": "fake_error", "param": null, "code": null}}))).into_response();
    if let Some(s) = retry_after_s
        && let Ok(v) = HeaderValue::from_str(&format!("{s}"))
    {
        r.headers_mut().insert("retry-after", v);
    }
    r
}

/// POST /v1/files (multipart, the part named `file`).
async fn upload_file(
    State(s): State<Arc<Shared>>,
    headers: axum::http::HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    s.batch_calls.fetch_add(1, Ordering::Relaxed);
    if s.held_at(BatchStage::Upload).await {
        return error_response(503, None, "held (fake)");
    }
    let ct = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let Some(boundary) = ct
        .split("boundary=")
        .nth(1)
        .map(|b| b.trim_matches('"').to_string())
    else {
        return error_response(400, None, "expected multipart/form-data");
    };
    let Some(content) = multipart_part(&body, &boundary, "file") else {
        return error_response(400, None, "no `file` part");
    };
    let Ok(mut files) = s.files.lock() else {
        return error_response(500, None, "lock");
    };
    let id = format!("file-{}", files.len() + 1);
    let bytes = content.len();
    files.insert(id.clone(), content);
    axum::Json(json!({"id": id, "object": "file", "bytes": bytes, "created_at": 0, "filename": "input.jsonl", "purpose": "batch"})).into_response()
}

/// The bytes of one named part of a multipart body.
fn multipart_part(body: &[u8], boundary: &str, name: &str) -> Option<Vec<u8>> {
    let delim = format!("--{boundary}");
    let text = body;
    let find = |hay: &[u8], needle: &[u8], from: usize| {
        hay.get(from..)?
            .windows(needle.len())
            .position(|w| w == needle)
            .map(|p| p + from)
    };
    let mut pos = find(text, delim.as_bytes(), 0)?;
    loop {
        let start = pos + delim.len();
        let next = find(text, delim.as_bytes(), start)?;
        let part = &text[start..next];
        let header_end = find(part, b"\r\n\r\n", 0)?;
        let headers = String::from_utf8_lossy(&part[..header_end]);
        if headers.contains(&format!("name=\"{name}\"")) {
            let mut content = &part[header_end + 4..];
            if content.ends_with(b"\r\n") {
                content = &content[..content.len() - 2];
            }
            return Some(content.to_vec());
        }
        pos = next;
    }
}

async fn file_content(
    State(s): State<Arc<Shared>>,
    axum::extract::Path(id): axum::extract::Path<String>,
) -> Response {
    s.batch_calls.fetch_add(1, Ordering::Relaxed);
    if s.held_at(BatchStage::Download).await {
        return error_response(503, None, "held (fake)");
    }
    match s.files.lock().ok().and_then(|f| f.get(&id).cloned()) {
        Some(b) => (
            StatusCode::OK,
            [("content-type", "application/octet-stream")],
            b,
        )
            .into_response(),
        None => error_response(404, None, "no such file"),
    }
}

/// POST /v1/batches: answers every line with the responder at once; the batch reports
/// `in_progress` on its first poll and `completed` afterwards.
async fn create_batch(
    State(s): State<Arc<Shared>>,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    s.batch_calls.fetch_add(1, Ordering::Relaxed);
    if s.held_at(BatchStage::BeforeCreate).await {
        return error_response(503, None, "held (fake)");
    }
    let Some(input) = body.get("input_file_id").and_then(Value::as_str) else {
        return error_response(400, None, "`input_file_id` is required");
    };
    let Some(bytes) = s.files.lock().ok().and_then(|f| f.get(input).cloned()) else {
        return error_response(404, None, "no such input file");
    };
    let mut out = String::new();
    let (mut total, mut failed) = (0u64, 0u64);
    for line in String::from_utf8_lossy(&bytes)
        .lines()
        .filter(|l| !l.trim().is_empty())
    {
        total += 1;
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            failed += 1;
            continue;
        };
        let n = s.chat_calls.fetch_add(1, Ordering::Relaxed);
        let (req, mut reply) = decide(&s, n, v.get("body").cloned().unwrap_or(Value::Null));
        while let FakeReply::Delay(_, inner) = reply {
            reply = *inner; // a batch has no latency to simulate
        }
        let response = match reply {
            FakeReply::Content(t) => {
                json!({"status_code": 200, "request_id": format!("r{n}"), "body": completion_json(&req, &t, "stop")})
            }
            FakeReply::Truncated(t) => {
                json!({"status_code": 200, "request_id": format!("r{n}"), "body": completion_json(&req, &t, "length")})
            }
            FakeReply::Status {
                status, message, ..
            } => {
                failed += 1;
                json!({"status_code": status, "request_id": format!("r{n}"), "body": {"error": {"message": message}}})
            }
            _ => {
                failed += 1;
                json!({"status_code": 500, "request_id": format!("r{n}"), "body": {"error": {"message": "fake failure"}}})
            }
        };
        out.push_str(&json!({"id": format!("batch_req_{n}"), "custom_id": v.get("custom_id"), "response": response, "error": null}).to_string());
        out.push('\n');
    }
    let b = {
        let (Ok(mut files), Ok(mut batches)) = (s.files.lock(), s.batches.lock()) else {
            return error_response(500, None, "lock");
        };
        let out_id = format!("file-{}", files.len() + 1);
        files.insert(out_id.clone(), out.into_bytes());
        let id = format!("batch_{}", batches.len() + 1);
        let b = json!({"id": id, "object": "batch", "endpoint": "/v1/chat/completions", "input_file_id": input, "completion_window": "24h",
            "status": "validating", "output_file_id": out_id, "error_file_id": null, "created_at": batches.len() + 1,
            "metadata": body.get("metadata").cloned().unwrap_or(Value::Null),
            "request_counts": {"total": total, "completed": total - failed, "failed": failed}});
        batches.insert(id, (b.clone(), 0));
        b
    };
    if s.held_at(BatchStage::AfterCreate).await {
        return error_response(503, None, "held (fake)");
    }
    axum::Json(b).into_response()
}

async fn get_batch(
    State(s): State<Arc<Shared>>,
    axum::extract::Path(id): axum::extract::Path<String>,
) -> Response {
    s.batch_calls.fetch_add(1, Ordering::Relaxed);
    if s.held_at(BatchStage::Poll).await {
        return error_response(503, None, "held (fake)");
    }
    let Ok(mut batches) = s.batches.lock() else {
        return error_response(500, None, "lock");
    };
    match batches.get_mut(&id) {
        Some((b, polls)) => {
            *polls += 1;
            b["status"] = json!(if *polls <= 1 {
                "in_progress"
            } else {
                "completed"
            });
            axum::Json(b.clone()).into_response()
        }
        None => error_response(404, None, "no such batch"),
    }
}

/// GET /v1/batches: every batch, newest first, in one page.
async fn list_batches(State(s): State<Arc<Shared>>) -> Response {
    s.batch_calls.fetch_add(1, Ordering::Relaxed);
    let Ok(batches) = s.batches.lock() else {
        return error_response(500, None, "lock");
    };
    let mut data: Vec<Value> = batches.values().map(|(b, _)| b.clone()).collect();
    data.sort_by_key(|b| std::cmp::Reverse(b["created_at"].as_u64().unwrap_or(0)));
    axum::Json(json!({"object": "list", "data": data, "has_more": false})).into_response()
}

/// What the fake saw of one rerank request.
#[derive(Debug, Clone, PartialEq)]
pub struct FakeRerank {
    /// `rerank` (llama.cpp, TEI, Cohere, Jina) or `score` (vLLM).
    pub route: &'static str,
    pub body: Value,
    /// The `Authorization` header, if sent.
    pub authorization: Option<String>,
}

/// The default rerank scores: cosine of the fake embeddings (prefixes dropped).
fn default_scores(query: &str, docs: &[String]) -> Vec<f64> {
    let q = fake_embedding(query, 256);
    docs.iter()
        .map(|d| {
            let v = fake_embedding(d, 256);
            q.iter().zip(&v).map(|(a, b)| f64::from(a * b)).sum()
        })
        .collect()
}

async fn rerank(
    State(s): State<Arc<Shared>>,
    headers: axum::http::HeaderMap,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    rerank_answer(&s, "rerank", &headers, body).await
}

async fn score(
    State(s): State<Arc<Shared>>,
    headers: axum::http::HeaderMap,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    rerank_answer(&s, "score", &headers, body).await
}

/// Answers a rerank request in the shape of the API that sent it: vLLM's `/score`
/// (`text_1`, `text_2` -> `data`), TEI's `/rerank` (`texts` -> a bare list), or the
/// llama.cpp / Cohere / Jina `/rerank` (`documents` -> `results` with `relevance_score`).
async fn rerank_answer(
    s: &Shared,
    route: &'static str,
    headers: &axum::http::HeaderMap,
    body: Value,
) -> Response {
    let n = s.rerank_calls.fetch_add(1, Ordering::Relaxed);
    if let Ok(mut r) = s.reranks.lock() {
        r.push(FakeRerank {
            route,
            body: body.clone(),
            authorization: headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string),
        });
    }
    if !s.latency.is_zero() {
        tokio::time::sleep(s.latency).await;
    }
    if n < s.rerank_failures {
        return error_response(503, None, "the fake reranker is warming up");
    }
    let strings = |v: Option<&Value>| -> Option<Vec<String>> {
        v?.as_array()?
            .iter()
            .map(|d| d.as_str().map(str::to_string))
            .collect()
    };
    let (query, docs, shape) = if route == "score" {
        (body.get("text_1"), strings(body.get("text_2")), "vllm")
    } else if body.get("texts").is_some() {
        (body.get("query"), strings(body.get("texts")), "tei")
    } else {
        (body.get("query"), strings(body.get("documents")), "results")
    };
    let (Some(query), Some(docs)) = (query.and_then(Value::as_str), docs) else {
        return error_response(
            400,
            None,
            "a rerank request needs a query and a list of passages",
        );
    };
    let scores = (s.scorer)(query, &docs);
    let tokens: u64 = approx_tokens(query) * docs.len() as u64
        + docs.iter().map(|d| approx_tokens(d)).sum::<u64>();
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|a, b| scores[*b].total_cmp(&scores[*a]));
    let answer = match shape {
        "vllm" => json!({
            "object": "list",
            "data": scores.iter().enumerate().map(|(i, x)| json!({"index": i, "object": "score", "score": x})).collect::<Vec<_>>(),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }),
        "tei" => Value::Array(
            order
                .iter()
                .map(|i| json!({"index": i, "score": scores[*i]}))
                .collect(),
        ),
        _ => json!({
            "results": order.iter().map(|i| json!({"index": i, "relevance_score": scores[*i]})).collect::<Vec<_>>(),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }),
    };
    axum::Json(answer).into_response()
}

async fn embeddings(State(s): State<Arc<Shared>>, axum::Json(body): axum::Json<Value>) -> Response {
    let n = s.embedding_calls.fetch_add(1, Ordering::Relaxed);
    if s.record
        && let Ok(mut r) = s.embedded.lock()
    {
        r.push(body.clone());
    }
    if !s.latency.is_zero() {
        tokio::time::sleep(s.latency).await;
    }
    if let Some(r) = injected(&s.faults, n) {
        s.injected.fetch_add(1, Ordering::Relaxed);
        if !matches!(r, FakeReply::Content(_)) {
            let req = FakeRequest {
                n,
                model: String::new(),
                body: Value::Null,
                last_user: String::new(),
                system: None,
                schema: None,
                seed: None,
            };
            return render(r, &req).await;
        }
    }
    let inputs: Vec<String> = match body.get("input") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| v.to_string())
            })
            .collect(),
        _ => return error_response(400, None, "`input` must be a string or an array of strings"),
    };
    let mut tokens = 0u64;
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(i, t)| {
            tokens += approx_tokens(t);
            json!({"object": "embedding", "index": i, "embedding": fake_embedding(t, s.dims)})
        })
        .collect();
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("fake-embed");
    axum::Json(json!({"object": "list", "data": data, "model": model, "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fault_rates_are_close_and_deterministic() {
        let f = Faults {
            rate_429: 0.1,
            rate_500: 0.1,
            seed: 7,
            ..Default::default()
        };
        let hits = (0..10_000).filter(|n| injected(&f, *n).is_some()).count();
        assert!((1800..2200).contains(&hits), "{hits}");
        let again = (0..10_000).filter(|n| injected(&f, *n).is_some()).count();
        assert_eq!(hits, again);
    }
}
