//! The response cache: a content-addressed SQLite file (WAL) so that a rerun of an interrupted
//! job pays nothing for calls that already finished. Keys are BLAKE3 hashes of everything that
//! determines an answer (model, rendered messages, output spec, response mode, sampling,
//! sample index, vendor extras); endpoint names and URLs are not in the key, so a fleet of
//! replicas shares entries. Only successfully parsed answers are stored; failures are retried
//! by a rerun.
//!
//! Chat answers are written behind the caller's back: `put_chat` hands the row to a writer
//! thread with its own connection and returns, and the row is visible to this handle's reads at
//! once. The writer commits whatever rows are waiting in one transaction and starts again as
//! soon as it is done, so under load a commit carries many rows and no async worker ever waits
//! on SQLite or the disk; when idle a row reaches the file within one commit. A crash loses at
//! most the rows of the commit in progress (milliseconds of answers); dropping the cache, and
//! [`Cache::flush`], wait until every row is in the file. Several processes may write at once
//! (WAL + busy timeout). A failed write is reported by the next `put_chat` and by `flush`.
//!
//! The file also keeps the spend ledger (table `spend`): one row per paid call, written by the
//! same writer thread as it is paid, tagged with the job that paid it (an audit's or a
//! synthesis's output folder), so that the money spent on a job across interrupted attempts
//! can be told apart from the cost of its result. Batch API jobs are recorded (`batch_job`,
//! `batch_item`) before they are created at the provider, under a client-side submission id,
//! so that a run killed at any point finds them again (see `client/batch.rs`).

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};

use crate::chat::{ParseStatus, Usage};
use crate::error::{LlmError, Result};

mod batch_file;

/// What is stored for one chat answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct StoredChat {
    pub value: Option<serde_json::Value>,
    pub text: String,
    pub status: ParseStatus,
    pub usage: Usage,
    pub cost_usd: f64,
    pub model: String,
    pub finish_reason: Option<String>,
    /// The grade distribution of a probability rating (see [`crate::logprob`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rating: Option<crate::logprob::RatingDistribution>,
}

/// A Batch API job as recorded in the cache file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BatchJob {
    pub batch_id: String,
    pub endpoint: String,
    pub model: String,
    pub status: String,
}

/// One request of a batch job: its cache key (= `custom_id`), prompt and output spec (JSON).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BatchItem {
    pub key: String,
    pub prompt_id: Option<String>,
    pub output: String,
    pub sample: u32,
}

/// Row counts and sizes, for `mtr cache stats`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CacheStats {
    pub path: PathBuf,
    pub file_bytes: u64,
    pub chat_rows: u64,
    pub embedding_rows: u64,
    /// Per model: (chat rows, prompt tokens, completion tokens, USD originally paid).
    pub models: Vec<ModelStats>,
    /// Per prompt id: chat rows.
    pub prompts: Vec<(String, u64)>,
    pub oldest_unix: Option<i64>,
    pub newest_unix: Option<i64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelStats {
    pub model: String,
    pub chat_rows: u64,
    pub embedding_rows: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// What these answers cost when they were fetched (what the cache saves per rerun).
    pub cost_usd: f64,
}

/// Which rows `prune` removes (all given conditions must hold; none given = nothing).
#[derive(Debug, Clone, Default)]
pub struct PruneFilter {
    /// Rows created more than this many seconds ago.
    pub older_than_s: Option<u64>,
    pub model: Option<String>,
    /// Prompt id (`name@version`) or name prefix (`audit/`).
    pub prompt: Option<String>,
    /// Everything.
    pub all: bool,
}

/// The cache file.
pub struct Cache {
    path: PathBuf,
    conn: Mutex<Connection>,
    writer: Arc<Writer>,
    writer_thread: Mutex<Option<JoinHandle<()>>>,
}

/// One paid call of the spend ledger.
#[derive(Debug, Clone)]
struct SpendRow {
    /// Unique per paid call (a batch answer: its batch id and custom id, so collecting the
    /// same batch twice books it once).
    id: String,
    job: Option<String>,
    endpoint: String,
    model: String,
    created: i64,
    prompt_tokens: i64,
    completion_tokens: i64,
    cost_usd: f64,
}

/// What the spend ledger holds for one job.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Spent {
    /// Paid calls (each counted once, however many attempts the job took).
    pub calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cost_usd: f64,
}

/// Where the run's ledger books paid calls: the cache's writer thread, under a job tag.
#[derive(Clone)]
pub(crate) struct SpendSink {
    writer: Arc<Writer>,
    job: Option<String>,
    /// Makes row ids unique across processes (start time and process id) and calls (counter).
    run: String,
    seq: Arc<std::sync::atomic::AtomicU64>,
}

