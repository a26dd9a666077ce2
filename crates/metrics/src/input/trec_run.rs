//! A memory-mapped TREC run (`qid Q0 docno rank score tag [ignored...]`): the first pass
//! records each query's blocks of consecutive lines, the second (per query, on demand) parses
//! them straight from the mapping. Pages already processed are handed back to the kernel so
//! the resident set stays far below the file size.

use std::path::{Path, PathBuf};

use memmap2::Mmap;

use super::{
    Cand, Compat, IdIndex, RUN_FIELDS, RunSource, Tokens, Utf8Ahead, bad_line, doc_hash,
    has_lone_cr_line_ends, is_space, line_spans, lone_cr_to_lf, parse_score, short_eq, strip_bom,
};
use crate::error::{MetricsError, Result};
use mtr_core::InputError;

pub(crate) const COLUMNS: &str = "expected 6 columns (qid Q0 docno rank score tag)";

/// Maps a file read-only (`None` for an empty file), advising sequential access.
pub(crate) fn map_file(path: &Path) -> Result<Option<Mmap>> {
    let file = std::fs::File::open(path).map_err(|e| MetricsError::io(path, e))?;
    let len = file
        .metadata()
        .map_err(|e| MetricsError::io(path, e))?
        .len();
    if len == 0 {
        return Ok(None);
    }
    // SAFETY: the mapping is read-only and private to this process; like every mmap-based
    // reader we assume the file is not truncated while it is evaluated.
    let m = unsafe { Mmap::map(&file) }.map_err(|e| MetricsError::io(path, e))?;
    let _ = m.advise(memmap2::Advice::Sequential);
    Ok(Some(m))
}

/// Drops the whole pages inside `start..end` from this process's resident set (the kernel
/// keeps them in the page cache and maps them again on access).
pub(crate) fn drop_pages(map: &Mmap, start: usize, end: usize) {
    #[cfg(unix)]
    {
        const PAGE: usize = 4096;
        let s = start.div_ceil(PAGE) * PAGE;
        let e = end.min(map.len()) / PAGE * PAGE;
        if e > s {
            // SAFETY: the mapping is read-only and never written, so MADV_DONTNEED only
            // discards clean pages that are read again from the file on the next access; no
            // data can be lost and slices into the mapping stay valid.
            let _ =
                unsafe { map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, s, e - s) };
        }
    }
    #[cfg(not(unix))]
    let _ = (map, start, end);
}

/// A block of consecutive lines of one query: byte span, first line number, next block of
/// the same query (`u32::MAX` = none). Most files have one block per query.
#[derive(Debug, Clone, Copy)]
struct Block {
    start: usize,
    end: usize,
    first_line: u64,
    next: u32,
}

/// Per query: its id (span in `qid_arena`), first and last block, number of lines.
#[derive(Debug, Clone, Copy)]
struct QueryBlocks {
    qid: (usize, usize),
    head: u32,
    tail: u32,
    lines: usize,
}

/// The bytes of a run file: mapped, or (a file with lone `\r` line ends) read and rewritten
/// with `\n` line ends.
#[derive(Debug)]
enum Backing {
    Empty,
    Mapped(Mmap),
    Rewritten(Vec<u8>),
}

/// A memory-mapped TREC run with its per-query line blocks.
#[derive(Debug)]
pub(crate) struct TrecRunFile {
    path: PathBuf,
    map: Backing,
    queries: Vec<QueryBlocks>,
    blocks: Vec<Block>,
    /// Query ids, copied out of the mapping so that looking one up does not bring the
    /// file's pages back into memory.
    qid_arena: Vec<u8>,
    index: IdIndex,
    run_id: Option<String>,
    lines: usize,
}

