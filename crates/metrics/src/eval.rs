//! Evaluating a run against qrels: which queries count, and the work in input order.
//!
//! Query set (trec_eval 10.0): every qrels query must have results, or the evaluation stops
//! with an error naming the missing queries ([`MissingQueries::Error`]); `-c`
//! ([`MissingQueries::Complete`]) scores missing queries 0 (trec_eval evaluates them on a
//! one-document ranking of an unjudged document and reports num_ret 0) and averages over all
//! qrels queries; [`MissingQueries::Intersect`] averages over qrels ∩ run, as trec_eval 9 did.
//! Run queries without qrels are ignored. A contiguous TREC run goes through the one-pass
//! reader (`stream`); the values and the summary come from `evaluation`.

use std::path::Path;

use rayon::prelude::*;

use crate::error::Result;
pub use crate::evaluation::{Conventions, EvalOptions, Evaluation, MissingQueries, QueryScores};
use crate::evaluation::{finish, missing_error, score_missing, score_query};
#[cfg(test)]
use crate::input::read_qrels_file;
use crate::input::{EvalQrels, MemRun, RunFile, RunSource};
use crate::rank::{Scratch, rank_query};

/// Evaluates an in-memory run against in-memory qrels.
pub fn evaluate(
    qrels: &mtr_core::Qrels,
    run: &mtr_core::Run,
    opts: &EvalOptions,
) -> Result<Evaluation> {
    let q = EvalQrels::from_qrels(qrels);
    let r = MemRun::from_run(run);
    evaluate_source(&q, &r, opts)
}

/// Reads qrels and a run (TREC or MTRAG JSONL) from files and evaluates.
#[cfg(test)]
pub(crate) fn evaluate_files(
    qrels: impl AsRef<Path>,
    run: impl AsRef<Path>,
    opts: &EvalOptions,
) -> Result<Evaluation> {
    let q = read_qrels_file(qrels, opts.dedup)?;
    evaluate_file(&q, run, opts)
}

/// Evaluates a run file (TREC or MTRAG JSONL) against qrels read once. A TREC run whose
/// queries' lines are contiguous (the usual case) is evaluated in one sequential pass;
/// otherwise the file is grouped by query first.
pub fn evaluate_file(
    qrels: &EvalQrels,
    run: impl AsRef<Path>,
    opts: &EvalOptions,
) -> Result<Evaluation> {
    let run = run.as_ref();
    if !crate::input::is_jsonl(run)? {
        opts.validate()?;
        if let Some(ev) = crate::stream::evaluate_contiguous(qrels, run, opts)? {
            return Ok(ev);
        }
        tracing::debug!(run = %run.display(), "query lines are not contiguous; grouping by query");
    }
    let r = RunFile::open(run)?;
    evaluate_prepared(qrels, &r, opts)
}

/// Evaluates already-read inputs (read qrels once, evaluate many runs).
pub(crate) fn evaluate_prepared(
    qrels: &EvalQrels,
    run: &RunFile,
    opts: &EvalOptions,
) -> Result<Evaluation> {
    evaluate_source(qrels, run.source(), opts)
}

/// Evaluates an in-memory run against qrels read once (bench: many systems, one qrels).
pub fn evaluate_run(
    qrels: &EvalQrels,
    run: &mtr_core::Run,
    opts: &EvalOptions,
) -> Result<Evaluation> {
    evaluate_source(qrels, &MemRun::from_run(run), opts)
}

enum Work {
    /// qrels index, run index
    Eval(usize, usize),
    /// qrels query missing from the run (`-c`)
    Missing(usize),
    /// run query without qrels: only checked for well-formedness
    Check(usize),
}

pub(crate) fn evaluate_source(
    qrels: &EvalQrels,
    run: &dyn RunSource,
    opts: &EvalOptions,
) -> Result<Evaluation> {
    opts.validate()?;
    let columns = opts.measures.columns();
    let (work, n_ignored) = plan(qrels, run, opts)?;
    let queries = run_in_input_order(&work, run, |scratch, w| match *w {
        Work::Check(ri) => {
            scratch.cands.clear();
            run.candidates(ri, opts.compat, &mut scratch.cands)?;
            scratch.cands.clear();
            Ok(None)
        }
        Work::Eval(qi, ri) => {
            let q = &qrels.queries[qi];
            scratch.cands.clear();
            run.candidates(ri, opts.compat, &mut scratch.cands)?;
            rank_query(scratch, q, opts.dedup, opts.max_docs, run.origin())?;
            scratch.cands.clear();
            Ok(Some(score_query(q, &scratch.rels, opts, columns.len())))
        }
        Work::Missing(qi) => Ok(Some(score_missing(&qrels.queries[qi], opts, &columns))),
    })?;
    finish(
        columns,
        queries,
        qrels,
        opts,
        run.run_id().map(str::to_string),
        n_ignored,
        run.origin(),
    )
}

