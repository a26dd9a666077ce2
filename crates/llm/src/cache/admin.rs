//! What `mtr cache` does with the file: row counts and sizes (`stats`), deleting rows by age,
//! model or prompt (`prune`), and checking that the file accepts writes before a job starts.

use std::path::PathBuf;

use rusqlite::params;
use serde::{Deserialize, Serialize};

use super::{Cache, now};
use crate::error::Result;

/// Row counts and sizes, for `mtr cache stats`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CacheStats {
    /// The cache's SQLite file.
    pub path: PathBuf,
    /// Its size in bytes.
    pub file_bytes: u64,
    /// Cached chat answers.
    pub chat_rows: u64,
    /// Cached embeddings.
    pub embedding_rows: u64,
    /// Per model: (chat rows, prompt tokens, completion tokens, USD originally paid).
    pub models: Vec<ModelStats>,
    /// Per prompt id: chat rows.
    pub prompts: Vec<(String, u64)>,
    /// When the oldest row was created, seconds since the Unix epoch (None: no row).
    pub oldest_unix: Option<i64>,
    /// When the newest row was created, seconds since the Unix epoch (None: no row).
    pub newest_unix: Option<i64>,
}

/// One model's rows and tokens in the cache.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelStats {
    /// The model's name.
    pub model: String,
    /// Its cached chat answers.
    pub chat_rows: u64,
    /// Its cached embeddings.
    pub embedding_rows: u64,
    /// Prompt tokens of its chat answers.
    pub prompt_tokens: u64,
    /// Completion tokens of its chat answers.
    pub completion_tokens: u64,
    /// What these answers cost when they were fetched (what the cache saves per rerun).
    pub cost_usd: f64,
}

/// Which rows `prune` removes (all given conditions must hold; none given = nothing).
#[derive(Debug, Clone, Default)]
pub struct PruneFilter {
    /// Rows created more than this many seconds ago.
    pub older_than_s: Option<u64>,
    /// Rows of this model.
    pub model: Option<String>,
    /// Prompt id (`name@version`) or name prefix (`audit/`).
    pub prompt: Option<String>,
    /// Everything.
    pub all: bool,
}

impl Cache {
    /// Fails unless the file accepts writes (a read-only file or folder), without changing it.
    pub(crate) fn check_writable(&self) -> Result<()> {
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
    use crate::cache::testkit::stored;
    use rusqlite::Connection;

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
}
