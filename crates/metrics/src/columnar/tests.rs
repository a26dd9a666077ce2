//! The columnar path equals the file path to the bit on the golden cases of `../shared`
//! (trec_eval's own test inputs under every option set its test suite uses, the edge cases,
//! the MTRAG runs), whichever way the rows come: a query id a row in file order, grouped as a
//! dict is, or interleaved; and it fails where the file path fails, naming rows as lines.

use std::path::{Path, PathBuf};

use super::*;
use crate::eval::evaluate_files;
use crate::input::{Tokens, lines, parse_score};
use crate::measure::{Family, MeasureSet};
use crate::{Compat, Dedup, EvalOptions, Evaluation, MissingQueries};

fn shared() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared");
    if p.is_dir() {
        Some(p)
    } else {
        eprintln!("note: ../shared is absent; skipping golden test");
        None
    }
}

/// A table read into owned columns: ids with 64-bit offsets, one value a row.
/// Ids and their 64-bit offsets.
type Ids = (Vec<u8>, Vec<i64>);

#[derive(Default, Clone)]
struct Owned<V> {
    qids: Ids,
    docs: Ids,
    values: Vec<V>,
}

fn push_id(col: &mut Ids, id: &[u8]) {
    if col.1.is_empty() {
        col.1.push(0);
    }
    col.0.extend_from_slice(id);
    col.1.push(col.0.len() as i64);
}

impl<V: Copy + Default> Owned<V> {
    fn push(&mut self, q: &[u8], d: &[u8], v: V) {
        push_id(&mut self.qids, q);
        push_id(&mut self.docs, d);
        self.values.push(v);
    }
    fn rows(&self) -> Vec<(&[u8], &[u8], V)> {
        let (q, d) = (column(&self.qids), column(&self.docs));
        (0..self.values.len())
            .map(|i| (q.get(i), d.get(i), self.values[i]))
            .collect()
    }
    /// The same rows in another order.
    fn reordered(&self, order: &[usize]) -> Self {
        let rows = self.rows();
        let mut o = Owned::<V>::default();
        for i in order {
            let (q, d, v) = rows[*i];
            o.push(q, d, v);
        }
        o
    }
}

fn column(c: &Ids) -> IdColumn<'_> {
    let empty: &[i64] = &[0];
    let offsets = if c.1.is_empty() { empty } else { &c.1[..] };
    IdColumn::new(&c.0, Offsets::I64(offsets)).unwrap()
}

/// A TREC run file's (qid, docno, score) columns in file order.
fn run_file(path: &Path) -> Owned<f64> {
    let bytes = std::fs::read(path).unwrap();
    let mut o = Owned::default();
    for (_, line) in lines(&bytes) {
        let t: Vec<&[u8]> = Tokens::new(line).collect();
        if t.is_empty() || t[0][0] == b'#' {
            continue;
        }
        o.push(t[0], t[2], parse_score(t[4]).unwrap());
    }
    o
}

/// A TREC or BEIR qrels file's (qid, docno, grade) columns in file order.
fn qrels_file(path: &Path) -> Owned<i64> {
    let bytes = std::fs::read(path).unwrap();
    let mut o = Owned::default();
    for (_, line) in lines(&bytes) {
        let t: Vec<&[u8]> = Tokens::new(line).collect();
        if t.is_empty() || t[0][0] == b'#' {
            continue;
        }
        let (q, d, g) = if t.len() == 4 {
            (t[0], t[2], t[3])
        } else {
            (t[0], t[1], t[2])
        };
        match std::str::from_utf8(g).unwrap().parse::<f64>() {
            Ok(g) => o.push(q, d, g as i64),
            Err(_) => continue, // a BEIR header
        }
    }
    o
}

/// How the rows are handed over.
#[derive(Debug, Clone, Copy)]
enum Form {
    /// A query id a row, in file order.
    Rows,
    /// Grouped by query as a dict of dicts is (first-appearance order).
    Groups,
    /// A query id a row, the queries' rows interleaved (reversed file order).
    Reversed,
}

/// The groups of `o` (ids, ends) and its rows in group order.
fn grouped<V: Copy + Default>(o: &Owned<V>) -> (Ids, Vec<usize>, Owned<V>) {
    let rows = o.rows();
    let mut qids: Vec<&[u8]> = Vec::new();
    for (q, ..) in &rows {
        if !qids.contains(q) {
            qids.push(q);
        }
    }
    let (mut ids, mut ends, mut order) = ((Vec::new(), Vec::new()), Vec::new(), Vec::new());
    for q in &qids {
        push_id(&mut ids, q);
        order.extend((0..rows.len()).filter(|i| rows[*i].0 == *q));
        ends.push(order.len());
    }
    (ids, ends, o.reordered(&order))
}

