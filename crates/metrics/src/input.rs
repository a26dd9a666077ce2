//! Reading qrels and runs for evaluation, fast.
//!
//! Runs can hold ten million lines, so the TREC run reader memory-maps the file and makes two
//! passes: the first finds each query's line ranges (hash grouping by qid, so a file whose
//! queries are interleaved costs no more than a sorted one, unlike trec_eval's per-query
//! linear scan), the second parses one query's lines at a time straight from the mapping, with
//! no per-line allocation. Queries are evaluated independently, so the second pass runs in
//! parallel. Qrels are small by comparison and are read into per-query hash maps.
//!
//! Formats: TREC qrels (`qid iter docno grade`), BEIR qrels (`qid docno grade`, optional
//! header), TREC runs (`qid Q0 docno rank score tag [ignored...]`) and MTRAG run JSONL
//! (`{"task_id", "contexts": [{"document_id", "score"}]}`, rank = position). `#` starts a
//! comment line in TREC files, as in trec_eval. Every bad line is an error naming file and line.

use std::path::{Path, PathBuf};

use ahash::AHashMap;
use memmap2::Mmap;

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

/// The judgements of one query.
#[derive(Debug, Clone)]
pub struct QrelsQuery {
    pub qid: String,
    pub(crate) judged: AHashMap<Box<[u8]>, i32>,
    /// (grade, count) for grades >= 0, ascending by grade, counts > 0.
    pub(crate) levels: Vec<(i64, u64)>,
    /// Judgements with grade > 0 (trec_eval's `-c` num_rel summary counts these).
    pub(crate) num_positive: u64,
}

impl QrelsQuery {
    fn new(qid: String) -> Self {
        QrelsQuery {
            qid,
            judged: AHashMap::new(),
            levels: Vec::new(),
            num_positive: 0,
        }
    }

    fn finish(&mut self) {
        let mut counts: std::collections::BTreeMap<i64, u64> = std::collections::BTreeMap::new();
        let mut pos = 0;
        for g in self.judged.values() {
            if *g >= 0 {
                *counts.entry(i64::from(*g)).or_default() += 1;
            }
            if *g > 0 {
                pos += 1;
            }
        }
        self.levels = counts.into_iter().collect();
        self.num_positive = pos;
    }

    /// Number of judged documents with grade >= `level` (trec_eval's num_rel; negative grades
    /// never count).
    pub fn num_rel(&self, level: i64) -> u64 {
        self.levels
            .iter()
            .filter(|(g, _)| *g >= level)
            .map(|(_, c)| c)
            .sum()
    }

    /// The grade of a document, if judged.
    pub fn grade(&self, doc: &[u8]) -> Option<i32> {
        self.judged.get(doc).copied()
    }

    pub fn len(&self) -> usize {
        self.judged.len()
    }
    pub fn is_empty(&self) -> bool {
        self.judged.is_empty()
    }
}

/// Qrels ready for evaluation: queries in qid byte order (trec_eval's order).
#[derive(Debug, Clone, Default)]
pub struct EvalQrels {
    pub(crate) queries: Vec<QrelsQuery>,
    pub(crate) index: AHashMap<Box<[u8]>, usize>,
    pub(crate) origin: PathBuf,
}

impl EvalQrels {
    pub fn queries(&self) -> &[QrelsQuery] {
        &self.queries
    }
    pub fn get(&self, qid: &str) -> Option<&QrelsQuery> {
        self.index.get(qid.as_bytes()).map(|i| &self.queries[*i])
    }
    pub fn len(&self) -> usize {
        self.queries.len()
    }
    pub fn is_empty(&self) -> bool {
        self.queries.is_empty()
    }
    /// The file the qrels came from (`<qrels>` when built in memory).
    pub fn origin(&self) -> &Path {
        &self.origin
    }

    fn from_map(mut map: AHashMap<Box<[u8]>, QrelsQuery>, origin: PathBuf) -> Self {
        let mut queries: Vec<QrelsQuery> = map.drain().map(|(_, q)| q).collect();
        queries.sort_unstable_by(|a, b| a.qid.as_bytes().cmp(b.qid.as_bytes()));
        for q in &mut queries {
            q.finish();
        }
        let index = queries
            .iter()
            .enumerate()
            .map(|(i, q)| (q.qid.as_bytes().to_vec().into_boxed_slice(), i))
            .collect();
        EvalQrels {
            queries,
            index,
            origin,
        }
    }

