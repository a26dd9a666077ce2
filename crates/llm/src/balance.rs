//! The runtime side of one configured endpoint: its replicas (one per URL), request and token
//! buckets (governor), and the choice of replica for each attempt: fewest calls assigned
//! (in flight plus waiting for a slot), ties broken round robin. A vLLM/SGLang fleet behind
//! several URLs is thus used evenly, and a slow replica gets fewer calls.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use tokio::sync::{Mutex, OwnedSemaphorePermit};

use crate::config::EndpointConfig;
use crate::error::{LlmError, Result};
use crate::local::LocalServer;
use crate::provider::Replica;

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

    /// Picks the least-assigned replica and waits for one of its slots.
    pub(crate) async fn slot(&self) -> Result<Slot<'_>> {
        let replicas = self.replicas().await?;
        let n = replicas.len().min(self.assigned.len()).max(1);
        let start = self.rr.fetch_add(1, Ordering::Relaxed) % n;
        let mut best = start;
        let mut best_load = usize::MAX;
        for k in 0..n {
            let i = (start + k) % n;
            let l = self.assigned[i].load(Ordering::Relaxed);
            if l < best_load {
                best = i;
                best_load = l;
            }
        }
        let counter = &self.assigned[best];
        counter.fetch_add(1, Ordering::Relaxed);
        let replica = replicas[best].clone();
        match replica.slots.clone().acquire_owned().await {
            Ok(permit) => Ok(Slot {
                replica,
                _permit: permit,
                counter,
            }),
            Err(_) => {
                counter.fetch_sub(1, Ordering::Relaxed);
                Err(LlmError::Unsupported("replica closed".into()))
            }
        }
    }

    /// Slots over all replicas (for sizing a caller's buffer).
    pub(crate) fn capacity(&self) -> usize {
        self.cfg.max_concurrency * self.assigned.len().max(1)
    }
}
