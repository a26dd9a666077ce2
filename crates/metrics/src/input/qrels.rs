//! Qrels for evaluation: per query, the judged documents (bytes in one arena, sorted), a slot
//! table for lookups by precomputed hash, the count of judgements per grade and the number of
//! positive judgements. Built from a file by one pass that records (query, doc, grade, line)
//! tuples pointing into the file, a bucket pass by query and a sort per query, which also finds
//! duplicate judgements (an error naming both lines, or keep-first).

use std::path::{Path, PathBuf};

use super::table::{self, IdIndex, SlotTable, doc_hash, short_cmp, short_eq};
use super::{Dedup, QRELS_FIELDS, Tokens, bad_line, lines, utf8_line};
use crate::error::{MetricsError, Result};
use mtr_core::InputError;

/// Queries with at most this many judgements are searched linearly (no slot table).
const LINEAR_MAX: usize = 16;

/// One judged document: its hash, its bytes in the arena, its grade.
#[derive(Debug, Clone, Copy)]
struct Judged {
    hash: u64,
    start: u32,
    end: u32,
    grade: i32,
}

/// The judgements of one query.
#[derive(Debug, Clone)]
pub struct QrelsQuery {
    /// The query id.
    pub qid: String,
    arena: Box<[u8]>,
    /// (start, end, grade) into `arena`, sorted by document id.
    docs: Box<[Judged]>,
    slots: Box<[u32]>,
    /// A 256-bit filter of the judged documents' hashes (see [`filter_bit`]): most retrieved
    /// documents are unjudged, and one bit test rejects most of them without a search.
    filter: [u64; 4],
    /// (grade, count) for grades >= 0, ascending by grade, counts > 0.
    pub(crate) levels: Vec<(i64, u64)>,
    /// Judgements with grade > 0 (trec_eval's `-c` num_rel summary counts these).
    pub(crate) num_positive: u64,
}

impl QrelsQuery {
    /// `docs` must be sorted by id and free of duplicates.
    fn build(qid: String, docs: &[(&[u8], i32)]) -> Self {
        let mut arena = Vec::with_capacity(docs.iter().map(|(d, _)| d.len()).sum());
        let mut entries = Vec::with_capacity(docs.len());
        let mut counts: Vec<(i64, u64)> = Vec::new();
        let mut num_positive = 0;
        let mut filter = [0u64; 4];
        for (d, g) in docs {
            let start = arena.len() as u32;
            arena.extend_from_slice(d);
            let hash = doc_hash(d);
            let (w, bit) = filter_bit(hash);
            filter[w] |= bit;
            entries.push(Judged {
                hash,
                start,
                end: arena.len() as u32,
                grade: *g,
            });
            if *g >= 0 {
                let g = i64::from(*g);
                match counts.iter_mut().find(|(l, _)| *l == g) {
                    Some((_, c)) => *c += 1,
                    None => counts.push((g, 1)),
                }
            }
            if *g > 0 {
                num_positive += 1;
            }
        }
        let slots = if docs.len() > LINEAR_MAX {
            let mut t = SlotTable::default();
            t.reset(docs.len());
            for (i, e) in entries.iter().enumerate() {
                t.find_or_insert(e.hash, i, |_| false);
            }
            t.into_slots()
        } else {
            Box::default()
        };
        QrelsQuery {
            qid,
            arena: arena.into_boxed_slice(),
            docs: entries.into_boxed_slice(),
            slots,
            filter,
            levels: {
                counts.sort_unstable();
                counts
            },
            num_positive,
        }
    }

    #[inline]
    fn doc(&self, i: usize) -> &[u8] {
        let j = self.docs[i];
        &self.arena[j.start as usize..j.end as usize]
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
        self.grade_hashed(doc, doc_hash(doc))
    }

    /// The grade of a document whose [`doc_hash`] is known.
    #[inline]
    pub(crate) fn grade_hashed(&self, doc: &[u8], hash: u64) -> Option<i32> {
        let (w, bit) = filter_bit(hash);
        if self.filter[w] & bit == 0 {
            return None;
        }
        if self.slots.is_empty() {
            for j in &self.docs {
                if j.hash == hash && short_eq(&self.arena[j.start as usize..j.end as usize], doc) {
                    return Some(j.grade);
                }
            }
            return None;
        }
        let hit = |i: usize| self.docs[i].hash == hash && short_eq(self.doc(i), doc);
        table::find(&self.slots, hash, hit).map(|i| self.docs[i].grade)
    }

