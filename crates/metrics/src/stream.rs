//! One-pass evaluation of a TREC run whose queries' lines are contiguous, which is how
//! retrievers write runs. Lines are parsed in file order straight from the memory map; each
//! query's documents go into a batch, and when a batch holds enough lines its queries are
//! ranked and scored (in parallel) and the pages behind it are handed back to the kernel. No
//! separate grouping pass, no per-line allocation.
//!
//! If a query id reappears after another query's lines, the file is not contiguous and this
//! returns `Ok(None)`; the caller then uses the grouping reader ([`crate::input::TrecRunFile`]),
//! which handles any order. Errors (a malformed line, a duplicate document) are reported for
//! the first offending line in file order.

use std::path::Path;

use memmap2::Mmap;
use rayon::prelude::*;

use crate::error::Result;
use crate::evaluation::{
    EvalOptions, Evaluation, MissingQueries, QueryScores, finish, missing_error, score_missing,
    score_query,
};
use crate::input::trec_run::{COLUMNS, drop_pages, fields, map_file};
use crate::input::{
    Cand, EvalQrels, IdIndex, RUN_FIELDS, SlotTable, Tokens, Utf8Ahead, bad_line, doc_hash,
    has_lone_cr_line_ends, is_space, parse_score, short_eq, strip_bom,
};
use crate::measure::Column;
use crate::rank::rank_slice;
use mtr_core::InputError;

/// Lines per batch: large enough to parallelise, small enough to keep memory low.
const BATCH_LINES: usize = 1 << 18;

/// One query of the current batch: its id and its documents' range in the batch's candidate
/// vector. Its qrels position is looked up when the batch is scored, all of the batch's
/// queries in one loop: the lookups are independent there, so their cache misses overlap
/// instead of stalling the line parser once per query.
struct Pending<'a> {
    qid: &'a [u8],
    start: usize,
    end: usize,
}

pub(crate) fn evaluate_contiguous(
    qrels: &EvalQrels,
    path: &Path,
    opts: &EvalOptions,
) -> Result<Option<Evaluation>> {
    let columns = opts.measures.columns();
    let Some(map) = map_file(path)? else {
        return Err(InputError::new(path, "the run file is empty").into());
    };
    let bytes = strip_bom(&map);
    if has_lone_cr_line_ends(bytes) {
        // the grouping reader rewrites lone `\r` line ends
        return Ok(None);
    }
    let mut batches = Batches::new(qrels, opts, path, &map, columns.len());
    let Scan::Done { last_content } = scan(&mut batches, bytes)? else {
        // Not contiguous: let the grouping reader do it.
        return Ok(None);
    };
    let run_id = last_content.and_then(|s| run_id(bytes, s));
    let Batches {
        results, ignored, ..
    } = batches;
    let queries = complete(results, qrels, opts, &columns, path)?;
    finish(columns, queries, qrels, opts, run_id, ignored, path).map(Some)
}

/// How a pass over the lines ended.
enum Scan {
    /// A query id reappeared after another query's lines.
    NotContiguous,
    /// Every line read and scored; the offset of the last line with content, if any.
    Done { last_content: Option<usize> },
}