fn with_columns<V: Copy + Default, T>(
    o: &Owned<V>,
    form: Form,
    f: impl FnOnce(QueryIds<'_>, IdColumn<'_>, &[V]) -> T,
) -> T {
    match form {
        Form::Rows => f(QueryIds::Rows(column(&o.qids)), column(&o.docs), &o.values),
        Form::Reversed => {
            let order: Vec<usize> = (0..o.values.len()).rev().collect();
            let r = o.reordered(&order);
            f(QueryIds::Rows(column(&r.qids)), column(&r.docs), &r.values)
        }
        Form::Groups => {
            let (ids, ends, r) = grouped(o);
            let q = QueryIds::Groups {
                ids: column(&ids),
                ends: &ends,
            };
            f(q, column(&r.docs), &r.values)
        }
    }
}

/// Qrels and run files through the columns, in one form.
fn evaluate_as_columns(
    qrels: &Path,
    run: &Owned<f64>,
    form: Form,
    opts: &EvalOptions,
) -> crate::Result<Evaluation> {
    let q = qrels_file(qrels);
    let origin = Path::new("qrels DataFrame");
    let eq = with_columns(&q, form, |queries, docs, grades| {
        qrels_from_columns(
            &QrelsColumns {
                origin,
                queries,
                docs,
                grades,
            },
            opts.dedup,
        )
    })?;
    with_columns(run, form, |queries, docs, scores| {
        let r = RunColumns {
            origin: Path::new("run DataFrame"),
            queries,
            docs,
            scores,
        };
        evaluate_columns(&eq, &r, opts)
    })
}

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// The file path's evaluation and the columns' in every form: equal to the bit, or both
/// user errors.
fn assert_same(qrels: &Path, run: &Path, opts: &EvalOptions, what: &str) -> usize {
    let file = evaluate_files(qrels, run, opts);
    let cols = run_file(run);
    let mut compared = 0;
    for form in [Form::Rows, Form::Groups, Form::Reversed] {
        let got = evaluate_as_columns(qrels, &cols, form, opts);
        match (&file, got) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a.qids(), b.qids(), "{what} {form:?}");
                for (x, y) in a.queries.iter().zip(&b.queries) {
                    assert_eq!(
                        bits(&x.values),
                        bits(&y.values),
                        "{what} {form:?} {}",
                        x.qid
                    );
                    assert_eq!(x.missing, y.missing);
                }
                assert_eq!(bits(&a.summary), bits(&b.summary), "{what} {form:?}");
                assert_eq!(a.ignored_run_queries, b.ignored_run_queries);
                compared += a.summary.len() * (a.queries.len() + 1);
            }
            (Err(a), Err(b)) => {
                assert!(
                    a.is_user_error() && b.is_user_error(),
                    "{what} {form:?}: {a} / {b}"
                );
            }
            (a, b) => panic!("{what} {form:?}: file {a:?}, columns {b:?}"),
        }
    }
    compared
}

fn all_trec() -> MeasureSet {
    let names: Vec<&str> = Family::ALL
        .iter()
        .filter(|f| !f.is_extension())
        .map(|f| f.name())
        .collect();
    MeasureSet::parse(names).unwrap()
}

/// The option sets of trec_eval's test suite (`out.test*`) and of `--compat` / `--dedup`.
fn option_sets() -> Vec<(&'static str, EvalOptions)> {
    let base = EvalOptions::with_measures(all_trec());
    let mut sets = vec![("all_trec", base.clone())];
    let mut o = base.clone();
    o.missing = MissingQueries::Complete;
    sets.push(("-c", o.clone()));
    o.max_docs = Some(100);
    sets.push(("-c -M100", o));
    let mut o = base.clone();
    o.relevance_level = 2;
    sets.push(("-l2", o));
    let mut o = base.clone();
    o.compat = Compat::TrecEval9;
    o.missing = MissingQueries::Intersect;
    sets.push(("trec_eval 9", o));
    let mut o = base;
    o.dedup = Dedup::First;
    o.missing = MissingQueries::Complete;
    sets.push(("-c --dedup first", o));
    sets.push(("official", EvalOptions::default()));
    sets
}

