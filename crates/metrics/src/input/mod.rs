//! Reading qrels and runs for evaluation, fast.
//!
//! Runs can hold ten million lines, so the TREC run reader memory-maps the file and makes two
//! passes: the first finds each query's line ranges (hash grouping by qid, so a file whose
//! queries are interleaved costs no more than a sorted one, unlike trec_eval's per-query
//! linear scan), the second parses one query's lines at a time straight from the mapping, with
//! no per-line allocation, and hands processed pages back to the kernel. Document ids are
//! hashed once and looked up in compact per-query tables. Qrels are read into per-query tables
//! built by bucketing and sorting, not one allocation per judgement.
//!
//! Formats: TREC qrels (`qid iter docno grade`), BEIR qrels (`qid docno grade`, optional
//! header), TREC runs (`qid Q0 docno rank score tag [ignored...]`) and MTRAG run JSONL
//! (`{"task_id", "contexts": [{"document_id", "score"}]}`, rank = position). `#` starts a
//! comment line in TREC files, as in trec_eval. Every bad line is an error naming file and line.

mod mem_run;
mod qrels;
mod table;
pub(crate) mod trec_run;

use std::path::Path;

pub use mem_run::MemRun;
pub use qrels::{EvalQrels, QrelsQuery, read_qrels_file};
pub(crate) use table::{IdIndex, SlotTable, doc_hash, short_cmp, short_eq};
pub use trec_run::TrecRunFile;

use crate::error::{MetricsError, Result};
use mtr_core::InputError;

/// What to do with a document listed twice for one query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Dedup {
    /// An error naming the line (trec_eval's behaviour).
    #[default]
    Error,
    /// Keep the first occurrence in file order, drop the rest.
    First,
}

/// Score precision: trec_eval 10.0 reads scores as double, 9.x (and pytrec_eval, hence BEIR
/// and MTEB) as float, which merges scores that differ only beyond float precision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub enum Compat {
    #[default]
    #[serde(rename = "trec_eval_10")]
    TrecEval10,
    #[serde(rename = "trec_eval_9")]
    TrecEval9,
}

impl Compat {
    #[inline]
    pub fn score(self, s: f64) -> f64 {
        match self {
            Compat::TrecEval10 => s,
            Compat::TrecEval9 => s as f32 as f64,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Compat::TrecEval10 => "trec_eval_10",
            Compat::TrecEval9 => "trec_eval_9",
        }
    }
}

pub(crate) fn bad_line(path: &Path, no: u64, msg: &str) -> InputError {
    InputError::new(path, msg).line(no)
}

/// (start, end) byte spans of the lines of a buffer, without their `\n`; a final line without
/// newline is included. One SIMD scan over the whole buffer, not a search per line.
pub(crate) fn line_spans(bytes: &[u8]) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut newlines = memchr::memchr_iter(b'\n', bytes);
    let mut start = 0usize;
    let mut done = false;
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        match newlines.next() {
            Some(e) => {
                let s = start;
                start = e + 1;
                Some((s, e))
            }
            None => {
                done = true;
                (start < bytes.len()).then_some((start, bytes.len()))
            }
        }
    })
}

/// Lines of a byte buffer with 1-based numbers (`\r\n` endings are fine: `\r` is whitespace
/// to [`Tokens`]).
pub(crate) fn lines(bytes: &[u8]) -> impl Iterator<Item = (u64, &[u8])> {
    line_spans(bytes)
        .zip(1u64..)
        .map(|((s, e), no)| (no, &bytes[s..e]))
}

/// Whitespace-separated tokens of a line (space, tab, `\r`, vertical tab, form feed).
pub(crate) struct Tokens<'a> {
    line: &'a [u8],
    pos: usize,
}

impl<'a> Tokens<'a> {
    #[inline]
    pub(crate) fn new(line: &'a [u8]) -> Self {
        Tokens { line, pos: 0 }
    }
    /// Byte offset just after the last token returned.
    #[inline]
    pub(crate) fn position(&self) -> usize {
        self.pos
    }
}

#[inline]
pub(crate) fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\x0b' | b'\x0c')
}

