//! The export file's writers: threads of their own that write the Batch input lines and record
//! the exported requests in the cache file, so that the calls being exported only copy their
//! line into a buffer.
//!
//! A million requests make a file of several GB. Written from the calls' threads, under the
//! export's lock, every copy into the page cache (most of the writing's CPU), every transaction
//! of recorded requests and every pause the kernel imposes on a process with too many dirty
//! pages stopped every call behind it, and the whole file went to disk in the final
//! `sync_all`, seconds at the end of the command. Here one thread writes the file (whole
//! aligned blocks straight to the disk where the file system takes them, [`FileWriter`]) and
//! another records the requests, each behind a bounded queue. The file's lines are written in
//! byte order (`export_order.rs`: the same file every run, whatever order the calls finished
//! in), so they reach the disk at the end, sorted runs of a large export merged into it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::thread::JoinHandle;

use super::export_order::{RUN_BYTES, SortedLines};
use crate::cache::{Cache, ExportItem};
use crate::error::{LlmError, Result};

/// Bytes of lines handed to the file's writer at a time.
pub(super) const CHUNK_BYTES: usize = 1 << 20;

/// Chunks of lines waiting for the file's writer before the calls wait for it: bounds the
/// memory an export holds when the disk is slower than the calls.
const CHUNKS_PENDING: usize = 16;

/// Batches of requests waiting to be recorded before the calls wait (a batch is
/// `ITEMS_PER_COMMIT` requests, one transaction).
const ITEM_BATCHES_PENDING: usize = 2;

/// Bytes whose disk writes are started together (writes through the page cache).
const WRITEBACK_WINDOW: u64 = 32 << 20;

/// Windows whose disk writes may be in progress before the writer waits for the oldest.
const WINDOWS_IN_FLIGHT: u64 = 4;

/// The writers of one export ([`ExportSink::start`]); dropped without
/// [`ExportSink::finish`], they stop and the temporary file is removed.
pub(super) struct ExportSink {
    file: Worker<Vec<u8>, tempfile::NamedTempFile>,
    items: Worker<Vec<ExportItem>, ()>,
    /// The export's target, named in errors.
    target: PathBuf,
}

impl ExportSink {
    /// Starts the writers of `file` (a temporary file beside `target`) and of the requests
    /// recorded in `cache`.
    pub(super) fn start(
        file: tempfile::NamedTempFile,
        cache: Arc<Cache>,
        target: &Path,
    ) -> Result<Self> {
        let name = target.to_path_buf();
        let file = Worker::start(
            "mtr-export",
            CHUNKS_PENDING,
            target,
            move |rx: &Receiver<Option<Vec<u8>>>| {
                let dir = file
                    .path()
                    .parent()
                    .map(Path::to_path_buf)
                    .unwrap_or_default();
                let mut lines = SortedLines::new(&dir, RUN_BYTES);
                while let Ok(chunk) = rx.recv() {
                    match chunk {
                        Some(chunk) => lines.add(&chunk).map_err(|e| cannot_write(&name, &e))?,
                        None => {
                            let mut out = FileWriter::new(file);
                            lines
                                .write_to(|b| out.write(b))
                                .map_err(|e| cannot_write(&name, &e))?;
                            return out.finish().map_err(|e| cannot_write(&name, &e));
                        }
                    }
                }
                Err(cannot_write(&name, &"the export stopped before its end"))
            },
        )?;
        let name = target.to_path_buf();
        let items = Worker::start(
            "mtr-export-items",
            ITEM_BATCHES_PENDING,
            target,
            move |rx: &Receiver<Option<Vec<ExportItem>>>| {
                while let Ok(batch) = rx.recv() {
                    match batch {
                        Some(items) => cache.export_items(&items)?,
                        None => return Ok(()),
                    }
                }
                Err(cannot_write(&name, &"the export stopped before its end"))
            },
        )?;
        Ok(Self {
            file,
            items,
            target: target.to_path_buf(),
        })
    }

    /// Hands whole lines to the file's writer (waits while it is [`CHUNKS_PENDING`] chunks
    /// behind).
    pub(super) fn lines(&mut self, lines: Vec<u8>) -> Result<()> {
        self.file.send(lines, &self.target)
    }

