//! Atomic file output: everything mtr writes goes to a temporary file in the destination folder
//! and is renamed into place only when complete, so a crash never leaves a half-written file.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// A buffered writer whose content appears at `path` only after [`AtomicFile::commit`].
/// Dropping it without committing removes the temporary file.
pub struct AtomicFile {
    path: PathBuf,
    writer: BufWriter<tempfile::NamedTempFile>,
}

impl AtomicFile {
    pub fn create(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        let mut builder = tempfile::Builder::new();
        builder.prefix(".mtr-").suffix(".tmp");
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
