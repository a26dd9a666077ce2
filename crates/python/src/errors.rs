//! Errors as the Python package's exceptions (`python/mtr/_errors.py`): the user's input
//! becomes `mtr.InputError` (a `ValueError`) carrying file, line, field and hint as the CLI
//! prints them; everything else is `mtr.Error`. The split is the CLI's exit-2/exit-1 split
//! (`is_user_error`).

use mtr_core::InputError;
use mtr_metrics::MetricsError;
use pyo3::prelude::*;

/// Why an evaluation did not give numbers, before it becomes a Python exception.
#[derive(Debug)]
pub enum Failure {
    Input(Box<InputError>),
    /// A bad option or measure, named without a file (the CLI's "command line").
    Argument(String),
    Internal(String),
}

impl From<MetricsError> for Failure {
    fn from(e: MetricsError) -> Self {
        let user = e.is_user_error();
        match e {
            MetricsError::Input(ie) => Failure::Input(ie),
            MetricsError::InvalidArgument(m) => Failure::Argument(m),
            // a file the caller named that is missing or unreadable is theirs to fix, as the
            // CLI's exit 2 says
            MetricsError::Io { path, source }
                if matches!(
                    source.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied
                ) =>
            {
                Failure::Input(Box::new(InputError::new(&path, source.to_string())))
            }
            other if user => Failure::Argument(other.to_string()),
            other => Failure::Internal(other.to_string()),
        }
    }
}

impl From<InputError> for Failure {
    fn from(e: InputError) -> Self {
        Failure::Input(Box::new(e))
    }
}

impl Failure {
    /// The exception of the Python package for this failure.
    pub fn into_py(self, py: Python<'_>) -> PyErr {
        match make_exception(py, self) {
            Ok(e) | Err(e) => e,
        }
    }
}

fn make_exception(py: Python<'_>, f: Failure) -> PyResult<PyErr> {
    let errors = py.import("mtr._errors")?;
    let exc = match f {
        Failure::Input(ie) => {
            let file = ie.file.to_string_lossy().into_owned();
            errors.getattr("InputError")?.call1((
                ie.to_string(),
                file,
                ie.line,
                ie.field.clone(),
                ie.hint.clone(),
            ))?
        }
        Failure::Argument(m) => errors.getattr("InputError")?.call1((m,))?,
        Failure::Internal(m) => errors.getattr("Error")?.call1((m,))?,
    };
    Ok(PyErr::from_value(exc))
}
