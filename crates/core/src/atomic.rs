//! Atomic file output: everything mtr writes goes to a temporary file in the destination folder
//! and is renamed into place only when complete, so a crash never leaves a half-written file.
//!
//! A process killed mid-write (SIGKILL) cannot remove its temporary file, so temporary files
//! carry their writer's process id (`.mtr-<pid>-<random>.tmp`), and the first write into a
//! folder removes the stale ones: those of a process that no longer runs, and those without a
//! process id (older versions) untouched for an hour. Nothing else is ever removed.
//!
//! A whole folder (an import, an export) is written the same way through [`StagedDir`].

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

mod staged;

pub use staged::StagedDir;

/// A buffered writer whose content appears at `path` only after [`AtomicFile::commit`].
/// Dropping it without committing removes the temporary file.
pub struct AtomicFile {
    path: PathBuf,
    writer: BufWriter<tempfile::NamedTempFile>,
}

impl AtomicFile {
    /// A file that becomes `path` on [`AtomicFile::commit`]; its parent folder is created.
    pub fn create(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let dir = created_parent(&path)?;
        clean_stale_once(&dir);
        let prefix = format!("{TMP_PREFIX}{}-", std::process::id());
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(TMP_SUFFIX);
        // tempfile creates 0600 files; outputs (reports, sites, benchmarks) are meant to be
        // shared, so give them the usual 0644 before they are renamed into place.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(std::fs::Permissions::from_mode(0o644));
        }
        let tmp = builder.tempfile_in(&dir).map_err(|e| Error::io(&dir, e))?;
        Ok(Self {
            path,
            writer: BufWriter::with_capacity(1 << 16, tmp),
        })
    }

    /// The final path (not the temporary file).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Flushes, syncs and renames the temporary file over `path`.
    pub fn commit(self) -> Result<()> {
        let path = self.path;
        let tmp = self
            .writer
            .into_inner()
            .map_err(|e| Error::io(&path, e.into_error()))?;
        tmp.as_file().sync_all().map_err(|e| Error::io(&path, e))?;
        tmp.persist(&path).map_err(|e| Error::io(&path, e.error))?;
        Ok(())
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.writer.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.writer.flush()
    }
}

const TMP_PREFIX: &str = ".mtr-";
const TMP_SUFFIX: &str = ".tmp";

/// A temporary file without a process id is stale once untouched this long.
const STALE_AFTER: std::time::Duration = std::time::Duration::from_secs(3600);

/// Removes stale temporary files from `dir`, once per folder and process (errors ignored:
/// cleaning is a courtesy, never a reason to fail a write).
fn clean_stale_once(dir: &Path) {
    static CLEANED: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
    let key = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    match CLEANED.lock() {
        Ok(mut done) if !done.contains(&key) => done.push(key),
        _ => return,
    }
    let _ = clean_stale(dir, std::time::SystemTime::now());
}

/// Removes from `dir` the temporary files of dead writers and old ones without a writer id;
/// returns how many were removed.
pub(crate) fn clean_stale(dir: &Path, now: std::time::SystemTime) -> std::io::Result<usize> {
    let me = std::process::id();
    let mut removed = 0;
    for entry in std::fs::read_dir(dir)? {
        let Ok(entry) = entry else { continue };
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(middle) = name
            .strip_prefix(TMP_PREFIX)
            .and_then(|r| r.strip_suffix(TMP_SUFFIX))
        else {
            continue;
        };
        let Ok(meta) = entry.metadata() else { continue };
        if !meta.is_file() {
            continue;
        }
        let writer = middle
            .split_once('-')
            .and_then(|(pid, _)| pid.parse::<u32>().ok());
        let stale = match writer {
            Some(pid) if pid == me => false,
            Some(pid) => match pid_alive(pid) {
                Some(alive) => !alive,
                None => older_than(&meta, now, STALE_AFTER),
            },
            None => older_than(&meta, now, STALE_AFTER),
        };
        if stale && std::fs::remove_file(entry.path()).is_ok() {
            removed += 1;
            tracing::debug!(file = %entry.path().display(), "removed a stale temporary file");
        }
    }
    Ok(removed)
}

fn older_than(
    meta: &std::fs::Metadata,
    now: std::time::SystemTime,
    age: std::time::Duration,
) -> bool {
    meta.modified()
        .ok()
        .and_then(|m| now.duration_since(m).ok())
        .is_some_and(|d| d > age)
}

/// Whether process `pid` runs (`None` where that cannot be told: no `/proc`).
fn pid_alive(pid: u32) -> Option<bool> {
    let proc = Path::new("/proc");
    proc.join("self")
        .exists()
        .then(|| proc.join(pid.to_string()).exists())
}

/// The folder `path` is in (`.` for a bare name), created when absent.
fn created_parent(path: &Path) -> Result<PathBuf> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    Ok(dir)
}

/// Writes `bytes` to `path` atomically.
pub fn write_atomic(path: impl AsRef<Path>, bytes: &[u8]) -> Result<()> {
    let mut f = AtomicFile::create(path.as_ref())?;
    f.write_all(bytes)
        .map_err(|e| Error::io(path.as_ref(), e))?;
    f.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_temporary_files_of_dead_writers_are_cleaned() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let touch = |n: &str| std::fs::write(d.join(n), b"partial").unwrap();
        // a writer that no longer runs (beyond any pid_max), an old file without a pid, a
        // fresh file without a pid, a live writer (pid 1), and files that are not ours
        touch(".mtr-999999999-Ab3dE.tmp");
        touch(".mtr-x1y2z3.tmp");
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
        std::fs::File::options()
            .write(true)
            .open(d.join(".mtr-x1y2z3.tmp"))
            .unwrap()
            .set_modified(old)
            .unwrap();
        touch(".mtr-fresh99.tmp");
        touch(".mtr-1-LiveW.tmp");
        touch("notes.tmp");
        touch(".mtr-config.toml");
        write_atomic(d.join("out.txt"), b"done").unwrap();
        let mut left: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .collect();
        left.sort();
        let mut want = vec![
            ".mtr-1-LiveW.tmp",
            ".mtr-config.toml",
            ".mtr-fresh99.tmp",
            "notes.tmp",
            "out.txt",
        ];
        if !Path::new("/proc/self").exists() {
            // without /proc only the age rule applies
            want.push(".mtr-999999999-Ab3dE.tmp");
            want.sort();
        }
        assert_eq!(left, want);
    }

    #[test]
    fn uncommitted_file_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.txt");
        {
            let mut f = AtomicFile::create(&p).unwrap();
            f.write_all(b"partial").unwrap();
        }
        assert!(!p.exists());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        write_atomic(&p, b"done").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"done");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&p).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o644);
        }
    }
}