    /// From the data model's qrels (which cannot hold duplicates).
    pub fn from_qrels(qrels: &mtr_core::Qrels) -> Self {
        let mut map: AHashMap<Box<[u8]>, QrelsQuery> = AHashMap::with_capacity(qrels.len());
        for (qid, docs) in qrels {
            let mut q = QrelsQuery::new(qid.clone());
            q.judged.reserve(docs.len());
            for (d, g) in docs {
                q.judged
                    .insert(d.as_bytes().to_vec().into_boxed_slice(), *g);
            }
            map.insert(qid.as_bytes().to_vec().into_boxed_slice(), q);
        }
        EvalQrels::from_map(map, PathBuf::from("<qrels>"))
    }
}

/// Reads a TREC (4 columns) or BEIR (3 columns, optional header) qrels file.
pub fn read_qrels_file(path: impl AsRef<Path>, dedup: Dedup) -> Result<EvalQrels> {
    let path = path.as_ref();
    let bytes = std::fs::read(path).map_err(|e| MetricsError::io(path, e))?;
    parse_qrels(&bytes, path, dedup)
}

type QrelsKey = (Box<[u8]>, Box<[u8]>);

pub(crate) fn parse_qrels(bytes: &[u8], path: &Path, dedup: Dedup) -> Result<EvalQrels> {
    let mut map: AHashMap<Box<[u8]>, QrelsQuery> = AHashMap::new();
    // (qid, docno) -> line of its first judgement, for duplicate errors.
    let mut first_line: AHashMap<QrelsKey, u64> = AHashMap::new();
    let mut seen_content = false;
    let mut cur_qid: Option<Box<[u8]>> = None;
    for (no, line) in lines(bytes) {
        let mut toks = Tokens::new(line);
        let Some(first) = toks.next() else { continue };
        if first.first() == Some(&b'#') {
            continue;
        }
        let mut cols: [&[u8]; 4] = [first, b"", b"", b""];
        let mut n = 1;
        for t in toks.by_ref() {
            if n == 4 {
                return Err(bad_line(
                    path,
                    no,
                    "expected 4 columns (qid iter docno grade) or 3 (qid docno grade)",
                )
                .into());
            }
            cols[n] = t;
            n += 1;
        }
        let (qid, doc, grade) = match n {
            4 => (cols[0], cols[2], cols[3]),
            3 => (cols[0], cols[1], cols[2]),
            _ => {
                return Err(bad_line(
                    path,
                    no,
                    "expected 4 columns (qid iter docno grade) or 3 (qid docno grade)",
                )
                .into());
            }
        };
        let grade_v = parse_grade(grade);
        if !seen_content {
            seen_content = true;
            if grade_v.is_none() && is_header(first) {
                continue;
            }
        }
        let Some(grade_v) = grade_v else {
            return Err(InputError::new(
                path,
                format!(
                    "grade `{}` is not an integer",
                    String::from_utf8_lossy(grade)
                ),
            )
            .line(no)
            .field("grade")
            .into());
        };
        if cur_qid.as_deref() != Some(qid) {
            cur_qid = Some(qid.to_vec().into_boxed_slice());
        }
        let q = match map.get_mut(qid) {
            Some(q) => q,
            None => {
                let s = std::str::from_utf8(qid).map_err(|_| {
                    InputError::new(path, "query id is not valid UTF-8")
                        .line(no)
                        .field("qid")
                })?;
                map.entry(qid.to_vec().into_boxed_slice())
                    .or_insert_with(|| QrelsQuery::new(s.to_string()))
            }
        };
        if q.judged.contains_key(doc) {
            if dedup == Dedup::First {
                continue;
            }
            let first = first_line
                .get(&(qid.into(), doc.into()))
                .copied()
                .unwrap_or(0);
            return Err(InputError::new(
                path,
                format!(
                    "duplicate judgement for query `{}`, document `{}` (first at line {first})",
                    String::from_utf8_lossy(qid),
                    String::from_utf8_lossy(doc)
                ),
            )
            .line(no)
            .field("docno")
            .hint("trec_eval rejects duplicate judgements; use --dedup first to keep the first")
            .into());
        }
        q.judged.insert(doc.into(), grade_v);
        if dedup == Dedup::Error {
            first_line.insert((qid.into(), doc.into()), no);
        }
    }
    Ok(EvalQrels::from_map(map, path.to_path_buf()))
}

