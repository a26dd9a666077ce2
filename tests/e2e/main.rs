//! End-to-end tests: drive the real `mtr` binary. One integration-test binary for all commands.

mod cli;