    /// Hands requests to record to their writer.
    pub(super) fn items(&mut self, items: Vec<ExportItem>) -> Result<()> {
        self.items.send(items, &self.target)
    }

    /// Waits for the writers to write everything sent, and gives the file, durable on disk.
    pub(super) fn finish(mut self) -> Result<tempfile::NamedTempFile> {
        self.items.finish(&self.target)?;
        self.file.finish(&self.target)
    }
}

fn cannot_write(target: &Path, e: &dyn std::fmt::Display) -> LlmError {
    LlmError::Config(format!("cannot write {}: {e}", target.display()))
}

/// A thread that takes values (`Some`) from a bounded queue until the end (`None`: it returns
/// its result) or until the queue's sender is gone (an export that stopped: it returns an
/// error, dropping what it holds). Dropped, it closes the queue and waits for the thread.
struct Worker<T, R> {
    tx: Option<SyncSender<Option<T>>>,
    thread: Option<JoinHandle<Result<R>>>,
}

impl<T: Send + 'static, R: Send + 'static> Worker<T, R> {
    fn start(
        name: &str,
        pending: usize,
        target: &Path,
        work: impl FnOnce(&Receiver<Option<T>>) -> Result<R> + Send + 'static,
    ) -> Result<Self> {
        let (tx, rx) = std::sync::mpsc::sync_channel(pending);
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || work(&rx))
            .map_err(|e| cannot_write(target, &e))?;
        Ok(Self {
            tx: Some(tx),
            thread: Some(thread),
        })
    }

    fn send(&mut self, value: T, target: &Path) -> Result<()> {
        self.put(Some(value), target)
    }

    fn put(&mut self, value: Option<T>, target: &Path) -> Result<()> {
        let Some(tx) = &self.tx else {
            return Err(cannot_write(target, &"the export has ended"));
        };
        let sent = match tx.try_send(value) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(value)) => tx.send(value).map_err(|_| ()),
            Err(TrySendError::Disconnected(_)) => Err(()),
        };
        if sent.is_err() {
            // the thread stopped: its error says why
            self.tx = None;
            return Err(match self.join(target) {
                Err(e) => e,
                Ok(_) => cannot_write(target, &"the export's writer stopped"),
            });
        }
        Ok(())
    }

    /// Sends the end and waits for the thread's result.
    fn finish(&mut self, target: &Path) -> Result<R> {
        self.put(None, target)?;
        self.tx = None;
        self.join(target)
    }

    fn join(&mut self, target: &Path) -> Result<R> {
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(out)) => out,
            Some(Err(_)) => Err(cannot_write(target, &"the export's writer panicked")),
            None => Err(cannot_write(target, &"the export has ended")),
        }
    }
}

