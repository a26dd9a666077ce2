//! The audit's error type. Bad user input (a wrong flag value, a malformed human-label file, a
//! benchmark that does not load) stays an [`mtr_core::Error::Input`] so the binary exits with
//! the user-error code; everything else (LLM provider, retrieval, internal) is its own variant.

use std::path::PathBuf;

/// Errors of the audit crate.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// Data-layer errors, including user input errors that name file, line and field.
    #[error(transparent)]
    Core(#[from] mtr_core::Error),
    /// A configuration value that cannot work (e.g. no judges, zero trials).
    #[error("audit configuration: {0}")]
    Config(String),
    /// A prompt template failed to load or render.
    #[error("prompt template `{name}`: {message}")]
    Prompt {
        /// The template's name.
        name: String,
        /// What went wrong.
        message: String,
    },
    /// The LLM layer failed in a way that is not a per-item judgement failure (a local model
    /// that is not installed is the user's to fix, and reads as in every command).
    #[error(transparent)]
    Llm(#[from] mtr_llm::LlmError),
    /// The retrieval layer failed (index build or search).
    #[error("retrieval: {0}")]
    Retrieval(#[from] mtr_retrieve::Error),
    /// One negative retriever's search failed.
    #[error("retrieval: {retriever}: {source}")]
    Search {
        /// The retriever's name.
        retriever: String,
        /// What it said.
        source: mtr_retrieve::Error,
    },
    /// A statistic could not be computed.
    #[error("statistics: {0}")]
    Stats(String),
    /// An output file could not be written or read back.
    #[error("{path}: {message}")]
    Output {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// A bug or broken invariant.
    #[error("internal error: {0}")]
    Internal(String),
}

impl AuditError {
    /// True when fixing the user's input (files, flags, config) fixes the error.
    pub fn is_user_error(&self) -> bool {
        match self {
            AuditError::Core(e) => e.is_user_error(),
            AuditError::Config(_) => true,
            AuditError::Llm(e) => e.is_user_error(),
            AuditError::Retrieval(e) | AuditError::Search { source: e, .. } => e.is_user_error(),
            _ => false,
        }
    }
}

/// The audit's result type.
pub type Result<T, E = AuditError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lower_crates_user_error_stays_the_users() {
        let local = mtr_llm::LlmError::Local {
            message: "not installed".into(),
            hint: "mtr local install".into(),
        };
        assert!(AuditError::from(local).is_user_error());
        assert!(!AuditError::from(mtr_llm::LlmError::DryRun).is_user_error());
        let input = mtr_core::Error::from(mtr_core::InputError::new("index", "bad"));
        assert!(AuditError::from(mtr_retrieve::Error::Core(input)).is_user_error());
        let search = AuditError::Search {
            retriever: "bm25".into(),
            source: mtr_retrieve::Error::Internal("x".into()),
        };
        assert!(!search.is_user_error());
    }
}
