//! `--batch`: calls go through the OpenAI-compatible Batch API (files + batches) at the
//! endpoint's `batch_discount` (OpenAI: half price). Two passes: in batch mode a cache miss is
//! queued and answered with [`LlmError::Batched`]; [`Llm::run_batches`] uploads one JSONL file
//! per endpoint, creates the batch, records its id and items in the cache file, polls until it
//! ends, and puts every answer into the cache and the ledger. The caller's second pass then
//! hits the cache. A killed run resumes by batch id: `run_batches` first polls the unfinished
//! jobs recorded in the cache file, and items waiting in them are never submitted twice.
//! Unparsable answers are recorded as failed (no parse retry inside a batch); a rerun asks
//! them again.
//!
//! Submission is idempotent: a job and its items are recorded in the cache under a
//! client-side submission id (`mtr-pending:<id>`) *before* the file is uploaded, and the batch
//! is created with `metadata.mtr_submission = <id>`. A run killed between the two finds the
//! pending record on its next start and looks the id up in the provider's batch list: found,
//! the batch is adopted and polled; not found, the provider never created it and the record
//! is dropped, so its requests are queued and submitted again. A kill at any point never
//! creates a second batch for the same requests.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{Llm, read_choice};
use crate::balance::Endpoint;
use crate::cache::{BatchItem, BatchJob, Cache, StoredChat};
use crate::chat::{ChatRequest, OutputSpec, ParseStatus};
use crate::error::{LlmError, Result};
use crate::extract::parse_output;
use crate::ledger::Event;

/// A request waiting to be submitted.
#[derive(Debug, Clone)]
pub(crate) struct Queued {
    pub key: String,
    pub body: Value,
    pub output: OutputSpec,
    pub prompt_id: Option<String>,
    pub sample: u32,
}

/// What [`Llm::run_batches`] did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BatchReport {
    /// Batch ids submitted now.
    pub submitted: Vec<String>,
    /// Batch ids from an earlier run that were resumed.
    pub resumed: Vec<String>,
    /// Answers stored in the cache.
    pub answered: u64,
    /// Items the provider failed (per-item errors, or a failed/expired batch).
    pub failed: u64,
    /// Answers that did not parse (not cached; a rerun asks again).
    pub parse_failed: u64,
}

/// Prefix of a job recorded before the provider created it (the rest is the submission id).
const PENDING: &str = "mtr-pending:";

/// Pages of the provider's batch list searched for a pending submission.
const LIST_PAGES: usize = 50;

impl Llm {
    pub(super) fn enqueue_batch(
        &self,
        ep: &Endpoint,
        req: &ChatRequest,
        body: super::body::RequestBody<'_>,
        key: String,
        serialised: Option<&super::body::SerialisedCall>,
    ) -> Result<super::ChatResult> {
        if let Some(exported) = self.export_call(ep, req, &body, &key, serialised) {
            return exported;
        }
        let Some(cache) = &self.inner.cache else {
            return Err(LlmError::Config(
                "--batch needs the cache (remove --no-cache)".into(),
            ));
        };
        if !cache.pending_in_batch(&key)
            && let Ok(mut q) = self.inner.batch_queue.lock()
        {
            let items = q.entry(ep.cfg.name.clone()).or_default();
            if !items.iter().any(|i| i.key == key) {
                items.push(Queued {
                    key,
                    body: body.into_value(),
                    output: req.output.clone(),
                    prompt_id: req.prompt.as_ref().map(|p| p.id.clone()),
                    sample: req.sample,
                });
            }
        }
        Err(LlmError::Batched)
    }

    /// Requests queued for the Batch API and not yet submitted.
    pub fn batch_queued(&self) -> usize {
        self.inner
            .batch_queue
            .lock()
            .map(|q| q.values().map(Vec::len).sum())
            .unwrap_or(0)
    }

    /// Submits the queued requests, resumes unfinished jobs of earlier runs, waits for all of
    /// them (polling every `[llm] batch_poll_s`), and stores the answers in the cache.
    pub async fn run_batches(&self) -> Result<BatchReport> {
        let Some(cache) = &self.inner.cache else {
            return Err(LlmError::Config(
                "--batch needs the cache (remove --no-cache)".into(),
            ));
        };
        let mut report = BatchReport::default();
        let mut watch = self.resume_batches(cache, &mut report).await?;
        let queued: BTreeMap<String, Vec<Queued>> = self
            .inner
            .batch_queue
            .lock()
            .map(|mut q| std::mem::take(&mut *q))
            .unwrap_or_default();
        for (name, items) in queued {
            if items.is_empty() {
                continue;
            }
            let job = self.submit_batch(cache, &name, &items).await?;
            report.submitted.push(job.batch_id.clone());
            watch.push(job);
        }
        let poll = Duration::from_secs_f64(self.inner.config.batch_poll_s.max(0.01));
        while !watch.is_empty() {
            let mut still = Vec::new();
            for job in watch {
                if let Some(job) = self.poll_batch(cache, job, &mut report).await? {
                    still.push(job);
                }
            }
            watch = still;
            if !watch.is_empty() {
                tokio::time::sleep(poll).await;
            }
        }
        Ok(report)
    }

