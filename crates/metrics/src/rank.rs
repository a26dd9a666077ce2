//! Turning one query's retrieved documents into trec_eval's ranked relevance list.
//!
//! trec_eval ignores the rank column: it sorts by score descending and breaks ties by docno
//! descending in byte order (`strcmp`), then applies the `-M` depth cutoff, then looks each
//! document up in the qrels. The relevance list holds the grade of each ranked document,
//! [`NONPOOL`] for a document that is not in the qrels and [`UNJUDGED`] for one judged with a
//! negative grade (trec_eval's "in pool but unjudged": never relevant, skipped by bpref).

use std::cmp::Ordering;

use crate::error::Result;
use crate::input::{Cand, Dedup, QrelsQuery, SlotTable, doc_hash, short_cmp, short_eq};
use mtr_core::InputError;

/// Relevance value of a retrieved document absent from the qrels.
pub(crate) const NONPOOL: i32 = -1;
/// Relevance value of a retrieved document judged with a negative grade.
pub(crate) const UNJUDGED: i32 = -2;
/// Marks a duplicate dropped by `Dedup::First`.
const DROPPED: i32 = i32::MIN;

/// Reusable per-thread buffers.
#[derive(Default)]
pub(crate) struct Scratch<'a> {
    pub cands: Vec<Cand<'a>>,
    pub table: SlotTable,
    pub rels: Vec<i32>,
}

/// trec_eval's order: score descending, then docno descending (byte order).
#[inline]
fn trec_order(a: &Cand<'_>, b: &Cand<'_>) -> Ordering {
    // C compares with `>` and `<`; equal (including NaN against anything) falls to docno.
    if a.score > b.score {
        Ordering::Less
    } else if a.score < b.score {
        Ordering::Greater
    } else {
        short_cmp(b.doc, a.doc)
    }
}

/// Removes or rejects duplicate documents, looks each document up in the qrels (one hash per
/// document serves both), ranks, cuts at `max_docs` and fills `scratch.rels`.
pub(crate) fn rank_query<'a>(
    scratch: &mut Scratch<'a>,
    qrels: &QrelsQuery,
    dedup: Dedup,
    max_docs: Option<usize>,
    origin: &std::path::Path,
) -> Result<()> {
    let Scratch { cands, table, rels } = scratch;
    let n = rank_slice(cands, table, rels, qrels, dedup, max_docs, origin)?;
    cands.truncate(n);
    Ok(())
}

