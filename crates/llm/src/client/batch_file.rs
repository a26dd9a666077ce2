//! Batch files: calls handed to an engine outside mtr (`vllm run-batch`, Ray Data, a provider's
//! Batch API by hand) and the answers brought back.
//!
//! **Export** ([`Llm::start_export`]): the client runs in batch mode, and a call the cache lacks
//! is written to the file as an OpenAI Batch input line (`custom_id` = its cache key, `url`
//! `/v1/chat/completions`, `body` = exactly what would be sent to that endpoint) instead of
//! being sent. The lines stream to a temporary file beside the target, sorted (the same file
//! every run, whatever order the calls finished in), and the requests are
//! recorded in the cache file as export jobs (see `cache/exported_files.rs`) in chunks, both by
//! writer threads (`client/export_sink.rs`), so a million requests never sit in memory and the
//! calls never wait for the disk; [`Llm::finish_export`] moves the file into place.
//!
//! **Import** ([`Llm::import_batch_output`]): Batch output lines (OpenAI's and vLLM's:
//! `custom_id`, `response.status_code`, `response.body`, `error`) are read one at a time, as
//! every reader of mtr reads lines (`batch_file/output_lines.rs`: a byte-order mark, CRLF and
//! lone CR line ends are what real tools write), and stored as answers fetched by a provider
//! batch are (`client/provider_batch.rs`): the same parse, the same cost (the endpoint's price times its
//! `batch_discount`), booked once in the spend ledger under `<batch id>/<key>` and the job that
//! exported it. Failed lines are counted, never
//! stored; an answer already cached is left alone, so importing a file twice changes nothing.
//! A line that is not JSON, whose `custom_id` no job of this cache asked, or whose body is no
//! chat completion stops the import with its file and line number; a last line cut short (a
//! copy still in progress) is reported and skipped.

mod output_lines;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::BufRead;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use self::output_lines::OutputLine;
use super::Llm;
use super::body::{RequestBody, SerialisedCall};
use super::export_sink::{CHUNK_BYTES, ExportSink};
use crate::balance::Endpoint;
use crate::cache::{Cache, ExportItem, JobMemo, KnownCall};
use crate::chat::{ChatRequest, OutputSpec};
use crate::error::{LlmError, Result};
use crate::ledger::Event;

/// Requests recorded in the cache file per transaction while exporting (about 100 bytes each
/// in memory; inserted in key order, so a larger transaction touches each page of the table
/// fewer times).
const ITEMS_PER_COMMIT: usize = 65_536;

/// Answers the cache writer may hold before the import waits for it (bounds memory: a few
/// hundred bytes each; the writer commits them in large, key-ordered transactions).
const ANSWERS_PENDING: usize = 1 << 18;

/// Failed lines whose message the import report keeps.
const ERRORS_KEPT: usize = 5;

/// The export in progress: the file being written and what it holds.
pub(crate) struct Exporter {
    target: PathBuf,
    /// The writer of the file and of the recorded requests (a thread of its own).
    sink: ExportSink,
    /// Whole lines not yet handed to the writer.
    pending: Vec<u8>,
    /// Submission id shared by this export's jobs (one per endpoint).
    sid: String,
    spend_job: Option<String>,
    /// Cache keys written (16 bytes of their hash): a call asked twice is written once.
    seen: HashSet<[u8; 16]>,
    /// Per endpoint: its job id and what it holds.
    jobs: BTreeMap<String, ExportedModel>,
    /// Ids of the specs recorded so far ([`crate::cache::Cache::export_spec`]), by the hash of
    /// their job, prompt id and output spec.
    specs: HashMap<[u8; 16], i64>,
    /// Items not yet recorded in the cache file.
    items: Vec<ExportItem>,
    bytes: u64,
}

