//! The spend ledger (table `spend`): one row per paid call, booked through the writer thread
//! as it is paid and tagged with the job that paid it, so the money a job spent across
//! interrupted attempts can be told apart from the cost of its result.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::writer::{SpendRow, Writer};
use super::{Cache, now};
use crate::error::Result;

/// What the spend ledger holds for one job.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Spent {
    /// Paid calls (each counted once, however many attempts the job took).
    pub calls: u64,
    /// Prompt tokens of the paid calls.
    pub prompt_tokens: u64,
    /// Completion tokens of the paid calls.
    pub completion_tokens: u64,
    /// USD paid.
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

impl Cache {
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
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
