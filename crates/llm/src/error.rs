//! The one error type of the LLM layer. Variants keep apart what the user can fix (config,
//! missing local install), what the provider did (HTTP errors after retries), what the model
//! produced (unparsable output after retries), and the deliberate budget stop, so that callers
//! can report failures separately instead of turning them into scores.

use std::path::PathBuf;

/// Errors of the LLM layer.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// The `[llm]` configuration is wrong (unknown endpoint, empty role, bad URL, missing key).
    #[error("llm config: {0}")]
    Config(String),
    /// The embedded local default is not installed or could not start; `hint` says the fix.
    #[error("local model server: {message} (fix: {hint})")]
    Local {
        /// What is wrong.
        message: String,
        /// How to fix it.
        hint: String,
    },
    /// A local server failed (not installed, could not start, a bad keep-alive): `mtr-local`'s
    /// error, passed on as it is.
    #[error(transparent)]
    LocalServer(#[from] mtr_local::LocalError),
    /// The provider failed after every retry (HTTP status, timeout, connection refused).
    #[error("endpoint `{endpoint}`: {message}{}", .status.map(|s| format!(" (HTTP {s})")).unwrap_or_default())]
    Provider {
        /// The endpoint's name.
        endpoint: String,
        /// The HTTP status, when there was an answer.
        status: Option<u16>,
        /// What went wrong.
        message: String,
        /// How many attempts were made before giving up.
        attempts: u32,
    },
    /// The model's output could not be parsed into the requested JSON after every retry.
    /// `ChatResult` records this as `ParseStatus::Failed`; this variant is what
    /// [`crate::ChatResult::into_value`] returns for it.
    #[error("endpoint `{endpoint}`: unparsable output: {error}")]
    Parse {
        /// The endpoint's name.
        endpoint: String,
        /// Why the output did not parse.
        error: String,
        /// The model's raw output.
        raw: String,
    },
    /// `--max-cost` reached: the call was not made. Everything done so far is cached, so a rerun
    /// with a higher limit resumes where this one stopped.
    #[error(
        "budget stop: spent ${spent:.4} of max ${limit:.4}; the call (estimated ${next:.4}) was not made; rerun with a higher --max-cost to resume (finished calls are cached)"
    )]
    Budget {
        /// USD spent so far.
        spent: f64,
        /// The `--max-cost` limit in USD.
        limit: f64,
        /// The refused call's estimated USD.
        next: f64,
    },
    /// `--dry-run`: the call was counted in the plan, not made.
    #[error("dry run: call planned, not made")]
    DryRun,
    /// The call's start deadline ([`crate::ChatRequest::start_by`], a time budget's) passed
    /// while it waited for a rate limit or a server slot: it was not sent.
    #[error(
        "not started: the time budget's deadline passed while the call waited for a server slot"
    )]
    NotStarted,
    /// `--batch`: the call was queued for the Batch API; run [`crate::Llm::run_batches`], then
    /// ask again (the answer then comes from the cache).
    #[error("queued for the Batch API: call run_batches(), then ask again")]
    Batched,
    /// The response cache could not be read or written.
    #[error("llm cache {path}: {message}")]
    Cache {
        /// The cache file.
        path: PathBuf,
        /// The error.
        message: String,
    },
    /// A prompt template failed to load or render.
    #[error("prompt `{name}`: {message}")]
    Prompt {
        /// The prompt's name.
        name: String,
        /// What failed.
        message: String,
    },
    /// A feature that is not available in this build or configuration.
    #[error("not available: {0}")]
    Unsupported(String),
}

impl LlmError {
    /// True for errors the user fixes by changing config or installing something.
    pub fn is_user_error(&self) -> bool {
        matches!(
            self,
            LlmError::Config(_) | LlmError::Local { .. } | LlmError::Prompt { .. }
        ) || matches!(self, LlmError::LocalServer(e) if e.is_user_error())
    }

    /// True when this is the deliberate `--max-cost` stop (resumable).
    pub fn is_budget_stop(&self) -> bool {
        matches!(self, LlmError::Budget { .. })
    }

    pub(crate) fn cache(path: impl Into<PathBuf>, e: impl std::fmt::Display) -> Self {
        LlmError::Cache {
            path: path.into(),
            message: e.to_string(),
        }
    }
}

/// A result whose error is an [`LlmError`] unless said otherwise.
pub type Result<T, E = LlmError> = std::result::Result<T, E>;
