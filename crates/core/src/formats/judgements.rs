//! Relevance judgements read with their line numbers, so that an importer can name the qrels
//! line of a judgement whose query or passage does not exist. Accepts BEIR's 3 columns with an
//! optional header (`query-id corpus-id score`) and TREC's 4 (`qid iter docid grade`).

use std::collections::HashSet;
use std::path::Path;

use super::builder::Diag;
use crate::error::{Error, InputError, Result};
use crate::jsonl::Lines;

/// `(query id, passage id, grade, line)` in file order.
pub(super) type Judgement = (String, String, i32, u64);

/// Reads a qrels file; bad lines and duplicate judgements go through `diag`.
pub(super) fn read(path: &Path, diag: &mut Diag) -> Result<Vec<Judgement>> {
    let mut lines = Lines::open(path)?;
    let mut out = Vec::new();
    let mut seen: HashSet<(String, String)> = HashSet::new();
    let mut first = true;
    while let Some(next) = lines.next_line() {
        let (no, line) = match next {
            Ok(x) => x,
            Err(Error::Input(e)) => {
                diag.problem("malformed-record", *e)?;
                continue;
            }
            Err(e) => return Err(e),
        };
        let cols: Vec<&str> = crate::trec::columns(line, &[3, 4]);
        if first {
            first = false;
            if cols.first().is_some_and(|c| {
                ["query-id", "qid", "query_id", "query"]
                    .iter()
                    .any(|h| c.eq_ignore_ascii_case(h))
            }) {
                continue;
            }
        }
        let (q, d, g) = match cols.as_slice() {
            [q, d, g] => (*q, *d, *g),
            [q, _iter, d, g] => (*q, *d, *g),
            _ => {
                diag.problem(
                    "malformed-record",
                    InputError::new(path, format!("expected `query-id corpus-id score` (3 columns) or `qid iter docid grade` (4), found {} columns", cols.len()))
                        .line(no),
                )?;
                continue;
            }
        };
        let grade = match crate::trec::parse_grade(g) {
            Some(x) => x,
            None => {
                diag.problem(
                    "malformed-record",
                    InputError::new(path, format!("grade `{g}` is not an integer"))
                        .line(no)
                        .field("score"),
                )?;
                continue;
            }
        };
        if !seen.insert((q.to_string(), d.to_string())) {
            diag.problem(
                "duplicate-judgement",
                InputError::new(
                    path,
                    format!("duplicate judgement for query `{q}`, document `{d}`"),
                )
                .line(no)
                .field("corpus-id"),
            )?;
            continue;
        }
        out.push((q.to_string(), d.to_string(), grade, no));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn beir_and_trec_columns_with_lines() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("q.tsv");
        std::fs::write(&p, "query-id\tcorpus-id\tscore\r\nq1\td1\t1\r\nq2 0 d2 2\n").unwrap();
        let j = read(&p, &mut Diag::new(false)).unwrap();
        assert_eq!(
            j,
            vec![
                ("q1".into(), "d1".into(), 1, 2),
                ("q2".into(), "d2".into(), 2, 3)
            ]
        );
    }

    #[test]
    fn bad_grade_and_duplicates() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("q.tsv");
        std::fs::write(&p, "q1\td1\t1\nq1\td1\t1\nq2\td2\tx\n").unwrap();
        let e = read(&p, &mut Diag::new(false)).unwrap_err().to_string();
        assert!(e.contains("q.tsv:2") && e.contains("duplicate"), "{e}");
        let mut diag = Diag::new(true);
        let j = read(&p, &mut diag).unwrap();
        assert_eq!(j.len(), 1);
        assert_eq!(diag.skipped()["duplicate-judgement"], 1);
        assert_eq!(diag.skipped()["malformed-record"], 1);
    }

    #[test]
    fn grades_that_are_not_finite_whole_numbers_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("q.tsv");
        for g in ["nan", "inf", "1.5", "1e12", "-3000000000"] {
            std::fs::write(&p, format!("q1\td0\t1\nq1\td1\t{g}\n")).unwrap();
            let e = read(&p, &mut Diag::new(false)).unwrap_err().to_string();
            assert!(e.contains("q.tsv:2") && e.contains("score"), "{g}: {e}");
        }
        // what real tools write: a BOM, CRLF or lone CR line ends, trailing blanks, runs of spaces
        let want = vec![
            ("q1".to_string(), "d1".to_string(), 1, 2),
            ("q2".to_string(), "d2".to_string(), 2, 3),
        ];
        for text in [
            "\u{feff}query-id\tcorpus-id\tscore\r\nq1\td1\t1\r\nq2\td2\t2\r\n",
            "query-id\tcorpus-id\tscore\rq1\td1\t1\rq2\td2\t2",
            "query-id corpus-id score\nq1   0  d1 1  \nq2\t0\td2\t2\t\n",
        ] {
            std::fs::write(&p, text).unwrap();
            assert_eq!(read(&p, &mut Diag::new(false)).unwrap(), want, "{text:?}");
        }
    }
}