impl<'a> Iterator for Tokens<'a> {
    type Item = &'a [u8];
    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        let l = self.line;
        let mut i = self.pos;
        while i < l.len() && is_space(l[i]) {
            i += 1;
        }
        if i >= l.len() {
            self.pos = i;
            return None;
        }
        let start = i;
        while i < l.len() && !is_space(l[i]) {
            i += 1;
        }
        self.pos = i;
        Some(&l[start..i])
    }
}

/// A score as C's strtod reads a well-formed one. Plain decimals with at most 15 significant
/// digits take Clinger's fast path (mantissa and power of ten are exact doubles, so one
/// correctly rounded division gives the correctly rounded result); anything else goes to std's
/// correctly rounded parser.
#[inline]
pub(crate) fn parse_score(tok: &[u8]) -> Option<f64> {
    const POW10: [f64; 16] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
    ];
    let (neg, digits) = match tok.first() {
        Some(b'-') => (true, &tok[1..]),
        Some(b'+') => (false, &tok[1..]),
        _ => (false, tok),
    };
    let mut mantissa: u64 = 0;
    let mut n_digits = 0usize;
    let mut frac_digits = 0usize;
    let mut seen_dot = false;
    let mut ok = !digits.is_empty();
    for &b in digits {
        match b {
            b'0'..=b'9' => {
                if mantissa == 0 && b == b'0' && !seen_dot {
                    // leading zeros do not count as significant digits
                } else {
                    n_digits += 1;
                }
                mantissa = mantissa.wrapping_mul(10).wrapping_add(u64::from(b - b'0'));
                if seen_dot {
                    frac_digits += 1;
                }
            }
            b'.' if !seen_dot => seen_dot = true,
            _ => {
                ok = false;
                break;
            }
        }
    }
    if ok && n_digits <= 15 && frac_digits < POW10.len() && digits != b"." {
        let v = mantissa as f64 / POW10[frac_digits];
        return Some(if neg { -v } else { v });
    }
    std::str::from_utf8(tok).ok()?.parse::<f64>().ok()
}

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
pub enum RunFile {
    Trec(TrecRunFile),
    Mem(MemRun),
}

impl RunFile {
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
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
    /// Number of result lines (documents) read.
    pub fn num_lines(&self) -> usize {
        self.source().num_lines()
    }
    pub fn num_queries(&self) -> usize {
        self.source().len()
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

/// Writes `text` to `dir/name` and returns the path (tests of the readers).
#[cfg(test)]
pub(crate) fn write_test_file(
    dir: &tempfile::TempDir,
    name: &str,
    text: &str,
) -> std::path::PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn float32_compat_rounds_scores() {
        assert_eq!(
            Compat::TrecEval9.score(97.859726),
            Compat::TrecEval9.score(97.859724)
        );
        assert_ne!(
            Compat::TrecEval10.score(97.859726),
            Compat::TrecEval10.score(97.859724)
        );
    }

    #[test]
    fn score_parsing_edge_cases() {
        for (s, v) in [
            ("1", 1.0),
            ("-2.5", -2.5),
            ("+0.30000001", 0.30000001),
            ("1e-3", 1e-3),
            ("9.99e-4", 9.99e-4),
            ("16777217", 16777217.0),
            ("007.50", 7.5),
            (".5", 0.5),
            ("5.", 5.0),
            (
                "0.1234567890123456789",
                "0.1234567890123456789".parse().unwrap(),
            ),
            ("12345678901234567890", 12345678901234567890.0),
        ] {
            assert_eq!(parse_score(s.as_bytes()), Some(v), "{s}");
        }
        for bad in ["", ".", "-", "1.2.3", "abc", "1,5"] {
            assert_eq!(parse_score(bad.as_bytes()), None, "{bad}");
        }
        assert!(parse_score(b"nan").unwrap().is_nan());
    }

    proptest! {
        #[test]
        fn fast_score_parse_equals_std(int in 0u64..10_000_000_000, frac in 0u32..1_000_000, width in 0usize..9, neg: bool) {
            let s = format!("{}{int}.{frac:0width$}", if neg { "-" } else { "" });
            prop_assert_eq!(parse_score(s.as_bytes()), Some(s.parse::<f64>().unwrap()), "{}", s);
        }
    }
}
