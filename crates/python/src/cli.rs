//! The `mtr` command inside Python: the console script (`mtr._cli:main`) and
//! `mtr.run(..., in_process=True)` hand their argument list to the same entry point as the
//! binary, with the GIL released for the command's whole run.

use pyo3::prelude::*;

/// Runs one `mtr` command line (`argv[0]` is the program name) and returns its exit status.
/// `embedded=False` is the console script's own process (SIGPIPE ends it quietly, like the
/// binary); `embedded=True` leaves the host process's settings alone.
#[pyfunction]
#[pyo3(signature = (argv, embedded))]
pub fn run_cli(py: Python<'_>, argv: Vec<String>, embedded: bool) -> u8 {
    let host = if embedded {
        mtr_cli::Host::Embedded
    } else {
        mtr_cli::Host::Process
    };
    py.detach(|| {
        let code = mtr_cli::run(argv, host);
        // the binary's stdout is flushed when its main returns; here Python goes on
        let _ = std::io::Write::flush(&mut std::io::stdout());
        code
    })
}