impl std::fmt::Debug for SpendSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpendSink")
            .field("job", &self.job)
            .finish_non_exhaustive()
    }
}

impl SpendSink {
    /// The same sink booking under `job`.
    pub(crate) fn with_job(&self, job: Option<String>) -> Self {
        Self {
            job,
            ..self.clone()
        }
    }

    /// Books one paid call; `id` makes the booking idempotent (a fresh one when `None`).
    pub(crate) fn record(
        &self,
        id: Option<String>,
        endpoint: &str,
        model: &str,
        prompt_tokens: u64,
        completion_tokens: u64,
        cost_usd: f64,
    ) {
        let id = id.unwrap_or_else(|| {
            let n = self.seq.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            format!("{}-{n}", self.run)
        });
        let row = SpendRow {
            id,
            job: self.job.clone(),
            endpoint: endpoint.to_string(),
            model: model.to_string(),
            created: now(),
            prompt_tokens: prompt_tokens as i64,
            completion_tokens: completion_tokens as i64,
            cost_usd,
        };
        self.writer.lock().spend.push(row);
        self.writer.work.notify_one();
    }
}

/// A chat row waiting for the writer thread.
struct PendingChat {
    model: String,
    prompt_id: Option<String>,
    created: i64,
    prompt_tokens: i64,
    completion_tokens: i64,
    cost_usd: f64,
    body: String,
}

/// Most rows one commit carries.
const MAX_ROWS_PER_COMMIT: usize = 2048;

/// What the writer thread and the handle share.
#[derive(Default)]
struct Writer {
    state: Mutex<WriterState>,
    /// Rows were queued, or the cache is closing.
    work: Condvar,
    /// A commit finished.
    committed: Condvar,
}

#[derive(Default)]
struct WriterState {
    /// Rows not yet in the file (queued or being written), by key: what reads see first.
    pending: HashMap<String, Arc<PendingChat>>,
    /// Keys in the order they were put, not yet taken by the writer.
    queue: VecDeque<String>,
    /// Spend ledger rows not yet taken by the writer.
    spend: Vec<SpendRow>,
    /// Rows in the commit in progress.
    writing: usize,
    /// The first failed commit.
    error: Option<String>,
    closing: bool,
}

impl Writer {
    fn lock(&self) -> MutexGuard<'_, WriterState> {
        // a panic while holding the lock leaves consistent maps: keep using them
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The writer thread: commits waiting rows until the cache closes and the queue is empty.
    fn run(&self, mut conn: Connection) {
        loop {
            let (batch, spend): (Vec<(String, Arc<PendingChat>)>, Vec<SpendRow>) = {
                let mut st = self.lock();
                while st.queue.is_empty() && st.spend.is_empty() && !st.closing {
                    st = self.work.wait(st).unwrap_or_else(|p| p.into_inner());
                }
                if st.queue.is_empty() && st.spend.is_empty() {
                    return;
                }
                let spend = std::mem::take(&mut st.spend);
                let n = st.queue.len().min(MAX_ROWS_PER_COMMIT);
                let keys: Vec<String> = st.queue.drain(..n).collect();
                let batch: Vec<_> = keys
                    .into_iter()
                    .filter_map(|k| st.pending.get(&k).cloned().map(|row| (k, row)))
                    .collect();
                st.writing = batch.len() + spend.len();
                (batch, spend)
            };
            let result = write_chats(&mut conn, &batch, &spend);
            let mut st = self.lock();
            st.writing = 0;
            match result {
                Ok(()) => {
                    for (k, row) in &batch {
                        // a newer row for the same key waits for the next commit
                        if st.pending.get(k).is_some_and(|p| Arc::ptr_eq(p, row)) {
                            st.pending.remove(k);
                        }
                    }
                }
                Err(e) => {
                    tracing::error!(error = %e, rows = batch.len(), "the LLM cache could not store answers");
                    // the rows stay readable in memory for this run; the error stops the job
                    st.error.get_or_insert_with(|| e.to_string());
                }
            }
            drop(st);
            self.committed.notify_all();
        }
    }
}