/// [`rank_query`] on a slice of candidates (reordered in place); returns how many remain after
/// removing duplicates (they are the slice's prefix, in trec_eval order).
pub(crate) fn rank_slice(
    cands: &mut [Cand<'_>],
    table: &mut SlotTable,
    rels: &mut Vec<i32>,
    qrels: &QrelsQuery,
    dedup: Dedup,
    max_docs: Option<usize>,
    origin: &std::path::Path,
) -> Result<usize> {
    table.reset(cands.len());
    let mut dropped = false;
    for i in 0..cands.len() {
        let doc = cands[i].doc;
        let h = doc_hash(doc);
        if let Some(first) = table.find_or_insert(h, i, |j| short_eq(cands[j].doc, doc)) {
            if dedup == Dedup::Error {
                return Err(
                    duplicate_error(origin, &qrels.qid, &cands[i], cands[first].line).into(),
                );
            }
            cands[i].rel = DROPPED;
            dropped = true;
            continue;
        }
        cands[i].rel = match qrels.grade_hashed(doc, h) {
            Some(g) if g < 0 => UNJUDGED,
            Some(g) => g,
            None => NONPOOL,
        };
    }
    let mut n = cands.len();
    if dropped {
        // Stable compaction: keep first occurrences in input order.
        n = 0;
        for i in 0..cands.len() {
            if cands[i].rel != DROPPED {
                cands[n] = cands[i];
                n += 1;
            }
        }
    }
    let cands = &mut cands[..n];
    sort_trec(cands);
    let m = max_docs.map_or(n, |m| m.min(n));
    rels.clear();
    rels.extend(cands[..m].iter().map(|c| c.rel));
    Ok(n)
}

/// Sorts into trec_eval's order. Runs are usually written in rank order already, so when the
/// scores are non-increasing only the runs of tied scores are sorted (by docno); otherwise a
/// full sort.
fn sort_trec(cands: &mut [Cand<'_>]) {
    // `>=` is false when either score is NaN, which sends such runs to the full sort.
    let by_score = cands.windows(2).all(|w| w[0].score >= w[1].score);
    if !by_score {
        cands.sort_unstable_by(trec_order);
        return;
    }
    let mut i = 0;
    while i < cands.len() {
        let mut j = i + 1;
        while j < cands.len() && cands[j].score == cands[i].score {
            j += 1;
        }
        if j - i > 1 {
            let tie = &mut cands[i..j];
            if !tie
                .windows(2)
                .all(|w| short_cmp(w[0].doc, w[1].doc) != Ordering::Less)
            {
                tie.sort_unstable_by(|a, b| short_cmp(b.doc, a.doc));
            }
        }
        i = j;
    }
}

fn duplicate_error(origin: &std::path::Path, qid: &str, c: &Cand<'_>, first: u64) -> InputError {
    let doc = String::from_utf8_lossy(c.doc);
    let mut e = if c.line > 0 {
        InputError::new(
            origin,
            format!("duplicate document `{doc}` for query `{qid}` (first at line {first})"),
        )
        .line(c.line)
    } else {
        InputError::new(
            origin,
            format!("duplicate document `{doc}` for query `{qid}`"),
        )
    };
    e = e
        .field("docno")
        .hint("trec_eval rejects a run that lists a document twice for one query; use --dedup first to keep the first");
    e
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::EvalQrels;

    fn qrels() -> EvalQrels {
        let mut q = mtr_core::Qrels::new();
        let e = q.entry("q1".to_string()).or_default();
        e.insert("d1".into(), 1);
        e.insert("d10".into(), 2);
        e.insert("d2".into(), 0);
        e.insert("d9".into(), -1);
        EvalQrels::from_qrels(&q)
    }

    fn cand(doc: &'static str, score: f64, line: u64) -> Cand<'static> {
        Cand {
            doc: doc.as_bytes(),
            score,
            line,
            rel: 0,
        }
    }

    #[test]
    fn ties_break_by_docno_descending() {
        let q = qrels();
        let mut s = Scratch {
            cands: vec![
                cand("d1", 0.5, 1),
                cand("d2", 0.5, 2),
                cand("d9", 0.5, 3),
                cand("d10", 0.5, 4),
                cand("d3", 0.4, 5),
            ],
            ..Default::default()
        };
        rank_query(
            &mut s,
            q.get("q1").unwrap(),
            Dedup::Error,
            None,
            "r".as_ref(),
        )
        .unwrap();
        let docs: Vec<&[u8]> = s.cands.iter().map(|c| c.doc).collect();
        assert_eq!(docs, [&b"d9"[..], b"d2", b"d10", b"d1", b"d3"]);
        assert_eq!(s.rels, [UNJUDGED, 0, 2, 1, NONPOOL]);
    }

    proptest::proptest! {
        #[test]
        fn fast_path_sort_equals_full_sort(scores in proptest::collection::vec(0u8..4, 0..40), presorted: bool) {
            let names: Vec<String> = (0..scores.len()).map(|i| format!("d{}", (i * 7919) % 101)).collect();
            let mut cands: Vec<Cand<'_>> = names
                .iter()
                .zip(&scores)
                .map(|(d, s)| Cand { doc: d.as_bytes(), score: f64::from(*s), line: 0, rel: 0 })
                .collect();
            if presorted {
                // Rank order by score only, ties in arbitrary docno order: the fast path.
                cands.sort_by(|a, b| b.score.total_cmp(&a.score));
            }
            let mut full = cands.clone();
            full.sort_by(trec_order);
            sort_trec(&mut cands);
            let a: Vec<&[u8]> = cands.iter().map(|c| c.doc).collect();
            let b: Vec<&[u8]> = full.iter().map(|c| c.doc).collect();
            proptest::prop_assert_eq!(a, b);
        }
    }

    #[test]
    fn duplicates_error_or_keep_first() {
        let q = qrels();
        let mk = || Scratch {
            cands: vec![cand("d1", 0.1, 1), cand("d2", 0.9, 2), cand("d1", 0.8, 3)],
            ..Default::default()
        };
        let mut s = mk();
        let e = rank_query(
            &mut s,
            q.get("q1").unwrap(),
            Dedup::Error,
            None,
            "run.txt".as_ref(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("run.txt:3") && e.contains("first at line 1"),
            "{e}"
        );
        let mut s = mk();
        rank_query(
            &mut s,
            q.get("q1").unwrap(),
            Dedup::First,
            Some(5),
            "r".as_ref(),
        )
        .unwrap();
        assert_eq!(s.cands.len(), 2);
        assert_eq!(s.cands[1].score, 0.1);
    }
}
