//! A scripted fake OpenAI-compatible server for tests and benchmarks (axum on 127.0.0.1, random
//! port, in-process). It answers `/v1/chat/completions` from a closure or a script, injects
//! latency, 429 with `Retry-After`, 500, hangs (client timeouts), malformed response bodies and
//! broken JSON content, counts calls, and serves `/v1/models` and `/v1/embeddings` with
//! deterministic embeddings (hashed words and character trigrams, L2-normalised) so similar
//! texts get similar vectors.
//!
//! Behind the cargo feature `fake` (tests and benchmarks only); the requests and replies it is
//! scripted with are in [`crate::fake`], which re-exports this module's public items.
//!
//! Here the server, its builder and its shared state; the routes by concern in `chat.rs`
//! (completions and injected faults), `batch.rs` (the Batch API's files and batches) and
//! `scoring.rs` (rerank, score and embeddings).

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
use crate::fake::{FakeReply, FakeRequest, default_reply};

mod fake_batch;
mod fake_chat;
mod scoring;

use fake_batch::{create_batch, file_content, get_batch, list_batches, upload_file};
use fake_chat::chat;
pub use scoring::FakeRerank;
use scoring::{default_scores, embeddings, rerank, score};

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
    /// Share of requests answered 429.
    pub rate_429: f64,
    /// Share of requests answered 500.
    pub rate_500: f64,
    /// Share of requests never answered.
    pub rate_hang: f64,
    /// Share of requests answered 200 with a body of JSON cut short.
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
    /// The seed that picks which requests get a fault.
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
    /// Latency added to every request, in milliseconds.
    pub fn latency_ms(self, ms: u64) -> Self {
        self.latency(Duration::from_millis(ms))
    }
    /// Injects these random faults.
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
    /// A builder with no script, no latency and no faults.
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
