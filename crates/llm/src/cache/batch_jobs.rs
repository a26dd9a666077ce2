//! Batch API jobs in the cache file (`batch_job`, `batch_item`): recorded before they are
//! created at the provider, under a client-side submission id, so that a run killed at any
//! point finds them again (see `client/provider_batch.rs`).

use rusqlite::{OptionalExtension, params};

use super::{Cache, now};
use crate::error::Result;

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

impl Cache {
    /// Records a submitted Batch API job and its items (so a rerun resumes by batch id).
    pub(crate) fn insert_batch(&self, job: &BatchJob, items: &[BatchItem]) -> Result<()> {
        self.transaction(|tx| {
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
            Ok(())
        })
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
        self.transaction(|tx| {
            tx.execute(
                "UPDATE batch_job SET batch_id = ?2, status = ?3 WHERE batch_id = ?1",
                params![old_id, new_id, status],
            )?;
            tx.execute(
                "UPDATE batch_item SET batch_id = ?2 WHERE batch_id = ?1",
                params![old_id, new_id],
            )?;
            Ok(())
        })
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
}