fn is_header(first: &[u8]) -> bool {
    let f = String::from_utf8_lossy(first).to_ascii_lowercase();
    matches!(
        f.as_str(),
        "query-id" | "query_id" | "qid" | "query" | "queryid" | "topic"
    )
}

/// A grade as trec_eval's atol reads a well-formed one; `2.0` is accepted as 2.
fn parse_grade(tok: &[u8]) -> Option<i32> {
    let s = std::str::from_utf8(tok).ok()?;
    if let Ok(v) = s.parse::<i32>() {
        return Some(v);
    }
    let f: f64 = s.parse().ok()?;
    if f.is_finite() && f.fract() == 0.0 && f.abs() < 1e9 {
        Some(f as i32)
    } else {
        None
    }
}

fn bad_line(path: &Path, no: u64, msg: &str) -> InputError {
    InputError::new(path, msg).line(no)
}

/// Lines of a byte buffer with 1-based numbers; a final line without newline is included,
/// `\r\n` endings are accepted.
pub(crate) fn lines(bytes: &[u8]) -> impl Iterator<Item = (u64, &[u8])> {
    let mut pos = 0usize;
    let mut no = 0u64;
    std::iter::from_fn(move || {
        if pos >= bytes.len() {
            return None;
        }
        let end = memchr::memchr(b'\n', &bytes[pos..]).map_or(bytes.len(), |i| pos + i);
        let line = &bytes[pos..end];
        pos = end + 1;
        no += 1;
        Some((no, line))
    })
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
}

#[inline]
fn is_space(b: u8) -> bool {
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

/// One retrieved document of one query, before ranking.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cand<'a> {
    pub doc: &'a [u8],
    pub score: f64,
    /// 1-based line in the run file; 0 when the run came from memory.
    pub line: u64,
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
    /// Query `i`'s candidates are no longer borrowed: its input may be dropped from memory.
    fn release(&self, _i: usize) {}
}

/// A memory-mapped TREC run with its per-query line ranges.
#[derive(Debug)]
pub struct TrecRunFile {
    path: PathBuf,
    map: Option<Mmap>,
    qids: Vec<Box<[u8]>>,
    /// Per query: (start byte, end byte, first line number) of each contiguous block.
    ranges: Vec<Vec<(usize, usize, u64)>>,
    index: AHashMap<Box<[u8]>, usize>,
    run_id: Option<String>,
    lines: usize,
}

