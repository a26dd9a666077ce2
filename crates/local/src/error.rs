//! The one error type of the local servers, one variant per way they fail: a file of theirs
//! ([`LocalError::Io`]), a missing installation, a program that cannot start, no free port, a
//! server that does not come up or answers what mtr cannot read, a setting with a value mtr
//! does not accept, a broken `speed.json`. Each carries the hint that says how to fix it;
//! `mtr-llm` passes it on unchanged. All but [`LocalError::Protocol`] and
//! [`LocalError::Internal`] are the user's to fix (exit 2).

use std::path::PathBuf;

/// The hint of a file of the local servers that cannot be read or written.
const STATE_HINT: &str = "check permissions of the state folder (`mtr local paths`)";

/// Errors of the local model servers.
#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    /// A file or folder of the local servers cannot be created, opened or written.
    #[error("local model server: {action} {}: {source} (fix: {STATE_HINT})", path.display())]
    Io {
        /// What failed (`cannot create`, `cannot write`).
        action: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The embedded environment or a model is not installed.
    #[error("local model server: {message} (fix: {hint})")]
    NotInstalled {
        /// What is missing.
        message: String,
        /// How to install it.
        hint: String,
    },
    /// A program (bash, a server) cannot be started.
    #[error("local model server: cannot {what}: {source} (fix: {hint})")]
    Spawn {
        /// What was started (`run bash`, ``start `qwen` ``).
        what: String,
        /// Why it could not start.
        source: std::io::Error,
        /// How to fix it.
        hint: String,
    },
    /// No free port on the loopback interface.
    #[error(
        "local model server: cannot find a free port on 127.0.0.1: {source} (fix: check the loopback interface)"
    )]
    Port {
        /// Why the port could not be had.
        source: std::io::Error,
    },
    /// A server does not come up (it exits, is not healthy in time, another process's start
    /// never ends).
    #[error("local model server: {message} (fix: {hint})")]
    Start {
        /// What happened, with the last lines of its log where there is one.
        message: String,
        /// Where to look.
        hint: String,
    },
    /// A running server fails a request or answers what mtr cannot read.
    #[error("local model server: {message} (fix: {hint})")]
    Protocol {
        /// The request and what went wrong.
        message: String,
        /// Where to look.
        hint: String,
    },
    /// A setting or name (keep-alive, `MTR_LOCAL_MODEL`) has a value mtr does not accept.
    #[error("local model server: {message} (fix: {hint})")]
    Setting {
        /// The value and why it is refused.
        message: String,
        /// The values accepted.
        hint: String,
    },
    /// The measured speeds (`speed.json`) cannot be read, parsed or written.
    #[error(
        "local model server: {action} {}: {message} (fix: run `mtr local speed` to measure the local models again)",
        path.display()
    )]
    SpeedFile {
        /// What failed (`cannot read`, `cannot parse`, `cannot write`).
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The underlying error.
        message: String,
    },
    /// Something mtr itself gets wrong (an HTTP client that cannot be built).
    #[error("local model server: {0}")]
    Internal(String),
}

impl LocalError {
    /// A file of the local servers that cannot be handled.
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
        source: std::io::Error,
    ) -> Self {
        LocalError::Io {
            action,
            path: path.into(),
            source,
        }
    }

    /// True for errors the user fixes by installing or configuring something.
    pub fn is_user_error(&self) -> bool {
        !matches!(self, LocalError::Protocol { .. } | LocalError::Internal(_))
    }
}

/// The result of the local servers' functions.
pub type Result<T, E = LocalError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_io_error_names_its_file_and_keeps_its_source() {
        let e = LocalError::io(
            "cannot create",
            "/state/local",
            std::io::Error::from(std::io::ErrorKind::PermissionDenied),
        );
        assert!(e.is_user_error());
        assert_eq!(
            e.to_string(),
            "local model server: cannot create /state/local: permission denied (fix: check permissions of the state folder (`mtr local paths`))"
        );
        assert!(std::error::Error::source(&e).is_some());
    }

    #[test]
    fn a_server_answering_garbage_is_not_the_users_to_fix() {
        let e = LocalError::Protocol {
            message: "speed run answer: EOF".into(),
            hint: "see qwen.log".into(),
        };
        assert!(!e.is_user_error());
        assert!(!LocalError::Internal("HTTP client".into()).is_user_error());
        let port = LocalError::Port {
            source: std::io::Error::from(std::io::ErrorKind::AddrInUse),
        };
        assert!(port.is_user_error());
        assert!(port.to_string().contains("check the loopback interface"));
    }
}