/// One Batch input line appended to `out`, newline included: the bytes of
/// `json!({"custom_id": key, "method": "POST", "url": "/v1/chat/completions", "body": body})`
/// (keys kept in that order), serialised without copying the body.
fn write_line(out: &mut Vec<u8>, key: &str, body: &impl Serialize) {
    // serialising a body into a Vec cannot fail
    line_with(out, key, |out| {
        let _ = serde_json::to_writer(out, body);
    });
}

/// [`write_line`] of a body already serialised (`body`: its compact JSON bytes).
fn write_line_of(out: &mut Vec<u8>, key: &str, body: &[u8]) {
    line_with(out, key, |out| out.extend_from_slice(body));
}

/// One request line appended to `out`, its body written by `body`.
fn line_with(out: &mut Vec<u8>, key: &str, body: impl FnOnce(&mut Vec<u8>)) {
    out.extend_from_slice(b"{\"custom_id\":");
    // serialising a str into a Vec cannot fail
    let _ = serde_json::to_writer(&mut *out, key);
    out.extend_from_slice(b",\"method\":\"POST\",\"url\":\"/v1/chat/completions\",\"body\":");
    body(out);
    out.extend_from_slice(b"}\n");
}

/// One endpoint's share of an export.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExportedModel {
    /// The export job's id in the cache file.
    pub job: String,
    /// The endpoint's model.
    pub model: String,
    /// Requests of this endpoint in the file.
    pub requests: u64,
}

/// What [`Llm::finish_export`] wrote.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExportReport {
    /// The batch file written.
    pub file: PathBuf,
    /// Requests in it.
    pub requests: u64,
    /// Its size in bytes.
    pub bytes: u64,
    /// Per endpoint name.
    pub endpoints: BTreeMap<String, ExportedModel>,
}

/// What [`Llm::import_batch_output`] did with one file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ImportReport {
    /// Lines read (blank lines not counted).
    pub lines: u64,
    /// Answers stored in the cache.
    pub answered: u64,
    /// Answers the cache held already (an earlier import, or a direct call).
    pub already: u64,
    /// Lines the engine failed (an `error`, or a status other than 200): not stored.
    pub failed: u64,
    /// Answers that did not parse as the call's output: not stored (a rerun asks again).
    pub parse_failed: u64,
    /// The last line was cut short (the file is still being written, or was copied in part).
    pub truncated: bool,
    /// `(line, message)` of the first failed lines.
    pub errors: Vec<(u64, String)>,
    /// Answers stored, per model.
    pub models: BTreeMap<String, u64>,
}