impl TrecRunFile {
    /// Maps the file and groups its lines by query (first pass).
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let file = std::fs::File::open(path).map_err(|e| MetricsError::io(path, e))?;
        let len = file
            .metadata()
            .map_err(|e| MetricsError::io(path, e))?
            .len();
        // SAFETY: the mapping is read-only and private to this process; like every mmap-based
        // reader we assume the file is not truncated while it is being evaluated.
        let map = if len == 0 {
            None
        } else {
            let m = unsafe { Mmap::map(&file) }.map_err(|e| MetricsError::io(path, e))?;
            let _ = m.advise(memmap2::Advice::Sequential);
            Some(m)
        };
        let mut run = TrecRunFile {
            path: path.to_path_buf(),
            map,
            qids: Vec::new(),
            ranges: Vec::new(),
            index: AHashMap::new(),
            run_id: None,
            lines: 0,
        };
        run.group()?;
        Ok(run)
    }

    fn bytes(&self) -> &[u8] {
        self.map.as_deref().unwrap_or(&[])
    }

    /// Drops the whole pages inside `start..end` from this process's resident set (the kernel
    /// keeps them in the page cache and maps them again on access), so that evaluating a run
    /// larger than memory keeps a small footprint.
    fn drop_pages(&self, start: usize, end: usize) {
        #[cfg(unix)]
        if let Some(map) = &self.map {
            const PAGE: usize = 4096;
            let s = start.div_ceil(PAGE) * PAGE;
            let e = end / PAGE * PAGE;
            if e > s {
                // SAFETY: the mapping is read-only and never written, so MADV_DONTNEED only
                // discards clean pages that are re-read from the file on the next access; no
                // data can be lost, and slices into the mapping stay valid.
                let _ = unsafe {
                    map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, s, e - s)
                };
            }
        }
        #[cfg(not(unix))]
        let _ = (start, end);
    }

    fn group(&mut self) -> Result<()> {
        let mut qids: Vec<Box<[u8]>> = Vec::new();
        let mut ranges: Vec<Vec<(usize, usize, u64)>> = Vec::new();
        let mut index: AHashMap<Box<[u8]>, usize> = AHashMap::new();
        let mut last_content: Option<(u64, usize, usize)> = None;
        let mut n_lines = 0usize;
        let mut released = 0usize;
        {
            let bytes = self.bytes();
            let mut cur: Option<usize> = None;
            let mut cur_qid: &[u8] = b"";
            let mut pos = 0usize;
            let mut no = 0u64;
            while pos < bytes.len() {
                let end = memchr::memchr(b'\n', &bytes[pos..]).map_or(bytes.len(), |i| pos + i);
                let line = &bytes[pos..end];
                no += 1;
                let mut t = Tokens::new(line);
                if let Some(qid) = t.next()
                    && qid[0] != b'#'
                {
                    n_lines += 1;
                    last_content = Some((no, pos, end));
                    let same = cur.is_some() && qid == cur_qid;
                    if same {
                        if let Some(q) = cur
                            && let Some(r) = ranges[q].last_mut()
                        {
                            r.1 = end;
                        }
                    } else {
                        let q = match index.get(qid) {
                            Some(q) => *q,
                            None => {
                                let q = qids.len();
                                qids.push(qid.into());
                                ranges.push(Vec::new());
                                index.insert(qid.into(), q);
                                q
                            }
                        };
                        ranges[q].push((pos, end, no));
                        cur = Some(q);
                        cur_qid = qid;
                    }
                }
                pos = end + 1;
                if pos - released >= 64 << 20 {
                    self.drop_pages(released, pos);
                    released = pos;
                }
            }
        }
        if let Some((no, s, e)) = last_content {
            let line = &self.bytes()[s..e];
            let toks: Vec<&[u8]> = Tokens::new(line).take(6).collect();
            if toks.len() < 6 {
                return Err(bad_line(
                    &self.path,
                    no,
                    "expected 6 columns (qid Q0 docno rank score tag)",
                )
                .into());
            }
            self.run_id = Some(String::from_utf8_lossy(toks[5]).into_owned());
        }
        self.qids = qids;
        self.ranges = ranges;
        self.index = index;
        self.lines = n_lines;
        Ok(())
    }
}

impl RunSource for TrecRunFile {
    fn len(&self) -> usize {
        self.qids.len()
    }
    fn find(&self, qid: &[u8]) -> Option<usize> {
        self.index.get(qid).copied()
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

    fn release(&self, i: usize) {
        for &(start, end, _) in &self.ranges[i] {
            self.drop_pages(start, end);
        }
    }

    fn candidates<'a>(&'a self, i: usize, compat: Compat, out: &mut Vec<Cand<'a>>) -> Result<()> {
        let bytes = self.bytes();
        for &(start, end, first_no) in &self.ranges[i] {
            let block = &bytes[start..end];
            let mut no = first_no;
            let mut pos = 0usize;
            while pos <= block.len() {
                let e = memchr::memchr(b'\n', &block[pos..]).map_or(block.len(), |k| pos + k);
                let line = &block[pos..e];
                let mut t = Tokens::new(line);
                if let Some(q) = t.next()
                    && q[0] != b'#'
                {
                    let (Some(_iter), Some(doc), Some(_rank), Some(score), Some(_tag)) =
                        (t.next(), t.next(), t.next(), t.next(), t.next())
                    else {
                        return Err(bad_line(
                            &self.path,
                            no,
                            "expected 6 columns (qid Q0 docno rank score tag)",
                        )
                        .into());
                    };
                    let score = parse_score(score).ok_or_else(|| {
                        InputError::new(
                            &self.path,
                            format!("score `{}` is not a number", String::from_utf8_lossy(score)),
                        )
                        .line(no)
                        .field("score")
                    })?;
                    out.push(Cand {
                        doc,
                        score: compat.score(score),
                        line: no,
                    });
                }
                pos = e + 1;
                no += 1;
            }
        }
        Ok(())
    }
}

#[inline]
fn parse_score(tok: &[u8]) -> Option<f64> {
    // Scores are ASCII; from_utf8 on a short token is cheap and lets std's correctly rounded
    // parser (same result as C's strtod) do the work.
    std::str::from_utf8(tok).ok()?.parse::<f64>().ok()
}

/// A run held in memory (from `mtr_core::Run` or MTRAG JSONL).
#[derive(Debug)]
pub struct MemRun {
    origin: PathBuf,
    qids: Vec<String>,
    docs: Vec<Vec<(String, f64, u64)>>,
    index: AHashMap<Box<[u8]>, usize>,
    run_id: Option<String>,
    lines: usize,
}