/// One transaction for all `rows`.
fn write_chats(
    conn: &mut Connection,
    rows: &[(String, Arc<PendingChat>)],
    spend: &[SpendRow],
) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    {
        let mut st = tx.prepare_cached(
            "INSERT OR IGNORE INTO spend (id, job, endpoint, model, created, prompt_tokens, completion_tokens, cost_usd)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?;
        for r in spend {
            st.execute(params![
                r.id,
                r.job,
                r.endpoint,
                r.model,
                r.created,
                r.prompt_tokens,
                r.completion_tokens,
                r.cost_usd
            ])?;
        }
    }
    {
        let mut st = tx.prepare_cached(
            "INSERT OR REPLACE INTO chat (key, model, prompt_id, created, prompt_tokens, completion_tokens, cost_usd, body)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?;
        for (key, r) in rows {
            st.execute(params![
                key,
                r.model,
                r.prompt_id,
                r.created,
                r.prompt_tokens,
                r.completion_tokens,
                r.cost_usd,
                r.body
            ])?;
        }
    }
    tx.commit()
}

/// The cache's tables, created in one immediate transaction (it waits for another
/// process's, where separate statements could interleave with it).
const SCHEMA: &str = "BEGIN IMMEDIATE;
            CREATE TABLE IF NOT EXISTS chat (
                key TEXT PRIMARY KEY,
                model TEXT NOT NULL,
                prompt_id TEXT,
                created INTEGER NOT NULL,
                prompt_tokens INTEGER NOT NULL,
                completion_tokens INTEGER NOT NULL,
                cost_usd REAL NOT NULL,
                body TEXT NOT NULL
            ) WITHOUT ROWID;
            CREATE INDEX IF NOT EXISTS chat_model_prompt ON chat(model, prompt_id);
            CREATE TABLE IF NOT EXISTS batch_job (
                batch_id TEXT PRIMARY KEY,
                endpoint TEXT NOT NULL,
                model TEXT NOT NULL,
                created INTEGER NOT NULL,
                status TEXT NOT NULL,
                items INTEGER NOT NULL
            ) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS batch_item (
                key TEXT PRIMARY KEY,
                batch_id TEXT NOT NULL,
                prompt_id TEXT,
                output TEXT NOT NULL,
                sample INTEGER NOT NULL
            ) WITHOUT ROWID;
            CREATE INDEX IF NOT EXISTS batch_item_job ON batch_item(batch_id);
            CREATE TABLE IF NOT EXISTS spend (
                id TEXT PRIMARY KEY,
                job TEXT,
                endpoint TEXT NOT NULL,
                model TEXT NOT NULL,
                created INTEGER NOT NULL,
                prompt_tokens INTEGER NOT NULL,
                completion_tokens INTEGER NOT NULL,
                cost_usd REAL NOT NULL
            ) WITHOUT ROWID;
            CREATE INDEX IF NOT EXISTS spend_job ON spend(job);
            CREATE TABLE IF NOT EXISTS embedding (
                key TEXT PRIMARY KEY,
                model TEXT NOT NULL,
                created INTEGER NOT NULL,
                vec BLOB NOT NULL
            ) WITHOUT ROWID;
            COMMIT;";

/// Runs `f` again while SQLite answers that the file is busy or locked, for up to about ten
/// seconds. The busy timeout does not cover every such answer: switching a fresh file to WAL
/// while another process does the same, or creating its tables at once, can fail at once
/// with "database is locked" (the main job's two syntheses start together on a fresh cache,
/// and one of them died of it).
fn retry_busy<T>(mut f: impl FnMut() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
    const TRIES: u32 = 400;
    let mut tries = 0;
    loop {
        match f() {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if matches!(
                    e.code,
                    rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                ) && tries < TRIES =>
            {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(25));
            }
            other => return other,
        }
    }
}

/// Opens a connection to the cache file with the settings every connection uses.
fn connect(path: &Path) -> Result<Connection> {
    let conn = Connection::open(path).map_err(|e| LlmError::cache(path, e))?;
    let err = |e: rusqlite::Error| LlmError::cache(path, e);
    conn.busy_timeout(std::time::Duration::from_secs(30))
        .map_err(err)?;
    retry_busy(|| conn.pragma_update(None, "journal_mode", "WAL")).map_err(err)?;
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(err)?;
    Ok(conn)
}