impl<T, R> Drop for Worker<T, R> {
    fn drop(&mut self) {
        // no end sent: the thread drops what it holds (a file is removed)
        self.tx = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Alignment of direct writes: their buffer's address, length and file offset.
const DIRECT_ALIGN: usize = 4096;

/// Bytes a direct write writes at a time (a multiple of [`DIRECT_ALIGN`]).
const DIRECT_BYTES: usize = 4 << 20;

/// The export file as the writer thread writes it: where the file system takes them, whole
/// aligned blocks go straight to the disk (`O_DIRECT`, Linux: no copy into the page cache,
/// which was most of the writer's CPU, and nothing left dirty for the final `sync_all`); the
/// rest (the last partial block, or everything where direct writes are refused) through the
/// page cache, its disk writes started window by window ([`Writeback`]).
struct FileWriter {
    file: tempfile::NamedTempFile,
    /// The same file opened for direct writes, while they work.
    direct: Option<std::fs::File>,
    /// Bytes waiting for a whole direct write, at `stage[start..start + len]` (`start`
    /// aligned).
    stage: Vec<u8>,
    start: usize,
    len: usize,
    /// Bytes written to the file so far.
    offset: u64,
    writeback: Writeback,
}

impl FileWriter {
    fn new(file: tempfile::NamedTempFile) -> Self {
        let direct = open_direct(file.path());
        let stage = if direct.is_some() {
            vec![0u8; DIRECT_BYTES + DIRECT_ALIGN]
        } else {
            Vec::new()
        };
        let start = stage.as_ptr().align_offset(DIRECT_ALIGN);
        Self {
            file,
            direct,
            stage,
            start,
            len: 0,
            offset: 0,
            writeback: Writeback::default(),
        }
    }

    fn write(&mut self, mut bytes: &[u8]) -> std::io::Result<()> {
        if self.direct.is_none() || self.start + DIRECT_BYTES > self.stage.len() {
            return self.write_buffered(bytes);
        }
        while !bytes.is_empty() {
            let n = bytes.len().min(DIRECT_BYTES - self.len);
            let at = self.start + self.len;
            self.stage[at..at + n].copy_from_slice(&bytes[..n]);
            self.len += n;
            bytes = &bytes[n..];
            if self.len == DIRECT_BYTES {
                self.write_stage(DIRECT_BYTES)?;
                if self.direct.is_none() {
                    // refused: what was staged went through the page cache, and so does the rest
                    return self.write_buffered(bytes);
                }
            }
        }
        Ok(())
    }

    /// Writes the stage's first `n` bytes (a multiple of [`DIRECT_ALIGN`]) directly, or
    /// everything staged through the page cache where the file system refuses that (direct
    /// writes then end, and the stage stays empty).
    fn write_stage(&mut self, n: usize) -> std::io::Result<()> {
        let Some(direct) = &self.direct else {
            return Ok(());
        };
        let block = &self.stage[self.start..self.start + n];
        match write_at(direct, block, self.offset) {
            Ok(()) => {
                self.offset += n as u64;
                self.stage
                    .copy_within(self.start + n..self.start + self.len, self.start);
                self.len -= n;
                Ok(())
            }
            Err(e) => {
                // no direct writes here (a file system without them): the page cache from now
                // on, this block included (nothing of a failed write counts)
                tracing::debug!(error = %e, "direct writes refused: writing through the page cache");
                self.direct = None;
                let staged = self.stage[self.start..self.start + self.len].to_vec();
                self.len = 0;
                self.write_buffered(&staged)
            }
        }
    }

    fn write_buffered(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        write_at(self.file.as_file(), bytes, self.offset)?;
        self.offset += bytes.len() as u64;
        self.writeback
            .wrote(self.file.as_file(), bytes.len() as u64);
        Ok(())
    }

    /// Writes what is staged and makes the file durable.
    fn finish(mut self) -> std::io::Result<tempfile::NamedTempFile> {
        let whole = self.len / DIRECT_ALIGN * DIRECT_ALIGN;
        if whole > 0 {
            self.write_stage(whole)?;
        }
        if self.len > 0 {
            let tail = self.stage[self.start..self.start + self.len].to_vec();
            self.len = 0;
            self.write_buffered(&tail)?;
        }
        self.direct = None;
        self.file.as_file().sync_all()?;
        Ok(self.file)
    }
}

/// Writes all of `buf` at `offset` of `file`.
#[cfg(unix)]
fn write_at(file: &std::fs::File, buf: &[u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, buf, offset)
}

#[cfg(not(unix))]
fn write_at(mut file: &std::fs::File, buf: &[u8], offset: u64) -> std::io::Result<()> {
    use std::io::{Seek, Write};
    file.seek(std::io::SeekFrom::Start(offset))?;
    file.write_all(buf)
}

/// `path` opened again for direct writes; `None` where that is refused (or not Linux).
#[cfg(target_os = "linux")]
fn open_direct(path: &Path) -> Option<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .map_err(|e| tracing::debug!(error = %e, "no direct writes for the export file"))
        .ok()
}

#[cfg(not(target_os = "linux"))]
fn open_direct(_: &Path) -> Option<std::fs::File> {
    None
}

/// The disk writes of the file so far: started a window at a time, waited for
/// [`WINDOWS_IN_FLIGHT`] windows behind.
#[derive(Debug, Default)]
struct Writeback {
    written: u64,
    started: u64,
    waited: u64,
}

impl Writeback {
    /// `n` more bytes were written to `file`.
    fn wrote(&mut self, file: &std::fs::File, n: u64) {
        self.written += n;
        while self.written - self.started >= WRITEBACK_WINDOW {
            start_writeback(file, self.started, WRITEBACK_WINDOW);
            self.started += WRITEBACK_WINDOW;
            if self.started - self.waited > WINDOWS_IN_FLIGHT * WRITEBACK_WINDOW {
                wait_writeback(file, self.waited, WRITEBACK_WINDOW);
                self.waited += WRITEBACK_WINDOW;
            }
        }
    }
}

/// Starts writing `len` bytes of `file` at `offset` to disk, without waiting. Advisory: a
/// failure shows at the final `sync_all`.
#[cfg(target_os = "linux")]
fn start_writeback(file: &std::fs::File, offset: u64, len: u64) {
    sync_range(file, offset, len, libc::SYNC_FILE_RANGE_WRITE);
}

/// Waits until `len` bytes of `file` at `offset` are written to disk (starting what is not).
#[cfg(target_os = "linux")]
fn wait_writeback(file: &std::fs::File, offset: u64, len: u64) {
    sync_range(
        file,
        offset,
        len,
        libc::SYNC_FILE_RANGE_WAIT_BEFORE
            | libc::SYNC_FILE_RANGE_WRITE
            | libc::SYNC_FILE_RANGE_WAIT_AFTER,
    );
}

#[cfg(target_os = "linux")]
fn sync_range(file: &std::fs::File, offset: u64, len: u64, flags: libc::c_uint) {
    use std::os::fd::AsRawFd;
    let (Ok(offset), Ok(len)) = (
        libc::off64_t::try_from(offset),
        libc::off64_t::try_from(len),
    ) else {
        return;
    };
    // SAFETY: the descriptor is the open file's own, alive for the call; the call reads no
    // memory of this process
    let rc = unsafe { libc::sync_file_range(file.as_raw_fd(), offset, len, flags) };
    if rc != 0 {
        tracing::debug!(
            error = %std::io::Error::last_os_error(),
            "sync_file_range failed (the final sync_all writes the file)"
        );
    }
}

#[cfg(not(target_os = "linux"))]
fn start_writeback(_: &std::fs::File, _: u64, _: u64) {}

#[cfg(not(target_os = "linux"))]
fn wait_writeback(_: &std::fs::File, _: u64, _: u64) {}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(dir: &Path) -> Arc<Cache> {
        Arc::new(Cache::open(dir.join("cache.sqlite")).unwrap())
    }

