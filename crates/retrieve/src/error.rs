//! The crate's one error type. Bad user input (an empty corpus, duplicate ids, an index built
//! with other settings) travels as [`mtr_core::Error::Input`] so the binary exits with the user
//! error code; index, embedder and internal failures are kept apart from it.

use std::path::{Path, PathBuf};

use mtr_core::InputError;

/// Errors of indexing and retrieval.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad input or I/O, reported by the data layer (file, line, field, hint).
    #[error(transparent)]
    Core(#[from] mtr_core::Error),
    /// The search engine failed on an index folder (corrupt files, disk full, ...).
    #[error("index {}: {message}", path.display())]
    Index {
        /// The index folder.
        path: PathBuf,
        /// The search engine's error.
        message: String,
    },
    /// The embedding model (a server or an in-process model) failed.
    #[error("embedder {model}: {message}")]
    Embed {
        /// The embedding model's id.
        model: String,
        /// What failed.
        message: String,
    },
    /// The LLM layer refused the embedder's call for a reason the user can fix (its
    /// configuration, a local model's set-up).
    #[error("embedder: {0}")]
    Llm(#[from] mtr_llm::LlmError),
    /// Vectors of different dimensions meet (an embedder answered vectors of another size).
    #[error("vectors: {0}")]
    Dimension(String),
    /// The input is beyond what an index holds (more passages than its 32-bit ordinals).
    #[error("{0} (fix: split the corpus)")]
    Capacity(String),
    /// The host cannot read the index files (a big-endian machine).
    #[error("unsupported: {0}")]
    Unsupported(&'static str),
    /// A bug or broken invariant inside mtr-retrieve.
    #[error("internal error: {0}")]
    Internal(String),
}

/// The result of the crate's functions.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// True when fixing the user's input (or command line) fixes the error.
    pub fn is_user_error(&self) -> bool {
        match self {
            Error::Core(e) => e.is_user_error(),
            Error::Llm(e) => e.is_user_error(),
            Error::Capacity(_) => true,
            _ => false,
        }
    }

    pub(crate) fn index(path: impl AsRef<Path>, e: impl std::fmt::Display) -> Self {
        Error::Index {
            path: path.as_ref().to_path_buf(),
            message: e.to_string(),
        }
    }

    pub(crate) fn io(path: impl AsRef<Path>, e: std::io::Error) -> Self {
        Error::Core(mtr_core::Error::io(path, e))
    }

    pub(crate) fn embed(model: &str, e: impl std::fmt::Display) -> Self {
        Error::Embed {
            model: model.to_string(),
            message: e.to_string(),
        }
    }
}

impl From<InputError> for Error {
    fn from(e: InputError) -> Self {
        Error::Core(e.into())
    }
}

impl From<Error> for mtr_core::Error {
    fn from(e: Error) -> Self {
        match e {
            Error::Core(e) => e,
            other => mtr_core::Error::Internal(other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_corpus_beyond_an_index_is_the_users_to_split_and_a_broken_invariant_is_not() {
        let full = Error::Capacity("more than 4,294,967,295 passages in one index".into());
        assert!(full.is_user_error());
        assert!(
            full.to_string().ends_with("(fix: split the corpus)"),
            "{full}"
        );
        assert!(!Error::Dimension("vector 1 has dimension 3, expected 2".into()).is_user_error());
        assert!(!Error::Unsupported("big-endian").is_user_error());
    }
}
