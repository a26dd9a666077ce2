//! The one error type of the local servers: everything here is something the user fixes
//! (install the environment, free a port, fix a permission, a keep-alive value), with a hint
//! that says how; `mtr-llm` passes it on unchanged.

/// Errors of the local model servers.
#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    /// The embedded local default is not installed or could not start; `hint` says the fix.
    #[error("local model server: {message} (fix: {hint})")]
    Server { message: String, hint: String },
}

impl LocalError {
    /// True for errors the user fixes by installing or configuring something (all of them).
    pub fn is_user_error(&self) -> bool {
        matches!(self, LocalError::Server { .. })
    }
}

pub type Result<T, E = LocalError> = std::result::Result<T, E>;
