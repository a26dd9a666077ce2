//! The HTTP edge: one async-openai client per replica URL, with a reqwest client carrying the
//! endpoint's timeout and a transport service that replaces async-openai's built-in retry
//! layer, so that every attempt, status code and `Retry-After` reaches [`crate::retry`].
//! Requests and responses are raw JSON (async-openai's `byot`), which lets vendor extras and
//! `response_format` variants through unchanged.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use async_openai::Client;
use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::middleware::HttpRequestFactory;
use serde_json::Value;
use tokio::sync::Semaphore;

use crate::error::{LlmError, Result};
use crate::retry::{AttemptError, parse_retry_after};

/// A non-2xx answer, with what the retry loop needs from it.
#[derive(Debug)]
struct HttpStatusError {
    status: u16,
    retry_after: Option<Duration>,
    body: String,
}

impl std::fmt::Display for HttpStatusError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HTTP {}: {}", self.status, self.body)
    }
}

impl std::error::Error for HttpStatusError {}

/// Transport: send once, turn non-2xx into [`HttpStatusError`] (no retries here).
#[derive(Clone)]
struct Transport {
    client: reqwest::Client,
}

impl tower::Service<HttpRequestFactory> for Transport {
    type Response = reqwest::Response;
    type Error = OpenAIError;
    type Future = Pin<Box<dyn Future<Output = Result<reqwest::Response, OpenAIError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: HttpRequestFactory) -> Self::Future {
        let client = self.client.clone();
        Box::pin(async move {
            let req = req.build().await?;
            let resp = client.execute(req).await.map_err(OpenAIError::Reqwest)?;
            if resp.status().is_success() {
                return Ok(resp);
            }
            let status = resp.status().as_u16();
            let retry_after = parse_retry_after(resp.headers());
            let body = resp.text().await.unwrap_or_default();
            Err(OpenAIError::Boxed(Box::new(HttpStatusError {
                status,
                retry_after,
                body,
            })))
        })
    }
}

/// One server URL of an endpoint.
pub(crate) struct Replica {
    pub url: String,
    client: Client<OpenAIConfig>,
    /// For the non-OpenAI routes (rerank APIs): the same HTTP client, and the key.
    http: reqwest::Client,
    api_key: Option<String>,
    pub slots: Arc<Semaphore>,
    pub in_flight: AtomicUsize,
}

impl Replica {
    pub(crate) fn new(
        url: &str,
        api_key: Option<&str>,
        timeout: Duration,
        max_concurrency: usize,
    ) -> Result<Self> {
        mtr_local::ensure_crypto();
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(10)))
            .pool_max_idle_per_host(max_concurrency.max(1))
            .build()
            .map_err(|e| LlmError::Config(format!("cannot build an HTTP client for {url}: {e}")))?;
        // Never let async-openai fall back to $OPENAI_API_KEY for an endpoint without a key.
        let cfg = OpenAIConfig::new()
            .with_api_base(url)
            .with_api_key(api_key.unwrap_or("mtr-no-key"));
        let client = Client::with_config(cfg).with_http_service(Transport {
            client: http.clone(),
        });
        Ok(Self {
            url: url.to_string(),
            client,
            http,
            api_key: api_key.map(str::to_string),
            slots: Arc::new(Semaphore::new(max_concurrency.max(1))),
            in_flight: AtomicUsize::new(0),
        })
    }

    /// POST /chat/completions with a raw JSON body; one attempt.
    pub(crate) async fn chat(&self, body: &Value) -> Result<Value, AttemptError> {
        let _g = InFlight::new(&self.in_flight);
        self.client
            .chat()
            .create_byot::<&Value, Value>(body)
            .await
            .map_err(attempt_error)
    }

    /// POST /embeddings with a raw JSON body; one attempt.
    pub(crate) async fn embeddings(&self, body: &Value) -> Result<Value, AttemptError> {
        let _g = InFlight::new(&self.in_flight);
        self.client
            .embeddings()
            .create_byot::<&Value, Value>(body)
            .await
            .map_err(attempt_error)
    }
}

impl Replica {
    /// POST `{url}{path}` with a raw JSON body and the bearer key; one attempt (the rerank
    /// APIs, which async-openai does not know).
    pub(crate) async fn post_json(&self, path: &str, body: &Value) -> Result<Value, AttemptError> {
        let _g = InFlight::new(&self.in_flight);
        let mut req = self.http.post(format!("{}{path}", self.url)).json(body);
        if let Some(k) = &self.api_key {
            req = req.bearer_auth(k);
        }
        let resp = req
            .send()
            .await
            .map_err(|e| attempt_error(OpenAIError::Reqwest(e)))?;
        let status = resp.status().as_u16();
        let retry_after = parse_retry_after(resp.headers());
        let text = resp
            .text()
            .await
            .map_err(|e| attempt_error(OpenAIError::Reqwest(e)))?;
        if !(200..300).contains(&status) {
            let mut a = AttemptError::from_status(status, retry_after, &text);
            a.message = crate::redact::redact_owned(a.message);
            return Err(a);
        }
        serde_json::from_str(&text).map_err(|e| AttemptError {
            status: None,
            retry_after: None,
            message: crate::redact::redact_owned(format!(
                "malformed response body ({e}): {}",
                text.chars().take(200).collect::<String>()
            )),
            retryable: true,
        })
    }