impl Drop for Cache {
    fn drop(&mut self) {
        self.writer.lock().closing = true;
        self.writer.work.notify_all();
        let thread = self
            .writer_thread
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(t) = thread
            && t.join().is_err()
        {
            tracing::error!("the LLM cache writer stopped abnormally");
        }
    }
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cache")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

impl Cache {
    /// Opens (creating if needed) the cache at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        if let Some(dir) = path.parent()
            && !dir.as_os_str().is_empty()
        {
            std::fs::create_dir_all(dir).map_err(|e| LlmError::cache(&path, e))?;
        }
        let conn = connect(&path)?;
        let err = |e: rusqlite::Error| LlmError::cache(&path, e);
        retry_busy(|| {
            // a busy answer inside the transaction leaves it open: end it before trying again
            if !conn.is_autocommit() {
                conn.execute_batch("ROLLBACK")?;
            }
            conn.execute_batch(SCHEMA)
        })
        .map_err(err)?;
        let writer = Arc::new(Writer::default());
        let writer_conn = connect(&path)?;
        let w = writer.clone();
        let thread = std::thread::Builder::new()
            .name("mtr-cache-writer".into())
            .spawn(move || w.run(writer_conn))
            .map_err(|e| LlmError::cache(&path, e))?;
        Ok(Self {
            path,
            conn: Mutex::new(conn),
            writer,
            writer_thread: Mutex::new(Some(thread)),
        })
    }

    /// Waits until every chat row put so far is in the file; reports a failed write.
    pub fn flush(&self) -> Result<()> {
        let mut st = self.writer.lock();
        while (!st.queue.is_empty() || !st.spend.is_empty() || st.writing > 0) && st.error.is_none()
        {
            let stopped = self
                .writer_thread
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .as_ref()
                .is_none_or(JoinHandle::is_finished);
            if stopped {
                return Err(LlmError::cache(
                    &self.path,
                    "the cache writer thread stopped with answers not written",
                ));
            }
            st = self
                .writer
                .committed
                .wait_timeout(st, std::time::Duration::from_millis(200))
                .map(|(guard, _)| guard)
                .unwrap_or_else(|p| p.into_inner().0);
        }
        match &st.error {
            Some(e) => Err(LlmError::cache(&self.path, e.clone())),
            None => Ok(()),
        }
    }

    /// A sink booking paid calls into this file's spend ledger (no job until one is set).
    pub(crate) fn spend_sink(&self) -> SpendSink {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        SpendSink {
            writer: self.writer.clone(),
            job: None,
            run: format!("{nanos:x}-{:x}", std::process::id()),
            seq: Arc::new(std::sync::atomic::AtomicU64::new(0)),
        }
    }

    /// What the spend ledger holds for `job` (every attempt of it, every paid call once).
    pub fn spent(&self, job: &str) -> Result<Spent> {
        self.flush()?;
        self.with(|c| {
            c.query_row(
                "SELECT COUNT(*), COALESCE(SUM(prompt_tokens), 0), COALESCE(SUM(completion_tokens), 0), COALESCE(SUM(cost_usd), 0.0) FROM spend WHERE job = ?1",
                [job],
                |r| {
                    Ok(Spent {
                        calls: r.get::<_, i64>(0)? as u64,
                        prompt_tokens: r.get::<_, i64>(1)? as u64,
                        completion_tokens: r.get::<_, i64>(2)? as u64,
                        cost_usd: r.get(3)?,
                    })
                },
            )
        })
    }

    /// Fails unless the file accepts writes (a read-only file or folder), without changing it.
    pub fn check_writable(&self) -> Result<()> {
        self.with(|c| {
            c.execute_batch(
                "BEGIN IMMEDIATE; INSERT OR REPLACE INTO spend (id, job, endpoint, model, created, prompt_tokens, completion_tokens, cost_usd) VALUES ('mtr-write-probe', NULL, '', '', 0, 0, 0, 0.0); ROLLBACK;",
            )
        })
        .inspect_err(|_| {
            // leave no transaction open on this connection
            let _ = self.with(|c| c.execute_batch("ROLLBACK"));
        })
    }

