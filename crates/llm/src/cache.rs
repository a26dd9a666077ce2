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
//! so that a run killed at any point finds them again (see `client/provider_batch.rs`); exported Batch
//! files are recorded in slimmer tables of their own (`batch_export_item`, `batch_export_spec`,
//! see `cache/exported_files.rs`).
//!
//! Modules: `writer` (the writer thread), `spend` (the spend ledger), `batch` (Batch API jobs),
//! `batch_file` (exported Batch files), `admin` (`mtr cache stats|prune`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};

use crate::chat::{ParseStatus, Usage};
use crate::error::{LlmError, Result};

mod admin;
mod batch_jobs;
mod exported_files;
mod spend_ledger;
mod writer;

pub use admin::{CacheStats, ModelStats, PruneFilter};
pub(crate) use batch_jobs::{BatchItem, BatchJob};
pub(crate) use exported_files::{ExportItem, JobMemo, KnownCall};
pub(crate) use spend_ledger::SpendSink;
pub use spend_ledger::Spent;
use writer::{PendingChat, Writer};

#[cfg(test)]
mod testkit;

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

/// The cache file.
pub struct Cache {
    path: PathBuf,
    conn: Mutex<Connection>,
    writer: Arc<Writer>,
    writer_thread: Mutex<Option<JoinHandle<()>>>,
    /// Whether the chat table may hold a row: it held one when this handle opened the file, or
    /// this handle stored one since ([`Cache::put_chat`]). While false, the lookups of calls
    /// that end at once are answered without asking SQLite ([`Cache::get_chat_unless_empty`]).
    chat_rows: AtomicBool,
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

/// Most memory a connection's page cache may take (KiB; SQLite's default is 2 MiB). A
/// million-request export or import inserts rows at random keys into tables of hundreds of MB:
/// with 2 MiB every insert read its leaf page from the file again and a transaction's dirty
/// pages spilled into the WAL before its commit (about half an import's time). The cache grows
/// only as pages are used, so a small job pays nothing for it.
const PAGE_CACHE_KIB: i64 = 64 * 1024;

/// Pages the WAL may hold before a commit copies them back into the file (SQLite's default is
/// 1,000: 4 MB). Fewer, larger checkpoints write a page changed by many commits once, and sync
/// the file less often (a fifth of an import's time went to checkpoints at the default).
const WAL_CHECKPOINT_PAGES: i64 = 16_384;

/// Opens a connection to the cache file with the settings every connection uses.
fn connect(path: &Path) -> Result<Connection> {
    let conn = Connection::open(path).map_err(|e| LlmError::cache(path, e))?;
    let err = |e: rusqlite::Error| LlmError::cache(path, e);
    conn.busy_timeout(std::time::Duration::from_secs(30))
        .map_err(err)?;
    retry_busy(|| conn.pragma_update(None, "journal_mode", "WAL")).map_err(err)?;
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(err)?;
    conn.pragma_update(None, "cache_size", -PAGE_CACHE_KIB)
        .map_err(err)?;
    conn.pragma_update(None, "wal_autocheckpoint", WAL_CHECKPOINT_PAGES)
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
        let chat_rows = conn
            .query_row("SELECT EXISTS (SELECT 1 FROM chat)", [], |r| {
                r.get::<_, bool>(0)
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
            chat_rows: AtomicBool::new(chat_rows),
        })
    }
    /// The row waiting for the writer under `key`, if any.
    fn pending_chat(&self, key: &str) -> Option<Arc<PendingChat>> {
        self.writer.lock().pending.get(key).cloned()
    }

    /// The cache's SQLite file.
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

