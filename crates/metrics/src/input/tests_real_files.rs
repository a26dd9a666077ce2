//! What other tools write: a UTF-8 byte-order mark, CRLF and lone CR line ends, trailing
//! whitespace, tabs and runs of spaces, a last line without its end. Each reads as the clean
//! file reads (same numbers, same line numbers in errors); what is broken (a score that is NaN
//! or infinite, a grade that is no integer, a document twice in one query) is refused naming
//! the file, the line and the field.

use crate::eval::evaluate_files;
use crate::{EvalOptions, MeasureSet, MissingQueries};

use super::write_test_file as write;

const QRELS: &str = "q1 0 a 2\nq1 0 b 0\nq2 0 c 1\nq2 0 d 1\n";
const RUN: &str = "q1 Q0 a 1 3.5 t\nq1 Q0 x 2 2 t\nq1 Q0 b 3 1 t\nq2 Q0 d 1 9 t\nq2 Q0 y 2 8 t\n";

fn opts() -> EvalOptions {
    EvalOptions {
        missing: MissingQueries::Complete,
        ..EvalOptions::with_measures(
            MeasureSet::parse(["map", "ndcg_cut.10", "P.2", "judged.3", "num_ret"]).unwrap(),
        )
    }
}

/// The text as another tool writes it: `\n` replaced by `end`, a byte-order mark first, tabs
/// and trailing spaces in the lines, and no end after the last line.
fn as_written(text: &str, end: &str) -> String {
    let lines: Vec<String> = text
        .lines()
        .map(|l| format!("{} \t", l.replacen(' ', "\t  ", 2)))
        .collect();
    format!("\u{feff}{}", lines.join(end))
}

#[test]
fn bom_crlf_lone_cr_tabs_and_a_last_line_without_end_read_as_the_clean_file() {
    let d = tempfile::tempdir().unwrap();
    let clean = evaluate_files(write(&d, "q", QRELS), write(&d, "r", RUN), &opts()).unwrap();
    for (i, end) in ["\r\n", "\r", "\n"].iter().enumerate() {
        let q = write(&d, &format!("q{i}"), &as_written(QRELS, end));
        let r = write(&d, &format!("r{i}"), &as_written(RUN, end));
        let got = evaluate_files(&q, &r, &opts()).unwrap();
        assert_eq!(got.summary, clean.summary, "{end:?}");
        assert_eq!(got.queries, clean.queries, "{end:?}");
        assert_eq!(got.run_id.as_deref(), Some("t"), "{end:?}");
    }
}

#[test]
fn broken_numbers_and_duplicates_name_file_line_and_field() {
    let d = tempfile::tempdir().unwrap();
    let q = write(&d, "q", QRELS);
    let refused = |run: &str, line: &str, field: &str| {
        for end in ["\n", "\r"] {
            let r = write(&d, "bad", &run.replace('\n', end));
            let e = evaluate_files(&q, &r, &opts()).unwrap_err();
            let msg = e.to_string();
            assert!(e.is_user_error(), "{msg}");
            assert!(
                msg.contains("bad") && msg.contains(line) && msg.contains(field),
                "{run:?} {end:?}: {msg}"
            );
        }
    };
    for score in ["nan", "NaN", "inf", "-infinity", "1e999", "3,5"] {
        refused(&RUN.replace("3.5", score), ":1", "score");
    }
    refused(&format!("{RUN}q2 Q0 d 3 1 t\n"), ":6", "docno");
    for grade in ["nan", "inf", "x"] {
        let bad = write(
            &d,
            "badq",
            &QRELS.replace("q2 0 c 1", &format!("q2 0 c {grade}")),
        );
        let e = evaluate_files(&bad, write(&d, "r", RUN), &opts()).unwrap_err();
        let msg = e.to_string();
        assert!(
            e.is_user_error()
                && msg.contains("badq")
                && msg.contains(":3")
                && msg.contains("grade"),
            "{msg}"
        );
    }
}

#[test]
fn qrels_read_from_bytes_equal_the_file() {
    let d = tempfile::tempdir().unwrap();
    let path = write(&d, "q", QRELS);
    let from_file = crate::read_qrels_file(&path, crate::Dedup::Error).unwrap();
    let written = as_written(QRELS, "\r");
    let from_bytes = crate::read_qrels(written.as_bytes(), &path, crate::Dedup::Error).unwrap();
    assert_eq!(from_file.len(), from_bytes.len());
    for (a, b) in from_file.queries().iter().zip(from_bytes.queries()) {
        assert_eq!(a.qid, b.qid);
        assert_eq!(
            a.judgements().collect::<Vec<_>>(),
            b.judgements().collect::<Vec<_>>()
        );
    }
}