/// Why an import stopped.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The file cannot be read.
    #[error("{file}: {source}")]
    Io {
        /// The file.
        file: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A line the import cannot take (bad JSON, a call of no job of this cache, no chat
    /// completion): the user's file, at `line`.
    #[error("{file}:{line}: {message}")]
    Line {
        /// The file.
        file: PathBuf,
        /// The line number, 1-based.
        line: u64,
        /// What is wrong with the line.
        message: String,
        /// How to fix it.
        hint: String,
    },
    /// The LLM layer failed (the cache, mostly).
    #[error(transparent)]
    Llm(#[from] LlmError),
}

impl Llm {
    /// Starts writing every call the cache lacks to `target` as Batch input lines instead of
    /// making it (the client must be in batch mode, `LlmOptions::batch`). Imported answers will
    /// be booked under `spend_job` in the spend ledger.
    pub fn start_export(&self, target: &Path, spend_job: Option<&str>) -> Result<()> {
        let Some(cache) = &self.inner.cache else {
            return Err(LlmError::Config(
                "--export-batch needs the cache (remove --no-cache)".into(),
            ));
        };
        if !self.inner.options.batch {
            return Err(LlmError::Config(
                "exporting needs the client in batch mode".into(),
            ));
        }
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let io =
            |e: std::io::Error| LlmError::Config(format!("cannot write {}: {e}", target.display()));
        std::fs::create_dir_all(&dir).map_err(io)?;
        let tmp = tempfile::Builder::new()
            .prefix(".mtr-export-")
            .suffix(".partial")
            .tempfile_in(&dir)
            .map_err(io)?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let mut h = blake3::Hasher::new();
        h.update(&nanos.to_le_bytes());
        h.update(&std::process::id().to_le_bytes());
        let exporter = Exporter {
            target: target.to_path_buf(),
            sink: ExportSink::start(tmp, cache.clone(), target)?,
            pending: Vec::with_capacity(CHUNK_BYTES),
            sid: h.finalize().to_hex()[..16].to_string(),
            spend_job: spend_job.map(str::to_string),
            seen: HashSet::new(),
            jobs: BTreeMap::new(),
            specs: HashMap::new(),
            items: Vec::new(),
            bytes: 0,
        };
        *self
            .inner
            .export
            .lock()
            .map_err(|_| LlmError::Config("export lock poisoned".into()))? = Some(exporter);
        Ok(())
    }

    /// True while calls are written to an export file ([`Llm::start_export`]) rather than made.
    pub fn is_exporting(&self) -> bool {
        self.inner.export.lock().is_ok_and(|e| e.is_some())
    }

    /// Requests written to the export file so far (0 when not exporting).
    pub fn exported(&self) -> u64 {
        self.inner
            .export
            .lock()
            .ok()
            .and_then(|e| {
                e.as_ref()
                    .map(|e| e.jobs.values().map(|j| j.requests).sum())
            })
            .unwrap_or(0)
    }

    /// Writes one call the cache lacks to the export file, if an export is running; the
    /// call then ends with [`LlmError::Batched`]. `None`: not exporting.
    pub(super) fn export_call(
        &self,
        ep: &Endpoint,
        req: &ChatRequest,
        body: &RequestBody<'_>,
        key: &str,
        serialised: Option<&SerialisedCall>,
    ) -> Option<Result<super::ChatResult>> {
        let mut guard = self.inner.export.lock().ok()?;
        let ex = guard.as_mut()?;
        Some(
            self.export_line(ex, ep, req, body, key, serialised)
                .and(Err(LlmError::Batched)),
        )
    }

    fn export_line(
        &self,
        ex: &mut Exporter,
        ep: &Endpoint,
        req: &ChatRequest,
        body: &RequestBody<'_>,
        key: &str,
        serialised: Option<&SerialisedCall>,
    ) -> Result<()> {
        let mut id = [0u8; 16];
        id.copy_from_slice(&blake3::hash(key.as_bytes()).as_bytes()[..16]);
        if !ex.seen.insert(id) {
            return Ok(());
        }
        let Some(cache) = &self.inner.cache else {
            return Ok(());
        };
        let name = &ep.cfg.name;
        if !ex.jobs.contains_key(name) {
            let job = format!("mtr-export:{}:{name}", ex.sid);
            cache.export_begin(&job, name, &ep.cfg.model, ex.spend_job.as_deref())?;
            ex.jobs.insert(
                name.clone(),
                ExportedModel {
                    job,
                    model: ep.cfg.model.clone(),
                    requests: 0,
                },
            );
        }
        let Some(job) = ex.jobs.get_mut(name) else {
            return Ok(());
        };
        let start = ex.pending.len();
        match serialised {
            Some(s) => write_line_of(&mut ex.pending, key, &s.body),
            None => write_line(&mut ex.pending, key, body),
        }
        ex.bytes += (ex.pending.len() - start) as u64;
        if ex.pending.len() >= CHUNK_BYTES {
            let full = std::mem::replace(&mut ex.pending, Vec::with_capacity(CHUNK_BYTES));
            ex.sink.lines(full)?;
        }
        job.requests += 1;
        let prompt_id = req.prompt.as_ref().map(|p| p.id.as_str());
        let owned;
        let output = match serialised {
            Some(s) => s.output.as_str(),
            None => {
                owned = serde_json::to_string(&req.output).unwrap_or_default();
                owned.as_str()
            }
        };
        let mut h = blake3::Hasher::new();
        for part in [Some(job.job.as_str()), prompt_id, Some(output)] {
            // a part's length, then its bytes (none: a length no string has)
            match part {
                Some(p) => h
                    .update(&(p.len() as u64).to_le_bytes())
                    .update(p.as_bytes()),
                None => h.update(&u64::MAX.to_le_bytes()),
            };
        }
        let mut spec_hash = [0u8; 16];
        spec_hash.copy_from_slice(&h.finalize().as_bytes()[..16]);
        let spec = match ex.specs.get(&spec_hash) {
            Some(id) => *id,
            None => {
                let id = cache.export_spec(&job.job, prompt_id, output)?;
                ex.specs.insert(spec_hash, id);
                id
            }
        };
        ex.items.push(ExportItem {
            key: key.to_string(),
            spec,
            sample: req.sample,
        });
        if ex.items.len() >= ITEMS_PER_COMMIT {
            let full = std::mem::replace(&mut ex.items, Vec::with_capacity(ITEMS_PER_COMMIT));
            ex.sink.items(full)?;
        }
        Ok(())
    }

    /// Ends the export: records the last requests, moves the file into place (atomically) and
    /// marks its jobs exported. `None` when no export was running.
    pub fn finish_export(&self) -> Result<Option<ExportReport>> {
        let ex = self
            .inner
            .export
            .lock()
            .map_err(|_| LlmError::Config("export lock poisoned".into()))?
            .take();
        let Some(mut ex) = ex else {
            return Ok(None);
        };
        let Some(cache) = &self.inner.cache else {
            return Ok(None);
        };
        if ex.jobs.is_empty() {
            // nothing missing: no file (the writer removes the temporary one)
            drop(ex.sink);
            return Ok(Some(ExportReport {
                file: ex.target,
                ..Default::default()
            }));
        }
        ex.sink.lines(std::mem::take(&mut ex.pending))?;
        ex.sink.items(std::mem::take(&mut ex.items))?;
        let target = ex.target.clone();
        let tmp = ex.sink.finish()?;
        tmp.persist(&ex.target)
            .map_err(|e| LlmError::Config(format!("cannot write {}: {e}", target.display())))?;
        for job in ex.jobs.values() {
            cache.export_finish(&job.job, job.requests)?;
        }
        cache.flush()?;
        Ok(Some(ExportReport {
            file: ex.target,
            requests: ex.jobs.values().map(|j| j.requests).sum(),
            bytes: ex.bytes,
            endpoints: ex.jobs,
        }))
    }

    /// Reads a Batch output file into the cache (see the module docs).
    pub fn import_batch_output(
        &self,
        path: &Path,
    ) -> std::result::Result<ImportReport, ImportError> {
        let file = std::fs::File::open(path).map_err(|source| ImportError::Io {
            file: path.to_path_buf(),
            source,
        })?;
        self.import_reader(std::io::BufReader::with_capacity(1 << 20, file), path)
    }

    /// [`Llm::import_batch_output`] over any reader; `name` names it in errors.
    pub(crate) fn import_reader(
        &self,
        reader: impl BufRead,
        name: &Path,
    ) -> std::result::Result<ImportReport, ImportError> {
        let Some(cache) = &self.inner.cache else {
            return Err(
                LlmError::Config("importing needs the cache (remove --no-cache)".into()).into(),
            );
        };
        cache.ensure_export_table()?;
        let mut import = Import {
            llm: self,
            cache,
            name,
            report: ImportReport::default(),
            spend_job: None,
            jobs: Default::default(),
            outputs: HashMap::new(),
        };
        let mut lines = output_lines::OutputLines::new(reader, name);
        while let Some(next) = lines.next_line() {
            if import.line(&next?)? == Flow::Stop {
                break;
            }
        }
        cache.flush()?;
        Ok(import.report)
    }
}

/// Whether an import reads on after a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Next,
    Stop,
}

/// One import's running state: the report so far and what it has looked up.
struct Import<'a> {
    llm: &'a Llm,
    cache: &'a Cache,
    name: &'a Path,
    report: ImportReport,
    /// The spend-ledger job the answers are booked under now.
    spend_job: Option<String>,
    jobs: JobMemo,
    /// The output specs read so far (an audit asks a handful), by their stored JSON.
    outputs: HashMap<String, OutputSpec>,
}

