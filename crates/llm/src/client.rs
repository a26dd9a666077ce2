//! [`Llm`], the client every crate uses: calls one endpoint, a load-balanced role, or every
//! judge of the ensemble; embeds texts; plans dry runs; keeps the ledger. This root holds the
//! client, its set-up and what it reports; the work is in the submodules: `call` (chat calls,
//! one call as named steps), `send` (one HTTP exchange with retries), `body` (the request body
//! and its cache key), `embed`, `estimate` (dry runs), `batch` and `batch_file` (the Batch API
//! and Batch files), `rerank`, `spend`.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::balance::Endpoint;
use crate::cache::Cache;
use crate::chat::ChatResult;
use crate::config::{LlmConfig, LlmOptions, Role, Sampling, default_cache_path};
use crate::error::{LlmError, Result};
use crate::ledger::{Ledger, LedgerSnapshot};
use crate::plan::Plan;

/// The LLM client. Cheap to clone; share it across tasks.
#[derive(Clone)]
pub struct Llm {
    inner: Arc<Inner>,
}

struct Inner {
    config: LlmConfig,
    options: LlmOptions,
    endpoints: BTreeMap<String, Arc<Endpoint>>,
    cache: Option<Arc<Cache>>,
    ledger: Ledger,
    plan: Mutex<Plan>,
    /// How a dry run counts its prompts (see `client/estimate.rs`).
    prompt_counts: Mutex<estimate::PromptCounts>,
    batch_queue: Mutex<BTreeMap<String, Vec<provider_batch::Queued>>>,
    /// `--export-batch`: the file cache misses are written to (see `client/batch_file.rs`).
    export: Mutex<Option<batch_file::Exporter>>,
    /// What the llama.cpp servers reported doing, per endpoint (see [`crate::server_work`]).
    server_work: Mutex<BTreeMap<String, crate::server_work::ServerWork>>,
}

/// A configured endpoint, as reported to callers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EndpointInfo {
    /// The endpoint's name.
    pub name: String,
    /// Its model.
    pub model: String,
    /// Its model family, if configured (judges of one family are not independent).
    pub family: Option<String>,
    /// Servers it balances over (the local servers for the local default).
    pub replicas: usize,
    /// Whether it accepts `response_format: json_schema`.
    pub supports_json_schema: bool,
    /// True for the embedded local default.
    pub local: bool,
    /// Context size in tokens, when known (`context_tokens`).
    pub context_tokens: Option<u32>,
    /// How its ratings are read (`rating_mode`).
    pub rating_mode: crate::logprob::RatingMode,
}

/// One judge's answers to one item (`n` samples).
#[derive(Debug)]
pub struct JudgeVerdicts {
    /// The judge's endpoint name.
    pub judge: String,
    /// The judge's model.
    pub model: String,
    /// The judge's model family, if configured.
    pub family: Option<String>,
    /// One result per sample, in sample order.
    pub samples: Vec<Result<ChatResult, LlmError>>,
}

/// Where a batch of calls goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// The endpoint of this name.
    Endpoint(String),
    /// The endpoints of this role.
    Role(Role),
}

