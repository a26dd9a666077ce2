//! TREC text formats: qrels (`qid iter docid grade`) and runs (`qid Q0 docid rank score tag`).
//! This is the simple, model-level reader and writer used for benchmark folders; the metrics
//! crate has its own memory-mapped parser for evaluating huge runs.

use std::io::Write;
use std::path::Path;

use crate::atomic::AtomicFile;
use crate::error::{Error, InputError, Result};
use crate::jsonl::Lines;
use crate::model::{Qrels, Run};

/// The columns of a qrels or run line. Tab-separated lines are split on tabs (so ids may
/// contain spaces, as INSCIT's `Types of cheese:19` do) when that gives one of the `expected`
/// column counts; anything else is split on whitespace, as trec_eval does.
pub fn columns<'a>(line: &'a str, expected: &[usize]) -> Vec<&'a str> {
    if line.contains('\t') {
        let cols: Vec<&str> = line.split('\t').map(str::trim).collect();
        if expected.contains(&cols.len()) {
            return cols;
        }
    }
    line.split_whitespace().collect()
}

/// A relevance grade: an integer, or a float with no fraction (`1.0`, as some tools write
/// grades) within `i32`. NaN, infinities, fractions and out-of-range numbers are refused:
/// rounding or saturating them would change what the judgement says.
pub(crate) fn parse_grade(s: &str) -> Option<i32> {
    if let Ok(g) = s.parse::<i32>() {
        return Some(g);
    }
    let f = s.parse::<f64>().ok()?;
    let in_range =
        f.is_finite() && f.fract() == 0.0 && f >= i32::MIN as f64 && f <= i32::MAX as f64;
    // in range and whole: the cast is exact
    #[allow(clippy::cast_possible_truncation)]
    in_range.then_some(f as i32)
}

/// A retrieval score: a finite number (NaN and infinities cannot be ranked).
pub(crate) fn parse_score(s: &str) -> Option<f64> {
    s.parse::<f64>().ok().filter(|f| f.is_finite())
}

/// Reads TREC qrels. Accepts a BEIR-style header line (`query-id corpus-id score`) and
/// 3-column BEIR rows as well as 4-column TREC rows. A duplicate (qid, docid) is an error.
pub fn read_qrels(path: impl AsRef<Path>) -> Result<Qrels> {
    let path = path.as_ref();
    let mut lines = Lines::open(path)?;
    let mut qrels = Qrels::new();
    while let Some(next) = lines.next_line() {
        let (no, line) = next?;
        let cols: Vec<&str> = columns(line, &[3, 4]);
        if no == 1
            && cols.first().is_some_and(|c| {
                c.eq_ignore_ascii_case("query-id") || c.eq_ignore_ascii_case("qid")
            })
        {
            continue;
        }
        let (qid, docid, grade) = match cols.as_slice() {
            [q, _iter, d, g] => (*q, *d, *g),
            [q, d, g] => (*q, *d, *g),
            _ => {
                return Err(InputError::new(
                    path,
                    format!(
                        "expected 4 columns (qid iter docid grade), found {}",
                        cols.len()
                    ),
                )
                .line(no)
                .into());
            }
        };
        let grade: i32 = parse_grade(grade).ok_or_else(|| {
            InputError::new(
                path,
                format!("grade `{grade}` is not a whole number within -2147483648..=2147483647"),
            )
            .line(no)
            .field("grade")
        })?;
        let prev = qrels
            .entry(qid.to_string())
            .or_default()
            .insert(docid.to_string(), grade);
        if prev.is_some() {
            return Err(InputError::new(
                path,
                format!("duplicate judgement for query `{qid}`, document `{docid}`"),
            )
            .line(no)
            .field("docid")
            .into());
        }
    }
    Ok(qrels)
}

/// Writes qrels in TREC 4-column form, queries and documents in byte order.
pub fn write_qrels(path: impl AsRef<Path>, qrels: &Qrels) -> Result<()> {
    let path = path.as_ref();
    let mut f = AtomicFile::create(path)?;
    for (q, docs) in qrels {
        for (d, g) in docs {
            writeln!(f, "{q}\t0\t{d}\t{g}").map_err(|e| Error::io(path, e))?;
        }
    }
    f.commit()
}

