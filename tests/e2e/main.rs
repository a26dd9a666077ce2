//! End-to-end tests: drive the real `mtr` binary. One integration-test binary for all commands.

// Test code: a failed unwrap is a failed test with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod audit;
mod audit_budget;
mod batch_file;
mod bench;
mod board;
mod cli;
mod config;
mod corpus_read;
mod data;
mod dirs;
mod errors;
mod eval;
mod judge;
mod labels;
mod llm;
mod publish;
mod realdata;
mod realism;
mod reliability;
mod resume;
mod retrieve;
mod review;
mod review_browser;
mod reviewed;
mod secrets;
mod setup_script;
mod shell;
mod synth;
mod synth_budget;
mod synth_corpus;
mod synth_documents;
mod synth_kinds;
mod synth_voices;