/// Reads the lines in file order, closing each query when the next starts and scoring the
/// batches as they fill. The per-line path (same query as the line before) only compares the
/// query id and parses the document and score.
fn scan<'m>(b: &mut Batches<'m, '_>, bytes: &'m [u8]) -> Result<Scan> {
    let path = b.path;
    let mut seen = SeenQids::default();
    // The current query: its id and first candidate.
    let mut cur: Option<(&[u8], usize)> = None;
    let mut last_content: Option<usize> = None;
    let mut p = 0usize;
    let mut no = 0u64;
    let mut utf8 = Utf8Ahead::default();
    while p < bytes.len() {
        no += 1;
        let first = bytes[p];
        if first == b'\n' {
            p += 1;
            continue;
        }
        utf8.check(bytes, p, no, path, RUN_FIELDS)?;
        let after_qid = match cur {
            Some((q, _))
                if !is_space(first)
                    && bytes.len() > p + q.len()
                    && is_space(bytes[p + q.len()])
                    && short_eq(&bytes[p..p + q.len()], q) =>
            {
                p + q.len()
            }
            _ => {
                let e = memchr::memchr(b'\n', &bytes[p..]).map_or(bytes.len(), |k| p + k);
                let mut t = Tokens::new(&bytes[p..e]);
                let qid = match t.next() {
                    Some(q) if q[0] != b'#' => q,
                    _ => {
                        p = e + 1;
                        continue;
                    }
                };
                let after = p + t.position();
                if !matches!(cur, Some((q, _)) if q == qid) {
                    // A new query starts: close the current one.
                    if let Some((q, start)) = cur.take() {
                        b.close(q, start, p)?;
                    }
                    if !seen.insert(qid) {
                        return Ok(Scan::NotContiguous);
                    }
                    cur = Some((qid, b.cands.len()));
                }
                after
            }
        };
        let Some((doc, score, c)) = fields(bytes, after_qid) else {
            return Err(bad_line(path, no, COLUMNS).into());
        };
        b.push(doc, score, no)?;
        last_content = Some(p);
        p = if bytes.get(c) == Some(&b'\n') {
            c + 1
        } else {
            memchr::memchr(b'\n', &bytes[c..]).map_or(bytes.len(), |k| c + k) + 1
        };
    }
    if let Some((q, start)) = cur.take() {
        b.pending.push(Pending {
            qid: q,
            start,
            end: b.cands.len(),
        });
    }
    b.flush(bytes.len())?;
    Ok(Scan::Done { last_content })
}

/// The run tag (sixth column) of the line starting at `start`.
fn run_id(bytes: &[u8], start: usize) -> Option<String> {
    let e = memchr::memchr(b'\n', &bytes[start..]).map_or(bytes.len(), |k| start + k);
    Tokens::new(&bytes[start..e])
        .nth(5)
        .map(|t| String::from_utf8_lossy(t).into_owned())
}

/// The judged queries the run lacks: scored 0 (`-c`), left out, or refused, as `opts.missing`
/// says; the scored queries in qrels order.
fn complete(
    mut results: Vec<Option<QueryScores>>,
    qrels: &EvalQrels,
    opts: &EvalOptions,
    columns: &[Column],
    path: &Path,
) -> Result<Vec<QueryScores>> {
    let mut missing = Vec::new();
    for (qi, slot) in results.iter_mut().enumerate() {
        if slot.is_none() {
            let q = &qrels.queries()[qi];
            match opts.missing {
                MissingQueries::Complete => *slot = Some(score_missing(q, opts, columns)),
                MissingQueries::Intersect => {}
                MissingQueries::Error => missing.push(q.qid.as_str()),
            }
        }
    }
    if !missing.is_empty() {
        return Err(missing_error(path, &missing, qrels.len()));
    }
    Ok(results.into_iter().flatten().collect())
}

/// Query ids met so far, to notice a run whose queries are not contiguous.
#[derive(Default)]
struct SeenQids {
    index: IdIndex,
    arena: Vec<u8>,
    spans: Vec<(usize, usize)>,
}

impl SeenQids {
    /// Records `qid`; false when it was met before.
    #[inline]
    fn insert(&mut self, qid: &[u8]) -> bool {
        let h = doc_hash(qid);
        let (arena, spans) = (&self.arena, &self.spans);
        if self
            .index
            .get(h, |i| {
                let (s, e) = spans[i];
                short_eq(&arena[s..e], qid)
            })
            .is_some()
        {
            return false;
        }
        self.spans
            .push((self.arena.len(), self.arena.len() + qid.len()));
        self.arena.extend_from_slice(qid);
        self.index.push(h);
        true
    }
}

