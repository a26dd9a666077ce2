//! mtr-llm: every LLM call mtr makes goes through here: OpenAI-compatible endpoints, judge
//! ensembles, structured output with honest parse status, a content-addressed cache so that
//! reruns never pay twice, rate limits, retries and a cost ledger.
//!
//! Start with [`Llm::new`] (see `crates/llm/API.md` for the contract other crates code against).

#![warn(unreachable_pub)]
#![warn(missing_docs)]

pub mod affinity;
pub mod budget;
pub mod cache;
pub mod chat;
pub mod client;
pub mod config;
mod error;
mod extract;
#[cfg(feature = "fake")]
pub mod fake;
#[cfg(feature = "fake")]
mod fake_server;
mod ledger;
pub mod local;
pub mod logprob;
pub mod plan;
mod prompt;
pub mod prompt_cache;
pub mod redact;
pub mod rerank;
mod schema_caps;
mod schema_check;
pub mod server_work;
pub mod tokens;

mod balance;
mod provider;
mod retry;

pub use cache::{Cache, CacheStats};
pub use chat::{
    ChatMessage, ChatRequest, ChatResult, JsonSchema, MessageRole, OutputSpec, ParseStatus,
    PromptRef, Usage,
};
pub use client::{
    BatchReport, EndpointInfo, ExportReport, ImportError, ImportReport, JudgeVerdicts, Llm, Target,
};
pub use config::{
    EndpointConfig, LlmConfig, LlmOptions, LocalConfig, Role, Roles, Sampling, UseServer,
};
pub use error::{LlmError, Result};
pub use ledger::{EndpointUsage, LedgerSnapshot};
pub use plan::{Plan, PlannedEndpoint};
pub use prompt::{Prompt, prompts_hash};