/// The work in qrels order (each qrels query evaluated, filled in or left out as `opts.missing`
/// says), then the run queries without qrels, checked only; and how many of those there are.
/// Qrels queries missing from the run are an error under [`MissingQueries::Error`].
fn plan(qrels: &EvalQrels, run: &dyn RunSource, opts: &EvalOptions) -> Result<(Vec<Work>, usize)> {
    let mut work = Vec::with_capacity(qrels.len());
    let mut missing = Vec::new();
    let mut in_qrels = vec![false; run.len()];
    for (qi, q) in qrels.queries.iter().enumerate() {
        match run.find(q.qid.as_bytes()) {
            Some(ri) => {
                in_qrels[ri] = true;
                work.push(Work::Eval(qi, ri));
            }
            None => match opts.missing {
                MissingQueries::Complete => work.push(Work::Missing(qi)),
                MissingQueries::Intersect => {}
                MissingQueries::Error => missing.push(q.qid.as_str()),
            },
        }
    }
    let n_ignored = in_qrels.iter().filter(|b| !**b).count();
    work.extend(
        in_qrels
            .iter()
            .enumerate()
            .filter(|(_, b)| !**b)
            .map(|(ri, _)| Work::Check(ri)),
    );
    if !missing.is_empty() {
        return Err(missing_error(run.origin(), &missing, qrels.len()));
    }
    Ok((work, n_ignored))
}