/// The candidates of the queries read but not yet scored, and what is scored so far.
struct Batches<'m, 'a> {
    qrels: &'a EvalQrels,
    opts: &'a EvalOptions,
    path: &'a Path,
    map: &'m Mmap,
    n_columns: usize,
    parallel: bool,
    /// Per judged query (qrels order), its scores once its batch is scored.
    results: Vec<Option<QueryScores>>,
    /// Queries of the run without judgements.
    ignored: usize,
    cands: Vec<Cand<'m>>,
    pending: Vec<Pending<'m>>,
    /// The file is handed back to the kernel up to here.
    released: usize,
}

impl<'m, 'a> Batches<'m, 'a> {
    /// One document of the current query, from line `no`; its score must parse.
    #[inline]
    fn push(&mut self, doc: &'m [u8], score: &[u8], no: u64) -> Result<()> {
        let value = parse_score(score).ok_or_else(|| {
            InputError::new(
                self.path,
                format!(
                    "score `{}` is not a finite number",
                    String::from_utf8_lossy(score)
                ),
            )
            .line(no)
            .field("score")
        })?;
        self.cands.push(Cand {
            doc,
            score: self.opts.compat.score(value),
            line: no,
            rel: 0,
        });
        Ok(())
    }

    fn new(
        qrels: &'a EvalQrels,
        opts: &'a EvalOptions,
        path: &'a Path,
        map: &'m Mmap,
        n_columns: usize,
    ) -> Self {
        Batches {
            qrels,
            opts,
            path,
            map,
            n_columns,
            parallel: map.len() >= 8 << 20,
            results: vec![None; qrels.len()],
            ignored: 0,
            cands: Vec::with_capacity(BATCH_LINES + 1024),
            pending: Vec::new(),
            released: 0,
        }
    }

    /// Closes query `qid`, whose candidates start at `start`; scores the batch when it is full
    /// (`upto`: the file offset read so far).
    #[inline]
    fn close(&mut self, qid: &'m [u8], start: usize, upto: usize) -> Result<()> {
        self.pending.push(Pending {
            qid,
            start,
            end: self.cands.len(),
        });
        if self.cands.len() >= BATCH_LINES {
            self.flush(upto)?;
        }
        Ok(())
    }

    /// Scores the pending queries and releases the file's pages before `upto`.
    fn flush(&mut self, upto: usize) -> Result<()> {
        let (outs, unjudged) = score_batch(
            &mut self.cands,
            &self.pending,
            self.qrels,
            self.opts,
            self.n_columns,
            self.path,
            self.parallel,
        );
        self.ignored += unjudged;
        for (qi, r) in outs {
            self.results[qi] = Some(r?);
        }
        self.cands.clear();
        self.pending.clear();
        drop_pages(self.map, self.released, upto);
        self.released = upto;
        Ok(())
    }
}