    /// Uploads a Batch API input file (JSONL); returns the file id.
    pub(crate) async fn upload_batch_file(&self, jsonl: Vec<u8>) -> Result<String, AttemptError> {
        use async_openai::types::InputSource;
        use async_openai::types::files::{CreateFileRequest, FileInput, FilePurpose};
        let req = CreateFileRequest {
            file: FileInput {
                source: InputSource::VecU8 {
                    filename: "mtr-batch.jsonl".into(),
                    vec: jsonl,
                },
            },
            purpose: FilePurpose::Batch,
            expires_after: None,
        };
        let f: Value = self
            .client
            .files()
            .create_byot(req)
            .await
            .map_err(attempt_error)?;
        f.get("id")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| AttemptError {
                status: None,
                retry_after: None,
                message: crate::redact::redact_owned(format!("file upload answer has no id: {f}")),
                retryable: false,
            })
    }

    /// POST /batches.
    pub(crate) async fn create_batch(&self, body: &Value) -> Result<Value, AttemptError> {
        self.client
            .batches()
            .create_byot::<&Value, Value>(body)
            .await
            .map_err(attempt_error)
    }

    /// GET /batches/{id}.
    pub(crate) async fn get_batch(&self, id: &str) -> Result<Value, AttemptError> {
        self.client
            .batches()
            .retrieve_byot::<&str, Value>(id)
            .await
            .map_err(attempt_error)
    }

    /// GET /batches?limit=100[&after=ID]: one page of the provider's batches, newest first.
    pub(crate) async fn list_batches(&self, after: Option<&str>) -> Result<Value, AttemptError> {
        use async_openai::traits::RequestOptionsBuilder;
        let mut q: Vec<(&str, &str)> = vec![("limit", "100")];
        if let Some(a) = after {
            q.push(("after", a));
        }
        self.client
            .batches()
            .query(&q)
            .map_err(attempt_error)?
            .list_byot::<Value>()
            .await
            .map_err(attempt_error)
    }

    /// GET /files/{id}/content.
    pub(crate) async fn file_content(&self, id: &str) -> Result<Vec<u8>, AttemptError> {
        self.client
            .files()
            .content(id)
            .await
            .map(|b| b.to_vec())
            .map_err(attempt_error)
    }
}

struct InFlight<'a>(&'a AtomicUsize);

impl<'a> InFlight<'a> {
    fn new(c: &'a AtomicUsize) -> Self {
        c.fetch_add(1, Ordering::Relaxed);
        Self(c)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The attempt error of an async-openai error, secrets masked: a provider's error text (which
/// may echo the key) and reqwest's messages (which name the URL) enter mtr here.
fn attempt_error(e: OpenAIError) -> AttemptError {
    let mut a = attempt_error_raw(e);
    a.message = crate::redact::redact_owned(a.message);
    a
}

fn attempt_error_raw(e: OpenAIError) -> AttemptError {
    match e {
        OpenAIError::Boxed(b) => match b.downcast::<HttpStatusError>() {
            Ok(h) => AttemptError::from_status(h.status, h.retry_after, &h.body),
            Err(other) => AttemptError {
                status: None,
                retry_after: None,
                message: other.to_string(),
                retryable: true,
            },
        },
        OpenAIError::Reqwest(r) => {
            let what = if r.is_timeout() {
                "timed out"
            } else if r.is_connect() {
                "connection failed"
            } else {
                "transport error"
            };
            AttemptError {
                status: r.status().map(|s| s.as_u16()),
                retry_after: None,
                message: format!("{what}: {r}"),
                retryable: true,
            }
        }
        OpenAIError::JSONDeserialize(err, content) => AttemptError {
            status: None,
            retry_after: None,
            message: format!(
                "malformed response body ({err}): {}",
                content.chars().take(200).collect::<String>()
            ),
            retryable: true,
        },
        OpenAIError::ApiError(a) => {
            AttemptError::from_status(a.status_code.as_u16(), None, &a.api_error.message)
        }
        other => AttemptError {
            status: None,
            retry_after: None,
            message: other.to_string(),
            retryable: false,
        },
    }
}
