//! The writer thread: chat answers and spend rows are queued by the handle and committed in
//! one transaction per round, so no async worker waits on SQLite or the disk; reads see a
//! queued row at once, and [`Cache::flush`] waits until every row is in the file.
//!
//! A commit writes its rows in key order (the tables' order): a bulk import's rows land on
//! random leaf pages, and in key order a transaction reads and writes each of those pages once
//! instead of once per row.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use rusqlite::{Connection, params};

use super::Cache;
use crate::error::{LlmError, Result};

/// A chat row waiting for the writer thread.
pub(super) struct PendingChat {
    pub(super) model: String,
    pub(super) prompt_id: Option<String>,
    pub(super) created: i64,
    pub(super) prompt_tokens: i64,
    pub(super) completion_tokens: i64,
    pub(super) cost_usd: f64,
    pub(super) body: String,
}

/// Most rows one commit carries. Under load (a bulk import) the rows that queued during one
/// commit go into the next: fewer, larger key-ordered transactions into the B-tree. A commit
/// holds the file's write lock while it runs (a second or two at this size).
const MAX_ROWS_PER_COMMIT: usize = 1 << 18;

/// What the writer thread and the handle share.
#[derive(Default)]
pub(super) struct Writer {
    pub(super) state: Mutex<WriterState>,
    /// Rows were queued, or the cache is closing.
    pub(super) work: Condvar,
    /// A commit finished.
    pub(super) committed: Condvar,
}

/// One paid call of the spend ledger.
#[derive(Debug, Clone)]
pub(super) struct SpendRow {
    /// Unique per paid call (a batch answer: its batch id and custom id, so collecting the
    /// same batch twice books it once).
    pub(super) id: String,
    pub(super) job: Option<String>,
    pub(super) endpoint: String,
    pub(super) model: String,
    pub(super) created: i64,
    pub(super) prompt_tokens: i64,
    pub(super) completion_tokens: i64,
    pub(super) cost_usd: f64,
}

#[derive(Default)]
pub(super) struct WriterState {
    /// Rows not yet in the file (queued or being written), by key: what reads see first.
    pub(super) pending: HashMap<String, Arc<PendingChat>>,
    /// Keys in the order they were put, not yet taken by the writer.
    pub(super) queue: VecDeque<String>,
    /// Spend ledger rows not yet taken by the writer.
    pub(super) spend: Vec<SpendRow>,
    /// Rows in the commit in progress.
    pub(super) writing: usize,
    /// The first failed commit.
    pub(super) error: Option<String>,
    pub(super) closing: bool,
}

impl Writer {
    pub(super) fn lock(&self) -> MutexGuard<'_, WriterState> {
        // a panic while holding the lock leaves consistent maps: keep using them
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The writer thread: commits waiting rows until the cache closes and the queue is empty.
    pub(super) fn run(&self, mut conn: Connection) {
        loop {
            let (mut batch, mut spend): (Vec<(String, Arc<PendingChat>)>, Vec<SpendRow>) = {
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
            // the tables' key order (TEXT keys compare bytewise in SQLite, as `str` does); a key
            // put twice in one commit keeps its order (the later row wins, as before)
            batch.sort_by(|a, b| a.0.cmp(&b.0));
            spend.sort_by(|a, b| a.id.cmp(&b.id));
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

impl Cache {
    /// Waits while `max` or more chat rows are not yet in the file (a bulk writer's
    /// back-pressure: bounds the memory of the rows waiting); reports a failed write.
    pub(crate) fn wait_pending_below(&self, max: usize) -> Result<()> {
        self.wait_while(|st| st.pending.len() >= max.max(1))
    }

    /// Waits until every chat row put so far is in the file; reports a failed write.
    pub fn flush(&self) -> Result<()> {
        self.wait_while(|st| !st.queue.is_empty() || !st.spend.is_empty() || st.writing > 0)
    }

    /// Waits on the writer's commits while `busy` holds and no write failed; an error when
    /// the writer thread stopped first, or when a write failed.
    fn wait_while(&self, busy: impl Fn(&WriterState) -> bool) -> Result<()> {
        let mut st = self.writer.lock();
        while busy(&st) && st.error.is_none() {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::testkit::stored;

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
    fn rows_put_in_any_order_reach_the_file_and_the_wait_bounds_what_is_pending() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.sqlite");
        let a = Cache::open(&p).unwrap();
        for i in 0..3000u32 {
            // keys out of order, one put twice (the later row wins)
            let k = format!("k{}", (i * 7919) % 3000);
            a.put_chat(&k, None, &stored("m")).unwrap();
            a.wait_pending_below(100).unwrap();
            assert!(a.writer.lock().pending.len() < 100);
        }
        let mut newer = stored("m");
        newer.text = "newer".into();
        a.put_chat("k5", None, &stored("m")).unwrap();
        a.put_chat("k5", None, &newer).unwrap();
        a.flush().unwrap();
        drop(a);
        let b = Cache::open(&p).unwrap();
        assert_eq!(b.stats().unwrap().chat_rows, 3000);
        assert_eq!(b.get_chat("k5").unwrap().unwrap(), newer);
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
}