/// Ranks and scores the judged queries of a batch; results in file order with their qrels
/// positions, and the number of the batch's queries that have no judgements.
fn score_batch(
    cands: &mut [Cand<'_>],
    pending: &[Pending<'_>],
    qrels: &EvalQrels,
    opts: &EvalOptions,
    n_columns: usize,
    path: &Path,
    parallel: bool,
) -> (Vec<(usize, Result<QueryScores>)>, usize) {
    let positions: Vec<Option<usize>> = pending.iter().map(|p| qrels.position(p.qid)).collect();
    let unjudged = positions.iter().filter(|p| p.is_none()).count();
    // Disjoint mutable slices, one per query.
    let mut parts: Vec<(usize, &mut [Cand<'_>])> = Vec::with_capacity(pending.len());
    let mut rest = cands;
    let mut offset = 0;
    for (pq, qi) in pending.iter().zip(positions) {
        let (_, tail) = std::mem::take(&mut rest).split_at_mut(pq.start - offset);
        let (mine, tail) = tail.split_at_mut(pq.end - pq.start);
        rest = tail;
        offset = pq.end;
        if let Some(qi) = qi {
            parts.push((qi, mine));
        }
    }
    let one = |(table, rels): &mut (SlotTable, Vec<i32>),
               (qi, slice): &mut (usize, &mut [Cand<'_>])| {
        let q = &qrels.queries()[*qi];
        let r = rank_slice(slice, table, rels, q, opts.dedup, opts.max_docs, path)
            .map(|_| score_query(q, rels, opts, n_columns));
        (*qi, r)
    };
    let outs = if parallel {
        parts
            .par_iter_mut()
            .map_init(|| (SlotTable::default(), Vec::new()), one)
            .collect()
    } else {
        let mut scratch = (SlotTable::default(), Vec::new());
        parts.iter_mut().map(|p| one(&mut scratch, p)).collect()
    };
    (outs, unjudged)
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    use crate::eval::evaluate_prepared;
    use crate::input::{RunFile, read_qrels_file};
    use crate::{Dedup, EvalOptions, MeasureSet, MissingQueries, evaluate};

    use super::*;

    use crate::input::write_test_file as write;

    fn bits(ev: &Evaluation) -> Vec<(String, Vec<u64>)> {
        ev.queries
            .iter()
            .map(|q| {
                (
                    q.qid.clone(),
                    q.values.iter().map(|v| v.to_bits()).collect(),
                )
            })
            .chain(std::iter::once((
                "all".to_string(),
                ev.summary.iter().map(|v| v.to_bits()).collect(),
            )))
            .collect()
    }

    #[test]
    fn one_pass_equals_grouped_and_in_memory_on_a_large_contiguous_run() {
        // 300k lines: several parallel batches, page release, ties, unjudged queries.
        let dir = tempfile::tempdir().unwrap();
        let (mut run_txt, mut qrels_txt) = (String::new(), String::new());
        let mut run = mtr_core::Run::new();
        let mut qrels = mtr_core::Qrels::new();
        for q in 0..1500u64 {
            let qid = format!("{:08x}<::>{}", q * 2654435761 % 4294967291, q % 7);
            for d in 0..200u64 {
                let doc = format!("doc{}", (q * 31 + d * 17) % 20000);
                let score = ((q + d * 13) % 50) as f64 / 10.0;
                let _ = writeln!(run_txt, "{qid} Q0 {doc} {d} {score} t");
                run.entry(qid.clone())
                    .or_default()
                    .push((doc.clone(), score));
                if q % 10 != 3 && d % 9 == 0 {
                    let g = ((q + d) % 4) as i32 - 1;
                    let _ = writeln!(qrels_txt, "{qid} 0 {doc} {g}");
                    qrels.entry(qid.clone()).or_default().insert(doc, g);
                }
            }
        }
        let (rp, qp) = (
            write(&dir, "run", &run_txt),
            write(&dir, "qrels", &qrels_txt),
        );
        let opts = EvalOptions::with_measures(MeasureSet::parse(["all"]).unwrap());
        let eq = read_qrels_file(&qp, Dedup::Error).unwrap();
        let one_pass = evaluate_contiguous(&eq, &rp, &opts)
            .unwrap()
            .expect("contiguous");
        let grouped = evaluate_prepared(&eq, &RunFile::open(&rp).unwrap(), &opts).unwrap();
        let in_memory = evaluate(&qrels, &run, &opts).unwrap();
        assert_eq!(one_pass.queries.len(), 1350);
        assert_eq!(one_pass.ignored_run_queries, 150);
        assert_eq!(bits(&one_pass), bits(&grouped));
        assert_eq!(bits(&one_pass), bits(&in_memory));
        assert_eq!(one_pass.run_id.as_deref(), Some("t"));
    }

    #[test]
    fn interleaved_runs_fall_back_and_odd_lines_are_handled() {
        let dir = tempfile::tempdir().unwrap();
        let q = write(&dir, "q", "q1 0 a 1\nq2 0 b 1\n");
        let eq = read_qrels_file(&q, Dedup::Error).unwrap();
        let opts = EvalOptions::with_measures(MeasureSet::parse(["map", "num_ret"]).unwrap());
        let r = write(&dir, "r", "q1 Q0 a 1 1 t\nq2 Q0 b 1 1 t\nq1 Q0 c 2 0.5 t\n");
        assert!(evaluate_contiguous(&eq, &r, &opts).unwrap().is_none());
        assert_eq!(
            crate::evaluate_file(&eq, &r, &opts)
                .unwrap()
                .mean("num_ret"),
            Some(3.0)
        );
        let r = write(
            &dir,
            "r2",
            "# header\r\nq1 Q0 x 1 2 t extra\r\n\r\n  q1 Q0 a 2 1 t\r\n# c\nq2\tQ0\tb\t1\t1\tlast\n",
        );
        let ev = evaluate_contiguous(&eq, &r, &opts).unwrap().unwrap();
        assert_eq!(ev.per_query("map").unwrap(), vec![("q1", 0.5), ("q2", 1.0)]);
        assert_eq!(ev.run_id.as_deref(), Some("last"));
    }

    #[test]
    fn errors_name_the_first_bad_line() {
        let dir = tempfile::tempdir().unwrap();
        let q = write(&dir, "q", "q1 0 a 1\nq2 0 b 1\n");
        let eq = read_qrels_file(&q, Dedup::Error).unwrap();
        let opts = EvalOptions::with_measures(MeasureSet::parse(["map"]).unwrap());
        let err = |text: &str| {
            let r = write(&dir, "r", text);
            evaluate_contiguous(&eq, &r, &opts)
                .err()
                .unwrap()
                .to_string()
        };
        let e = err("q1 Q0 a 1 1 t\nq1 Q0 b 2 0.5 t\nq1 Q0 a 3 0.2 t\nq2 Q0 b 1 1 t\n");
        assert!(e.contains("r:3") && e.contains("first at line 1"), "{e}");
        let e = err("q1 Q0 a 1 1 t\nq2 Q0 b 1\n");
        assert!(e.contains("r:2") && e.contains("6 columns"), "{e}");
        let e = err("q1 Q0 a 1 x t\n");
        assert!(e.contains("r:1") && e.contains("score"), "{e}");
        let e = err("q1 Q0 a 1 1 t\n");
        assert!(e.contains("q2") && e.contains("-c"), "{e}");
        let e = err("");
        assert!(e.contains("empty"), "{e}");
        let complete = EvalOptions {
            missing: MissingQueries::Complete,
            ..opts.clone()
        };
        let r = write(&dir, "r", "q1 Q0 a 1 1 t\nq9 Q0 a 1 1 t\n");
        let ev = evaluate_contiguous(&eq, &r, &complete).unwrap().unwrap();
        assert_eq!(ev.per_query("map").unwrap(), vec![("q1", 1.0), ("q2", 0.0)]);
        assert_eq!(ev.ignored_run_queries, 1);
    }

    #[test]
    fn a_line_that_is_not_utf8_names_its_line_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let q = write(&dir, "q", "q1 0 a 1\nq2 0 b 1\n");
        let eq = read_qrels_file(&q, Dedup::Error).unwrap();
        let opts = EvalOptions::with_measures(MeasureSet::parse(["map"]).unwrap());
        let r = dir.path().join("r");
        for (text, field) in [
            (
                &b"q1 Q0 a 1 1 t\nq\xff2 Q0 b 1 1 t\nq2 Q0 c 1 1 t\n"[..],
                "qid",
            ),
            (
                b"q1 Q0 a 1 1 t\nq1 Q0 \xc3 2 0.5 t\nq2 Q0 b 1 1 t\n",
                "docno",
            ),
            (
                b"q1 Q0 a 1 1 t\nq1 Q0 b 2 0.5 t\xfe\nq2 Q0 b 1 1 t\n",
                "tag",
            ),
        ] {
            std::fs::write(&r, text).unwrap();
            let e = evaluate_contiguous(&eq, &r, &opts)
                .err()
                .unwrap()
                .to_string();
            assert!(
                e.contains(&format!("r:2: field `{field}`: invalid UTF-8")),
                "{e}"
            );
        }
    }
}