    /// Judged documents and grades, in document id order.
    pub fn judgements(&self) -> impl Iterator<Item = (&[u8], i32)> {
        (0..self.docs.len()).map(|i| (self.doc(i), self.docs[i].grade))
    }

    /// Judged documents.
    pub fn len(&self) -> usize {
        self.docs.len()
    }
    /// True when nothing is judged.
    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }
}

/// The word and bit of a hash in [`QrelsQuery`]'s filter: its top 8 bits (the table uses the
/// low bits).
#[inline]
fn filter_bit(hash: u64) -> (usize, u64) {
    ((hash >> 62) as usize, 1u64 << ((hash >> 56) & 63))
}

/// Qrels ready for evaluation: queries in qid byte order (trec_eval's order).
#[derive(Debug, Clone, Default)]
pub struct EvalQrels {
    pub(crate) queries: Vec<QrelsQuery>,
    pub(crate) index: IdIndex,
    pub(crate) origin: PathBuf,
}

impl EvalQrels {
    /// Every query, in qid byte order.
    pub fn queries(&self) -> &[QrelsQuery] {
        &self.queries
    }
    /// The query with this id.
    pub fn get(&self, qid: &str) -> Option<&QrelsQuery> {
        self.index
            .get(doc_hash(qid.as_bytes()), |i| self.queries[i].qid == qid)
            .map(|i| &self.queries[i])
    }
    /// The position (in qid order) of a query.
    pub(crate) fn position(&self, qid: &[u8]) -> Option<usize> {
        self.index.get(doc_hash(qid), |i| {
            short_eq(self.queries[i].qid.as_bytes(), qid)
        })
    }
    /// Judged queries.
    pub fn len(&self) -> usize {
        self.queries.len()
    }
    /// True when no query is judged.
    pub fn is_empty(&self) -> bool {
        self.queries.is_empty()
    }
    /// The file the qrels came from (`<qrels>` when built in memory).
    pub fn origin(&self) -> &Path {
        &self.origin
    }

    fn from_queries(mut queries: Vec<QrelsQuery>, origin: PathBuf) -> Self {
        queries.sort_unstable_by(|a, b| short_cmp(a.qid.as_bytes(), b.qid.as_bytes()));
        let mut index = IdIndex::default();
        for q in &queries {
            index.push(doc_hash(q.qid.as_bytes()));
        }
        EvalQrels {
            queries,
            index,
            origin,
        }
    }

    /// From the data model's qrels (which cannot hold duplicates).
    pub fn from_qrels(qrels: &mtr_core::Qrels) -> Self {
        let queries = qrels
            .iter()
            .map(|(qid, docs)| {
                let docs: Vec<(&[u8], i32)> =
                    docs.iter().map(|(d, g)| (d.as_bytes(), *g)).collect();
                QrelsQuery::build(qid.clone(), &docs)
            })
            .collect();
        EvalQrels::from_queries(queries, PathBuf::from("<qrels>"))
    }
}

/// Reads a TREC (4 columns) or BEIR (3 columns, optional header) qrels file.
pub fn read_qrels_file(path: impl AsRef<Path>, dedup: Dedup) -> Result<EvalQrels> {
    let path = path.as_ref();
    // A regular file is mapped, not read: a million-line qrels file is tens of MB, and reading
    // it means a fresh buffer (page faults, zeroing) plus a copy; the judgements copy what
    // they keep. Pipes and other special files are read.
    let regular = std::fs::metadata(path)
        .map_err(|e| MetricsError::io(path, e))?
        .is_file();
    if !regular {
        let bytes = std::fs::read(path).map_err(|e| MetricsError::io(path, e))?;
        return read_qrels(&bytes, path, dedup);
    }
    match super::trec_run::map_file(path)? {
        Some(map) => read_qrels(&map, path, dedup),
        None => read_qrels(&[], path, dedup),
    }
}

