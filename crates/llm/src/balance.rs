//! The runtime side of one configured endpoint: its replicas (one per URL), request and token
//! buckets (governor), and the choice of replica for each attempt: fewest calls assigned
//! (in flight plus waiting for a slot), ties broken round robin. A vLLM/SGLang fleet behind
//! several URLs is thus used evenly, and a slow replica gets fewer calls. A local server
//! counts the calls of every endpoint that uses it: the generator's own server is also a
//! replica of its model's judge, and during synthesis, when the generator keeps it busy, the
//! judge's calls go to the judge's server instead (counted per endpoint, half of them had
//! queued behind the generator while the judge's server idled at 45% of a core).

use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use tokio::sync::{Mutex, OwnedSemaphorePermit};

use crate::config::EndpointConfig;
use crate::error::{LlmError, Result};
use crate::provider::Replica;
use mtr_local::LocalServer;

/// A configured endpoint at run time.
pub(crate) struct Endpoint {
    pub cfg: EndpointConfig,
    /// Built on first use; for the local default rebuilt when its server moved (restart).
    replicas: std::sync::RwLock<Option<Arc<Vec<Arc<Replica>>>>>,
    init: Mutex<()>,
    assigned: Vec<AtomicUsize>,
    rr: AtomicUsize,
    /// Calls routed to this endpoint and not finished (for role-level balancing).
    pub load: AtomicUsize,
    rpm: Option<DefaultDirectRateLimiter>,
    tpm: Option<(DefaultDirectRateLimiter, u32)>,
    /// Set for the embedded local default: the servers (one per replica) to start before the
    /// first call.
    pub local: Vec<Arc<LocalServer>>,
    api_key: Option<String>,
}