    fn temp(dir: &Path) -> tempfile::NamedTempFile {
        tempfile::Builder::new()
            .prefix(".mtr-export-")
            .suffix(".partial")
            .tempfile_in(dir)
            .unwrap()
    }

    fn partials(dir: &Path) -> usize {
        std::fs::read_dir(dir)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .ends_with(".partial")
            })
            .count()
    }

    /// The file a sink writes from `chunks` of lines sent in this order.
    fn exported(chunks: &[Vec<u8>]) -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("requests.jsonl");
        let mut sink = ExportSink::start(temp(dir.path()), cache(dir.path()), &target).unwrap();
        for c in chunks {
            sink.lines(c.clone()).unwrap();
        }
        let file = sink.finish().unwrap();
        std::fs::read(file.path()).unwrap()
    }

    #[test]
    fn the_same_lines_finished_in_another_order_are_the_same_file() {
        // Batch input lines as the calls of two judges write them, in two orders the calls
        // could finish in, chunked differently
        let line = |judge: usize, i: usize| {
            format!(
                "{{\"custom_id\":\"{:064x}\",\"method\":\"POST\",\"url\":\"/v1/chat/completions\",\"body\":{{\"model\":\"judge-{judge}\",\"item\":{i}}}}}\n",
                (2 * i + judge) * 7919 % 100_003
            )
        };
        let mut lines: Vec<String> = (0..300).flat_map(|i| [line(0, i), line(1, i)]).collect();
        let first: Vec<Vec<u8>> = lines.chunks(7).map(|c| c.concat().into_bytes()).collect();
        lines.reverse();
        lines.rotate_left(113);
        let second: Vec<Vec<u8>> = lines.chunks(50).map(|c| c.concat().into_bytes()).collect();
        let (a, b) = (exported(&first), exported(&second));
        assert_eq!(a.len(), b.len());
        assert!(a == b, "two completion orders gave two files");
        let text = String::from_utf8(a).unwrap();
        let ids: Vec<&str> = text.lines().map(|l| &l[14..78]).collect();
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "lines in custom_id order"
        );
    }

    #[test]
    fn every_line_sent_is_in_the_file() {
        // more than the channel holds and more than a writeback window in all
        let chunks: Vec<Vec<u8>> = (0..40u8)
            .map(|i| {
                let mut c = vec![b'a' + i % 26; CHUNK_BYTES + usize::from(i)];
                c.push(b'\n');
                c
            })
            .collect();
        let mut expected = chunks.clone();
        expected.sort();
        assert!(exported(&chunks) == expected.concat());
    }

    /// `n` bytes of lines, each different.
    fn lines(n: usize, seed: usize) -> Vec<u8> {
        (0..n)
            .map(|i| {
                if (i + seed) % 97 == 0 {
                    b'\n'
                } else {
                    b'a' + ((i * 7 + seed) % 26) as u8
                }
            })
            .collect()
    }

    #[test]
    fn direct_writes_and_the_page_cache_give_the_same_file() {
        let dir = tempfile::tempdir().unwrap();
        // sizes around the stage and the alignment, and a last partial block
        let parts: Vec<Vec<u8>> = [1, DIRECT_ALIGN - 1, DIRECT_BYTES, 3, DIRECT_BYTES + 5, 4097]
            .iter()
            .enumerate()
            .map(|(i, &n)| lines(n, i))
            .collect();
        let expected = parts.concat();
        let write = |mut w: FileWriter| {
            for p in &parts {
                w.write(p).unwrap();
            }
            std::fs::read(w.finish().unwrap().path()).unwrap()
        };
        // as the writer opens it (direct writes where this file system takes them)
        let direct = write(FileWriter::new(temp(dir.path())));
        assert!(
            direct == expected,
            "{} bytes, not {}",
            direct.len(),
            expected.len()
        );
        // direct writes refused at the first block (a handle that cannot write): the page
        // cache from there on, nothing lost
        let file = temp(dir.path());
        let mut w = FileWriter::new(temp(dir.path()));
        w.direct = Some(std::fs::File::open(file.path()).unwrap());
        w.file = file;
        w.stage = vec![0u8; DIRECT_BYTES + DIRECT_ALIGN];
        w.start = w.stage.as_ptr().align_offset(DIRECT_ALIGN);
        let buffered = write(w);
        assert!(
            buffered == expected,
            "{} bytes, not {}",
            buffered.len(),
            expected.len()
        );
    }

    #[test]
    fn a_sink_dropped_before_its_end_removes_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("requests.jsonl");
        let mut sink = ExportSink::start(temp(dir.path()), cache(dir.path()), &target).unwrap();
        sink.lines(b"{}\n".to_vec()).unwrap();
        assert_eq!(partials(dir.path()), 1);
        drop(sink);
        assert_eq!(partials(dir.path()), 0);
        assert!(!target.exists());
    }

    #[test]
    fn a_writer_that_fails_reports_why_and_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("requests.jsonl");
        let cache = cache(dir.path());
        let mut sink = ExportSink::start(temp(dir.path()), cache, &target).unwrap();
        // a cache without the export tables (no export began in it): the insert fails
        let bad = || {
            vec![ExportItem {
                key: "0".repeat(64),
                spec: 12345,
                sample: 0,
            }]
        };
        sink.lines(b"{}\n".to_vec()).unwrap();
        // the failure shows at a later send of requests, at the latest at the end
        let mut result = sink.items(bad());
        for _ in 0..(ITEM_BATCHES_PENDING + 2) {
            if result.is_err() {
                break;
            }
            result = sink.items(bad());
        }
        let err = match result {
            Err(e) => {
                drop(sink);
                e
            }
            Ok(()) => sink.finish().err().unwrap(),
        };
        assert!(err.to_string().contains("batch_export_item"), "{err}");
        assert_eq!(partials(dir.path()), 0);
        assert!(!target.exists());
    }
}
