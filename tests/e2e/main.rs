//! End-to-end tests: drive the real `mtr` binary. One integration-test binary for all commands.

mod cli;
mod data;
mod eval;
mod llm;
mod retrieve;