/// Reads a 6-column TREC run, keeping each query's documents in file order.
pub fn read_run(path: impl AsRef<Path>) -> Result<Run> {
    let path = path.as_ref();
    let mut lines = Lines::open(path)?;
    let mut run = Run::new();
    while let Some(next) = lines.next_line() {
        let (no, line) = next?;
        let cols: Vec<&str> = columns(line, &[6]);
        let [q, _q0, d, _rank, score, ..] = cols.as_slice() else {
            return Err(InputError::new(
                path,
                format!(
                    "expected 6 columns (qid Q0 docid rank score tag), found {}",
                    cols.len()
                ),
            )
            .line(no)
            .into());
        };
        let score: f64 = parse_score(score).ok_or_else(|| {
            InputError::new(path, format!("score `{score}` is not a finite number"))
                .line(no)
                .field("score")
        })?;
        run.entry(q.to_string())
            .or_default()
            .push((d.to_string(), score));
    }
    Ok(run)
}

/// Writes a run in TREC 6-column form; each query's documents are written sorted by score
/// descending with rank = position.
pub fn write_run(path: impl AsRef<Path>, run: &Run, tag: &str) -> Result<()> {
    let path = path.as_ref();
    let mut f = AtomicFile::create(path)?;
    for (q, docs) in run {
        let mut docs: Vec<&(String, f64)> = docs.iter().collect();
        docs.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| b.0.cmp(&a.0)));
        for (rank, (d, s)) in docs.iter().enumerate() {
            writeln!(f, "{q} Q0 {d} {} {s} {tag}", rank + 1).map_err(|e| Error::io(path, e))?;
        }
    }
    f.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qrels_roundtrip_and_header() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("q.tsv");
        std::fs::write(&p, "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t-1\n").unwrap();
        let q = read_qrels(&p).unwrap();
        assert_eq!(q["q1"]["d2"], -1);
        let out = dir.path().join("o.tsv");
        write_qrels(&out, &q).unwrap();
        assert_eq!(read_qrels(&out).unwrap(), q);
    }

    #[test]
    fn ids_with_spaces_survive_tab_separated_files() {
        let dir = tempfile::tempdir().unwrap();
        let mut q = Qrels::new();
        q.entry("dial_1".into())
            .or_default()
            .insert("Types of cheese:19".into(), 1);
        let p = dir.path().join("q.tsv");
        write_qrels(&p, &q).unwrap();
        assert_eq!(read_qrels(&p).unwrap(), q);
        assert_eq!(columns("q 0 d 1", &[4]), ["q", "0", "d", "1"]);
    }

    #[test]
    fn grades_and_scores_must_be_finite_whole_numbers() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("q.tsv");
        for (grade, ok) in [
            ("2", Some(2)),
            ("1.0", Some(1)),
            ("-1", Some(-1)),
            ("nan", None),
            ("NaN", None),
            ("inf", None),
            ("-infinity", None),
            ("1.5", None),
            ("1e12", None),
            ("3000000000", None),
        ] {
            std::fs::write(&p, format!("q1 0 d0 1\nq1 0 d1 {grade}\n")).unwrap();
            match (read_qrels(&p), ok) {
                (Ok(q), Some(g)) => assert_eq!(q["q1"]["d1"], g, "{grade}"),
                (Err(e), None) => {
                    assert!(e.is_user_error(), "{grade}");
                    let e = e.to_string();
                    assert!(e.contains("q.tsv:2") && e.contains("grade"), "{grade}: {e}");
                }
                (r, _) => panic!("{grade}: {r:?}"),
            }
        }
        let p = dir.path().join("r.txt");
        for score in ["nan", "inf", "-inf", "NaN"] {
            std::fs::write(&p, format!("q1 Q0 d1 1 1.5 t\nq1 Q0 d2 2 {score} t\n")).unwrap();
            let e = read_run(&p).unwrap_err();
            assert!(e.is_user_error());
            let e = e.to_string();
            assert!(e.contains("r.txt:2") && e.contains("score"), "{score}: {e}");
        }
    }

    #[test]
    fn duplicate_judgement_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("q.tsv");
        std::fs::write(&p, "q1 0 d1 1\nq1 0 d1 2\n").unwrap();
        let e = read_qrels(&p).unwrap_err().to_string();
        assert!(e.contains(":2") && e.contains("duplicate"), "{e}");
    }
}