    /// Runs `f` in one transaction on this handle's connection (rolled back when it fails).
    fn transaction<T>(
        &self,
        f: impl FnOnce(&rusqlite::Transaction<'_>) -> rusqlite::Result<T>,
    ) -> Result<T> {
        let mut conn = self
            .conn
            .lock()
            .map_err(|_| LlmError::cache(&self.path, "lock poisoned"))?;
        let write = |conn: &mut Connection| -> rusqlite::Result<T> {
            let tx = conn.transaction()?;
            let out = f(&tx)?;
            tx.commit()?;
            Ok(out)
        };
        write(&mut conn).map_err(|e| LlmError::cache(&self.path, e))
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

    /// Whether the chat table may hold a row (see [`Cache::get_chat_unless_empty`]).
    fn may_hold_chat(&self) -> bool {
        self.chat_rows.load(Ordering::Acquire)
    }

    /// [`Cache::get_chat`], answered without a lookup while the chat table is known to be
    /// empty: it held no row when this handle opened the file, and this handle stored none
    /// since. For calls that end at once (a dry run plans them, an export writes them to its
    /// file): a million of them then cost no SQLite lookup each, and the rows another process
    /// stores during that minute are not seen (as if it had stored them a minute later).
    pub(crate) fn get_chat_unless_empty(&self, key: &str) -> Result<Option<StoredChat>> {
        if !self.may_hold_chat() {
            return Ok(None);
        }
        self.get_chat(key)
    }

    /// [`Cache::contains_chat`], answered without a lookup while the chat table is known to
    /// be empty (as [`Cache::get_chat_unless_empty`]).
    pub(crate) fn contains_chat_unless_empty(&self, key: &str) -> bool {
        self.may_hold_chat() && self.contains_chat(key)
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
        // before the row can be read back: a lookup that sees it must not be skipped
        self.chat_rows.store(true, Ordering::Release);
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
        self.transaction(|tx| {
            {
                let mut st = tx.prepare_cached("INSERT OR REPLACE INTO embedding (key, model, created, vec) VALUES (?1, ?2, ?3, ?4)")?;
                for (k, v) in rows {
                    let blob: Vec<u8> = v.iter().flat_map(|f| f.to_le_bytes()).collect();
                    st.execute(params![k, model, t, blob])?;
                }
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every connection (the handle's and the writer thread's come from `connect`) keeps up
    /// to 64 MiB of pages and checkpoints the WAL every 16,384 pages.
    #[test]
    fn a_connection_has_the_large_page_cache_and_checkpoint_interval() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.sqlite");
        let _cache = Cache::open(&path).unwrap();
        let conn = connect(&path).unwrap();
        let get =
            |name: &str| -> i64 { conn.pragma_query_value(None, name, |r| r.get(0)).unwrap() };
        assert_eq!(get("cache_size"), -PAGE_CACHE_KIB);
        assert_eq!(get("wal_autocheckpoint"), WAL_CHECKPOINT_PAGES);
        assert_eq!(get("synchronous"), 1); // NORMAL
    }

    fn stored(model: &str) -> StoredChat {
        StoredChat {
            value: Some(serde_json::json!({"rating": 4})),
            text: "{\"rating\": 4}".into(),
            status: ParseStatus::Ok,
            usage: Usage::default(),
            cost_usd: 0.0,
            model: model.into(),
            finish_reason: None,
            rating: None,
        }
    }

    /// An empty cache answers the lookups of calls that end at once without SQLite, until
    /// this handle stores a row: then the row is found, waiting for the writer or in the file.
    #[test]
    fn lookups_unless_empty_find_what_this_handle_stores() {
        let dir = tempfile::tempdir().unwrap();
        let c = Cache::open(dir.path().join("c.sqlite")).unwrap();
        assert!(!c.may_hold_chat());
        assert_eq!(c.get_chat_unless_empty("k1").unwrap(), None);
        assert!(!c.contains_chat_unless_empty("k1"));
        c.put_chat("k1", Some("p@1"), &stored("m")).unwrap();
        assert!(c.may_hold_chat());
        assert_eq!(c.get_chat_unless_empty("k1").unwrap(), Some(stored("m")));
        assert!(c.contains_chat_unless_empty("k1"));
        c.flush().unwrap();
        assert_eq!(c.get_chat_unless_empty("k1").unwrap(), Some(stored("m")));
        assert!(c.contains_chat_unless_empty("k1"));
        assert!(!c.contains_chat_unless_empty("k2"));
        assert_eq!(c.get_chat_unless_empty("k2").unwrap(), None);
    }

    /// A cache file that holds the answer when it is opened is asked, as `get_chat` is; a
    /// file without chat rows (only other tables) is not.
    #[test]
    fn lookups_unless_empty_find_what_the_file_holds() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.sqlite");
        {
            let c = Cache::open(&path).unwrap();
            c.put_embeddings("e", &[("v".into(), vec![1.0])]).unwrap();
        }
        assert!(!Cache::open(&path).unwrap().may_hold_chat());
        {
            let c = Cache::open(&path).unwrap();
            c.put_chat("k1", None, &stored("m")).unwrap();
        }
        let c = Cache::open(&path).unwrap();
        assert!(c.may_hold_chat());
        assert_eq!(c.get_chat_unless_empty("k1").unwrap(), Some(stored("m")));
        assert_eq!(
            c.get_chat_unless_empty("k1").unwrap(),
            c.get_chat("k1").unwrap()
        );
        assert!(c.contains_chat_unless_empty("k1"));
        assert!(!c.contains_chat_unless_empty("k2"));
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
