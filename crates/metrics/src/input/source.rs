//! A run however it was read (a mapped TREC file or MTRAG JSONL in memory), as the evaluation
//! sees it: per-query candidate lists in input order.

use std::path::Path;

use super::{Compat, MemRun, TrecRunFile};
use crate::error::{MetricsError, Result};

/// One retrieved document of one query, before ranking.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cand<'a> {
    pub doc: &'a [u8],
    pub score: f64,
    /// 1-based line in the run file; 0 when the run came from memory.
    pub line: u64,
    /// Relevance value, filled in by ranking (grade, or NONPOOL / UNJUDGED).
    pub rel: i32,
}

/// A run, however it was read: per-query candidate lists in input order.
pub(crate) trait RunSource: Sync {
    fn len(&self) -> usize;
    fn find(&self, qid: &[u8]) -> Option<usize>;
    /// Appends query `i`'s documents, in input order, with compat-rounded scores.
    fn candidates<'a>(&'a self, i: usize, compat: Compat, out: &mut Vec<Cand<'a>>) -> Result<()>;
    fn run_id(&self) -> Option<&str>;
    fn origin(&self) -> &Path;
    fn num_lines(&self) -> usize;
    /// Where query `i` starts in the input and how many lines it has, to process queries in
    /// input order and in batches.
    fn extent(&self, i: usize) -> (usize, usize);
    /// Input between these byte offsets is no longer borrowed and may leave memory.
    fn release(&self, _start: usize, _end: usize) {}
    /// The byte span covered by query `i`'s lines.
    fn span(&self, _i: usize) -> (usize, usize) {
        (0, 0)
    }
}

/// A run file in any supported format, detected from its first non-blank byte (`{` or `[` =
/// MTRAG JSONL, anything else TREC).
#[derive(Debug)]
pub(crate) enum RunFile {
    Trec(TrecRunFile),
    Mem(MemRun),
}

impl RunFile {
    pub(crate) fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        if is_jsonl(path)? {
            Ok(RunFile::Mem(MemRun::read_mtrag_jsonl(path)?))
        } else {
            Ok(RunFile::Trec(TrecRunFile::open(path)?))
        }
    }
    pub(crate) fn source(&self) -> &dyn RunSource {
        match self {
            RunFile::Trec(t) => t,
            RunFile::Mem(m) => m,
        }
    }
}

/// True when the file looks like JSON lines (first non-blank byte `{` or `[`).
pub(crate) fn is_jsonl(path: &Path) -> Result<bool> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).map_err(|e| MetricsError::io(path, e))?;
    let mut buf = [0u8; 512];
    let n = f.read(&mut buf).map_err(|e| MetricsError::io(path, e))?;
    let head = buf[..n]
        .strip_prefix(b"\xEF\xBB\xBF".as_slice())
        .unwrap_or(&buf[..n]);
    Ok(head
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|b| *b == b'{' || *b == b'['))
}

/// Reads an MTRAG run JSONL file as an `mtr_core::Run` (rank = position, given score).
pub fn run_from_mtrag_jsonl(path: impl AsRef<Path>) -> Result<mtr_core::Run> {
    Ok(MemRun::read_mtrag_jsonl(path)?.to_run())
}
