//! `mtr`: audit, synthesize and benchmark conversational retrieval benchmarks.
//!
//! The binary is thin: the command line's parsing, logging, progress display and dispatch to
//! the library crates live in the `mtr_cli` library (`src/lib.rs`), which the Python
//! extension's `mtr` command runs too.

use std::process::ExitCode;

/// mimalloc instead of glibc malloc: an audit spends a seventh of its CPU in the allocator
/// (serde_json values, HTTP buffers), and the audit throughput benchmark, which uses the same
/// allocator, goes from 0.90 to 0.92 of the ideal request rate with it.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    ExitCode::from(mtr_cli::run(std::env::args_os(), mtr_cli::Host::Process))
}
