//! `mtr`'s command line as a library: the `mtr` binary (`src/main.rs`) and the Python
//! extension's `mtr` command and `mtr.run` (`crates/python`) run the same parsing, logging,
//! dispatch, Ctrl-C handling and exit statuses through [`run`].
//!
//! The modules stay private: the commands are reached through the command line only.

// Commands print their results to stdout; libraries never do (they log through tracing).
#![allow(clippy::print_stdout)]

mod cli;
mod cmd;
mod config;
mod environment;
mod exit;
mod progress;

use std::ffi::OsString;
use std::process::ExitCode;

use clap::FromArgMatches;

/// Where a command line runs, which decides what it may do to the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Host {
    /// A process of its own (the binary, the Python console script): SIGPIPE ends it quietly
    /// like any Unix tool, and the logger is installed once.
    Process,
    /// Inside a program that goes on after it (`mtr.run(..., in_process=True)` in a notebook):
    /// the process's SIGPIPE action is left alone, and a second run logs through the logger the
    /// first one installed.
    Embedded,
}

/// Runs one command line (`args[0]` is the program name) to its end and returns its exit
/// status (0/1/2/3/130, the table in `exit`). Ctrl-C and SIGTERM end the command with 130 and
/// the command's resume note on stderr.
pub fn run<I, T>(args: I, host: Host) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    if host == Host::Process {
        reset_sigpipe();
    }
    let cli = match parse_from(args) {
        Ok(cli) => cli,
        // help, version and usage errors, printed and coded as clap's `exit` would
        Err(e) => {
            let _ = e.print();
            return u8::try_from(e.exit_code()).unwrap_or(exit::Status::Input.code());
        }
    };
    if let Err(e) = progress::init_logging(&cli.global)
        && host == Host::Process
    {
        eprintln!("mtr: cannot set up logging: {e}");
        return exit::Status::Internal.code();
    }
    // the previous layout's files (all in ~/.cache/mtr) move to their folders, once
    match mtr_core::dirs::previous::move_from_env() {
        Ok(moved) => moved.notice().iter().for_each(|line| eprintln!("{line}")),
        Err(e) => eprintln!("mtr: warning: the previous layout's files were not all moved: {e}"),
    }
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mtr: cannot start the async runtime: {e}");
            return exit::Status::Internal.code();
        }
    };
    let interrupt_note = cli.command.interrupt_note();
    let outcome = runtime.block_on(async {
        tokio::select! {
            r = cmd::dispatch(cli) => Some(r),
            () = interrupted() => None,
        }
    });
    // the command lets go of the local servers it used: their idle time runs from now
    let left = mtr_local::keepalive::release_all();
    if let Some(line) = mtr_local::keepalive::notice(&left) {
        eprintln!("{line}");
    }
    match outcome {
        None => {
            // the command's future is dropped: calls in flight are cancelled, and the LLM cache
            // writes out every answer received when the runtime drops the last client
            eprintln!("mtr: interrupted; {interrupt_note}");
            exit::Status::Interrupted.code()
        }
        Some(Ok(code)) => code_of(code),
        Some(Err(e)) => {
            eprintln!("error: {e}");
            for cause in e.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            exit::status_of(&e).code()
        }
    }
}

/// Parses a command line with [`cli::command`], returning help, version and usage errors
/// instead of exiting (an embedded run must not end its host).
fn parse_from<I, T>(args: I) -> Result<cli::Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let mut cmd = cli::command();
    let mut matches = cmd.try_get_matches_from_mut(args)?;
    cli::Cli::from_arg_matches_mut(&mut matches).map_err(|e| e.format(&mut cmd))
}

/// The number behind a command's `ExitCode` (std keeps it opaque; every command builds its
/// code from a `u8`).
fn code_of(code: ExitCode) -> u8 {
    (0..=u8::MAX)
        .find(|c| ExitCode::from(*c) == code)
        .unwrap_or(exit::Status::Internal.code())
}

/// Resolves on Ctrl-C (SIGINT) or SIGTERM; never, where a handler cannot be installed.
async fn interrupted() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                () = ctrl_c => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    ctrl_c.await;
}

/// Restores the default SIGPIPE action so that `mtr stats DIR | head` ends quietly like any
/// Unix tool instead of panicking in `println!` on a closed pipe.
fn reset_sigpipe() {
    #[cfg(unix)]
    // SAFETY: called before the command starts any thread; SIG_DFL is always valid. (A host
    // process may have threads of its own; changing a signal's action is process-wide and
    // thread-safe.)
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_exit_code_maps_back_to_its_number() {
        for c in [0u8, 1, 2, 3, 130, 255] {
            assert_eq!(code_of(ExitCode::from(c)), c);
        }
    }

    #[test]
    fn an_embedded_run_reports_usage_errors_and_version_without_exiting() {
        assert_eq!(run(["mtr", "--no-such-flag"], Host::Embedded), 2);
        assert_eq!(run(["mtr", "--version"], Host::Embedded), 0);
        assert_eq!(run(["mtr", "eval"], Host::Embedded), 2);
    }
}