impl TrecRunFile {
    /// Maps the file and groups its lines by query (first pass).
    pub(crate) fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let map = match map_file(path)? {
            None => Backing::Empty,
            Some(m) if has_lone_cr_line_ends(strip_bom(&m)) => {
                Backing::Rewritten(lone_cr_to_lf(strip_bom(&m)))
            }
            Some(m) => Backing::Mapped(m),
        };
        let mut run = TrecRunFile {
            path: path.to_path_buf(),
            map,
            queries: Vec::new(),
            blocks: Vec::new(),
            qid_arena: Vec::new(),
            index: IdIndex::default(),
            run_id: None,
            lines: 0,
        };
        run.group()?;
        Ok(run)
    }

    /// The run's bytes, a leading byte-order mark left out (every offset is into these).
    fn bytes(&self) -> &[u8] {
        match &self.map {
            Backing::Empty => &[],
            Backing::Mapped(m) => strip_bom(m),
            Backing::Rewritten(v) => v,
        }
    }

    fn drop_pages(&self, start: usize, end: usize) {
        if let Backing::Mapped(map) = &self.map {
            // (offsets are 3 bytes early after a byte-order mark: harmless, they are processed)
            drop_pages(map, start, end);
        }
    }

    fn qid(&self, i: usize) -> &[u8] {
        let (s, e) = self.queries[i].qid;
        &self.qid_arena[s..e]
    }

    fn blocks_of(&self, i: usize) -> impl Iterator<Item = &Block> {
        let mut next = self.queries[i].head;
        std::iter::from_fn(move || {
            let b = self.blocks.get(next as usize)?;
            next = b.next;
            Some(b)
        })
    }

    fn group(&mut self) -> Result<()> {
        let mut g = Grouping::default();
        let mut last_content: Option<(u64, usize, usize)> = None;
        let mut n_lines = 0usize;
        let mut released = 0usize;
        {
            let bytes = self.bytes();
            let mut cur: usize = usize::MAX;
            let mut cur_qid: &[u8] = b"";
            let mut no = 0u64;
            let mut utf8 = Utf8Ahead::default();
            for (pos, end) in line_spans(bytes) {
                let line = &bytes[pos..end];
                no += 1;
                utf8.check(bytes, pos, no, &self.path, RUN_FIELDS)?;
                // Fast path: the line starts with the current qid followed by whitespace.
                let n = cur_qid.len();
                if cur != usize::MAX
                    && line.len() > n
                    && is_space(line[n])
                    && short_eq(&line[..n], cur_qid)
                {
                    n_lines += 1;
                    last_content = Some((no, pos, end));
                    g.extend(cur, end);
                } else if let Some(qid) = Tokens::new(line).next()
                    && qid[0] != b'#'
                {
                    n_lines += 1;
                    last_content = Some((no, pos, end));
                    if cur != usize::MAX && qid == cur_qid {
                        // Same query, with leading whitespace.
                        g.extend(cur, end);
                    } else {
                        cur = g.open_block(qid, pos, end, no);
                        cur_qid = qid;
                    }
                }
                if end + 1 - released >= 64 << 20 {
                    self.drop_pages(released, end + 1);
                    released = end + 1;
                }
            }
        }
        if let Some((no, s, e)) = last_content {
            self.run_id = Some(self.run_id_of(no, s, e)?);
        }
        self.queries = g.queries;
        self.blocks = g.blocks;
        self.qid_arena = g.qid_arena;
        self.index = g.index;
        self.lines = n_lines;
        Ok(())
    }

    /// The tag column of the last content line (trec_eval's runid), which must be complete.
    fn run_id_of(&self, no: u64, start: usize, end: usize) -> Result<String> {
        let line = &self.bytes()[start..end];
        let toks: Vec<&[u8]> = Tokens::new(line).take(6).collect();
        if toks.len() < 6 {
            return Err(bad_line(&self.path, no, COLUMNS).into());
        }
        Ok(String::from_utf8_lossy(toks[5]).into_owned())
    }
}

/// The per-query blocks while the first pass groups the lines.
#[derive(Default)]
struct Grouping {
    queries: Vec<QueryBlocks>,
    blocks: Vec<Block>,
    index: IdIndex,
    qid_arena: Vec<u8>,
}

impl Grouping {
    /// One more line (ending at `end`) of query `q`'s current block.
    #[inline]
    fn extend(&mut self, q: usize, end: usize) {
        let q = &mut self.queries[q];
        q.lines += 1;
        self.blocks[q.tail as usize].end = end;
    }

    /// A line of `qid` that does not continue the previous line's query: a new block, chained
    /// to the query's earlier blocks or starting a new query. Returns the query's index.
    #[inline]
    fn open_block(&mut self, qid: &[u8], pos: usize, end: usize, no: u64) -> usize {
        let h = doc_hash(qid);
        let b = self.blocks.len() as u32;
        self.blocks.push(Block {
            start: pos,
            end,
            first_line: no,
            next: u32::MAX,
        });
        let (queries, arena) = (&self.queries, &self.qid_arena);
        let found = self.index.get(h, |i| {
            let (s, e) = queries[i].qid;
            short_eq(&arena[s..e], qid)
        });
        let q = match found {
            Some(q) => {
                let t = self.queries[q].tail as usize;
                self.blocks[t].next = b;
                self.queries[q].tail = b;
                q
            }
            None => {
                let s = self.qid_arena.len();
                self.qid_arena.extend_from_slice(qid);
                self.queries.push(QueryBlocks {
                    qid: (s, self.qid_arena.len()),
                    head: b,
                    tail: b,
                    lines: 0,
                });
                self.index.push(h)
            }
        };
        self.queries[q].lines += 1;
        q
    }
}

