//! The passage id table of an index folder: ids in corpus order, so that every retriever of
//! the folder (BM25 and dense) names a passage by the same ordinal. Two files: `ids.txt`
//! (ids separated by newlines) and `ids.off` (n + 1 little-endian u64 byte offsets), both
//! memory-mapped, so opening costs nothing even for tens of millions of passages.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use memmap2::Mmap;
use mtr_core::atomic::AtomicFile;

use crate::error::{Error, Result};

pub(crate) const IDS: &str = "ids.txt";
pub(crate) const OFFSETS: &str = "ids.off";

/// Writes the id table while passages stream by.
pub(crate) struct IdTableWriter {
    ids: AtomicFile,
    offsets: AtomicFile,
    pos: u64,
    count: u64,
    dir: PathBuf,
}

impl IdTableWriter {
    pub(crate) fn create(dir: &Path) -> Result<Self> {
        let mut offsets = AtomicFile::create(dir.join(OFFSETS))?;
        offsets
            .write_all(&0u64.to_le_bytes())
            .map_err(|e| Error::io(dir.join(OFFSETS), e))?;
        Ok(Self {
            ids: AtomicFile::create(dir.join(IDS))?,
            offsets,
            pos: 0,
            count: 0,
            dir: dir.to_path_buf(),
        })
    }

    /// Appends an id (ids never contain whitespace; the corpus checker guarantees it).
    pub(crate) fn push(&mut self, id: &str) -> Result<u32> {
        let ord = u32::try_from(self.count)
            .map_err(|_| Error::Capacity("more than 4,294,967,295 passages in one index".into()))?;
        self.ids
            .write_all(id.as_bytes())
            .and_then(|_| self.ids.write_all(b"\n"))
            .map_err(|e| Error::io(self.dir.join(IDS), e))?;
        self.pos += id.len() as u64 + 1;
        self.offsets
            .write_all(&self.pos.to_le_bytes())
            .map_err(|e| Error::io(self.dir.join(OFFSETS), e))?;
        self.count += 1;
        Ok(ord)
    }

    pub(crate) fn commit(self) -> Result<u64> {
        self.ids.commit()?;
        self.offsets.commit()?;
        Ok(self.count)
    }
}

/// The memory-mapped id table.
pub struct IdTable {
    ids: Mmap,
    offsets: Mmap,
    len: usize,
}

impl std::fmt::Debug for IdTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdTable").field("len", &self.len).finish()
    }
}

impl IdTable {
    pub fn open(dir: &Path) -> Result<Self> {
        let ids = map(&dir.join(IDS))?;
        let offsets = map(&dir.join(OFFSETS))?;
        if offsets.len() < 8 || offsets.len() % 8 != 0 {
            return Err(Error::index(
                dir,
                format!("{OFFSETS} is truncated ({} bytes)", offsets.len()),
            ));
        }
        let len = offsets.len() / 8 - 1;
        let table = Self { ids, offsets, len };
        if table.offset(len) as usize != table.ids.len() {
            return Err(Error::index(
                dir,
                format!("{IDS} and {OFFSETS} disagree; rebuild the index"),
            ));
        }
        Ok(table)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn offset(&self, i: usize) -> u64 {
        let b = &self.offsets[i * 8..i * 8 + 8];
        u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
    }

    /// The id of passage `ord`, or `None` when out of range.
    pub fn get(&self, ord: u32) -> Option<&str> {
        let i = ord as usize;
        if i >= self.len {
            return None;
        }
        let (start, end) = (self.offset(i) as usize, self.offset(i + 1) as usize);
        let bytes = self.ids.get(start..end.saturating_sub(1))?;
        std::str::from_utf8(bytes).ok()
    }
}

fn map(path: &Path) -> Result<Mmap> {
    let f = File::open(path).map_err(|e| Error::io(path, e))?;
    // SAFETY: index files are written once (atomically renamed into place) and never modified
    // afterwards; a concurrent rebuild replaces the folder rather than editing files in place.
    unsafe { Mmap::map(&f) }.map_err(|e| Error::io(path, e))
}

pub(crate) fn map_file(path: &Path) -> Result<Mmap> {
    map(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = IdTableWriter::create(dir.path()).unwrap();
        for id in ["a", "bb", "中文", "d::1"] {
            w.push(id).unwrap();
        }
        assert_eq!(w.commit().unwrap(), 4);
        let t = IdTable::open(dir.path()).unwrap();
        assert_eq!(t.len(), 4);
        assert_eq!(t.get(0), Some("a"));
        assert_eq!(t.get(2), Some("中文"));
        assert_eq!(t.get(3), Some("d::1"));
        assert_eq!(t.get(4), None);
    }
}
