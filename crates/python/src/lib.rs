//! `mtr._mtr`, the compiled half of the `mtr` Python package (`python/mtr`): evaluation with
//! `mtr eval`'s own functions from paths, column arrays or dicts ([`evaluate`]), and the
//! command line run in this process ([`cli`]). The Python half picks the input form, names the
//! flags and builds DataFrames; everything that decides a number happens here or in
//! mtr-metrics.

mod cli;
mod columns;
mod dicts;
mod errors;
mod evaluate;
mod options;
mod utf8;

use pyo3::prelude::*;

/// The allocator of the `mtr` binary, so that the command line and the evaluation allocate
/// alike in the wheel and in the binary (Rust allocations only; Python keeps its own).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[pymodule]
fn _mtr(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(evaluate::evaluate, m)?)?;
    m.add_function(wrap_pyfunction!(cli::run_cli, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