/// A reserved slot on one replica; dropping it frees the slot.
pub(crate) struct Slot<'a> {
    pub replica: Arc<Replica>,
    /// The server slot a pinned call asks for (llama.cpp `id_slot`; see [`crate::affinity`]).
    pub id_slot: Option<u32>,
    _permit: OwnedSemaphorePermit,
    counter: &'a AtomicUsize,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.counter.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Endpoint {
    pub(crate) fn new(cfg: EndpointConfig, local: Vec<Arc<LocalServer>>) -> Result<Self> {
        let api_key = match &cfg.api_key_env {
            Some(var) => Some(std::env::var(var).map_err(|_| {
                LlmError::Config(format!(
                    "endpoint `{}`: environment variable ${var} (api_key_env) is not set",
                    cfg.name
                ))
            })?),
            None => None,
        };
        let rpm = cfg
            .requests_per_minute
            .and_then(NonZeroU32::new)
            .map(|n| RateLimiter::direct(Quota::per_minute(n)));
        let tpm = cfg
            .tokens_per_minute
            .and_then(NonZeroU32::new)
            .map(|n| (RateLimiter::direct(Quota::per_minute(n)), n.get()));
        let n = if !local.is_empty() {
            local.len()
        } else {
            cfg.replicas().len()
        };
        Ok(Self {
            assigned: (0..n).map(|_| AtomicUsize::new(0)).collect(),
            cfg,
            replicas: std::sync::RwLock::new(None),
            init: Mutex::new(()),
            rr: AtomicUsize::new(0),
            load: AtomicUsize::new(0),
            rpm,
            tpm,
            local,
            api_key,
        })
    }

    /// The replicas, starting the local server first when this is the local default.
    pub(crate) async fn replicas(&self) -> Result<Arc<Vec<Arc<Replica>>>> {
        if let Some(r) = self.current() {
            return Ok(r);
        }
        let _guard = self.init.lock().await;
        if let Some(r) = self.current() {
            return Ok(r);
        }
        let urls = if self.local.is_empty() {
            self.cfg.replicas()
        } else {
            self.local_urls().await?
        };
        self.install(&urls)
    }

    fn current(&self) -> Option<Arc<Vec<Arc<Replica>>>> {
        self.replicas.read().ok().and_then(|r| r.clone())
    }

    fn install(&self, urls: &[String]) -> Result<Arc<Vec<Arc<Replica>>>> {
        let timeout = Duration::from_secs_f64(self.cfg.timeout_s);
        let built = urls
            .iter()
            .map(|u| {
                Replica::new(
                    u,
                    self.api_key.as_deref(),
                    timeout,
                    self.cfg.max_concurrency,
                )
                .map(Arc::new)
            })
            .collect::<Result<Vec<_>>>()?;
        let built = Arc::new(built);
        if let Ok(mut w) = self.replicas.write() {
            *w = Some(built.clone());
        }
        Ok(built)
    }

    /// The URLs of the local servers, each started if it is not running.
    async fn local_urls(&self) -> Result<Vec<String>> {
        let mut urls = Vec::with_capacity(self.local.len());
        for server in &self.local {
            urls.push(server.ensure_running().await?);
        }
        Ok(urls)
    }

    /// After a connection failure on the local default: a shared server may have been stopped
    /// or restarted (on another port) by another process. Start it again if needed and point
    /// this endpoint at wherever its servers now run. Does nothing for remote endpoints.
    pub(crate) async fn recover_local(&self) -> Result<()> {
        if self.local.is_empty() {
            return Ok(());
        }
        let _guard = self.init.lock().await;
        let urls = self.local_urls().await?;
        let same = self.current().is_some_and(|r| {
            r.len() == urls.len() && r.iter().zip(&urls).all(|(rep, u)| &rep.url == u)
        });
        if !same {
            tracing::info!(endpoint = %self.cfg.name, urls = ?urls, "local server moved; reconnecting");
            self.install(&urls)?;
        }
        Ok(())
    }

    /// Waits for the request and token buckets (`tokens` = prompt + max completion estimate).
    pub(crate) async fn rate_limit(&self, tokens: u64) {
        if let Some(l) = &self.rpm {
            l.until_ready().await;
        }
        if let Some((l, cap)) = &self.tpm {
            let n = (tokens.min(u64::from(*cap)).max(1)) as u32;
            if let Some(n) = NonZeroU32::new(n) {
                let _ = l.until_n_ready(n).await;
            }
        }
    }

    /// The calls assigned to replica `i`: for a local server, those of every endpoint on it.
    fn assigned(&self, i: usize) -> &AtomicUsize {
        match self.local.get(i) {
            Some(server) => &server.assigned,
            None => &self.assigned[i],
        }
    }

    /// Picks the least-assigned replica and waits for one of its slots; a pinned call
    /// (`pin`: its conversation's [`crate::affinity::key_hash`]) goes to its conversation's
    /// replica and server slot instead.
    pub(crate) async fn slot(&self, pin: Option<u64>) -> Result<Slot<'_>> {
        let replicas = self.replicas().await?;
        let n = replicas.len().min(self.assigned.len()).max(1);
        let (best, id_slot) = match pin {
            Some(h) => {
                let (i, s) = crate::affinity::pin(h, n, self.cfg.max_concurrency);
                (i, Some(s))
            }
            None => (self.least_assigned(n), None),
        };
        let counter = self.assigned(best);
        counter.fetch_add(1, Ordering::Relaxed);
        let replica = replicas[best].clone();
        match replica.slots.clone().acquire_owned().await {
            Ok(permit) => Ok(Slot {
                replica,
                id_slot,
                _permit: permit,
                counter,
            }),
            Err(_) => {
                counter.fetch_sub(1, Ordering::Relaxed);
                Err(LlmError::Unsupported("replica closed".into()))
            }
        }
    }

    /// The replica with the fewest calls assigned, ties broken round robin.
    fn least_assigned(&self, n: usize) -> usize {
        let start = self.rr.fetch_add(1, Ordering::Relaxed) % n;
        let mut best = start;
        let mut best_load = usize::MAX;
        for k in 0..n {
            let i = (start + k) % n;
            let l = self.assigned(i).load(Ordering::Relaxed);
            if l < best_load {
                best = i;
                best_load = l;
            }
        }
        best
    }

    /// Slots over all replicas (for sizing a caller's buffer).
    pub(crate) fn capacity(&self) -> usize {
        self.cfg.max_concurrency * self.assigned.len().max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mtr_local::{LocalPaths, ServerKind};

    fn server(name: &str) -> Arc<LocalServer> {
        Arc::new(LocalServer {
            name: name.into(),
            alias: "model".into(),
            kind: ServerKind::Embeddings,
            threads: 1,
            slots: 2,
            n_ctx: 512,
            start_timeout: Duration::from_secs(1),
            paths: LocalPaths::in_dir(&std::env::temp_dir()),
            keep_alive: Default::default(),
            assigned: Default::default(),
        })
    }

    fn endpoint(name: &str, servers: &[&Arc<LocalServer>], urls: &[&str]) -> Endpoint {
        let mut cfg = EndpointConfig::new(name, urls[0], "model");
        cfg.max_concurrency = 2;
        let e = Endpoint::new(cfg, servers.iter().map(|s| Arc::clone(s)).collect()).unwrap();
        // as if the servers were running at these URLs
        let urls: Vec<String> = urls.iter().map(|u| u.to_string()).collect();
        e.install(&urls).unwrap();
        e
    }

    #[tokio::test]
    async fn a_judge_sends_its_calls_where_the_generator_does_not_already_queue() {
        const GEN: &str = "http://127.0.0.1:1/v1";
        const JUDGE: &str = "http://127.0.0.1:2/v1";
        let (gen_server, judge_server) = (server("gen"), server("judge"));
        let generator = endpoint("gen", &[&gen_server], &[GEN]);
        // the judge of the generator's model: its own server, and the generator's as a replica
        let judge = endpoint("judge", &[&judge_server, &gen_server], &[JUDGE, GEN]);
        let g1 = generator.slot(None).await.unwrap();
        let g2 = generator.slot(None).await.unwrap();
        // synthesis: the generator keeps its server busy, so the judge stays on its own
        let j1 = judge.slot(None).await.unwrap();
        let j2 = judge.slot(None).await.unwrap();
        assert_eq!(
            (j1.replica.url.as_str(), j2.replica.url.as_str()),
            (JUDGE, JUDGE)
        );
        drop((g1, g2));
        // an audit: the generator is idle, and the judge uses both servers
        let j3 = judge.slot(None).await.unwrap();
        assert_eq!(j3.replica.url, GEN);
        assert_eq!(gen_server.assigned.load(Ordering::Relaxed), 1);
        drop((j1, j2, j3));
        assert_eq!(judge_server.assigned.load(Ordering::Relaxed), 0);
    }
}
