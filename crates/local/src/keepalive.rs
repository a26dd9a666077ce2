//! Keep-alive of the local servers (ollama's `keep_alive` convention): a server that a
//! command starts on its own stops once no mtr command has used it for the keep-alive time
//! (default [`DEFAULT_KEEP_ALIVE`]; `[llm.local] keep_alive`, env `MTR_KEEP_ALIVE`; `0` stops
//! it as soon as the last command using it ends, `-1` keeps it until `mtr local stop`).
//! `mtr local start` keeps its servers until `mtr local stop`. Without a keep-alive a job's
//! model servers (about 5 GB for the main job's three) would outlive it unannounced.
//!
//! How: next to a server's state file (`NAME.json`) live
//! - `NAME.keep`: `PID SECONDS` while the server stops when idle (absent: kept until stopped);
//! - `NAME.users/PID`: one file per mtr process using the server now;
//! - `NAME.lease`: its modification time is when the last command stopped using it.
//!
//! A small detached watchdog ([`WATCHDOG`], POSIX sh) started with the server checks these
//! every second: when no user process is alive and the lease is older than the keep-alive,
//! it stops the server and removes its state file. It exits when the marker goes away or
//! names another process (`mtr local start` took the server over, or it was restarted).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use super::LocalServer;
use super::process::ProcessIdentity;
use crate::error::{LocalError, Result};

/// Idle time after which a server a command started on its own stops.
pub(crate) const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(300);

/// How long a local server stays up once no command uses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KeepAlive {
    /// Until `mtr local stop` (`mtr local start`, or `keep_alive = "-1"`).
    Forever,
    /// Stops after this idle time (`0`: when the last command using it ends).
    Idle(Duration),
    /// [`DEFAULT_KEEP_ALIVE`].
    #[default]
    Default,
}

impl KeepAlive {
    /// Parses `0`, `-1`, `30s`, `5m`, `1h` or a number of seconds.
    pub fn parse(s: &str) -> std::result::Result<Self, String> {
        let t = s.trim();
        if t.starts_with('-') {
            return Ok(Self::Forever);
        }
        let (num, unit) = match t.find(|c: char| !c.is_ascii_digit() && c != '.') {
            Some(i) => t.split_at(i),
            None => (t, "s"),
        };
        let n: f64 = num
            .parse()
            .map_err(|_| format!("keep_alive `{s}`: expected e.g. 0, 30s, 5m, 1h or -1"))?;
        let secs = match unit.trim() {
            "s" | "" => n,
            "m" => n * 60.0,
            "h" => n * 3600.0,
            u => return Err(format!("keep_alive `{s}`: unknown unit `{u}` (s, m, h)")),
        };
        Ok(Self::Idle(Duration::from_secs_f64(secs)))
    }

    /// From `[llm.local] keep_alive` (which env `MTR_KEEP_ALIVE` sets through the
    /// configuration's layers), else the default.
    pub fn configured(config: Option<&str>) -> Result<Self> {
        match config.filter(|s| !s.trim().is_empty()) {
            None => Ok(Self::Default),
            Some(s) => Self::parse(s).map_err(|message| LocalError::Setting {
                message,
                hint: "set [llm.local] keep_alive or MTR_KEEP_ALIVE to e.g. 5m, 0 or -1".into(),
            }),
        }
    }

    /// The idle time, None when kept until stopped.
    pub fn idle(self) -> Option<Duration> {
        match self {
            Self::Forever => None,
            Self::Idle(d) => Some(d),
            Self::Default => Some(DEFAULT_KEEP_ALIVE),
        }
    }
}

