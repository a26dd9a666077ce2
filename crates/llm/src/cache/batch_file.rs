//! The cache file's record of exported Batch files (`--export-batch`): an export is a batch
//! job like a provider's (`batch_job`, `batch_item`, keyed by the call's cache key), with
//! status `exporting` while its file is written and `exported` once it is in place, so that
//! `mtr cache import` knows every call a file may answer and what it was asked with. The
//! spend-ledger job of the command that exported it (`batch_export`) books the imported
//! answers where the direct calls would have been booked. Provider polling never touches
//! these jobs (they have no provider).

use std::collections::HashMap;

use rusqlite::{OptionalExtension, params};

use super::{BatchItem, Cache, now};
use crate::error::Result;

/// Status of an export job whose file is being written.
pub(crate) const EXPORTING: &str = "exporting";
/// Status of an export job whose file is complete.
pub(crate) const EXPORTED: &str = "exported";

/// What the cache knows of one call a Batch output line answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KnownCall {
    pub item: BatchItem,
    pub batch_id: String,
    pub endpoint: String,
    /// The spend-ledger job of the command that exported it (none for provider batches).
    pub spend_job: Option<String>,
}

/// Jobs read so far by [`Cache::known_call_in`]: batch id to endpoint and spend job (`None`:
/// the cache has no such job).
#[derive(Debug, Default)]
pub(crate) struct JobMemo(HashMap<String, Option<(String, Option<String>)>>);

const EXPORT_TABLE: &str = "CREATE TABLE IF NOT EXISTS batch_export (
        batch_id TEXT PRIMARY KEY,
        job TEXT
    ) WITHOUT ROWID;";

impl Cache {
    /// Records an export job (status `exporting`) and the spend job it books under.
    pub(crate) fn export_begin(
        &self,
        batch_id: &str,
        endpoint: &str,
        model: &str,
        spend_job: Option<&str>,
    ) -> Result<()> {
        self.with(|c| {
            c.execute_batch(EXPORT_TABLE)?;
            c.execute(
                "INSERT OR REPLACE INTO batch_job (batch_id, endpoint, model, created, status, items) VALUES (?1, ?2, ?3, ?4, ?5, 0)",
                params![batch_id, endpoint, model, now(), EXPORTING],
            )?;
            c.execute(
                "INSERT OR REPLACE INTO batch_export (batch_id, job) VALUES (?1, ?2)",
                params![batch_id, spend_job],
            )
            .map(|_| ())
        })
    }

    /// Adds requests to export jobs, in one transaction (`(batch_id, item)`).
    pub(crate) fn export_items(&self, items: &[(String, BatchItem)]) -> Result<()> {
        self.transaction(|tx| {
            {
                let mut st = tx.prepare_cached(
                    "INSERT OR REPLACE INTO batch_item (key, batch_id, prompt_id, output, sample) VALUES (?1, ?2, ?3, ?4, ?5)",
                )?;
                for (job, it) in items {
                    st.execute(params![it.key, job, it.prompt_id, it.output, it.sample])?;
                }
            }
            Ok(())
        })
    }

    /// Marks an export job's file complete, with its number of requests.
    pub(crate) fn export_finish(&self, batch_id: &str, items: u64) -> Result<()> {
        self.with(|c| {
            c.execute(
                "UPDATE batch_job SET status = ?2, items = ?3 WHERE batch_id = ?1",
                params![batch_id, EXPORTED, items as i64],
            )
            .map(|_| ())
        })
    }

    /// Creates the export table where no export made it yet (before [`Cache::known_call`]).
    pub(crate) fn ensure_export_table(&self) -> Result<()> {
        self.with(|c| c.execute_batch(EXPORT_TABLE))
    }

    /// The recorded call a Batch output line with this `custom_id` answers, if any.
    #[cfg(test)]
    pub(crate) fn known_call(&self, key: &str) -> Result<Option<KnownCall>> {
        self.known_call_in(key, &mut JobMemo::default())
    }

    /// [`Cache::known_call`], reading each job's endpoint and spend job once per `memo`: a
    /// point read of the item by its key, then the (few) jobs from memory. The join of the
    /// three tables in one statement was re-prepared by SQLite at every step (about two
    /// thirds of an import's time).
    pub(crate) fn known_call_in(&self, key: &str, memo: &mut JobMemo) -> Result<Option<KnownCall>> {
        let found = self.with(|c| {
            c.prepare_cached(
                "SELECT prompt_id, output, sample, batch_id FROM batch_item WHERE key = ?1",
            )?
            .query_row([key], |r| {
                Ok((
                    BatchItem {
                        key: key.to_string(),
                        prompt_id: r.get(0)?,
                        output: r.get(1)?,
                        sample: r.get(2)?,
                    },
                    r.get::<_, String>(3)?,
                ))
            })
            .optional()
        })?;
        let Some((item, batch_id)) = found else {
            return Ok(None);
        };
        if !memo.0.contains_key(&batch_id) {
            let job = self.export_job(&batch_id)?;
            memo.0.insert(batch_id.clone(), job);
        }
        Ok(memo
            .0
            .get(&batch_id)
            .cloned()
            .flatten()
            .map(|(endpoint, spend_job)| KnownCall {
                item,
                batch_id,
                endpoint,
                spend_job,
            }))
    }

    /// A job's endpoint and the spend job it books under (`None`: no such job).
    fn export_job(&self, batch_id: &str) -> Result<Option<(String, Option<String>)>> {
        self.with(|c| {
            c.prepare_cached(
                "SELECT j.endpoint, e.job FROM batch_job j
                   LEFT JOIN batch_export e ON e.batch_id = j.batch_id
                  WHERE j.batch_id = ?1",
            )?
            .query_row([batch_id], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exported_call_is_known_with_its_job_and_never_polled() {
        let dir = tempfile::tempdir().unwrap();
        let c = Cache::open(dir.path().join("c.sqlite")).unwrap();
        c.export_begin("mtr-export:s:judge", "judge", "m", Some("audit:x"))
            .unwrap();
        let item = BatchItem {
            key: "k1".into(),
            prompt_id: Some("audit/rel@1".into()),
            output: "\"Json\"".into(),
            sample: 2,
        };
        c.export_items(&[("mtr-export:s:judge".into(), item.clone())])
            .unwrap();
        c.export_finish("mtr-export:s:judge", 1).unwrap();
        c.ensure_export_table().unwrap();
        let k = c.known_call("k1").unwrap().unwrap();
        assert_eq!(k.item, item);
        assert_eq!(
            (k.endpoint.as_str(), k.spend_job.as_deref()),
            ("judge", Some("audit:x"))
        );
        assert!(c.known_call("k2").unwrap().is_none());
        // an export is no provider batch: nothing to poll, and --batch may still submit it
        assert!(c.open_batches().unwrap().is_empty());
        assert!(!c.pending_in_batch("k1"));
    }
}