impl RunSource for TrecRunFile {
    fn len(&self) -> usize {
        self.queries.len()
    }
    fn find(&self, qid: &[u8]) -> Option<usize> {
        self.index
            .get(doc_hash(qid), |i| short_eq(self.qid(i), qid))
    }
    fn run_id(&self) -> Option<&str> {
        self.run_id.as_deref()
    }
    fn origin(&self) -> &Path {
        &self.path
    }
    fn num_lines(&self) -> usize {
        self.lines
    }
    fn extent(&self, i: usize) -> (usize, usize) {
        let q = &self.queries[i];
        (self.blocks[q.head as usize].start, q.lines)
    }
    fn span(&self, i: usize) -> (usize, usize) {
        let q = &self.queries[i];
        (
            self.blocks[q.head as usize].start,
            self.blocks[q.tail as usize].end,
        )
    }
    fn release(&self, start: usize, end: usize) {
        self.drop_pages(start, end);
    }

    fn candidates<'a>(&'a self, i: usize, compat: Compat, out: &mut Vec<Cand<'a>>) -> Result<()> {
        let bytes = self.bytes();
        let (qs, qe) = self.queries[i].qid;
        let qid_len = qe - qs;
        debug_assert!(qid_len > 0);
        out.reserve(self.queries[i].lines);
        for b in self.blocks_of(i) {
            let block = &bytes[b.start..b.end];
            let mut p = 0usize;
            let mut no = b.first_line;
            while p < block.len() {
                let b = block[p];
                // The first pass put only this query's lines (plus blank and comment lines) in
                // the block, so a line starting with a non-blank, non-`#` byte starts with
                // this qid: its fields are parsed in place, without finding the line first.
                let after_qid = if b == b'\n' {
                    p += 1;
                    no += 1;
                    continue;
                } else if is_space(b) || b == b'#' {
                    let e = memchr::memchr(b'\n', &block[p..]).map_or(block.len(), |k| p + k);
                    let mut t = Tokens::new(&block[p..e]);
                    match t.next() {
                        Some(q) if q[0] != b'#' => p + t.position(),
                        _ => {
                            p = e + 1;
                            no += 1;
                            continue;
                        }
                    }
                } else {
                    p + qid_len
                };
                let Some((doc, score, c)) = fields(block, after_qid) else {
                    return Err(bad_line(&self.path, no, COLUMNS).into());
                };
                let score = parse_score(score).ok_or_else(|| {
                    InputError::new(
                        &self.path,
                        format!(
                            "score `{}` is not a finite number",
                            String::from_utf8_lossy(score)
                        ),
                    )
                    .line(no)
                    .field("score")
                })?;
                out.push(Cand {
                    doc,
                    score: compat.score(score),
                    line: no,
                    rel: 0,
                });
                p = if block.get(c) == Some(&b'\n') {
                    c + 1
                } else {
                    memchr::memchr(b'\n', &block[c..]).map_or(block.len(), |k| c + k) + 1
                };
                no += 1;
            }
        }
        Ok(())
    }
}

/// The next whitespace-delimited field at or after `c`, stopping at the end of the line.
#[inline]
fn field(b: &[u8], mut c: usize) -> Option<(usize, usize)> {
    while c < b.len() && is_space(b[c]) {
        c += 1;
    }
    let s = c;
    while c < b.len() && !is_space(b[c]) && b[c] != b'\n' {
        c += 1;
    }
    (c > s).then_some((s, c))
}