/// One judgement while reading; the document is an offset into the file.
#[derive(Clone, Copy)]
struct Judgement {
    query: u32,
    grade: i32,
    doc_start: usize,
    doc_end: usize,
    line: u64,
}

/// The judgements of a qrels file in file order, before grouping by query.
struct Scanned<'b> {
    /// Query ids in first-appearance order (`Judgement::query` indexes it).
    qids: Vec<&'b [u8]>,
    judgements: Vec<Judgement>,
}

/// Reads TREC (4 columns) or BEIR (3 columns, optional header) qrels from bytes; `path`
/// names them in errors. What [`read_qrels_file`] does after reading the file, for callers
/// (and fuzzers) that hold the bytes.
pub fn read_qrels(bytes: &[u8], path: &Path, dedup: Dedup) -> Result<EvalQrels> {
    let scanned = scan_judgements(bytes, path)?;
    group_by_query(bytes, path, dedup, &scanned)
}

/// Reads every line: columns, header, grade, query id (interned); one [`Judgement`] per line.
fn scan_judgements<'b>(bytes: &'b [u8], path: &Path) -> Result<Scanned<'b>> {
    const COLUMNS: &str = "expected 4 columns (qid iter docno grade) or 3 (qid docno grade)";
    let mut qids: Vec<&[u8]> = Vec::new();
    let mut qid_index = IdIndex::default();
    // One judgement per line: size the vector once.
    let mut judgements: Vec<Judgement> =
        Vec::with_capacity(memchr::memchr_iter(b'\n', bytes).count() + 1);
    let mut seen_content = false;
    let mut last: Option<(&[u8], u32)> = None;
    for (no, line) in lines(bytes) {
        utf8_line(path, no, line, QRELS_FIELDS)?;
        let mut toks = Tokens::new(line);
        let Some(first) = toks.next() else { continue };
        if first[0] == b'#' {
            continue;
        }
        let mut cols: [&[u8]; 4] = [first, b"", b"", b""];
        let mut n = 1;
        for t in toks.by_ref() {
            if n == 4 {
                return Err(bad_line(path, no, COLUMNS).into());
            }
            cols[n] = t;
            n += 1;
        }
        let (qid, doc, grade) = match n {
            4 => (cols[0], cols[2], cols[3]),
            3 => (cols[0], cols[1], cols[2]),
            _ => return Err(bad_line(path, no, COLUMNS).into()),
        };
        let grade_v = parse_grade(grade);
        if !seen_content {
            seen_content = true;
            if grade_v.is_none() && is_header(first) {
                continue;
            }
        }
        let Some(grade) = grade_v else {
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
        let query = match last {
            Some((q, i)) if short_eq(q, qid) => i,
            _ => {
                let h = doc_hash(qid);
                let i = match qid_index.get(h, |k| short_eq(qids[k], qid)) {
                    Some(i) => i as u32,
                    None => {
                        qids.push(qid);
                        qid_index.push(h) as u32
                    }
                };
                last = Some((qid, i));
                i
            }
        };
        let doc_start = doc.as_ptr() as usize - bytes.as_ptr() as usize;
        judgements.push(Judgement {
            query,
            grade,
            doc_start,
            doc_end: doc_start + doc.len(),
            line: no,
        });
    }
    Ok(Scanned { qids, judgements })
}

