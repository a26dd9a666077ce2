//! The export file's order: its lines sorted by their bytes, so that one export gives the same
//! file every run whatever order its calls finished in (the calls of a judge run concurrently,
//! and whichever finishes first reaches the exporter first).
//!
//! Each line starts with its `custom_id`, the call's cache key, which no two lines share: the
//! byte order of the lines is the order of their keys, a function of what is exported alone.
//! Lines gather in memory up to [`RUN_BYTES`]; a full run is sorted and spilled to an
//! unnamed temporary file beside the export, and at the end the runs are merged into the
//! export file (one run, the usual case, never touches the disk before the file itself). The
//! memory held is one run and a read buffer per spilled run, however large the export.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Seek, Write};
use std::path::{Path, PathBuf};

/// Bytes of lines held in memory before they are sorted and spilled to a run file.
pub(super) const RUN_BYTES: usize = 64 << 20;

/// Bytes handed to the output at a time while writing the sorted lines.
const OUT_BYTES: usize = 1 << 20;

/// Lines gathered for the export, written out in byte order by [`SortedLines::write_to`].
pub(super) struct SortedLines {
    /// Where run files are made (the export's folder).
    dir: PathBuf,
    run_bytes: usize,
    /// The run in memory: whole lines, each ending in `\n`, and where each starts.
    run: Vec<u8>,
    starts: Vec<usize>,
    /// Sorted runs spilled to disk.
    spilled: Vec<File>,
}

impl SortedLines {
    /// Lines whose runs spill (to unnamed files in `dir`) past `run_bytes` bytes.
    pub(super) fn new(dir: &Path, run_bytes: usize) -> Self {
        Self {
            dir: dir.to_path_buf(),
            run_bytes,
            run: Vec::new(),
            starts: Vec::new(),
            spilled: Vec::new(),
        }
    }

    /// Adds whole lines (a last line without its `\n` gets one).
    pub(super) fn add(&mut self, lines: &[u8]) -> std::io::Result<()> {
        for line in lines.split_inclusive(|b| *b == b'\n') {
            self.starts.push(self.run.len());
            self.run.extend_from_slice(line);
            if !line.ends_with(b"\n") {
                self.run.push(b'\n');
            }
        }
        if self.run.len() >= self.run_bytes {
            self.spill()?;
        }
        Ok(())
    }

    /// The run in memory, its lines sorted.
    fn sorted_run(&self) -> Vec<&[u8]> {
        let ends = self.starts.iter().skip(1).copied().chain([self.run.len()]);
        let mut lines: Vec<&[u8]> = self
            .starts
            .iter()
            .zip(ends)
            .map(|(&a, b)| &self.run[a..b])
            .collect();
        lines.sort_unstable();
        lines
    }

    /// Sorts the run in memory into a run file of its own.
    fn spill(&mut self) -> std::io::Result<()> {
        let mut file = BufWriter::new(tempfile::tempfile_in(&self.dir)?);
        for line in self.sorted_run() {
            file.write_all(line)?;
        }
        let mut file = file.into_inner().map_err(|e| e.into_error())?;
        file.rewind()?;
        self.spilled.push(file);
        self.run.clear();
        self.starts.clear();
        Ok(())
    }

    /// Writes every line added, in byte order, through `out` (called with about
    /// [`OUT_BYTES`] of whole lines at a time).
    pub(super) fn write_to(
        mut self,
        mut out: impl FnMut(&[u8]) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let mut buf = Vec::with_capacity(OUT_BYTES);
        let mut put = |line: &[u8], flush: bool| -> std::io::Result<()> {
            buf.extend_from_slice(line);
            if flush || buf.len() >= OUT_BYTES {
                out(&buf)?;
                buf.clear();
            }
            Ok(())
        };
        if self.spilled.is_empty() {
            for line in self.sorted_run() {
                put(line, false)?;
            }
            return put(&[], true);
        }
        if !self.run.is_empty() {
            self.spill()?;
        }
        let mut runs: Vec<BufReader<File>> = self.spilled.into_iter().map(BufReader::new).collect();
        let mut heap = BinaryHeap::new();
        for (i, run) in runs.iter_mut().enumerate() {
            if let Some(line) = next_line(run)? {
                heap.push(Reverse((line, i)));
            }
        }
        while let Some(Reverse((line, i))) = heap.pop() {
            put(&line, false)?;
            if let Some(next) = next_line(&mut runs[i])? {
                heap.push(Reverse((next, i)));
            }
        }
        put(&[], true)
    }
}

/// The next line of a run file, `\n` included.
fn next_line(run: &mut BufReader<File>) -> std::io::Result<Option<Vec<u8>>> {
    let mut line = Vec::new();
    Ok((run.read_until(b'\n', &mut line)? > 0).then_some(line))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(chunks: &[&[u8]], run_bytes: usize) -> (Vec<u8>, usize) {
        let dir = tempfile::tempdir().unwrap();
        let mut lines = SortedLines::new(dir.path(), run_bytes);
        for c in chunks {
            lines.add(c).unwrap();
        }
        let runs = lines.spilled.len();
        let mut out = Vec::new();
        lines
            .write_to(|b| {
                out.extend_from_slice(b);
                Ok(())
            })
            .unwrap();
        (out, runs)
    }

    #[test]
    fn lines_come_out_in_byte_order_in_memory_and_from_spilled_runs() {
        let lines: Vec<String> = (0..200)
            .map(|i| format!("{{\"custom_id\":\"{:04}\",\"n\":{i}}}\n", (i * 37) % 200))
            .collect();
        let mut expected = lines.clone();
        expected.sort();
        let expected = expected.concat().into_bytes();
        let chunks: Vec<&[u8]> = lines.iter().map(|l| l.as_bytes()).collect();
        let (in_memory, runs) = sorted(&chunks, 1 << 20);
        assert_eq!(runs, 0);
        assert!(in_memory == expected);
        let (spilled, runs) = sorted(&chunks, 500);
        assert!(runs > 5, "{runs}");
        assert!(spilled == expected);
    }

    #[test]
    fn a_last_line_without_its_end_gets_one() {
        let (out, _) = sorted(&[b"b\na"], 1 << 20);
        assert_eq!(out, b"a\nb\n");
    }
}
