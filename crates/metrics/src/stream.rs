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

use rayon::prelude::*;

use crate::error::Result;
use crate::eval::{
    EvalOptions, Evaluation, MissingQueries, QueryScores, finish, missing_error, score_missing,
    score_query,
};
use crate::input::trec_run::{COLUMNS, drop_pages, fields, map_file};
use crate::input::{
    Cand, EvalQrels, IdIndex, SlotTable, Tokens, bad_line, doc_hash, is_space, parse_score,
    short_eq,
};
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
    let bytes: &[u8] = &map;
    let parallel = bytes.len() >= 8 << 20;

    let mut results: Vec<Option<QueryScores>> = vec![None; qrels.len()];
    let mut seen = IdIndex::default();
    let mut seen_arena: Vec<u8> = Vec::new();
    let mut seen_spans: Vec<(usize, usize)> = Vec::new();
    let mut ignored = 0usize;

    let mut cands: Vec<Cand<'_>> = Vec::with_capacity(BATCH_LINES + 1024);
    let mut pending: Vec<Pending> = Vec::new();
    // The current query: its id and first candidate.
    let mut cur: Option<(&[u8], usize)> = None;
    let mut last_content: Option<(u64, usize)> = None;
    let mut released = 0usize;

    let mut flush = |cands: &mut Vec<Cand<'_>>,
                     pending: &mut Vec<Pending<'_>>,
                     upto: usize,
                     released: &mut usize|
     -> Result<()> {
        let (outs, unjudged) =
            score_batch(cands, pending, qrels, opts, columns.len(), path, parallel);
        ignored += unjudged;
        for (qi, r) in outs {
            results[qi] = Some(r?);
        }
        cands.clear();
        pending.clear();
        drop_pages(&map, *released, upto);
        *released = upto;
        Ok(())
    };

    let mut p = 0usize;
    let mut no = 0u64;
    while p < bytes.len() {
        no += 1;
        let b = bytes[p];
        if b == b'\n' {
            p += 1;
            continue;
        }
        let after_qid = match cur {
            Some((q, _))
                if !is_space(b)
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
                        pending.push(Pending {
                            qid: q,
                            start,
                            end: cands.len(),
                        });
                        if cands.len() >= BATCH_LINES {
                            flush(&mut cands, &mut pending, p, &mut released)?;
                        }
                    }
                    let h = doc_hash(qid);
                    if seen
                        .get(h, |i| {
                            let (s, e) = seen_spans[i];
                            short_eq(&seen_arena[s..e], qid)
                        })
                        .is_some()
                    {
                        // Not contiguous: let the grouping reader do it.
                        return Ok(None);
                    }
                    seen_spans.push((seen_arena.len(), seen_arena.len() + qid.len()));
                    seen_arena.extend_from_slice(qid);
                    seen.push(h);
                    cur = Some((qid, cands.len()));
                }
                after
            }
        };
        let Some((doc, score, c)) = fields(bytes, after_qid) else {
            return Err(bad_line(path, no, COLUMNS).into());
        };
        let score = parse_score(score).ok_or_else(|| {
            InputError::new(
                path,
                format!("score `{}` is not a number", String::from_utf8_lossy(score)),
            )
            .line(no)
            .field("score")
        })?;
        cands.push(Cand {
            doc,
            score: opts.compat.score(score),
            line: no,
            rel: 0,
        });
        last_content = Some((no, p));
        p = if bytes.get(c) == Some(&b'\n') {
            c + 1
        } else {
            memchr::memchr(b'\n', &bytes[c..]).map_or(bytes.len(), |k| c + k) + 1
        };
    }
    if let Some((q, start)) = cur.take() {
        pending.push(Pending {
            qid: q,
            start,
            end: cands.len(),
        });
    }
    flush(&mut cands, &mut pending, bytes.len(), &mut released)?;

    let run_id = last_content.and_then(|(_, s)| {
        let e = memchr::memchr(b'\n', &bytes[s..]).map_or(bytes.len(), |k| s + k);
        Tokens::new(&bytes[s..e])
            .nth(5)
            .map(|t| String::from_utf8_lossy(t).into_owned())
    });

    let mut missing = Vec::new();
    for (qi, slot) in results.iter_mut().enumerate() {
        if slot.is_none() {
            let q = &qrels.queries()[qi];
            match opts.missing {
                MissingQueries::Complete => *slot = Some(score_missing(q, opts, &columns)),
                MissingQueries::Intersect => {}
                MissingQueries::Error => missing.push(q.qid.as_str()),
            }
        }
    }
    if !missing.is_empty() {
        return Err(missing_error(path, &missing, qrels.len()));
    }
    let queries: Vec<QueryScores> = results.into_iter().flatten().collect();
    finish(columns, queries, qrels, opts, run_id, ignored, path).map(Some)
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

    use crate::input::{RunFile, read_qrels_file};
    use crate::{Dedup, EvalOptions, MeasureSet, MissingQueries, evaluate, evaluate_prepared};

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
}