/// After the qid: iter, docno, rank, score and tag (further fields are ignored). Returns the
/// docno, the score text and the position after the tag; None when a field is missing.
#[inline]
pub(crate) fn fields(b: &[u8], c: usize) -> Option<(&[u8], &[u8], usize)> {
    let (_, c) = field(b, c)?;
    let (ds, de) = field(b, c)?;
    let (_, c) = field(b, de)?;
    let (ss, se) = field(b, c)?;
    let (_, c) = field(b, se)?;
    Some((&b[ds..de], &b[ss..se], c))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::input::write_test_file as write;

    #[test]
    fn groups_interleaved_queries() {
        let d = tempfile::tempdir().unwrap();
        let p = write(
            &d,
            "r",
            "q1 Q0 a 1 3 t\nq2 Q0 b 1 2 t\n\n# x\n  q1 Q0 c 2 1.5e0 t\nq1\tQ0 e 3 1 last",
        );
        let r = TrecRunFile::open(&p).unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r.run_id(), Some("last"));
        assert_eq!(r.num_lines(), 4);
        let mut out = Vec::new();
        let q1 = r.find(b"q1").unwrap();
        assert_eq!(r.extent(q1), (0, 3));
        r.candidates(q1, Compat::TrecEval10, &mut out).unwrap();
        let got: Vec<(&[u8], f64, u64)> = out.iter().map(|c| (c.doc, c.score, c.line)).collect();
        assert_eq!(
            got,
            vec![
                (&b"a"[..], 3.0, 1),
                (&b"c"[..], 1.5, 5),
                (&b"e"[..], 1.0, 6)
            ]
        );
    }

    #[test]
    fn crlf_extra_fields_and_comments_inside_a_block() {
        let d = tempfile::tempdir().unwrap();
        let p = write(
            &d,
            "r",
            "q1 Q0 a 1 3 t extra junk\r\n# note\r\n\r\nq1 Q0 b 2 2.5 t\r\n q1 Q0 c 3 2 t\r\nq1 Q0 d 4 1 t",
        );
        let r = TrecRunFile::open(&p).unwrap();
        let mut out = Vec::new();
        r.candidates(0, Compat::TrecEval10, &mut out).unwrap();
        let got: Vec<(&[u8], f64, u64)> = out.iter().map(|c| (c.doc, c.score, c.line)).collect();
        assert_eq!(
            got,
            vec![
                (&b"a"[..], 3.0, 1),
                (&b"b"[..], 2.5, 4),
                (&b"c"[..], 2.0, 5),
                (&b"d"[..], 1.0, 6)
            ]
        );
        assert_eq!(r.run_id(), Some("t"));
    }

    #[test]
    fn qid_prefix_of_another_qid_is_not_confused() {
        let d = tempfile::tempdir().unwrap();
        let p = write(&d, "r", "q1 Q0 a 1 3 t\nq10 Q0 b 1 2 t\nq1 Q0 c 2 1 t\n");
        let r = TrecRunFile::open(&p).unwrap();
        assert_eq!(r.len(), 2);
        let mut out = Vec::new();
        r.candidates(r.find(b"q10").unwrap(), Compat::TrecEval10, &mut out)
            .unwrap();
        assert_eq!(out.len(), 1);
    }

    #[test]
    fn bad_lines_are_errors_with_line_numbers() {
        let d = tempfile::tempdir().unwrap();
        let p = write(&d, "r", "q1 Q0 a 1 3 t\nq1 Q0 b 2 zz t\n");
        let r = TrecRunFile::open(&p).unwrap();
        let mut out = Vec::new();
        let e = r
            .candidates(0, Compat::TrecEval10, &mut out)
            .unwrap_err()
            .to_string();
        assert!(e.contains(":2") && e.contains("score"), "{e}");
        let p = write(&d, "r2", "q1 Q0 a 1 3\n");
        assert!(
            TrecRunFile::open(&p)
                .unwrap_err()
                .to_string()
                .contains(":1")
        );
        let p = write(&d, "r3", "q1 Q0 a 1 3 t\nq1 Q0 b\nq1 Q0 c 3 1 t\n");
        let r = TrecRunFile::open(&p).unwrap();
        let e = r
            .candidates(0, Compat::TrecEval10, &mut out)
            .unwrap_err()
            .to_string();
        assert!(e.contains(":2") && e.contains("6 columns"), "{e}");
    }

    /// A corrupt byte in a query id made another query of its line, which counted for nothing:
    /// the run lost a document without a word.
    #[test]
    fn a_line_that_is_not_utf8_names_its_line_and_field() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("r");
        std::fs::write(&p, b"q1 Q0 a 1 3 t\nq\xff1 Q0 b 2 2 t\nq1 Q0 c 3 1 t\n").unwrap();
        let e = TrecRunFile::open(&p).unwrap_err().to_string();
        assert!(e.contains("r:2: field `qid`: invalid UTF-8"), "{e}");
        std::fs::write(&p, b"q1 Q0 a 1 3 t\nq1 Q0 b\xe9 2 2 t\n").unwrap();
        let e = TrecRunFile::open(&p).unwrap_err().to_string();
        assert!(e.contains("r:2: field `docno`: invalid UTF-8"), "{e}");
        // UTF-8 ids are ids like any other
        std::fs::write(&p, "q\u{e9} Q0 d\u{f6}c 1 3 t\n").unwrap();
        assert_eq!(TrecRunFile::open(&p).unwrap().len(), 1);
    }
}
