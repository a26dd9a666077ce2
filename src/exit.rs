//! The one table of exit statuses every command uses, and how an error becomes one:
//!
//! | status | meaning |
//! |---|---|
//! | 0 | the command did its job (`mtr validate`: the benchmark is valid) |
//! | 1 | internal error: a bug, a failed disk, an endpoint that failed every call |
//! | 2 | user input: a bad flag, file, option or configuration (fix it and rerun) |
//! | 3 | `--export-batch`: the calls were written to a Batch file, none made (run it, `mtr cache import` the answers, rerun) |
//! | 130 | interrupted (Ctrl-C, SIGTERM); a rerun resumes |
//!
//! There is one way from an error to a status: every library's error type says whether it is
//! the user's (`is_user_error`), and [`status_of`] asks each error of the chain, so a command
//! passes library errors on with `?` and converts nothing. A command that must end with a given
//! status whatever the error chain says (an audit whose endpoint failed every call) returns a
//! [`Failed`].

use std::fmt;
use std::process::ExitCode;

/// An exit status of the table above.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Ok,
    Internal,
    Input,
    /// The command wrote its calls to a Batch file instead of making them.
    Exported,
    Interrupted,
}

impl Status {
    pub fn code(self) -> u8 {
        match self {
            Status::Ok => 0,
            Status::Internal => 1,
            Status::Input => 2,
            Status::Exported => 3,
            Status::Interrupted => 130,
        }
    }
}

impl From<Status> for ExitCode {
    fn from(s: Status) -> ExitCode {
        ExitCode::from(s.code())
    }
}

/// An error that ends the command with `status`, whatever else its chain holds.
#[derive(Debug)]
pub struct Failed {
    pub status: Status,
    pub message: String,
}

impl Failed {
    /// An internal failure (exit 1), e.g. an endpoint that answered no call (for `mtr audit`
    /// and `mtr synth`, whose judges or agents can fail every call).
    pub fn internal(message: impl Into<String>) -> anyhow::Error {
        anyhow::Error::new(Failed {
            status: Status::Internal,
            message: message.into(),
        })
    }
}

impl fmt::Display for Failed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Failed {}

/// The status an error ends the process with: a [`Failed`] anywhere in the chain decides;
/// else a user error anywhere in the chain is 2, and so is a file the user named that does not
/// exist or may not be read or written; anything else is 1.
pub fn status_of(e: &anyhow::Error) -> Status {
    if let Some(f) = e.chain().find_map(|c| c.downcast_ref::<Failed>()) {
        return f.status;
    }
    if e.chain().any(is_user_error) {
        Status::Input
    } else {
        Status::Internal
    }
}

/// What a library error of type `E` says about whose it is, when `c` is one.
fn says<E: std::error::Error + 'static>(
    c: &(dyn std::error::Error + 'static),
    is_user_error: fn(&E) -> bool,
) -> Option<bool> {
    c.downcast_ref::<E>().map(is_user_error)
}

/// Whether one error of a chain is the user's: a library error that says so, a bad input, or
/// a file the user named that does not exist or may not be read or written.
fn is_user_error(c: &(dyn std::error::Error + 'static)) -> bool {
    let said = says(c, mtr_core::Error::is_user_error)
        .or_else(|| says(c, mtr_bench::BenchError::is_user_error))
        .or_else(|| says(c, mtr_retrieve::Error::is_user_error))
        .or_else(|| says(c, mtr_metrics::MetricsError::is_user_error))
        .or_else(|| says(c, mtr_audit::AuditError::is_user_error))
        .or_else(|| says(c, mtr_pipeline::Error::is_user_error))
        .or_else(|| says(c, mtr_llm::LlmError::is_user_error))
        .or_else(|| says(c, mtr_local::LocalError::is_user_error));
    if let Some(user) = said {
        return user;
    }
    c.downcast_ref::<mtr_core::InputError>().is_some()
        || c.downcast_ref::<std::io::Error>().is_some_and(|e| {
            matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_follow_the_table() {
        let user = anyhow::Error::new(mtr_core::Error::from(mtr_core::InputError::new(
            "x.tsv", "bad",
        )))
        .context("reading x.tsv");
        assert_eq!(status_of(&user), Status::Input);
        assert_eq!(status_of(&anyhow::anyhow!("boom")), Status::Internal);
        let missing = anyhow::Error::new(std::io::Error::from(std::io::ErrorKind::NotFound))
            .context("reading run.trec");
        assert_eq!(status_of(&missing), Status::Input);
        let forced = Failed::internal("every call failed").context("auditing");
        assert_eq!(status_of(&forced), Status::Internal);
        assert_eq!(Status::Interrupted.code(), 130);
    }

    #[test]
    fn every_crate_error_says_whose_it_is() {
        let input = || mtr_core::Error::from(mtr_core::InputError::new("runs.trec", "bad"));
        let cases: Vec<(anyhow::Error, Status)> = vec![
            (
                anyhow::Error::new(mtr_bench::BenchError::Core(input())).context("bench"),
                Status::Input,
            ),
            (
                anyhow::Error::new(mtr_bench::BenchError::Internal("x".into())),
                Status::Internal,
            ),
            (
                anyhow::Error::new(mtr_retrieve::Error::Core(input())),
                Status::Input,
            ),
            (
                anyhow::Error::new(mtr_retrieve::Error::Internal("x".into())),
                Status::Internal,
            ),
            (
                anyhow::Error::new(mtr_metrics::MetricsError::invalid("unknown measure")),
                Status::Input,
            ),
            (
                anyhow::Error::new(mtr_audit::AuditError::Config("bad".into())),
                Status::Input,
            ),
            (
                anyhow::Error::new(mtr_audit::AuditError::Llm(mtr_llm::LlmError::Unsupported(
                    "down".into(),
                ))),
                Status::Internal,
            ),
            (
                anyhow::Error::new(mtr_audit::AuditError::Llm(mtr_llm::LlmError::Local {
                    message: "not installed".into(),
                    hint: "mtr local install".into(),
                })),
                Status::Input,
            ),
            (
                anyhow::Error::new(mtr_audit::AuditError::Retrieval(mtr_retrieve::Error::Core(
                    input(),
                ))),
                Status::Input,
            ),
            (
                anyhow::Error::new(mtr_pipeline::Error::param("turns", "0")),
                Status::Input,
            ),
            (
                anyhow::Error::new(mtr_llm::LlmError::Config("no endpoint".into())),
                Status::Input,
            ),
            (
                anyhow::Error::new(mtr_llm::LlmError::DryRun),
                Status::Internal,
            ),
        ];
        for (e, want) in cases {
            assert_eq!(status_of(&e), want, "{e:#}");
        }
    }
}