impl MemRun {
    pub fn from_run(run: &mtr_core::Run) -> Self {
        let mut m = MemRun::empty(PathBuf::from("<run>"));
        for (q, docs) in run {
            let i = m.query(q);
            m.docs[i].extend(docs.iter().map(|(d, s)| (d.clone(), *s, 0)));
            m.lines += docs.len();
        }
        m
    }

    fn empty(origin: PathBuf) -> Self {
        MemRun {
            origin,
            qids: Vec::new(),
            docs: Vec::new(),
            index: AHashMap::new(),
            run_id: None,
            lines: 0,
        }
    }

    fn query(&mut self, qid: &str) -> usize {
        if let Some(i) = self.index.get(qid.as_bytes()) {
            return *i;
        }
        let i = self.qids.len();
        self.qids.push(qid.to_string());
        self.docs.push(Vec::new());
        self.index.insert(qid.as_bytes().into(), i);
        i
    }

    /// Reads an MTRAG run JSONL file: one task per line, documents in `contexts` order with
    /// their given scores (rank = position). A task without contexts retrieved nothing.
    pub fn read_mtrag_jsonl(path: impl AsRef<Path>) -> Result<Self> {
        #[derive(serde::Deserialize)]
        struct Ctx {
            document_id: serde_json::Value,
            #[serde(default)]
            score: Option<f64>,
        }
        #[derive(serde::Deserialize)]
        struct Task {
            task_id: serde_json::Value,
            #[serde(default)]
            contexts: Vec<Ctx>,
        }
        fn id_text(v: &serde_json::Value) -> Option<String> {
            match v {
                serde_json::Value::String(s) => Some(s.clone()),
                serde_json::Value::Number(n) => Some(n.to_string()),
                _ => None,
            }
        }
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|e| MetricsError::io(path, e))?;
        let mut m = MemRun::empty(path.to_path_buf());
        let bytes = bytes
            .strip_prefix(b"\xEF\xBB\xBF".as_slice())
            .unwrap_or(&bytes);
        for (no, line) in lines(bytes) {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.iter().all(|b| b.is_ascii_whitespace()) {
                continue;
            }
            let task: Task = serde_json::from_slice(line).map_err(|e| {
                InputError::new(path, format!("not an MTRAG run record: {e}")).line(no)
            })?;
            let qid = id_text(&task.task_id).ok_or_else(|| {
                InputError::new(path, "task_id must be a string")
                    .line(no)
                    .field("task_id")
            })?;
            let n = task.contexts.len();
            let i = m.query(&qid);
            for (k, c) in task.contexts.into_iter().enumerate() {
                let doc = id_text(&c.document_id).ok_or_else(|| {
                    InputError::new(path, "document_id must be a string")
                        .line(no)
                        .field(format!("contexts[{k}].document_id"))
                })?;
                // Without a score, rank order is the only information: score = -rank.
                let score = c.score.unwrap_or(-(k as f64 + 1.0));
                m.docs[i].push((doc, score, no));
            }
            m.lines += n;
        }
        // A task listed with no contexts retrieved nothing: it is absent from the run, as
        // trec_eval would see it after conversion.
        let keep: Vec<usize> = (0..m.qids.len())
            .filter(|i| !m.docs[*i].is_empty())
            .collect();
        if keep.len() != m.qids.len() {
            let mut n = MemRun::empty(m.origin.clone());
            for i in keep {
                let j = n.query(&m.qids[i]);
                n.docs[j] = std::mem::take(&mut m.docs[i]);
            }
            n.lines = m.lines;
            m = n;
        }
        Ok(m)
    }

    /// As an `mtr_core::Run` (documents in input order).
    pub fn to_run(&self) -> mtr_core::Run {
        self.qids
            .iter()
            .zip(&self.docs)
            .map(|(q, d)| {
                (
                    q.clone(),
                    d.iter().map(|(doc, s, _)| (doc.clone(), *s)).collect(),
                )
            })
            .collect()
    }
}