    /// The unfinished jobs of earlier runs to poll: a job recorded before its batch was
    /// created is adopted when the provider has it, else forgotten (its requests are queued
    /// and submitted again).
    async fn resume_batches(
        &self,
        cache: &Cache,
        report: &mut BatchReport,
    ) -> Result<Vec<BatchJob>> {
        let mut watch: Vec<BatchJob> = Vec::new();
        for job in cache.open_batches()? {
            if !self.inner.endpoints.contains_key(&job.endpoint) {
                continue;
            }
            if let Some(sid) = job.batch_id.strip_prefix(PENDING) {
                // recorded before it was created: did the provider receive it?
                match self.find_submission(&job.endpoint, sid).await? {
                    Some(id) => {
                        tracing::info!(endpoint = %job.endpoint, batch = %id, "found the batch an interrupted run created; polling it");
                        cache.rename_batch(&job.batch_id, &id, "submitted")?;
                        report.resumed.push(id.clone());
                        watch.push(BatchJob {
                            batch_id: id,
                            status: "submitted".into(),
                            ..job
                        });
                    }
                    None => {
                        tracing::info!(endpoint = %job.endpoint, "an interrupted run never created its batch; its requests are submitted again");
                        cache.delete_batch(&job.batch_id)?;
                    }
                }
                continue;
            }
            report.resumed.push(job.batch_id.clone());
            watch.push(job);
        }
        Ok(watch)
    }

    /// Submits the requests queued for endpoint `name` as one batch: its worst-case cost
    /// reserved while it is submitted, the job recorded under a submission id first, the file
    /// uploaded, the batch created, the record renamed to the provider's batch id.
    async fn submit_batch(&self, cache: &Cache, name: &str, items: &[Queued]) -> Result<BatchJob> {
        let ep = self.endpoint(name)?.clone();
        let estimate = batch_estimate(&ep, items);
        self.inner.ledger.reserve(name, estimate)?;
        let replica = ep
            .replicas()
            .await?
            .first()
            .cloned()
            .ok_or_else(|| LlmError::Config(format!("endpoint `{name}` has no URL")))?;
        let provider = |e: crate::retry::AttemptError| LlmError::Provider {
            endpoint: name.to_string(),
            status: e.status,
            message: e.message,
            attempts: 1,
        };
        // recorded first, under a client-side id the batch carries in its metadata
        let sid = submission_id(name, items);
        let pending = format!("{PENDING}{sid}");
        let recorded = BatchJob {
            batch_id: pending.clone(),
            endpoint: name.to_string(),
            model: ep.cfg.model.clone(),
            status: "creating".into(),
        };
        cache.insert_batch(&recorded, &batch_rows(items))?;
        let file_id = match replica.upload_batch_file(batch_jsonl(items)).await {
            Ok(f) => f,
            Err(e) => {
                // no batch without its file: forget the record, a rerun submits again
                cache.delete_batch(&pending)?;
                self.inner.ledger.release(estimate);
                return Err(provider(e));
            }
        };
        let batch = match replica
            .create_batch(&json!({"input_file_id": file_id, "endpoint": "/v1/chat/completions", "completion_window": "24h", "metadata": {"mtr_submission": sid}}))
            .await
        {
            Ok(b) => b,
            Err(e) => {
                // refused: certainly not created; otherwise (timeout, connection lost) the
                // record stays and the next run looks the submission id up
                if !e.retryable {
                    cache.delete_batch(&pending)?;
                }
                self.inner.ledger.release(estimate);
                return Err(provider(e));
            }
        };
        let batch_id = batch
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if batch_id.is_empty() {
            self.inner.ledger.release(estimate);
            return Err(LlmError::Provider {
                endpoint: name.to_string(),
                status: None,
                message: format!("batch answer has no id: {batch}"),
                attempts: 1,
            });
        }
        cache.rename_batch(&pending, &batch_id, "submitted")?;
        self.inner.ledger.release(estimate);
        tracing::info!(endpoint = %name, batch = %batch_id, items = items.len(), "batch submitted");
        Ok(BatchJob {
            batch_id,
            status: "submitted".into(),
            ..recorded
        })
    }