impl<'a> Import<'a> {
    /// A user error at line `line` of the file.
    fn bad(&self, line: u64, message: String, hint: &str) -> ImportError {
        ImportError::Line {
            file: self.name.to_path_buf(),
            line,
            message,
            hint: hint.to_string(),
        }
    }

    /// Reads a line (not blank): parses it, finds its call, counts a failure or stores the
    /// answer.
    fn line(&mut self, line: &OutputLine<'_>) -> std::result::Result<Flow, ImportError> {
        let n = line.number;
        self.report.lines += 1;
        let v: Value = match serde_json::from_str(line.text) {
            Ok(v) => v,
            Err(_) if !line.complete => {
                // the last line, cut short: the lines before it count
                self.report.truncated = true;
                self.report.lines -= 1;
                tracing::warn!(file = %self.name.display(), line = n, "the last line is cut short; it was skipped (import the complete file later)");
                return Ok(Flow::Stop);
            }
            Err(e) => {
                return Err(self.bad(
                    n,
                    format!("not a JSON line: {e}"),
                    "a Batch output file has one JSON object per line",
                ));
            }
        };
        let Some(key) = v.get("custom_id").and_then(Value::as_str) else {
            return Err(self.bad(n, "no `custom_id`".into(), "is this a Batch output file?"));
        };
        let (call, ep) = self.call_of(n, key)?;
        let status = v.pointer("/response/status_code").and_then(Value::as_u64);
        let error = v.get("error").filter(|e| !e.is_null());
        let body = v.pointer("/response/body").filter(|b| !b.is_null());
        let Some(body) = body.filter(|_| error.is_none() && status == Some(200)) else {
            self.failed(n, &call.endpoint, &v, status);
            return Ok(Flow::Next);
        };
        if body.pointer("/choices/0/message").is_none() {
            return Err(self.bad(
                n,
                "the response body is no chat completion (no `choices[0].message`)".into(),
                "export and run against /v1/chat/completions",
            ));
        }
        if self.cache.contains_chat(key) {
            self.report.already += 1;
            return Ok(Flow::Next);
        }
        self.store(n, key, &call, ep, body)?;
        Ok(Flow::Next)
    }

