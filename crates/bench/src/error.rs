//! Errors of bench. Bad input (a run for another benchmark, unknown document ids, an empty run,
//! an unknown baseline) is an [`mtr_core::Error::Input`] naming the file or option at fault, so
//! the binary exits with the user-error code; failures of the retrieval layer and broken
//! invariants are kept apart.

use std::path::Path;

use mtr_core::InputError;

/// Errors of scoring, results and leaderboards.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// Bad input or an I/O failure from the data layer.
    #[error(transparent)]
    Core(#[from] mtr_core::Error),
    /// The retrieval layer failed while producing a run.
    #[cfg(feature = "retrieve")]
    #[error("retriever `{system}`: {source}")]
    Retrieve {
        /// The system whose run failed.
        system: String,
        /// The retrieval layer's error.
        #[source]
        source: mtr_retrieve::Error,
    },
    /// A measure that failed for a reason that is not the user's.
    #[error(transparent)]
    Metrics(#[from] mtr_metrics::MetricsError),
    /// An output (`bench.json`, `leaderboard.json`, ...) that cannot be serialised.
    #[error("{file}: {source}")]
    Json {
        /// The output it was written for.
        file: &'static str,
        /// The serialiser's error.
        #[source]
        source: serde_json::Error,
    },
    /// A bug or broken invariant inside bench.
    #[error("internal error: {0}")]
    Internal(String),
}

impl BenchError {
    /// A user error about a command-line option (the option stands where a file would).
    pub fn option(option: &str, message: impl Into<String>) -> Self {
        BenchError::Core(InputError::new(Path::new(option), message).into())
    }

    /// A user error about an input file.
    pub fn input(e: InputError) -> Self {
        BenchError::Core(e.into())
    }

    /// True when fixing the user's input (or command line) fixes the error.
    pub fn is_user_error(&self) -> bool {
        match self {
            BenchError::Core(e) => e.is_user_error(),
            #[cfg(feature = "retrieve")]
            BenchError::Retrieve { source, .. } => source.is_user_error(),
            BenchError::Metrics(e) => e.is_user_error(),
            BenchError::Json { .. } | BenchError::Internal(_) => false,
        }
    }
}

/// The result of bench's functions.
pub type Result<T, E = BenchError> = std::result::Result<T, E>;

impl BenchError {
    /// A serialiser's error for output `file`.
    pub(crate) fn json(file: &'static str) -> impl FnOnce(serde_json::Error) -> Self {
        move |source| BenchError::Json { file, source }
    }
}