    /// Polls one job once: a finished job is collected (`None`), a running one is returned to
    /// be polled again (its new status recorded).
    async fn poll_batch(
        &self,
        cache: &Cache,
        job: BatchJob,
        report: &mut BatchReport,
    ) -> Result<Option<BatchJob>> {
        let ep = self.endpoint(&job.endpoint)?.clone();
        let replica = ep
            .replicas()
            .await?
            .first()
            .cloned()
            .ok_or_else(|| LlmError::Config("no URL".into()))?;
        let b = match replica.get_batch(&job.batch_id).await {
            Ok(b) => b,
            Err(e) if e.retryable => {
                tracing::warn!(batch = %job.batch_id, "polling failed, will retry: {}", e.message);
                return Ok(Some(job));
            }
            Err(e) => {
                return Err(LlmError::Provider {
                    endpoint: job.endpoint.clone(),
                    status: e.status,
                    message: e.message,
                    attempts: 1,
                });
            }
        };
        let status = b
            .get("status")
            .and_then(Value::as_str)
            .unwrap_or("unknown")
            .to_string();
        match status.as_str() {
            "completed" => {
                self.collect(&ep, &replica, &job, &b, report).await?;
                cache.set_batch_status(&job.batch_id, "collected")?;
            }
            "failed" | "expired" | "cancelled" => {
                // expired/cancelled batches may still have partial output
                self.collect(&ep, &replica, &job, &b, report).await?;
                let total = b
                    .pointer("/request_counts/total")
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
                let done = b
                    .pointer("/request_counts/completed")
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
                report.failed += total.saturating_sub(done);
                cache.set_batch_status(&job.batch_id, &status)?;
                tracing::warn!(batch = %job.batch_id, status = %status, "batch ended without completing; rerun to ask the rest again");
            }
            other => {
                if other != job.status {
                    cache.set_batch_status(&job.batch_id, other)?;
                }
                return Ok(Some(BatchJob {
                    status: other.to_string(),
                    ..job
                }));
            }
        }
        Ok(None)
    }

    async fn collect(
        &self,
        ep: &Endpoint,
        replica: &crate::provider::Replica,
        job: &BatchJob,
        b: &Value,
        report: &mut BatchReport,
    ) -> Result<()> {
        let Some(cache) = &self.inner.cache else {
            return Ok(());
        };
        for field in ["output_file_id", "error_file_id"] {
            let Some(file) = b
                .get(field)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
            else {
                continue;
            };
            let bytes = replica
                .file_content(file)
                .await
                .map_err(|e| LlmError::Provider {
                    endpoint: job.endpoint.clone(),
                    status: e.status,
                    message: e.message,
                    attempts: 1,
                })?;
            for line in String::from_utf8_lossy(&bytes)
                .lines()
                .filter(|l| !l.trim().is_empty())
            {
                let Ok(v) = serde_json::from_str::<Value>(line) else {
                    continue;
                };
                let Some(key) = v.get("custom_id").and_then(Value::as_str) else {
                    continue;
                };
                let Some(item) = cache.batch_item(key)? else {
                    continue;
                };
                let ok = v.pointer("/response/status_code").and_then(Value::as_u64) == Some(200);
                let Some(resp) = v.pointer("/response/body").filter(|_| ok) else {
                    report.failed += 1;
                    self.inner
                        .ledger
                        .event(&job.endpoint, Event::ProviderFailed);
                    let why = v
                        .pointer("/response/body/error/message")
                        .or_else(|| v.pointer("/error/message"))
                        .and_then(Value::as_str)
                        .unwrap_or("the batch item failed");
                    // the provider's text may echo the key
                    self.inner
                        .ledger
                        .note_error(&job.endpoint, &crate::redact::redact(why));
                    continue;
                };
                let output = OutputSpec::of_stored(&item.output);
                let answer = BatchAnswer {
                    batch_id: &job.batch_id,
                    key,
                    item: &item,
                    body: resp,
                };
                match self.store_batch_answer(cache, ep, &output, answer)? {
                    Ok(()) => report.answered += 1,
                    Err(_) => report.parse_failed += 1,
                }
            }
        }
        Ok(())
    }
}

impl Llm {
    /// The provider's id of the batch created with `metadata.mtr_submission = sid`, if any.
    async fn find_submission(&self, endpoint: &str, sid: &str) -> Result<Option<String>> {
        let ep = self.endpoint(endpoint)?.clone();
        let replica = ep
            .replicas()
            .await?
            .first()
            .cloned()
            .ok_or_else(|| LlmError::Config(format!("endpoint `{endpoint}` has no URL")))?;
        let mut after: Option<String> = None;
        for _ in 0..LIST_PAGES {
            let page =
                replica
                    .list_batches(after.as_deref())
                    .await
                    .map_err(|e| LlmError::Provider {
                        endpoint: endpoint.to_string(),
                        status: e.status,
                        message: format!(
                            "cannot list batches to find an interrupted submission: {}",
                            e.message
                        ),
                        attempts: 1,
                    })?;
            let data = page
                .get("data")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            if let Some(b) = data.iter().find(|b| {
                b.pointer("/metadata/mtr_submission")
                    .and_then(Value::as_str)
                    == Some(sid)
            }) {
                return Ok(b.get("id").and_then(Value::as_str).map(str::to_string));
            }
            let more = page
                .get("has_more")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            after = data
                .last()
                .and_then(|b| b.get("id"))
                .and_then(Value::as_str)
                .map(str::to_string);
            if !more || after.is_none() {
                break;
            }
        }
        Ok(None)
    }
}

