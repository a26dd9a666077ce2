//! The metrics crate's one error type. Bad user input (a malformed run line, a duplicate
//! document, a query missing from the run) is `Input`, carrying file, line and field, and turns
//! into `mtr_core::Error::Input` so the binary exits with the user-error code. Bad arguments
//! from calling code (an unknown measure, an empty sample) are `InvalidArgument`.

use std::path::{Path, PathBuf};

use mtr_core::InputError;

/// What mtr-metrics can fail with: the user's input, a bad argument, I/O, or the data layer.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    /// The user's input is wrong; fixing the named file fixes the error.
    #[error("{0}")]
    Input(Box<InputError>),
    /// A measure name, option or statistic argument is not valid.
    #[error("{0}")]
    InvalidArgument(String),
    /// A file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// An error of the data layer that is neither an input's nor a file's (a broken
    /// invariant): it keeps its kind, never becomes the user's.
    #[error(transparent)]
    Core(mtr_core::Error),
}

impl MetricsError {
    /// An I/O error on `path`.
    pub fn io(path: impl AsRef<Path>, source: std::io::Error) -> Self {
        MetricsError::Io {
            path: path.as_ref().to_path_buf(),
            source,
        }
    }
    /// A bad argument (measure name, option, statistic input).
    pub fn invalid(message: impl Into<String>) -> Self {
        MetricsError::InvalidArgument(message.into())
    }
    /// True when the user can fix this by fixing an input file or an option.
    pub fn is_user_error(&self) -> bool {
        match self {
            MetricsError::Input(_) | MetricsError::InvalidArgument(_) => true,
            MetricsError::Io { .. } => false,
            MetricsError::Core(e) => e.is_user_error(),
        }
    }
}

impl From<InputError> for MetricsError {
    fn from(e: InputError) -> Self {
        MetricsError::Input(Box::new(e))
    }
}

impl From<MetricsError> for mtr_core::Error {
    fn from(e: MetricsError) -> Self {
        match e {
            MetricsError::Input(ie) => mtr_core::Error::Input(ie),
            MetricsError::InvalidArgument(m) => {
                mtr_core::Error::Input(Box::new(InputError::new("command line", m)))
            }
            MetricsError::Io { path, source } => mtr_core::Error::Io { path, source },
            MetricsError::Core(e) => e,
        }
    }
}

impl From<mtr_core::Error> for MetricsError {
    fn from(e: mtr_core::Error) -> Self {
        match e {
            mtr_core::Error::Input(ie) => MetricsError::Input(ie),
            mtr_core::Error::Inputs(mut v) if !v.is_empty() => {
                MetricsError::Input(Box::new(v.remove(0)))
            }
            mtr_core::Error::Io { path, source } => MetricsError::Io { path, source },
            other => MetricsError::Core(other),
        }
    }
}

/// mtr-metrics' result.
pub type Result<T, E = MetricsError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_data_layer_error_keeps_its_kind() {
        let internal = MetricsError::from(mtr_core::Error::Internal("a broken invariant".into()));
        assert!(!internal.is_user_error(), "{internal}");
        assert!(!mtr_core::Error::from(internal).is_user_error());
        let input = MetricsError::from(mtr_core::Error::from(InputError::new("run", "bad line")));
        assert!(input.is_user_error(), "{input}");
    }
}