    /// The row waiting for the writer under `key`, if any.
    fn pending_chat(&self, key: &str) -> Option<Arc<PendingChat>> {
        self.writer.lock().pending.get(key).cloned()
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn with<T>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T> {
        let conn = self
            .conn
            .lock()
            .map_err(|_| LlmError::cache(&self.path, "lock poisoned"))?;
        f(&conn).map_err(|e| LlmError::cache(&self.path, e))
    }

    pub(crate) fn get_chat(&self, key: &str) -> Result<Option<StoredChat>> {
        if let Some(row) = self.pending_chat(key) {
            return Ok(serde_json::from_str(&row.body).ok());
        }
        let body: Option<String> = self.with(|c| {
            c.prepare_cached("SELECT body FROM chat WHERE key = ?1")?
                .query_row([key], |r| r.get(0))
                .optional()
        })?;
        match body {
            None => Ok(None),
            // An unreadable row (written by another version) is a miss, not an error.
            Some(b) => Ok(serde_json::from_str(&b).ok()),
        }
    }

    pub(crate) fn contains_chat(&self, key: &str) -> bool {
        if self.pending_chat(key).is_some() {
            return true;
        }
        self.with(|c| {
            c.prepare_cached("SELECT 1 FROM chat WHERE key = ?1")?
                .exists([key])
        })
        .unwrap_or(false)
    }

    /// Queues the row for the writer thread; this handle reads it back at once.
    pub(crate) fn put_chat(
        &self,
        key: &str,
        prompt_id: Option<&str>,
        stored: &StoredChat,
    ) -> Result<()> {
        let body = serde_json::to_string(stored).map_err(|e| LlmError::cache(&self.path, e))?;
        let row = Arc::new(PendingChat {
            model: stored.model.clone(),
            prompt_id: prompt_id.map(str::to_string),
            created: now(),
            prompt_tokens: stored.usage.prompt_tokens as i64,
            completion_tokens: stored.usage.completion_tokens as i64,
            cost_usd: stored.cost_usd,
            body,
        });
        let mut st = self.writer.lock();
        if let Some(e) = &st.error {
            return Err(LlmError::cache(&self.path, e.clone()));
        }
        st.pending.insert(key.to_string(), row);
        st.queue.push_back(key.to_string());
        drop(st);
        self.writer.work.notify_one();
        Ok(())
    }

    /// Mean completion tokens of cached answers of this model (and prompt), for estimates.
    pub(crate) fn mean_completion_tokens(
        &self,
        model: &str,
        prompt_id: Option<&str>,
    ) -> Option<f64> {
        self.flush().ok()?;
        self.with(|c| {
            c.prepare_cached(
                "SELECT AVG(completion_tokens) FROM chat WHERE model = ?1 AND (?2 IS NULL OR prompt_id = ?2)",
            )?
            .query_row(params![model, prompt_id], |r| r.get::<_, Option<f64>>(0))
        })
        .ok()
        .flatten()
    }

    pub(crate) fn get_embedding(&self, key: &str) -> Result<Option<Vec<f32>>> {
        let blob: Option<Vec<u8>> = self.with(|c| {
            c.prepare_cached("SELECT vec FROM embedding WHERE key = ?1")?
                .query_row([key], |r| r.get(0))
                .optional()
        })?;
        Ok(blob.map(|b| {
            b.chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect()
        }))
    }

    pub(crate) fn put_embeddings(&self, model: &str, rows: &[(String, Vec<f32>)]) -> Result<()> {
        let t = now();
        let mut conn = self
            .conn
            .lock()
            .map_err(|_| LlmError::cache(&self.path, "lock poisoned"))?;
        let write = |conn: &mut Connection| -> rusqlite::Result<()> {
            let tx = conn.transaction()?;
            {
                let mut st = tx.prepare_cached("INSERT OR REPLACE INTO embedding (key, model, created, vec) VALUES (?1, ?2, ?3, ?4)")?;
                for (k, v) in rows {
                    let blob: Vec<u8> = v.iter().flat_map(|f| f.to_le_bytes()).collect();
                    st.execute(params![k, model, t, blob])?;
                }
            }
            tx.commit()
        };
        write(&mut conn).map_err(|e| LlmError::cache(&self.path, e))
    }

    /// Records a submitted Batch API job and its items (so a rerun resumes by batch id).
    pub(crate) fn insert_batch(&self, job: &BatchJob, items: &[BatchItem]) -> Result<()> {
        let mut conn = self
            .conn
            .lock()
            .map_err(|_| LlmError::cache(&self.path, "lock poisoned"))?;
        let write = |conn: &mut Connection| -> rusqlite::Result<()> {
            let tx = conn.transaction()?;
            tx.execute(
                "INSERT OR REPLACE INTO batch_job (batch_id, endpoint, model, created, status, items) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![job.batch_id, job.endpoint, job.model, now(), job.status, items.len() as i64],
            )?;
            {
                let mut st = tx.prepare_cached(
                    "INSERT OR REPLACE INTO batch_item (key, batch_id, prompt_id, output, sample) VALUES (?1, ?2, ?3, ?4, ?5)",
                )?;
                for it in items {
                    st.execute(params![
                        it.key,
                        job.batch_id,
                        it.prompt_id,
                        it.output,
                        it.sample
                    ])?;
                }
            }
            tx.commit()
        };
        write(&mut conn).map_err(|e| LlmError::cache(&self.path, e))
    }

    /// Jobs not yet finished (submitted by this or an earlier run).
    pub(crate) fn open_batches(&self) -> Result<Vec<BatchJob>> {
        self.with(|c| {
            let mut st = c.prepare(
                "SELECT batch_id, endpoint, model, status FROM batch_job WHERE status NOT IN ('completed', 'failed', 'expired', 'cancelled', 'collected', 'exporting', 'exported') ORDER BY created",
            )?;
            st.query_map([], |r| Ok(BatchJob { batch_id: r.get(0)?, endpoint: r.get(1)?, model: r.get(2)?, status: r.get(3)? }))?
                .collect()
        })
    }

    /// Gives a recorded job the provider's batch id (it was recorded under its submission id
    /// before the batch was created) and a new status.
    pub(crate) fn rename_batch(&self, old_id: &str, new_id: &str, status: &str) -> Result<()> {
        let mut conn = self
            .conn
            .lock()
            .map_err(|_| LlmError::cache(&self.path, "lock poisoned"))?;
        let write = |conn: &mut Connection| -> rusqlite::Result<()> {
            let tx = conn.transaction()?;
            tx.execute(
                "UPDATE batch_job SET batch_id = ?2, status = ?3 WHERE batch_id = ?1",
                params![old_id, new_id, status],
            )?;
            tx.execute(
                "UPDATE batch_item SET batch_id = ?2 WHERE batch_id = ?1",
                params![old_id, new_id],
            )?;
            tx.commit()
        };
        write(&mut conn).map_err(|e| LlmError::cache(&self.path, e))
    }

    /// Forgets a recorded job and its items (a submission the provider never received).
    pub(crate) fn delete_batch(&self, batch_id: &str) -> Result<()> {
        self.with(|c| {
            c.execute("DELETE FROM batch_item WHERE batch_id = ?1", [batch_id])?;
            c.execute("DELETE FROM batch_job WHERE batch_id = ?1", [batch_id])
                .map(|_| ())
        })
    }

    pub(crate) fn set_batch_status(&self, batch_id: &str, status: &str) -> Result<()> {
        self.with(|c| {
            c.execute(
                "UPDATE batch_job SET status = ?2 WHERE batch_id = ?1",
                params![batch_id, status],
            )
            .map(|_| ())
        })
    }

    pub(crate) fn batch_item(&self, key: &str) -> Result<Option<BatchItem>> {
        self.with(|c| {
            c.prepare_cached(
                "SELECT key, prompt_id, output, sample FROM batch_item WHERE key = ?1",
            )?
            .query_row([key], |r| {
                Ok(BatchItem {
                    key: r.get(0)?,
                    prompt_id: r.get(1)?,
                    output: r.get(2)?,
                    sample: r.get(3)?,
                })
            })
            .optional()
        })
    }

    /// True when `key` waits in a submitted, unfinished batch (do not submit it twice).
    pub(crate) fn pending_in_batch(&self, key: &str) -> bool {
        self.with(|c| {
            c.prepare_cached(
                "SELECT 1 FROM batch_item i JOIN batch_job j ON i.batch_id = j.batch_id WHERE i.key = ?1 AND j.status NOT IN ('completed', 'failed', 'expired', 'cancelled', 'collected', 'exporting', 'exported')",
            )?
            .exists([key])
        })
        .unwrap_or(false)
    }

    /// Counts for `mtr cache stats`.
    pub fn stats(&self) -> Result<CacheStats> {
        self.flush()?;
        let file_bytes = std::fs::metadata(&self.path).map(|m| m.len()).unwrap_or(0)
            + std::fs::metadata(format!("{}-wal", self.path.display()))
                .map(|m| m.len())
                .unwrap_or(0);
        self.with(|c| {
            let chat_rows: i64 = c.query_row("SELECT COUNT(*) FROM chat", [], |r| r.get(0))?;
            let embedding_rows: i64 = c.query_row("SELECT COUNT(*) FROM embedding", [], |r| r.get(0))?;
            let mut models: std::collections::BTreeMap<String, ModelStats> = Default::default();
            let mut st = c.prepare(
                "SELECT model, COUNT(*), SUM(prompt_tokens), SUM(completion_tokens), SUM(cost_usd) FROM chat GROUP BY model",
            )?;
            let rows = st.query_map([], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?, r.get::<_, i64>(2)?, r.get::<_, i64>(3)?, r.get::<_, f64>(4)?))
            })?;
            for row in rows {
                let (m, n, p, o, cost) = row?;
                let e = models.entry(m.clone()).or_default();
                e.model = m;
                e.chat_rows = n as u64;
                e.prompt_tokens = p as u64;
                e.completion_tokens = o as u64;
                e.cost_usd = cost;
            }
            let mut st = c.prepare("SELECT model, COUNT(*) FROM embedding GROUP BY model")?;
            for row in st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))? {
                let (m, n) = row?;
                let e = models.entry(m.clone()).or_default();
                e.model = m;
                e.embedding_rows = n as u64;
            }
            let mut st = c.prepare("SELECT COALESCE(prompt_id, '-'), COUNT(*) FROM chat GROUP BY prompt_id ORDER BY 1")?;
            let prompts = st
                .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as u64)))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let (oldest, newest): (Option<i64>, Option<i64>) = c.query_row(
                "SELECT MIN(t), MAX(t) FROM (SELECT created AS t FROM chat UNION ALL SELECT created FROM embedding)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            Ok(CacheStats {
                path: self.path.clone(),
                file_bytes,
                chat_rows: chat_rows as u64,
                embedding_rows: embedding_rows as u64,
                models: models.into_values().collect(),
                prompts,
                oldest_unix: oldest,
                newest_unix: newest,
            })
        })
    }

    /// Deletes the rows matching `filter`, then compacts the file. Returns rows removed.
    pub fn prune(&self, filter: &PruneFilter) -> Result<u64> {
        if !filter.all
            && filter.older_than_s.is_none()
            && filter.model.is_none()
            && filter.prompt.is_none()
        {
            return Ok(0);
        }
        self.flush()?;
        let cutoff = filter.older_than_s.map(|s| now() - s as i64);
        let prompt_like = filter
            .prompt
            .as_ref()
            .map(|p| format!("{}%", p.replace('%', "\\%").replace('_', "\\_")));
        let n = self.with(|c| {
            let a = c.execute(
                "DELETE FROM chat WHERE (?1 IS NULL OR created < ?1) AND (?2 IS NULL OR model = ?2)
                   AND (?3 IS NULL OR prompt_id LIKE ?3 ESCAPE '\\')",
                params![cutoff, filter.model, prompt_like],
            )?;
            let b = if filter.prompt.is_none() {
                c.execute(
                    "DELETE FROM embedding WHERE (?1 IS NULL OR created < ?1) AND (?2 IS NULL OR model = ?2)",
                    params![cutoff, filter.model],
                )?
            } else {
                0
            };
            c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE); VACUUM;")?;
            Ok((a + b) as u64)
        })?;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(model: &str) -> StoredChat {
        StoredChat {
            value: Some(serde_json::json!({"grade": 2})),
            text: "{\"grade\": 2}".into(),
            status: ParseStatus::Ok,
            usage: Usage {
                prompt_tokens: 10,
                completion_tokens: 5,
            },
            cost_usd: 0.001,
            model: model.into(),
            finish_reason: Some("stop".into()),
            rating: None,
        }
    }

    #[test]
    fn roundtrip_stats_prune() {
        let dir = tempfile::tempdir().unwrap();
        let c = Cache::open(dir.path().join("sub/c.sqlite")).unwrap();
        assert!(c.get_chat("k1").unwrap().is_none());
        c.put_chat("k1", Some("audit/rel@1"), &stored("m1"))
            .unwrap();
        c.put_chat("k2", Some("synth/q@2"), &stored("m2")).unwrap();
        c.put_embeddings("e5", &[("e1".into(), vec![0.5, -1.0])])
            .unwrap();
        assert_eq!(c.get_chat("k1").unwrap().unwrap(), stored("m1"));
        assert!(c.contains_chat("k2"));
        assert_eq!(c.get_embedding("e1").unwrap().unwrap(), vec![0.5, -1.0]);
        assert_eq!(
            c.mean_completion_tokens("m1", Some("audit/rel@1")),
            Some(5.0)
        );
        let s = c.stats().unwrap();
        assert_eq!((s.chat_rows, s.embedding_rows, s.models.len()), (2, 1, 3));
        assert_eq!(
            c.prune(&PruneFilter {
                prompt: Some("audit/".into()),
                ..Default::default()
            })
            .unwrap(),
            1
        );
        assert!(!c.contains_chat("k1"));
        assert_eq!(c.prune(&PruneFilter::default()).unwrap(), 0);
        assert_eq!(
            c.prune(&PruneFilter {
                all: true,
                ..Default::default()
            })
            .unwrap(),
            2
        );
    }

    #[test]
    fn the_spend_ledger_books_every_paid_call_once_per_job() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.sqlite");
        let a = Cache::open(&p).unwrap();
        a.check_writable().unwrap();
        let sink = a.spend_sink().with_job(Some("audit:x".into()));
        sink.record(None, "e", "m", 10, 5, 0.25);
        sink.record(None, "e", "m", 10, 5, 0.25);
        // a batch answer collected twice is booked once
        sink.record(Some("batch_1/k".into()), "e", "m", 1, 1, 0.5);
        sink.record(Some("batch_1/k".into()), "e", "m", 1, 1, 0.5);
        a.spend_sink()
            .with_job(Some("synth:y".into()))
            .record(None, "e", "m", 1, 1, 9.0);
        drop(a);
        // a second attempt (another process) adds to the same job
        let b = Cache::open(&p).unwrap();
        b.spend_sink()
            .with_job(Some("audit:x".into()))
            .record(None, "e", "m", 10, 5, 0.25);
        let s = b.spent("audit:x").unwrap();
        assert_eq!((s.calls, s.prompt_tokens, s.completion_tokens), (4, 31, 16));
        assert!((s.cost_usd - 1.25).abs() < 1e-12, "{s:?}");
        assert_eq!(b.spent("nothing").unwrap(), Spent::default());
    }

    #[test]
    fn a_read_only_cache_file_is_found_before_any_call() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.sqlite");
        drop(Cache::open(&p).unwrap());
        let c = Cache::open(&p).unwrap();
        // the same checks on a connection that cannot write
        let ro =
            Connection::open_with_flags(&p, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
        *c.conn.lock().unwrap() = ro;
        assert!(c.check_writable().is_err());
        // and the connection is usable afterwards
        assert!(!c.contains_chat("k"));
    }

    #[test]
    fn two_handles_write_concurrently() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.sqlite");
        let a = Cache::open(&p).unwrap();
        let b = Cache::open(&p).unwrap();
        std::thread::scope(|s| {
            s.spawn(|| {
                (0..200).for_each(|i| a.put_chat(&format!("a{i}"), None, &stored("m")).unwrap())
            });
            s.spawn(|| {
                (0..200).for_each(|i| b.put_chat(&format!("b{i}"), None, &stored("m")).unwrap())
            });
        });
        b.flush().unwrap();
        assert_eq!(a.stats().unwrap().chat_rows, 400);
    }

    #[test]
    fn queued_rows_are_read_back_and_reach_the_file_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.sqlite");
        let a = Cache::open(&p).unwrap();
        for i in 0..5000 {
            a.put_chat(&format!("k{i}"), Some("p@1"), &stored("m"))
                .unwrap();
            // this handle sees each row at once, whether or not it is committed yet
            assert!(a.contains_chat(&format!("k{i}")));
        }
        assert_eq!(a.get_chat("k4999").unwrap().unwrap(), stored("m"));
        drop(a);
        // another handle opened after the drop finds every row in the file
        let b = Cache::open(&p).unwrap();
        assert_eq!(b.stats().unwrap().chat_rows, 5000);
        assert_eq!(b.get_chat("k0").unwrap().unwrap(), stored("m"));
    }

    #[test]
    fn a_failed_commit_is_reported_and_rows_stay_readable() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.sqlite");
        let a = Cache::open(&p).unwrap();
        a.put_chat("k0", None, &stored("m")).unwrap();
        a.flush().unwrap();
        // another connection takes the chat table away under the writer
        Connection::open(&p)
            .unwrap()
            .execute_batch("DROP TABLE chat")
            .unwrap();
        a.put_chat("k1", None, &stored("m")).unwrap();
        let e = a.flush().unwrap_err();
        assert!(e.to_string().contains("chat"), "{e}");
        assert!(a.put_chat("k2", None, &stored("m")).is_err());
        assert_eq!(a.get_chat("k1").unwrap().unwrap(), stored("m"));
    }

    /// The main job starts two syntheses on one fresh cache; one died of "database is
    /// locked" while the other went on. Eight connections open one fresh file at once, a
    /// hundred times (without the retries, some open fails within a few rounds).
    #[test]
    fn processes_opening_a_fresh_cache_at_once_all_succeed() {
        for round in 0..100 {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("cache.sqlite");
            let barrier = Arc::new(std::sync::Barrier::new(8));
            let handles: Vec<_> = (0..8)
                .map(|_| {
                    let (path, barrier) = (path.clone(), barrier.clone());
                    std::thread::spawn(move || {
                        barrier.wait();
                        Cache::open(&path).map(|_| ())
                    })
                })
                .collect();
            for h in handles {
                if let Err(e) = h.join().unwrap() {
                    panic!("round {round}: {e}");
                }
            }
        }
    }
}