    /// The exported call `key` names and the endpoint it was exported for.
    fn call_of(
        &mut self,
        n: u64,
        key: &str,
    ) -> std::result::Result<(KnownCall, &'a Endpoint), ImportError> {
        let Some(call) = self.cache.known_call_in(key, &mut self.jobs)? else {
            return Err(self.bad(
                n,
                format!(
                    "custom_id `{}` is no call of this cache's jobs",
                    crate::redact::redact(&key.chars().take(80).collect::<String>())
                ),
                "import the output of a file exported with this cache (`--export-batch`), with the same `--llm-cache`",
            ));
        };
        let llm: &'a Llm = self.llm;
        let ep = llm.endpoint(&call.endpoint).map_err(|_| {
            self.bad(
                n,
                format!("the call was exported for endpoint `{}`, which the configuration does not name", call.endpoint),
                "import with the configuration the file was exported with",
            )
        })?;
        Ok((call, &**ep))
    }

    /// Counts a failed line and keeps its reason (redacted, cut to 300 characters).
    fn failed(&mut self, n: u64, endpoint: &str, v: &Value, status: Option<u64>) {
        self.report.failed += 1;
        let ledger = &self.llm.inner.ledger;
        ledger.event(endpoint, Event::ProviderFailed);
        let error = v.get("error").filter(|e| !e.is_null());
        let why = v
            .pointer("/response/body/error/message")
            .or_else(|| v.pointer("/error/message"))
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| error.map(Value::to_string))
            .unwrap_or_else(|| {
                format!("status {}", status.map_or("none".into(), |s| s.to_string()))
            });
        let why = crate::redact::redact(&why.chars().take(300).collect::<String>()).into_owned();
        if self.report.errors.len() < ERRORS_KEPT {
            self.report.errors.push((n, why.clone()));
        }
        ledger.note_error(endpoint, &why);
    }

    /// Stores one answer under the spend job that exported it; an unparsable one is counted.
    fn store(
        &mut self,
        n: u64,
        key: &str,
        call: &KnownCall,
        ep: &Endpoint,
        body: &Value,
    ) -> std::result::Result<(), ImportError> {
        if call.spend_job != self.spend_job {
            if let Some(job) = &call.spend_job {
                self.llm.inner.ledger.set_job(job);
            }
            self.spend_job = call.spend_job.clone();
        }
        let output = self
            .outputs
            .entry(call.item.output.clone())
            .or_insert_with_key(|s| OutputSpec::of_stored(s));
        let answer = super::provider_batch::BatchAnswer {
            batch_id: &call.batch_id,
            key,
            item: &call.item,
            body,
        };
        let stored = self
            .llm
            .store_batch_answer(self.cache, ep, output, answer)?;
        if let Err(error) = stored {
            self.report.parse_failed += 1;
            if self.report.errors.len() < ERRORS_KEPT {
                self.report
                    .errors
                    .push((n, format!("unparsable answer: {error}")));
            }
            return Ok(());
        }
        self.report.answered += 1;
        *self.report.models.entry(ep.cfg.model.clone()).or_default() += 1;
        self.cache.wait_pending_below(ANSWERS_PENDING)?;
        Ok(())
    }
}

