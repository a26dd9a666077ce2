//! The cache file's record of exported Batch files (`--export-batch`): an export is a batch
//! job like a provider's (`batch_job`), with status `exporting` while its file is written and
//! `exported` once it is in place, so that `mtr cache import` knows every call a file may
//! answer and what it was asked with. The spend-ledger job of the command that exported it
//! (`batch_export`) books the imported answers where the direct calls would have been booked.
//! Provider polling never touches these jobs (they have no provider).
//!
//! A request is one slim row (`batch_export_item`: its cache key as 32 bytes, the id of its
//! spec and its sample index, about 45 bytes) and each distinct (job, prompt, output spec) is
//! stored once (`batch_export_spec`): an audit of a million requests asks a handful of output
//! specs, and a row of its own for each (the spec is a JSON schema of a few hundred bytes) made
//! the table ten times larger than it needs to be. Exports written before these tables (one
//! `batch_item` row per request) are still read: a key not found in `batch_export_item` is
//! looked up in `batch_item`.

use std::collections::HashMap;

use rusqlite::types::Value as SqlValue;
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

/// One exported request as recorded: its cache key, the id of its spec
/// ([`Cache::export_spec`]) and its sample index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ExportItem {
    pub key: String,
    pub spec: i64,
    pub sample: u32,
}

/// What the import has read so far (by [`Cache::known_call_in`]): specs by id and jobs by batch
/// id (`None`: the cache has no such spec or job).
#[derive(Debug, Default)]
pub(crate) struct JobMemo {
    jobs: HashMap<String, Option<(String, Option<String>)>>,
    specs: HashMap<i64, Option<Spec>>,
}

/// A spec row with its job's endpoint and spend job.
#[derive(Debug)]
struct Spec {
    batch_id: String,
    prompt_id: Option<String>,
    output: String,
    endpoint: String,
    spend_job: Option<String>,
}