impl RunSource for MemRun {
    fn len(&self) -> usize {
        self.qids.len()
    }
    fn find(&self, qid: &[u8]) -> Option<usize> {
        self.index.get(qid).copied()
    }
    fn run_id(&self) -> Option<&str> {
        self.run_id.as_deref()
    }
    fn origin(&self) -> &Path {
        &self.origin
    }
    fn num_lines(&self) -> usize {
        self.lines
    }
    fn candidates<'a>(&'a self, i: usize, compat: Compat, out: &mut Vec<Cand<'a>>) -> Result<()> {
        out.extend(self.docs[i].iter().map(|(d, s, l)| Cand {
            doc: d.as_bytes(),
            score: compat.score(*s),
            line: *l,
        }));
        Ok(())
    }
}

/// A run file in any supported format, detected from its first non-blank byte (`{` = MTRAG
/// JSONL, anything else TREC).
#[derive(Debug)]
pub enum RunFile {
    Trec(TrecRunFile),
    Mem(MemRun),
}

impl RunFile {
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        if sniff_jsonl(path)? {
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

fn sniff_jsonl(path: &Path) -> Result<bool> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn qrels_formats_and_header() {
        let d = tempfile::tempdir().unwrap();
        let p = write(
            &d,
            "q",
            "query-id\tcorpus-id\tscore\nq2\td1\t1\n# c\nq1 0 d2 -1\r\nq1 0 d3 2.0\n",
        );
        let q = read_qrels_file(&p, Dedup::Error).unwrap();
        assert_eq!(
            q.queries()
                .iter()
                .map(|q| q.qid.as_str())
                .collect::<Vec<_>>(),
            ["q1", "q2"]
        );
        let q1 = q.get("q1").unwrap();
        assert_eq!(q1.grade(b"d2"), Some(-1));
        assert_eq!(q1.levels, vec![(2, 1)]);
        assert_eq!(q1.num_rel(1), 1);
    }

    #[test]
    fn qrels_errors_name_the_line() {
        let d = tempfile::tempdir().unwrap();
        let p = write(&d, "q", "q1 0 d1 1\nq1 0 d1 2\n");
        let e = read_qrels_file(&p, Dedup::Error).unwrap_err().to_string();
        assert!(
            e.contains(":2") && e.contains("duplicate") && e.contains("line 1"),
            "{e}"
        );
        let q = read_qrels_file(&p, Dedup::First).unwrap();
        assert_eq!(q.get("q1").unwrap().grade(b"d1"), Some(1));
        let p = write(&d, "q2", "q1 0 d1 1\nq1 0 d2 x\n");
        let e = read_qrels_file(&p, Dedup::Error).unwrap_err().to_string();
        assert!(e.contains(":2") && e.contains("grade"), "{e}");
        let p = write(&d, "q3", "q1 0 d1 1 5\n");
        assert!(
            read_qrels_file(&p, Dedup::Error)
                .unwrap_err()
                .to_string()
                .contains(":1")
        );
    }

    #[test]
    fn trec_run_groups_interleaved_queries() {
        let d = tempfile::tempdir().unwrap();
        let p = write(
            &d,
            "r",
            "q1 Q0 a 1 3 t\nq2 Q0 b 1 2 t\n\n# x\nq1 Q0 c 2 1.5e0 t\nq1 Q0 e 3 1 last",
        );
        let r = TrecRunFile::open(&p).unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r.run_id(), Some("last"));
        let mut out = Vec::new();
        r.candidates(r.find(b"q1").unwrap(), Compat::TrecEval10, &mut out)
            .unwrap();
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
    fn bad_run_lines_are_errors_with_line_numbers() {
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
    }

    #[test]
    fn mtrag_jsonl_run() {
        let d = tempfile::tempdir().unwrap();
        let p = write(
            &d,
            "r.jsonl",
            "{\"task_id\":\"c<::>1\",\"contexts\":[{\"document_id\":\"x\",\"score\":30.030314819923753},{\"document_id\":\"y\",\"score\":2}]}\n{\"task_id\":\"c<::>2\",\"contexts\":[]}\n",
        );
        let r = RunFile::open(&p).unwrap();
        assert!(matches!(r, RunFile::Mem(_)));
        let run = run_from_mtrag_jsonl(&p).unwrap();
        assert_eq!(run.len(), 1);
        assert_eq!(run["c<::>1"][0], ("x".to_string(), 30.030314819923753));
        let p = write(
            &d,
            "bad.jsonl",
            "{\"task_id\":\"a\",\"contexts\":[{\"document_id\":\"x\"}]}\n{oops\n",
        );
        let e = RunFile::open(&p).err().unwrap().to_string();
        assert!(e.contains(":2"), "{e}");
    }

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
}