/// Runs `one` on every work item, in the order of the items' lines in the input, in batches
/// of about `BATCH_LINES` lines, so that input behind us can leave memory; batches run in
/// parallel when the run is large. Returns the scores in work order (qid byte order, since the
/// work lists qrels queries in qid order, evaluated and missing interleaved by the same walk).
fn run_in_input_order<'r, F>(
    work: &[Work],
    run: &'r dyn RunSource,
    one: F,
) -> Result<Vec<QueryScores>>
where
    F: Fn(&mut Scratch<'r>, &Work) -> Result<Option<QueryScores>> + Sync,
{
    const BATCH_LINES: usize = 1 << 18;
    let position = |w: &Work| match *w {
        Work::Eval(_, ri) | Work::Check(ri) => run.extent(ri),
        Work::Missing(_) => (0, 0),
    };
    let mut keyed: Vec<(usize, usize)> = work
        .iter()
        .enumerate()
        .map(|(i, w)| (position(w).0, i))
        .collect();
    keyed.sort_unstable();
    let order: Vec<usize> = keyed.into_iter().map(|(_, i)| i).collect();
    let parallel = run.num_lines() >= 200_000;
    let mut slots: Vec<Option<QueryScores>> = (0..work.len()).map(|_| None).collect();
    let mut k = 0;
    while k < order.len() {
        let mut end = k;
        let mut lines = 0;
        while end < order.len() && (end == k || lines < BATCH_LINES) {
            lines += position(&work[order[end]]).1;
            end += 1;
        }
        let batch = &order[k..end];
        let out: Vec<Result<Option<QueryScores>>> = if parallel {
            batch
                .par_iter()
                .map_init(Scratch::default, |s, w| one(s, &work[*w]))
                .collect()
        } else {
            let mut s = Scratch::default();
            batch.iter().map(|w| one(&mut s, &work[*w])).collect()
        };
        release_batch(work, batch, run);
        // The first error in input order wins (deterministic, and the smallest line number).
        for (w, r) in batch.iter().zip(out) {
            slots[*w] = r?;
        }
        k = end;
    }
    Ok(slots.into_iter().flatten().collect())
}

/// Hands the pages of a processed batch back to the kernel.
fn release_batch(work: &[Work], batch: &[usize], run: &dyn RunSource) {
    let (mut lo, mut hi) = (usize::MAX, 0);
    for w in batch {
        if let Work::Eval(_, ri) | Work::Check(ri) = work[*w] {
            let (a, b) = run.span(ri);
            lo = lo.min(a);
            hi = hi.max(b);
        }
    }
    if lo < hi {
        run.release(lo, hi);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::MeasureSet;

    fn qrels() -> mtr_core::Qrels {
        let mut q = mtr_core::Qrels::new();
        q.entry("q1".into()).or_default().insert("a".into(), 1);
        q.entry("q2".into()).or_default().insert("b".into(), 2);
        q.entry("q2".into()).or_default().insert("c".into(), 0);
        q
    }

    fn run() -> mtr_core::Run {
        let mut r = mtr_core::Run::new();
        r.insert("q1".into(), vec![("x".into(), 2.0), ("a".into(), 1.0)]);
        r.insert("q9".into(), vec![("a".into(), 1.0)]);
        r
    }

    #[test]
    fn missing_queries_error_complete_intersect() {
        let mut o = EvalOptions::with_measures(
            MeasureSet::parse(["num_q", "num_rel", "map", "num_ret"]).unwrap(),
        );
        let e = evaluate(&qrels(), &run(), &o).unwrap_err().to_string();
        assert!(
            e.contains("1 of 2") && e.contains("q2") && e.contains("-c"),
            "{e}"
        );
        o.missing = MissingQueries::Complete;
        let ev = evaluate(&qrels(), &run(), &o).unwrap();
        assert_eq!(ev.qids(), ["q1", "q2"]);
        assert_eq!(ev.mean("num_q"), Some(2.0));
        assert_eq!(ev.mean("map"), Some(0.25));
        assert_eq!(ev.per_query_map("num_ret").unwrap()["q2"], 0.0);
        assert!(ev.queries[1].missing);
        o.missing = MissingQueries::Intersect;
        let ev = evaluate(&qrels(), &run(), &o).unwrap();
        assert_eq!(ev.qids(), ["q1"]);
        assert_eq!(ev.mean("map"), Some(0.5));
        assert_eq!(ev.ignored_run_queries, 1);
    }

    #[test]
    fn complete_num_rel_counts_positive_grades_regardless_of_level() {
        let mut o = EvalOptions::with_measures(MeasureSet::parse(["num_rel"]).unwrap());
        o.missing = MissingQueries::Complete;
        o.relevance_level = 2;
        let ev = evaluate(&qrels(), &run(), &o).unwrap();
        assert_eq!(
            ev.per_query("num_rel").unwrap(),
            vec![("q1", 0.0), ("q2", 1.0)]
        );
        assert_eq!(ev.mean("num_rel"), Some(2.0));
    }

    #[test]
    fn no_overlap_is_an_error() {
        let o = EvalOptions {
            missing: MissingQueries::Intersect,
            ..EvalOptions::default()
        };
        let mut r = mtr_core::Run::new();
        r.insert("zz".into(), vec![("a".into(), 1.0)]);
        let e = evaluate(&qrels(), &r, &o).unwrap_err();
        assert!(
            e.is_user_error() && e.to_string().contains("no queries"),
            "{e}"
        );
    }
}

#[cfg(test)]
mod large_tests {
    use super::*;
    use crate::measure::MeasureSet;
    use std::fmt::Write as _;

    #[test]
    fn large_interleaved_file_equals_in_memory_evaluation() {
        // 250k lines: the parallel, batched, page-releasing path; queries interleaved in
        // chunks so released pages are needed again later.
        let dir = tempfile::tempdir().unwrap();
        let (mut run_txt, mut qrels_txt) = (String::new(), String::new());
        let mut run = mtr_core::Run::new();
        let mut qrels = mtr_core::Qrels::new();
        for chunk in 0..5 {
            for q in 0..500 {
                let qid = format!("{:08x}<::>{}", q * 2654435761u64 % 4294967291, q % 7);
                for d in 0..100 {
                    let doc = format!("doc{}", (q * 31 + d * 17 + chunk * 1000) % 20000);
                    let score = f64::from(((q + d * 13 + chunk) % 50) as u32) / 10.0;
                    let _ = writeln!(run_txt, "{qid} Q0 {doc} {d} {score} t");
                    run.entry(qid.clone())
                        .or_default()
                        .push((doc.clone(), score));
                    if chunk == 0 && d % 9 == 0 {
                        let g = ((q + d) % 4) as i32 - 1;
                        let _ = writeln!(qrels_txt, "{qid} 0 {doc} {g}");
                        qrels.entry(qid.clone()).or_default().insert(doc, g);
                    }
                }
            }
        }
        let (rp, qp) = (dir.path().join("run"), dir.path().join("qrels"));
        std::fs::write(&rp, run_txt).unwrap();
        std::fs::write(&qp, qrels_txt).unwrap();
        let opts = EvalOptions::with_measures(MeasureSet::parse(["all"]).unwrap());
        let from_file = evaluate_files(&qp, &rp, &opts).unwrap();
        let in_memory = evaluate(&qrels, &run, &opts).unwrap();
        assert_eq!(from_file.queries.len(), 500);
        assert_eq!(from_file.qids(), in_memory.qids());
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        for (a, b) in from_file.queries.iter().zip(&in_memory.queries) {
            assert_eq!(bits(&a.values), bits(&b.values), "{}", a.qid);
        }
        assert_eq!(bits(&from_file.summary), bits(&in_memory.summary));
    }
}