/// A client-side id for one submission: the endpoint, its requests and the moment.
fn submission_id(endpoint: &str, items: &[Queued]) -> String {
    let mut h = blake3::Hasher::new();
    h.update(endpoint.as_bytes());
    for it in items {
        h.update(b"\x1f");
        h.update(it.key.as_bytes());
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    h.update(&nanos.to_le_bytes());
    h.update(&std::process::id().to_le_bytes());
    h.finalize().to_hex()[..24].to_string()
}

/// The worst-case cost of a batch's requests (prompt tokens counted, `max_tokens` out) at the
/// endpoint's batch price.
fn batch_estimate(ep: &Endpoint, items: &[Queued]) -> f64 {
    items
        .iter()
        .map(|it| {
            let msgs: Vec<crate::chat::ChatMessage> = it
                .body
                .get("messages")
                .and_then(|m| serde_json::from_value(m.clone()).ok())
                .unwrap_or_default();
            let max_out = it
                .body
                .get("max_tokens")
                .and_then(Value::as_u64)
                .unwrap_or(1024);
            ep.cfg
                .cost(crate::tokens::count_messages(&ep.cfg.model, &msgs), max_out)
                * ep.cfg.batch_discount
        })
        .sum()
}

/// The batch input file: one `/v1/chat/completions` request per line, keyed by cache key.
fn batch_jsonl(items: &[Queued]) -> Vec<u8> {
    let mut jsonl = Vec::new();
    for it in items {
        let line = json!({"custom_id": it.key, "method": "POST", "url": "/v1/chat/completions", "body": it.body});
        jsonl.extend_from_slice(line.to_string().as_bytes());
        jsonl.push(b'\n');
    }
    jsonl
}

/// The cache file's record of a batch's requests.
fn batch_rows(items: &[Queued]) -> Vec<BatchItem> {
    items
        .iter()
        .map(|it| BatchItem {
            key: it.key.clone(),
            prompt_id: it.prompt_id.clone(),
            output: serde_json::to_string(&it.output).unwrap_or_default(),
            sample: it.sample,
        })
        .collect()
}

/// One answer of a Batch job: the call `key` (`item`), exported or submitted under
/// `batch_id`, and the provider's response `body`.
#[derive(Debug, Clone, Copy)]
pub(super) struct BatchAnswer<'a> {
    pub(super) batch_id: &'a str,
    pub(super) key: &'a str,
    pub(super) item: &'a BatchItem,
    pub(super) body: &'a Value,
}

impl Llm {
    /// Stores one answer a Batch job returned (`answer`, for the endpoint `ep`): parsed
    /// against the call's output spec (`output`, read from `answer.item.output`), priced at the
    /// endpoint's price times `batch_discount`, booked once in the spend ledger however often
    /// the batch is collected or its file imported, then written to the cache. An answer that
    /// does not parse is booked (it was paid) but not stored: `Ok(Err(why))`.
    pub(super) fn store_batch_answer(
        &self,
        cache: &Cache,
        ep: &Endpoint,
        output: &OutputSpec,
        answer: BatchAnswer<'_>,
    ) -> Result<std::result::Result<(), String>> {
        let BatchAnswer {
            batch_id,
            key,
            item,
            body,
        } = answer;
        let (text, finish_reason, usage) = read_choice(body, &ep.cfg.model, &Value::Null);
        let (value, status) = parse_output(output, &text);
        let cost =
            ep.cfg.cost(usage.prompt_tokens, usage.completion_tokens) * ep.cfg.batch_discount;
        let name = &ep.cfg.name;
        self.inner.ledger.settle_once(
            format!("{batch_id}/{key}"),
            name,
            usage.prompt_tokens,
            usage.completion_tokens,
            cost,
        );
        match &status {
            ParseStatus::Failed { error } => {
                self.inner.ledger.event(name, Event::ParseFailed);
                return Ok(Err(error.clone()));
            }
            ParseStatus::Extracted { .. } => self.inner.ledger.event(name, Event::Extracted),
            ParseStatus::Ok => {}
        }
        let stored = StoredChat {
            value,
            text,
            status,
            usage,
            cost_usd: cost,
            model: ep.cfg.model.clone(),
            finish_reason,
            rating: None,
        };
        cache.put_chat(key, item.prompt_id.as_deref(), &stored)?;
        Ok(Ok(()))
    }
}