impl ExportReport {
    /// What the command says on stderr: how many requests, for which models, what next.
    pub fn summary(&self, rerun: &str) -> String {
        let mut s = format!(
            "exported {} requests ({:.1} MB) to {}, nothing called:\n",
            self.requests,
            self.bytes as f64 / 1e6,
            self.file.display()
        );
        for (name, e) in &self.endpoints {
            s.push_str(&format!(
                "  {} requests for model `{}` (endpoint `{name}`)\n",
                e.requests, e.model
            ));
        }
        if self.endpoints.len() > 1 {
            s.push_str("  one engine serves one model: split the file by `body.model` (e.g. jq -c 'select(.body.model == \"M\")') and run each part on its model\n");
        }
        s.push_str(&format!(
            "next: run the file through an OpenAI Batch engine, e.g.\n  vllm run-batch -i {f} -o answers.jsonl --model <model>\n  (or examples/ray/run_batch.py, or a provider's Batch API), then\n  mtr cache import answers.jsonl\n  {rerun}\n(the rerun may export a second round of calls that depend on these answers: repeat until it finishes)",
            f = self.file.display()
        ));
        s
    }
}

impl ImportReport {
    /// One line per count, for the command's output.
    pub fn summary(&self, file: &Path) -> String {
        let mut s = format!(
            "{}: {} lines, {} answers stored, {} already in the cache, {} failed, {} unparsable{}",
            file.display(),
            self.lines,
            self.answered,
            self.already,
            self.failed,
            self.parse_failed,
            if self.truncated {
                "; the last line is cut short and was skipped (import the complete file again)"
            } else {
                ""
            }
        );
        for (line, e) in &self.errors {
            s.push_str(&format!("\n  line {line}: {e}"));
        }
        if self.failed + self.parse_failed > 0 {
            s.push_str("\n  failed lines are not stored: the rerun exports (or calls) them again");
        }
        s
    }
}

#[cfg(test)]
mod tests;