/// Buckets the judgements by query (stable: file order within a query), sorts each bucket by
/// document and builds the per-query tables; a document judged twice for one query is an
/// error naming the earliest repeated line unless `dedup` keeps the first.
fn group_by_query(
    bytes: &[u8],
    path: &Path,
    dedup: Dedup,
    scanned: &Scanned<'_>,
) -> Result<EvalQrels> {
    let Scanned { qids, judgements } = scanned;
    let mut starts = vec![0usize; qids.len() + 1];
    for j in judgements {
        starts[j.query as usize + 1] += 1;
    }
    for i in 1..starts.len() {
        starts[i] += starts[i - 1];
    }
    let mut order = vec![0u32; judgements.len()];
    let mut fill = starts.clone();
    for (k, j) in judgements.iter().enumerate() {
        order[fill[j.query as usize]] = k as u32;
        fill[j.query as usize] += 1;
    }
    let mut first_dup: Option<(u64, u64, usize)> = None;
    let mut queries = Vec::with_capacity(qids.len());
    let mut docs: Vec<(&[u8], i32)> = Vec::new();
    for q in 0..qids.len() {
        let bucket = &mut order[starts[q]..starts[q + 1]];
        // Stable sort keeps file order among equal ids: the first occurrence comes first.
        let doc = |k: u32| {
            let j = &judgements[k as usize];
            &bytes[j.doc_start..j.doc_end]
        };
        bucket.sort_by(|a, b| short_cmp(doc(*a), doc(*b)));
        docs.clear();
        let mut first_line_of_last = 0;
        for w in bucket.iter() {
            let j = &judgements[*w as usize];
            let jdoc = doc(*w);
            if let Some((d, _)) = docs.last()
                && short_eq(d, jdoc)
            {
                // Report the earliest duplicate line of the file.
                if dedup == Dedup::Error && first_dup.is_none_or(|(l, _, _)| j.line < l) {
                    first_dup = Some((j.line, first_line_of_last, *w as usize));
                }
                continue;
            }
            first_line_of_last = j.line;
            docs.push((jdoc, j.grade));
        }
        // Every line was checked to be UTF-8.
        let qid = String::from_utf8_lossy(qids[q]).into_owned();
        queries.push(QrelsQuery::build(qid, &docs));
    }
    if let Some((line, first, k)) = first_dup {
        let j = &judgements[k];
        return Err(InputError::new(
            path,
            format!(
                "duplicate judgement for query `{}`, document `{}` (first at line {first})",
                String::from_utf8_lossy(qids[j.query as usize]),
                String::from_utf8_lossy(&bytes[j.doc_start..j.doc_end])
            ),
        )
        .line(line)
        .field("docno")
        .hint("trec_eval rejects duplicate judgements; use --dedup first to keep the first")
        .into());
    }
    Ok(EvalQrels::from_queries(queries, path.to_path_buf()))
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

#[cfg(test)]
mod tests {
    use super::*;

    use crate::input::write_test_file as write;

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
        assert_eq!(q1.grade(b"d9"), None);
        assert_eq!(q1.levels, vec![(2, 1)]);
        assert_eq!(q1.num_rel(1), 1);
        assert_eq!(
            q1.judgements().collect::<Vec<_>>(),
            vec![(&b"d2"[..], -1), (&b"d3"[..], 2)]
        );
    }

    #[test]
    fn large_queries_use_the_slot_table() {
        let d = tempfile::tempdir().unwrap();
        let text: String = (0..50).map(|i| format!("q 0 doc{i} {}\n", i % 3)).collect();
        let q = read_qrels_file(write(&d, "q", &text), Dedup::Error).unwrap();
        let q = q.get("q").unwrap();
        assert!(!q.slots.is_empty());
        for i in 0..50 {
            assert_eq!(q.grade(format!("doc{i}").as_bytes()), Some(i % 3));
        }
        assert_eq!(q.grade(b"doc50"), None);
    }

    #[test]
    fn qrels_errors_name_the_line() {
        let d = tempfile::tempdir().unwrap();
        let p = write(&d, "q", "q1 0 d1 1\nq2 0 x 1\nq2 0 x 1\nq1 0 d1 2\n");
        let e = read_qrels_file(&p, Dedup::Error).unwrap_err().to_string();
        assert!(
            e.contains(":3") && e.contains("duplicate") && e.contains("first at line 2"),
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

    /// A corrupt byte in a document id made a judgement that no run could match: the score
    /// dropped without a word.
    #[test]
    fn a_line_that_is_not_utf8_names_its_line_and_field() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("q");
        for (text, field) in [
            (&b"q1 0 d1 1\nq1 0 d\xff2 1\n"[..], "docno"),
            (b"q1\td1\t1\nq\xe92\td2\t1\n", "qid"),
            (b"q1\td1\t1\nq2\td\xe92\t1\n", "docno"),
        ] {
            std::fs::write(&p, text).unwrap();
            let e = read_qrels_file(&p, Dedup::Error).unwrap_err().to_string();
            assert!(
                e.contains(&format!("q:2: field `{field}`: invalid UTF-8")),
                "{e}"
            );
        }
    }
}
