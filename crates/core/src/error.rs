//! Errors of the data layer. User errors (bad input) carry the file, line and field that are
//! wrong and a hint for fixing them; they are kept apart from I/O and internal errors so the
//! binary can tell the user "your file is wrong here" rather than "mtr failed".

use std::fmt;
use std::path::{Path, PathBuf};

/// A problem with user-supplied input: which file, which line (1-based), which field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    /// The file at fault.
    pub file: PathBuf,
    /// Its 1-based line (or record) number, when known.
    pub line: Option<u64>,
    /// The field at fault, when known.
    pub field: Option<String>,
    /// What is wrong.
    pub message: String,
    /// How to fix it, when mtr can tell.
    pub hint: Option<String>,
}

impl InputError {
    /// An error in `file` saying `message`.
    pub fn new(file: impl AsRef<Path>, message: impl Into<String>) -> Self {
        Self {
            file: file.as_ref().to_path_buf(),
            line: None,
            field: None,
            message: message.into(),
            hint: None,
        }
    }
    /// Names the 1-based line.
    pub fn line(mut self, line: u64) -> Self {
        self.line = Some(line);
        self
    }
    /// Names the field.
    pub fn field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }
    /// Adds a hint on how to fix it.
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(field) = &self.field {
            write!(f, ": field `{field}`")?;
        }
        write!(f, ": {}", self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, " (hint: {hint})")?;
        }
        Ok(())
    }
}

impl std::error::Error for InputError {}

#[derive(Debug, thiserror::Error)]
/// Everything mtr-core can fail with; [`Error::is_user_error`] tells bad input (exit 2) from the rest (exit 1).
pub enum Error {
    /// The user's input is wrong; fixing the named file fixes the error.
    #[error("{0}")]
    Input(Box<InputError>),
    /// Several input errors found in one pass (validation reports them all).
    #[error("{} input errors, first: {}", .0.len(), .0.first().map(|e| e.to_string()).unwrap_or_default())]
    Inputs(Vec<InputError>),
    #[error("{path}: {source}")]
    /// A file could not be read or written.
    Io {
        /// The file.
        path: PathBuf,
        #[source]
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A bug or broken invariant inside mtr, never the user's fault.
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    /// An I/O error on `path`.
    pub fn io(path: impl AsRef<Path>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.as_ref().to_path_buf(),
            source,
        }
    }
    /// True for bad input that the user fixes (exit status 2).
    pub fn is_user_error(&self) -> bool {
        matches!(self, Error::Input(_) | Error::Inputs(_))
    }
}

impl From<InputError> for Error {
    fn from(e: InputError) -> Self {
        Error::Input(Box::new(e))
    }
}

/// mtr-core's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;