/// The export tables (also created on a file written by a version without them: `CREATE ...
/// IF NOT EXISTS` is the whole migration, the old `batch_item` rows stay where they are).
const EXPORT_TABLES: &str = "CREATE TABLE IF NOT EXISTS batch_export (
        batch_id TEXT PRIMARY KEY,
        job TEXT
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS batch_export_spec (
        id INTEGER PRIMARY KEY,
        batch_id TEXT NOT NULL,
        prompt_id TEXT,
        output TEXT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS batch_export_item (
        key BLOB PRIMARY KEY,
        spec INTEGER NOT NULL,
        sample INTEGER NOT NULL
    ) WITHOUT ROWID;";

/// How a cache key is stored in `batch_export_item`: the 32 bytes its 64 lowercase hex digits
/// spell (every key mtr makes), else its text (a BLOB never equals a TEXT in SQLite, so the two
/// forms cannot collide).
fn stored_key(key: &str) -> SqlValue {
    let hex = key.as_bytes();
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    if hex.len() == 64 {
        let bytes: Option<Vec<u8>> = hex
            .chunks_exact(2)
            .map(|p| Some((digit(p[0])? << 4) | digit(p[1])?))
            .collect();
        if let Some(b) = bytes {
            return SqlValue::Blob(b);
        }
    }
    SqlValue::Text(key.to_string())
}

/// The order in which `batch_export_item` keeps its keys (blobs after texts, blobs
/// bytewise): inserting in it touches each leaf page once per transaction.
fn key_order(a: &SqlValue, b: &SqlValue) -> std::cmp::Ordering {
    match (a, b) {
        (SqlValue::Blob(x), SqlValue::Blob(y)) => x.cmp(y),
        (SqlValue::Text(x), SqlValue::Text(y)) => x.cmp(y),
        (SqlValue::Text(_), _) => std::cmp::Ordering::Less,
        _ => std::cmp::Ordering::Greater,
    }
}

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
            c.execute_batch(EXPORT_TABLES)?;
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

    /// Records what the requests of an export job share (its prompt id and output spec, as
    /// JSON) and returns its id for [`Cache::export_items`]; the caller asks once per distinct
    /// spec.
    pub(crate) fn export_spec(
        &self,
        batch_id: &str,
        prompt_id: Option<&str>,
        output: &str,
    ) -> Result<i64> {
        self.with(|c| {
            c.execute(
                "INSERT INTO batch_export_spec (batch_id, prompt_id, output) VALUES (?1, ?2, ?3)",
                params![batch_id, prompt_id, output],
            )?;
            Ok(c.last_insert_rowid())
        })
    }

    /// Adds requests to export jobs, in one transaction, in the table's key order.
    pub(crate) fn export_items(&self, items: &[ExportItem]) -> Result<()> {
        let mut rows: Vec<(SqlValue, i64, u32)> = items
            .iter()
            .map(|it| (stored_key(&it.key), it.spec, it.sample))
            .collect();
        rows.sort_by(|a, b| key_order(&a.0, &b.0));
        self.transaction(|tx| {
            {
                let mut st = tx.prepare_cached(
                    "INSERT OR REPLACE INTO batch_export_item (key, spec, sample) VALUES (?1, ?2, ?3)",
                )?;
                for (key, spec, sample) in &rows {
                    st.execute(params![key, spec, sample])?;
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

    /// Creates the export tables where no export made them yet (before [`Cache::known_call`]).
    pub(crate) fn ensure_export_table(&self) -> Result<()> {
        self.with(|c| c.execute_batch(EXPORT_TABLES))
    }

    /// The recorded call a Batch output line with this `custom_id` answers, if any.
    #[cfg(test)]
    pub(crate) fn known_call(&self, key: &str) -> Result<Option<KnownCall>> {
        self.known_call_in(key, &mut JobMemo::default())
    }

    /// [`Cache::known_call`], reading each spec and job once per `memo`: a point read of the
    /// request by its key (in `batch_export_item`, else in `batch_item`: a provider batch, or
    /// an export written by an earlier version), then the (few) specs and jobs from memory.
    pub(crate) fn known_call_in(&self, key: &str, memo: &mut JobMemo) -> Result<Option<KnownCall>> {
        let slim = self.with(|c| {
            c.prepare_cached("SELECT spec, sample FROM batch_export_item WHERE key = ?1")?
                .query_row([stored_key(key)], |r| {
                    Ok((r.get::<_, i64>(0)?, r.get::<_, u32>(1)?))
                })
                .optional()
        })?;
        if let Some((spec, sample)) = slim {
            if !memo.specs.contains_key(&spec) {
                let found = self.export_spec_row(spec, memo)?;
                memo.specs.insert(spec, found);
            }
            let Some(Some(s)) = memo.specs.get(&spec) else {
                return Ok(None);
            };
            return Ok(Some(KnownCall {
                item: BatchItem {
                    key: key.to_string(),
                    prompt_id: s.prompt_id.clone(),
                    output: s.output.clone(),
                    sample,
                },
                batch_id: s.batch_id.clone(),
                endpoint: s.endpoint.clone(),
                spend_job: s.spend_job.clone(),
            }));
        }
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
        let Some((endpoint, spend_job)) = self.memo_job(&batch_id, memo)? else {
            return Ok(None);
        };
        Ok(Some(KnownCall {
            item,
            batch_id,
            endpoint,
            spend_job,
        }))
    }

    /// A spec row with its job (`None`: no such spec, or its job is gone).
    fn export_spec_row(&self, id: i64, memo: &mut JobMemo) -> Result<Option<Spec>> {
        let row = self.with(|c| {
            c.prepare_cached(
                "SELECT batch_id, prompt_id, output FROM batch_export_spec WHERE id = ?1",
            )?
            .query_row([id], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, Option<String>>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })
            .optional()
        })?;
        let Some((batch_id, prompt_id, output)) = row else {
            return Ok(None);
        };
        Ok(self
            .memo_job(&batch_id, memo)?
            .map(|(endpoint, spend_job)| Spec {
                batch_id,
                prompt_id,
                output,
                endpoint,
                spend_job,
            }))
    }

    /// A job's endpoint and spend job, read once per `memo`.
    fn memo_job(
        &self,
        batch_id: &str,
        memo: &mut JobMemo,
    ) -> Result<Option<(String, Option<String>)>> {
        if let Some(job) = memo.jobs.get(batch_id) {
            return Ok(job.clone());
        }
        let job = self.export_job(batch_id)?;
        memo.jobs.insert(batch_id.to_string(), job.clone());
        Ok(job)
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
        let spec = c
            .export_spec("mtr-export:s:judge", Some("audit/rel@1"), "\"Json\"")
            .unwrap();
        let key = "ab".repeat(32);
        c.export_items(&[
            ExportItem {
                key: key.clone(),
                spec,
                sample: 2,
            },
            ExportItem {
                key: "k1".into(),
                spec,
                sample: 0,
            },
        ])
        .unwrap();
        c.export_finish("mtr-export:s:judge", 2).unwrap();
        c.ensure_export_table().unwrap();
        let k = c.known_call(&key).unwrap().unwrap();
        let item = BatchItem {
            key: key.clone(),
            prompt_id: Some("audit/rel@1".into()),
            output: "\"Json\"".into(),
            sample: 2,
        };
        assert_eq!(k.item, item);
        assert_eq!(
            (
                k.batch_id.as_str(),
                k.endpoint.as_str(),
                k.spend_job.as_deref()
            ),
            ("mtr-export:s:judge", "judge", Some("audit:x"))
        );
        // a key that is not 64 hex digits is kept as text
        assert_eq!(c.known_call("k1").unwrap().unwrap().item.sample, 0);
        assert!(c.known_call("k2").unwrap().is_none());
        assert!(c.known_call(&"AB".repeat(32)).unwrap().is_none());
        assert!(c.known_call(&"cd".repeat(32)).unwrap().is_none());
        // an export is no provider batch: nothing to poll, and --batch may still submit it
        assert!(c.open_batches().unwrap().is_empty());
        assert!(!c.pending_in_batch(&key));
    }

    /// An export written by a version before `batch_export_item` (one `batch_item` row per
    /// request, no spec table) is still known.
    #[test]
    fn an_export_recorded_in_batch_item_is_still_known() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.sqlite");
        drop(Cache::open(&path).unwrap());
        let key = "0f".repeat(32);
        rusqlite::Connection::open(&path)
            .unwrap()
            .execute_batch(&format!(
                "CREATE TABLE batch_export (batch_id TEXT PRIMARY KEY, job TEXT) WITHOUT ROWID;
                 INSERT INTO batch_job VALUES ('mtr-export:old:judge', 'judge', 'm', 0, 'exported', 1);
                 INSERT INTO batch_export VALUES ('mtr-export:old:judge', 'audit:old');
                 INSERT INTO batch_item VALUES ('{key}', 'mtr-export:old:judge', 'audit/rel@1', '\"Json\"', 1);"
            ))
            .unwrap();
        let c = Cache::open(&path).unwrap();
        c.ensure_export_table().unwrap();
        let k = c.known_call(&key).unwrap().unwrap();
        assert_eq!(
            (k.item.output.as_str(), k.item.sample, k.endpoint.as_str()),
            ("\"Json\"", 1, "judge")
        );
        assert_eq!(k.spend_job.as_deref(), Some("audit:old"));
    }

    #[test]
    fn stored_keys_are_bytes_of_hex_and_text_otherwise() {
        assert_eq!(stored_key(&"0a".repeat(32)), SqlValue::Blob(vec![10; 32]));
        assert_eq!(stored_key("k"), SqlValue::Text("k".into()));
        assert_eq!(
            stored_key(&"0A".repeat(32)),
            SqlValue::Text("0A".repeat(32))
        );
        let mut v = vec![
            stored_key(&"ff".repeat(32)),
            stored_key("z"),
            stored_key(&"01".repeat(32)),
            stored_key("a"),
        ];
        v.sort_by(key_order);
        assert_eq!(
            v,
            vec![
                SqlValue::Text("a".into()),
                SqlValue::Text("z".into()),
                SqlValue::Blob(vec![1; 32]),
                SqlValue::Blob(vec![255; 32])
            ]
        );
    }
}