#[test]
fn trec_eval_test_suite_inputs_equal_the_file_path() {
    let Some(sh) = shared() else { return };
    let dir = sh.join("golden/trec_eval_test");
    let mut compared = 0;
    for (qrels, run) in [
        ("qrels.test", "results.test"),
        ("qrels.rel_level", "results.test"),
        ("qrels-302.test", "results-302.test"),
        ("qrels.test", "results.trunc"),
    ] {
        for (name, opts) in option_sets() {
            let what = format!("{qrels} {run} {name}");
            compared += assert_same(&dir.join(qrels), &dir.join(run), &opts, &what);
        }
    }
    assert!(compared > 10_000, "{compared}");
}

#[test]
fn edge_cases_equal_the_file_path() {
    let Some(sh) = shared() else { return };
    let dir = sh.join("golden/edge_cases");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    cases.sort();
    assert_eq!(cases.len(), 9);
    for case in cases {
        for (name, opts) in option_sets() {
            let what = format!("{} {name}", case.display());
            assert_same(&case.join("qrels.txt"), &case.join("run.txt"), &opts, &what);
        }
    }
}

#[test]
fn mtrag_runs_equal_the_file_path() {
    let Some(sh) = shared() else { return };
    let data = sh.join("data/mtrag");
    let qrels = data.join("tasks_clapnq/qrels/dev.tsv");
    let opts = EvalOptions {
        measures: all_trec(),
        missing: MissingQueries::Complete,
        ..EvalOptions::default()
    };
    let mut runs: Vec<PathBuf> = std::fs::read_dir(data.join("runs_clapnq"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    runs.sort();
    assert_eq!(runs.len(), 12);
    let eq = crate::read_qrels_file(&qrels, Dedup::Error).unwrap();
    for run in runs {
        let file = crate::evaluate_file(&eq, &run, &opts).unwrap();
        let mut cols = Owned::default();
        for (q, docs) in crate::run_from_mtrag_jsonl(&run).unwrap() {
            for (d, s) in docs {
                cols.push(q.as_bytes(), d.as_bytes(), s);
            }
        }
        for form in [Form::Rows, Form::Groups, Form::Reversed] {
            let ev = evaluate_as_columns(&qrels, &cols, form, &opts).unwrap();
            assert_eq!(bits(&file.summary), bits(&ev.summary), "{run:?} {form:?}");
            assert_eq!(file.qids(), ev.qids());
        }
    }
}

fn small() -> (Owned<i64>, Owned<f64>) {
    let mut q = Owned::default();
    for (qid, d, g) in [("q1", "a", 1), ("q1", "b", 0), ("q2", "c", 2)] {
        q.push(qid.as_bytes(), d.as_bytes(), g);
    }
    let mut r = Owned::default();
    for (qid, d, s) in [
        ("q1", "a", 2.0),
        ("q1", "b", 1.0),
        ("q2", "c", 1.0),
        ("q1", "a", 0.5),
    ] {
        r.push(qid.as_bytes(), d.as_bytes(), s);
    }
    (q, r)
}

fn qrels_of(q: &Owned<i64>, dedup: Dedup) -> crate::Result<crate::EvalQrels> {
    qrels_from_columns(
        &QrelsColumns {
            origin: Path::new("qrels DataFrame"),
            queries: QueryIds::Rows(column(&q.qids)),
            docs: column(&q.docs),
            grades: &q.values,
        },
        dedup,
    )
}

#[test]
fn a_duplicate_row_is_named_by_its_row() {
    let (q, r) = small();
    let eq = qrels_of(&q, Dedup::Error).unwrap();
    let run = RunColumns {
        origin: Path::new("run DataFrame"),
        queries: QueryIds::Rows(column(&r.qids)),
        docs: column(&r.docs),
        scores: &r.values,
    };
    let e = evaluate_columns(&eq, &run, &EvalOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("run DataFrame:4:") && e.contains("first at line 1"),
        "{e}"
    );
    let mut opts = EvalOptions::with_measures(MeasureSet::parse(["num_ret"]).unwrap());
    opts.dedup = Dedup::First;
    assert_eq!(
        evaluate_columns(&eq, &run, &opts).unwrap().mean("num_ret"),
        Some(3.0)
    );

    let mut q2 = q.clone();
    q2.push(b"q2", b"c", 1);
    q2.push(b"q1", b"b", 1);
    let e = qrels_of(&q2, Dedup::Error).unwrap_err().to_string();
    assert!(
        e.starts_with("qrels DataFrame:4:") && e.contains("first at line 3"),
        "{e}"
    );
    let kept = qrels_of(&q2, Dedup::First).unwrap();
    assert_eq!(kept.get("q1").unwrap().grade(b"b"), Some(0));
}

#[test]
fn bad_columns_are_bad_arguments_and_bad_grades_name_the_row() {
    assert!(IdColumn::new(b"ab", Offsets::I32(&[0, 3])).is_err());
    assert!(IdColumn::new(b"ab", Offsets::I32(&[0, 2, 1])).is_err());
    assert!(IdColumn::new(b"ab", Offsets::I64(&[-1, 2])).is_err());
    assert!(IdColumn::new(b"ab", Offsets::I64(&[])).is_err());
    let c = IdColumn::new(b"ab", Offsets::I32(&[0, 1, 2])).unwrap();
    assert_eq!(c.iter().collect::<Vec<_>>(), [b"a", b"b"]);

    let (mut q, r) = small();
    q.values[1] = i64::from(i32::MAX) + 1;
    let e = qrels_of(&q, Dedup::Error).unwrap_err();
    assert!(
        e.is_user_error() && e.to_string().starts_with("qrels DataFrame:2:"),
        "{e}"
    );

    let eq = qrels_of(&small().0, Dedup::Error).unwrap();
    let short = RunColumns {
        origin: Path::new("run DataFrame"),
        queries: QueryIds::Rows(column(&r.qids)),
        docs: column(&r.docs),
        scores: &r.values[..2],
    };
    let e = evaluate_columns(&eq, &short, &EvalOptions::default()).unwrap_err();
    assert!(matches!(e, crate::MetricsError::InvalidArgument(_)), "{e}");
}

/// A query's id, judgements and relevant count.
type Judged = (String, Vec<(Vec<u8>, i32)>, u64);

/// Every query's id, judgements and relevant count.
fn judgements(q: &crate::EvalQrels) -> Vec<Judged> {
    q.queries()
        .iter()
        .map(|x| {
            let j = x.judgements().map(|(d, g)| (d.to_vec(), g)).collect();
            (x.qid.clone(), j, x.num_rel(1))
        })
        .collect()
}

#[test]
fn ids_no_trec_line_holds_take_the_map_path_with_the_file_readers_rules() {
    // the map path against the file reader (through the text path) on real qrels
    let Some(sh) = shared() else { return };
    for path in [
        sh.join("golden/trec_eval_test/qrels.test"),
        sh.join("golden/trec_eval_test/qrels.rel_level"),
        sh.join("data/mtrag/tasks_clapnq/qrels/dev.tsv"),
    ] {
        let mut q = qrels_file(&path);
        let cols = QrelsColumns {
            origin: Path::new("qrels DataFrame"),
            queries: QueryIds::Rows(column(&q.qids)),
            docs: column(&q.docs),
            grades: &q.values,
        };
        let grades: Vec<i32> = q.values.iter().map(|g| *g as i32).collect();
        let text = qrels_from_columns(&cols, Dedup::Error).unwrap();
        let map = super::qrels_columns::from_map(&cols, &grades, Dedup::Error).unwrap();
        assert_eq!(judgements(&text), judgements(&map), "{path:?}");
        assert_eq!(text.origin(), map.origin());
        // a repeated judgement: the same error either way, and the same first kept
        let rows = q.rows();
        let (qid, doc, _) = rows[rows.len() / 2];
        let (qid, doc) = (qid.to_vec(), doc.to_vec());
        q.push(&qid, &doc, 7);
        let cols = QrelsColumns {
            origin: Path::new("qrels DataFrame"),
            queries: QueryIds::Rows(column(&q.qids)),
            docs: column(&q.docs),
            grades: &q.values,
        };
        let grades: Vec<i32> = q.values.iter().map(|g| *g as i32).collect();
        let a = qrels_from_columns(&cols, Dedup::Error)
            .unwrap_err()
            .to_string();
        let b = super::qrels_columns::from_map(&cols, &grades, Dedup::Error)
            .unwrap_err()
            .to_string();
        assert_eq!(a, b);
        let a = qrels_from_columns(&cols, Dedup::First).unwrap();
        let b = super::qrels_columns::from_map(&cols, &grades, Dedup::First).unwrap();
        assert_eq!(judgements(&a), judgements(&b));
    }
    // ids with spaces, an empty id and a `#` query id are read, not taken for comments
    let mut q = Owned::default();
    for (qid, d, g) in [("a q", "d 1", 1), ("#q", "d", 2), ("q", "", 0)] {
        q.push(qid.as_bytes(), d.as_bytes(), g);
    }
    let eq = qrels_of(&q, Dedup::Error).unwrap();
    assert_eq!(eq.get("a q").unwrap().grade(b"d 1"), Some(1));
    assert_eq!(eq.get("#q").unwrap().grade(b"d"), Some(2));
    assert_eq!(eq.get("q").unwrap().grade(b""), Some(0));
}
