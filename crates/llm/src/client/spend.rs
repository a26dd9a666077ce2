//! What a job paid across all its attempts, and the checks a command makes before its first
//! paid call. The run's ledger ([`Llm::ledger`]) knows only this process; the spend ledger in
//! the cache file knows every paid call of every attempt, tagged with the job that paid it
//! ([`Llm::set_spend_job`]), so a report can give both the cost of its result and the money
//! actually spent to get it.

use super::Llm;
use crate::cache::Spent;
use crate::error::Result;

impl Llm {
    /// Tags every later paid call with `job` in the cache's spend ledger (an audit or
    /// synthesis names its output folder, so every attempt of it books under one tag).
    pub fn set_spend_job(&self, job: &str) {
        self.inner.ledger.set_job(job);
    }

    /// What the cache's spend ledger holds for `job`; `None` without a cache.
    pub fn spent(&self, job: &str) -> Result<Option<Spent>> {
        match &self.inner.cache {
            Some(c) => c.spent(job).map(Some),
            None => Ok(None),
        }
    }

    /// Fails when the cache (if any) cannot be written: checked before the first paid call.
    pub fn check_cache_writable(&self) -> Result<()> {
        match &self.inner.cache {
            Some(c) => c.check_writable(),
            None => Ok(()),
        }
    }

    /// Batch API jobs recorded in the cache and not finished (of this client's endpoints).
    pub fn batches_open(&self) -> Result<usize> {
        let Some(c) = &self.inner.cache else {
            return Ok(0);
        };
        Ok(c.open_batches()?
            .iter()
            .filter(|j| self.inner.endpoints.contains_key(&j.endpoint))
            .count())
    }
}

/// A job tag for the spend ledger: a hash of what the job is (`audit`, `synth`) and where its
/// output goes (the absolute path, which never reaches any output file).
pub fn job_tag(kind: &str, out: &std::path::Path) -> String {
    let abs = std::fs::canonicalize(out)
        .or_else(|_| std::path::absolute(out))
        .unwrap_or_else(|_| out.to_path_buf());
    let mut h = blake3::Hasher::new();
    h.update(kind.as_bytes());
    h.update(b"\x1f");
    h.update(abs.to_string_lossy().as_bytes());
    format!("{kind}:{}", &h.finalize().to_hex()[..24])
}