impl std::fmt::Debug for Llm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Llm")
            .field(
                "endpoints",
                &self.inner.endpoints.keys().collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl Llm {
    /// Builds the client. With no `[[llm.endpoints]]`, configures the embedded local default
    /// (servers start lazily on first use; `LlmError::Local` if not installed).
    pub async fn new(config: LlmConfig, options: LlmOptions) -> Result<Self> {
        let (config, locals) = if config.is_local_default() {
            crate::local::default_setup(config)?
        } else {
            (config, BTreeMap::new())
        };
        config.validate()?;
        register_secrets(&config);
        let mut endpoints = BTreeMap::new();
        for e in &config.endpoints {
            let local = locals.get(&e.name).cloned().unwrap_or_default();
            endpoints.insert(e.name.clone(), Arc::new(Endpoint::new(e.clone(), local)?));
        }
        let cache = if options.no_cache {
            None
        } else {
            let path = options
                .cache_path
                .clone()
                .or_else(|| config.cache.clone())
                .unwrap_or_else(default_cache_path);
            if options.dry_run && !path.exists() {
                // a dry run writes nothing: without a cache there is simply nothing cached yet
                None
            } else {
                Some(Arc::new(Cache::open(path)?))
            }
        };
        let ledger = Ledger::new(options.max_cost.or(config.max_cost));
        if let Some(c) = &cache {
            ledger.attach(c.spend_sink());
        }
        for e in &config.endpoints {
            ledger.register(&e.name, &e.model);
        }
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                options,
                endpoints,
                cache,
                ledger,
                plan: Mutex::new(Plan::default()),
                prompt_counts: Mutex::new(estimate::PromptCounts::default()),
                batch_queue: Mutex::new(BTreeMap::new()),
                export: Mutex::new(None),
                server_work: Mutex::new(BTreeMap::new()),
            }),
        })
    }

    /// The effective configuration (with the local default filled in).
    pub fn config(&self) -> &LlmConfig {
        &self.inner.config
    }

    /// The client's options.
    pub fn options(&self) -> &LlmOptions {
        &self.inner.options
    }

    /// Every configured endpoint, as callers see it.
    pub fn endpoints(&self) -> Vec<EndpointInfo> {
        self.inner
            .endpoints
            .values()
            .map(|e| EndpointInfo {
                name: e.cfg.name.clone(),
                model: e.cfg.model.clone(),
                family: e.cfg.family.clone(),
                replicas: if e.local.is_empty() {
                    e.cfg.replicas().len()
                } else {
                    e.local.len()
                },
                supports_json_schema: e.cfg.supports_json_schema,
                local: !e.local.is_empty(),
                context_tokens: e.cfg.context_tokens,
                rating_mode: if e.cfg.rerank.is_some() {
                    crate::logprob::RatingMode::Relevance
                } else {
                    e.cfg.rating_mode
                },
            })
            .collect()
    }

    /// Endpoint names of a role.
    pub fn role_endpoints(&self, role: Role) -> &[String] {
        let r = &self.inner.config.roles;
        match role {
            Role::Judges => &r.judges,
            Role::Generator => &r.generator,
            Role::Embedder => &r.embedder,
        }
    }

    /// The judges of the ensemble (endpoint names).
    pub fn judges(&self) -> &[String] {
        self.role_endpoints(Role::Judges)
    }

    /// Sampling of a role (`embedder` has none; judges' is returned).
    pub fn sampling(&self, role: Role) -> &Sampling {
        match role {
            Role::Generator => &self.inner.config.sampling.generator,
            _ => &self.inner.config.sampling.judges,
        }
    }

    /// The model of the embedder role (for index fingerprints).
    pub fn embedding_model(&self) -> Option<String> {
        self.role_endpoints(Role::Embedder)
            .first()
            .and_then(|n| self.inner.endpoints.get(n))
            .map(|e| e.cfg.model.clone())
    }

    /// Slots of a target (replicas x max_concurrency summed): a good buffer size for callers.
    pub fn capacity(&self, target: &Target) -> usize {
        let names: Vec<&String> = match target {
            Target::Endpoint(n) => vec![n],
            Target::Role(r) => self.role_endpoints(*r).iter().collect(),
        };
        names
            .iter()
            .filter_map(|n| self.inner.endpoints.get(*n))
            .map(|e| e.capacity())
            .sum::<usize>()
            .max(1)
    }

    /// What the llama.cpp servers reported doing for this process's calls, per endpoint
    /// (empty where no response carried `timings`).
    pub fn server_work(&self) -> BTreeMap<String, crate::server_work::ServerWork> {
        self.inner
            .server_work
            .lock()
            .map(|w| w.clone())
            .unwrap_or_default()
    }

    /// Adds one response's llama.cpp timings to its endpoint's work.
    pub(crate) fn note_server_work(&self, endpoint: &str, resp: &serde_json::Value, prompt: u64) {
        if let Some(w) = crate::server_work::ServerWork::of_response(resp, prompt)
            && let Ok(mut all) = self.inner.server_work.lock()
        {
            all.entry(endpoint.to_string()).or_default().add(&w);
        }
    }

    /// The ledger so far.
    pub fn ledger(&self) -> LedgerSnapshot {
        self.inner.ledger.snapshot()
    }

    /// The cache, unless `--no-cache`.
    pub fn cache(&self) -> Option<&Cache> {
        self.inner.cache.as_deref()
    }

    fn endpoint(&self, name: &str) -> Result<&Arc<Endpoint>> {
        self.inner.endpoints.get(name).ok_or_else(|| {
            LlmError::Config(format!(
                "no endpoint named `{name}` (known: {})",
                self.inner
                    .endpoints
                    .keys()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
    }
    fn pick(&self, role: Role) -> Result<Arc<Endpoint>> {
        let names = self.role_endpoints(role);
        let mut best: Option<&Arc<Endpoint>> = None;
        for n in names {
            let e = self.endpoint(n)?;
            if best.is_none_or(|b| e.load.load(Ordering::Relaxed) < b.load.load(Ordering::Relaxed))
            {
                best = Some(e);
            }
        }
        best.cloned()
            .ok_or_else(|| LlmError::Config(format!("[llm.roles] {role} lists no endpoint")))
    }
}

/// Registers every configured key and every `base_url` password with [`crate::redact`], so
/// that no provider echo of them reaches a stored record or a log line.
fn register_secrets(config: &LlmConfig) {
    for e in &config.endpoints {
        if let Some(var) = &e.api_key_env
            && let Ok(key) = std::env::var(var)
        {
            crate::redact::register_secret(&key);
        }
        for u in std::iter::once(&e.base_url).chain(&e.base_urls) {
            crate::redact::register_url_credentials(u);
        }
    }
}

mod batch_file;
mod body;
mod call;
mod embed;
mod estimate;
mod export_order;
mod export_sink;
mod provider_batch;
mod rerank_call;
mod send;
pub mod spend;
pub use batch_file::{ExportReport, ExportedModel, ImportError, ImportReport};
pub use estimate::PromptSample;
pub use provider_batch::BatchReport;
pub(crate) use send::read_choice;

#[cfg(test)]
mod tests;