/// Stops a server once idle: see the module docs. Arguments: state dir, name, server pid, its
/// start time (field 22 of `/proc/PID/stat`) and executable. It signals the pid only while
/// all three still name the server (`same`), through the shell's `kill` builtin (the system
/// call; no `kill` program runs): a server that exited and whose pid was reused is not
/// mistaken for the new process.
pub(crate) const WATCHDOG: &str = r#"dir=$1; name=$2; pid=$3; start=$4; exe=$5
marker="$dir/$name.keep"; lease="$dir/$name.lease"; users="$dir/$name.users"
same() {
  [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$exe" ] || return 1
  s=$(cat "/proc/$pid/stat" 2>/dev/null) || return 1
  set -- ${s##*)}
  [ "$1" != Z ] && [ "${20}" = "$start" ]
}
while same; do
  read -r mpid keep < "$marker" || exit 0
  [ "$mpid" = "$pid" ] || exit 0
  busy=
  for u in "$users"/*; do
    [ -e "$u" ] || continue
    if kill -0 "${u##*/}" 2>/dev/null; then busy=1; else rm -f "$u"; fi
  done
  if [ -z "$busy" ]; then
    last=$(stat -c %Y "$lease" 2>/dev/null || echo 0)
    if [ $(( $(date +%s) - last )) -ge "${keep%.*}" ]; then
      rm -f "$marker" "$dir/$name.json"
      same && kill "$pid" 2>/dev/null
      i=0
      while same && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
      same && kill -9 "$pid" 2>/dev/null
      exit 0
    fi
  fi
  sleep 1
done
rm -f "$marker"
"#;

fn marker(s: &LocalServer) -> PathBuf {
    s.paths.state_dir().join(format!("{}.keep", s.name))
}
fn users(s: &LocalServer) -> PathBuf {
    s.paths.state_dir().join(format!("{}.users", s.name))
}
fn lease(s: &LocalServer) -> PathBuf {
    s.paths.state_dir().join(format!("{}.lease", s.name))
}

fn write_marker(s: &LocalServer, pid: u32, idle: Duration) {
    let text = format!("{pid} {}\n", idle.as_secs());
    if let Err(e) = mtr_core::atomic::write_atomic(marker(s), text.as_bytes()) {
        tracing::warn!(server = %s.name, "cannot write the keep-alive marker: {e}");
    }
}

/// Called when this process has just started `s` (pid `pid`): unless it is kept until
/// stopped, a watchdog stops it once idle.
pub(super) fn started(s: &LocalServer, pid: u32, identity: Option<&ProcessIdentity>) {
    // this process uses it before the watchdog first looks (else it may find it idle)
    add_user(s);
    let _ = std::fs::write(lease(s), "");
    let Some(idle) = s.keep_alive.idle() else {
        let _ = std::fs::remove_file(marker(s));
        return;
    };
    let Some(identity) = identity else {
        tracing::warn!(server = %s.name, "cannot read /proc/{pid}: no keep-alive watchdog; `mtr local stop` stops it");
        return;
    };
    write_marker(s, pid, idle);
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(WATCHDOG)
        .arg("mtr-keepalive")
        .arg(s.paths.state_dir())
        .arg(&s.name)
        .arg(pid.to_string())
        .arg(identity.start_ticks.to_string())
        .arg(&identity.exe)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    match cmd.spawn() {
        // not waited for: it outlives this command, as the server does
        Ok(child) => drop(child),
        Err(e) => tracing::warn!(server = %s.name, "cannot start the keep-alive watchdog: {e}"),
    }
}

fn add_user(s: &LocalServer) {
    let dir = users(s);
    if std::fs::create_dir_all(&dir).is_ok() {
        let _ = std::fs::write(dir.join(std::process::id().to_string()), "");
    }
}

/// The servers this process uses: state file -> (server, its pid).
static HELD: Mutex<BTreeMap<PathBuf, (LocalServer, u32)>> = Mutex::new(BTreeMap::new());

/// Called whenever this process uses `s` (pid `pid`, started now or earlier): the server
/// counts it as a user until [`release_all`], and the keep-alive of this command applies
/// from now on (kept until stopped, or a new idle time).
pub(super) fn hold(s: &LocalServer, pid: u32) {
    add_user(s);
    match s.keep_alive.idle() {
        None => {
            let _ = std::fs::remove_file(marker(s));
        }
        Some(idle) => {
            // a server kept until `mtr local stop` stays kept; one on a watchdog takes
            // this command's idle time
            if marker(s).exists() {
                write_marker(s, pid, idle);
            }
        }
    }
    if let Ok(mut h) = HELD.lock() {
        h.insert(s.state_path(), (s.clone(), pid));
    }
}

/// A server left running when this process let go of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftRunning {
    /// The server's name (its state file's stem).
    pub name: String,
    /// Its state file (tells apart servers of one name under different homes).
    pub state_file: PathBuf,
    /// None: until `mtr local stop`.
    pub idle: Option<Duration>,
}

fn pid_alive(pid: u32) -> bool {
    super::pid_alive(pid)
}

/// This process stops using its servers (the command ends): the idle time starts now.
/// Returns the servers that stay up beyond it (a keep-alive of 0 stops them at once).
pub fn release_all() -> Vec<LeftRunning> {
    let held = match HELD.lock() {
        Ok(mut h) => std::mem::take(&mut *h),
        Err(_) => return Vec::new(),
    };
    let mut left = Vec::new();
    for (s, pid) in held.into_values() {
        let _ = std::fs::write(lease(&s), "");
        let _ = std::fs::remove_file(users(&s).join(std::process::id().to_string()));
        if !pid_alive(pid) {
            continue;
        }
        let idle = read_marker(&marker(&s)).map(|(_, secs)| Duration::from_secs(secs));
        if idle == Some(Duration::ZERO) {
            continue;
        }
        left.push(LeftRunning {
            name: s.name.clone(),
            state_file: s.state_path(),
            idle,
        });
    }
    left
}

fn read_marker(p: &Path) -> Option<(u32, u64)> {
    let text = std::fs::read_to_string(p).ok()?;
    let mut it = text.split_whitespace();
    Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
}

