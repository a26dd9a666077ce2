//! Errors of the pipeline. Bad user input (a corpus that cannot be read, a parameter out of
//! range) stays an `mtr_core::Error::Input` inside [`Error::Core`] so the binary can tell the
//! user which file or option to fix; provider and internal failures are kept apart.

use std::path::PathBuf;

/// What can go wrong in a synthesis.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Data-layer error: bad input (file, line, field) or I/O.
    #[error(transparent)]
    Core(#[from] mtr_core::Error),
    /// A synthesis parameter is invalid (user error).
    #[error("invalid synthesis parameter `{name}`: {message}")]
    Param {
        /// The setting, dotted under `[synth]`.
        name: String,
        /// What is wrong with it.
        message: String,
    },
    /// A work-directory artefact belongs to another run (different corpus, parameters or
    /// prompts) and cannot be resumed (user error: use another work dir or `--fresh`).
    #[error("{path}: {message}")]
    Stale {
        /// The artefact.
        path: PathBuf,
        /// Whose run it belongs to.
        message: String,
    },
    /// Retrieval layer failure (index build, search).
    #[error("retrieval: {0}")]
    Retrieve(#[from] mtr_retrieve::Error),
    /// LLM layer failure after retries (provider down, local model missing, ...). The
    /// `--max-cost` stop is `LlmError::Budget` here ([`Error::is_budget_stop`]).
    #[error(transparent)]
    Llm(#[from] mtr_llm::LlmError),
    /// The embedder answered with unusable vectors.
    #[error("embeddings: {0}")]
    Embedding(String),
    /// A broken invariant inside the pipeline: a bug.
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    /// An invalid setting `name` (dotted, under `[synth]`).
    pub fn param(name: impl Into<String>, message: impl Into<String>) -> Self {
        Error::Param {
            name: name.into(),
            message: message.into(),
        }
    }
    /// The deliberate `--max-cost` stop: write what is done, a rerun resumes.
    pub fn is_budget_stop(&self) -> bool {
        matches!(self, Error::Llm(e) if e.is_budget_stop())
    }
    /// A call the time budget's deadline kept from starting (`--time-budget`): the turn in
    /// flight is left unfinished, its finished calls cached for a rerun.
    pub(crate) fn is_deadline_stop(&self) -> bool {
        matches!(self, Error::Llm(mtr_llm::LlmError::NotStarted))
    }
    /// True when fixing the user's input or options fixes the error.
    pub fn is_user_error(&self) -> bool {
        match self {
            Error::Core(e) => e.is_user_error(),
            Error::Param { .. } | Error::Stale { .. } => true,
            Error::Llm(e) => e.is_user_error(),
            Error::Retrieve(e) => e.is_user_error(),
            _ => false,
        }
    }
}

impl From<Error> for mtr_core::Error {
    fn from(e: Error) -> Self {
        match e {
            Error::Core(c) => c,
            Error::Stale { path, message } => mtr_core::InputError::new(path, message).into(),
            Error::Retrieve(r) => r.into(),
            // a setting comes from the config file's [synth] section or from a flag of
            // `mtr synth`: the error names the setting and both places, never a file it may
            // not come from
            Error::Param { name, message } => mtr_core::InputError::new(SETTINGS, message)
                .field(name)
                .hint(SETTINGS_HINT)
                .into(),
            other => mtr_core::Error::Internal(other.to_string()),
        }
    }
}

/// The pipeline's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Where an invalid synthesis setting is reported (in place of a file name).
const SETTINGS: &str = "synthesis settings";

/// Where such a setting is set.
const SETTINGS_HINT: &str = "set under [synth] in the config file (--config, else mtr.toml) or by the mtr synth flag for it";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_invalid_setting_names_the_setting_and_where_it_is_set() {
        let e: mtr_core::Error = Error::param("dialogues", "must be at least 1").into();
        let text = e.to_string();
        assert_eq!(
            text,
            format!("{SETTINGS}: field `dialogues`: must be at least 1 (hint: {SETTINGS_HINT})")
        );
        assert!(!text.contains("<options>"), "{text}");
        assert!(e.is_user_error());
    }
}
