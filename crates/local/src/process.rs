//! Telling a server process from whatever process holds its pid now, and signalling it only
//! then. A pid alone names a process only while it runs: after a reboot or a long pause the pid
//! a state file recorded can belong to someone else's process, and `mtr local stop` (or the
//! keep-alive watchdog) must not signal that one. So a server's state records, beside its pid,
//! its start time (field 22 of `/proc/PID/stat`, clock ticks since boot) and its executable
//! (`/proc/PID/exe`); a process is the server only when all three match.
//!
//! A signal goes through the system call on a pidfd opened *before* the identity is checked
//! (`pidfd_open`, Linux 5.3+), so the process checked is the process signalled even if the pid
//! is reused in between; where pidfds are unavailable, `kill(2)` right after the check.

use std::io;
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};
use std::path::PathBuf;

/// What names one process beyond its pid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProcessIdentity {
    /// Field 22 of `/proc/PID/stat`: clock ticks after boot when it started.
    pub start_ticks: u64,
    /// Where `/proc/PID/exe` points.
    pub exe: PathBuf,
}

/// The `/proc/PID/stat` fields after the command name (field 3 onwards); None when no such
/// process.
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // the command name (field 2) is in parentheses and may hold spaces or ')'
    let rest = stat.rsplit_once(')')?.1;
    Some(rest.split_whitespace().map(str::to_string).collect())
}

/// The process `pid` runs and is not a zombie.
pub(crate) fn alive(pid: u32) -> bool {
    stat_fields(pid).is_some_and(|f| f.first().is_some_and(|st| st != "Z"))
}

/// The identity of the live process `pid`, if it runs and this user may read it.
pub(crate) fn identity(pid: u32) -> Option<ProcessIdentity> {
    let fields = stat_fields(pid)?;
    if fields.first().is_some_and(|st| st == "Z") {
        return None;
    }
    // field 22 overall is the 20th after the command name
    let start_ticks = fields.get(19)?.parse().ok()?;
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok()?;
    Some(ProcessIdentity { start_ticks, exe })
}

/// The process's arguments (`/proc/PID/cmdline`), empty when unreadable.
pub(crate) fn arguments(pid: u32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| {
            b.split(|&c| c == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// When the process started, in seconds since the Unix epoch (boot time from `/proc/stat`
/// plus its start ticks).
pub(crate) fn started_unix(id: &ProcessIdentity) -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let btime: u64 = stat
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    // SAFETY: sysconf only reads a system constant.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let hz = u64::try_from(hz).ok().filter(|&h| h > 0)?;
    Some(btime + id.start_ticks / hz)
}

/// A process checked to be the expected one, held so that a signal reaches it and no other.
#[derive(Debug)]
pub(crate) struct Verified {
    pid: u32,
    pidfd: Option<OwnedFd>,
    /// Checked again before each signal where there is no pidfd.
    expected: Option<ProcessIdentity>,
}

/// Opens `pid` and checks that it is still the process `expected` describes; None when the
/// pid runs no process or another one.
pub(crate) fn verify(pid: u32, expected: &ProcessIdentity) -> Option<Verified> {
    let pidfd = pidfd_open(pid);
    // checked after the pidfd is open: the pidfd names the process checked
    (identity(pid).as_ref() == Some(expected)).then(|| Verified {
        pid,
        pidfd,
        expected: Some(expected.clone()),
    })
}

impl Verified {
    /// A process this process started and has not reaped (its pid cannot be reused).
    pub(crate) fn own_child(child: &std::process::Child) -> Self {
        Self {
            pid: child.id(),
            pidfd: None,
            expected: None,
        }
    }

    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// Sends `signal` (e.g. `libc::SIGTERM`) to the process.
    pub(crate) fn signal(&self, signal: i32) -> io::Result<()> {
        let rc = match &self.pidfd {
            // SAFETY: a valid pidfd, a null siginfo and no flags, as pidfd_send_signal(2) asks.
            Some(fd) => unsafe {
                libc::syscall(
                    libc::SYS_pidfd_send_signal,
                    fd.as_raw_fd(),
                    signal,
                    std::ptr::null::<libc::siginfo_t>(),
                    0,
                )
            },
            None => {
                if let Some(expected) = &self.expected
                    && identity(self.pid).as_ref() != Some(expected)
                {
                    return Err(io::Error::from_raw_os_error(libc::ESRCH));
                }
                let pid = libc::pid_t::try_from(self.pid)
                    .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
                // SAFETY: kill(2) takes any pid and signal number and reports errors in errno.
                i64::from(unsafe { libc::kill(pid, signal) })
            }
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }
}

/// A pidfd for `pid`, None where the kernel has none (before 5.3) or the process is gone.
fn pidfd_open(pid: u32) -> Option<OwnedFd> {
    let pid = libc::pid_t::try_from(pid).ok()?;
    // SAFETY: pidfd_open(2) takes a pid and flags and returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    let fd = i32::try_from(fd).ok().filter(|&fd| fd >= 0)?;
    // SAFETY: the fd was just returned by the kernel and is owned by nothing else.
    Some(unsafe { OwnedFd::from_raw_fd(fd) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn a_process_is_known_by_its_start_time_and_executable() {
        let mut child = Command::new("sleep").arg("30").spawn().unwrap();
        let id = identity(child.id()).unwrap();
        assert_eq!(
            id.exe.file_name().unwrap(),
            std::fs::canonicalize(which_sleep())
                .unwrap()
                .file_name()
                .unwrap()
        );
        let me = identity(std::process::id()).unwrap();
        assert_ne!(id, me);
        // another start time: not this process
        let other = ProcessIdentity {
            start_ticks: id.start_ticks + 1,
            ..id.clone()
        };
        assert!(verify(child.id(), &other).is_none());
        let v = verify(child.id(), &id).unwrap();
        v.signal(libc::SIGTERM).unwrap();
        assert!(child.wait().unwrap().code().is_none(), "killed by a signal");
        assert!(identity(child.id()).is_none());
        assert!(started_unix(&me).is_some());
    }

    fn which_sleep() -> PathBuf {
        std::env::split_paths(&std::env::var_os("PATH").unwrap())
            .map(|d| d.join("sleep"))
            .find(|p| p.is_file())
            .unwrap()
    }
}
