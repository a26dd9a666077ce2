//! End-to-end tests: drive the real `mtr` binary. One integration-test binary for all commands.

mod audit;
mod bench;
mod cli;
mod data;
mod eval;
mod llm;
mod retrieve;
mod synth;