/// One line for stderr about the servers [`release_all`] left running, if any.
pub fn notice(left: &[LeftRunning]) -> Option<String> {
    if left.is_empty() {
        return None;
    }
    let n = left.len();
    // the verb agrees with the count: "1 local model server stops", "2 ... servers stop"
    let (servers, s, them) = if n == 1 {
        ("server", "s", "it")
    } else {
        ("servers", "", "them")
    };
    let idle: Vec<Duration> = left.iter().filter_map(|l| l.idle).collect();
    let when = if idle.len() == n {
        let secs = idle.iter().map(Duration::as_secs).max().unwrap_or(0);
        format!(
            "stop{s} after {} idle (MTR_KEEP_ALIVE, [llm.local] keep_alive)",
            human(secs)
        )
    } else {
        format!("keep{s} running")
    };
    Some(format!(
        "mtr: {n} local model {servers} {when}; `mtr local stop` stops {them} now"
    ))
}

fn human(secs: u64) -> String {
    if secs >= 60 && secs % 60 == 0 {
        format!("{} min", secs / 60)
    } else {
        format!("{secs} s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keep_alive_parses_like_ollama() {
        assert_eq!(KeepAlive::parse("0"), Ok(KeepAlive::Idle(Duration::ZERO)));
        assert_eq!(
            KeepAlive::parse("5m"),
            Ok(KeepAlive::Idle(Duration::from_secs(300)))
        );
        assert_eq!(
            KeepAlive::parse("90"),
            Ok(KeepAlive::Idle(Duration::from_secs(90)))
        );
        assert_eq!(KeepAlive::parse("-1"), Ok(KeepAlive::Forever));
        assert!(KeepAlive::parse("5 days").is_err());
        assert_eq!(KeepAlive::Default.idle(), Some(DEFAULT_KEEP_ALIVE));
        assert_eq!(KeepAlive::Forever.idle(), None);
    }

    #[test]
    fn the_notice_says_how_long_and_how_to_stop() {
        let idle = |s| LeftRunning {
            name: "a".into(),
            state_file: PathBuf::new(),
            idle: Some(Duration::from_secs(s)),
        };
        assert_eq!(notice(&[]), None);
        let line = notice(&[idle(300), idle(60)]).unwrap();
        assert!(
            line.contains("2 local model servers stop after 5 min idle"),
            "{line}"
        );
        assert!(line.contains("mtr local stop"), "{line}");
        let kept = LeftRunning {
            name: "b".into(),
            state_file: PathBuf::new(),
            idle: None,
        };
        let one = notice(&[kept]).unwrap();
        assert!(one.contains("1 local model server keeps running"), "{one}");
        assert!(one.contains("`mtr local stop` stops it now"), "{one}");
        let one = notice(&[idle(300)]).unwrap();
        assert!(
            one.contains("1 local model server stops after 5 min idle"),
            "{one}"
        );
    }
}

#[cfg(test)]
mod server_tests {
    use std::time::Instant;

    use super::*;
    use crate::StopOutcome;
    use crate::server::pid_alive;
    use crate::testkit::servers::chat_server;
    use crate::testkit::tiny_installation;

    /// A server a command started on its own is gone once idle for its keep-alive; one kept
    /// by `mtr local start` (started by it, or taken over from a command) is not.
    #[tokio::test]
    async fn a_server_a_command_started_stops_when_idle_and_one_kept_by_local_start_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let paths = tiny_installation(dir.path()).unwrap();
        let idle = KeepAlive::Idle(Duration::from_secs(1));
        let server = |spec: &str, suffix: &str| chat_server(&paths, spec, suffix, idle);
        let alone = server("qwen0.5b", "");
        let mut started_kept = (*server("smollm2", "")).clone();
        started_kept.keep_alive = KeepAlive::Forever;
        let taken_over = server("qwen0.5b", "-gen");
        alone.ensure_running().await.unwrap();
        started_kept.ensure_running().await.unwrap();
        taken_over.ensure_running().await.unwrap();
        // `mtr local start` while a command's server runs: it keeps it
        let mut start = (*taken_over).clone();
        start.keep_alive = KeepAlive::Forever;
        start.ensure_running().await.unwrap();
        let pid = |s: &LocalServer| s.read_state().unwrap().pid;
        let (a, k, t) = (pid(&alone), pid(&started_kept), pid(&taken_over));
        assert_ne!(a, t, "three servers");
        // the command ends: it says which servers stay up, and for how long
        let left: BTreeMap<PathBuf, Option<Duration>> = release_all()
            .into_iter()
            .map(|l| (l.state_file, l.idle))
            .collect();
        assert_eq!(left[&alone.state_path()], Some(Duration::from_secs(1)));
        assert_eq!(left[&started_kept.state_path()], None);
        assert_eq!(left[&taken_over.state_path()], None);
        // a generous deadline: only a broken watchdog makes this wait long
        let deadline = Instant::now() + Duration::from_secs(90);
        while (pid_alive(a) || alone.state_path().exists()) && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        assert!(!pid_alive(a), "the server a command started alone is gone");
        assert!(!alone.state_path().exists());
        assert!(
            pid_alive(k) && pid_alive(t),
            "servers kept by `mtr local start` run on"
        );
        assert!(started_kept.running_url().await.is_some());
        assert!(start.running_url().await.is_some());
        assert_eq!(started_kept.stop().await.unwrap(), StopOutcome::Stopped);
        assert_eq!(start.stop().await.unwrap(), StopOutcome::Stopped);
    }
}
