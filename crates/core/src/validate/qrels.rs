//! The qrels check: `qrels.tsv` read line by line against the dialogues' gold, both ways (a
//! judgement of no gold, a gold missing from the file, a grade that differs).

use std::collections::{HashMap, HashSet};
use std::path::Path;

use super::dialogues::GoldIndex;
use super::report::ValidationReport;
use crate::benchmark::{BenchmarkDir, DIALOGUES, QRELS};
use crate::error::{Error, InputError, Result};
use crate::jsonl::Lines;

pub(super) fn check(
    dir: &BenchmarkDir,
    ids: &HashSet<String>,
    gold: &GoldIndex,
    r: &mut ValidationReport,
) -> Result<()> {
    let path = dir.path(QRELS);
    let dpath = dir.path(DIALOGUES);
    if !path.is_file() {
        r.warn(
            "missing-qrels",
            InputError::new(
                &path,
                "no qrels.tsv: qrels are derived from the dialogues' gold",
            ),
        );
        return Ok(());
    }
    let mut seen: HashMap<String, HashSet<String>> = HashMap::new();
    let mut lines = Lines::open(&path)?;
    while let Some(next) = lines.next_line() {
        let (no, line) = match next {
            Ok(x) => x,
            Err(Error::Input(e)) => {
                r.problem("malformed-record", *e);
                continue;
            }
            Err(e) => return Err(e),
        };
        check_line(&path, no, line, ids, gold, &mut seen, r);
    }
    if r.qrels_pairs == 0 && seen.is_empty() {
        // a qrels file with no judgement judges nothing: an error unless --lenient
        r.problem(
            "empty-qrels",
            InputError::new(&path, "qrels.tsv holds no judgement")
                .hint("write the judgements (qid iter docid grade) or remove the file to derive them from the dialogues (--lenient accepts it)"),
        );
    }
    missing_from_qrels(&dpath, gold, &seen, r);
    Ok(())
}

/// One line of `qrels.tsv` (`qid iter docid grade`) against the dialogues' gold; `seen` gets
/// its judgement.
fn check_line(
    path: &Path,
    no: u64,
    line: &str,
    ids: &HashSet<String>,
    gold: &GoldIndex,
    seen: &mut HashMap<String, HashSet<String>>,
    r: &mut ValidationReport,
) {
    let Some(j) = parse_judgement(path, no, line, r) else {
        return;
    };
    r.qrels_pairs += 1;
    if !seen
        .entry(j.qid.to_string())
        .or_default()
        .insert(j.docid.to_string())
    {
        r.problem(
            "duplicate-judgement",
            InputError::new(
                path,
                format!(
                    "duplicate judgement for query `{}`, document `{}`",
                    j.qid, j.docid
                ),
            )
            .line(no)
            .field("docid"),
        );
        return;
    }
    compare_with_gold(path, no, &j, ids, gold, r);
}

/// One judgement line's fields.
struct Judgement<'a> {
    qid: &'a str,
    docid: &'a str,
    grade: i32,
}

/// The fields of a qrels line, or `None` after reporting a malformed one.
fn parse_judgement<'a>(
    path: &Path,
    no: u64,
    line: &'a str,
    r: &mut ValidationReport,
) -> Option<Judgement<'a>> {
    let cols: Vec<&str> = crate::trec::columns(line, &[4]);
    let [qid, _iter, docid, g] = cols.as_slice() else {
        r.problem(
            "malformed-record",
            InputError::new(
                path,
                format!(
                    "expected 4 columns (qid iter docid grade), found {}",
                    cols.len()
                ),
            )
            .line(no),
        );
        return None;
    };
    let Ok(grade) = g.parse::<i32>() else {
        r.problem(
            "malformed-record",
            InputError::new(path, format!("grade `{g}` is not an integer"))
                .line(no)
                .field("grade"),
        );
        return None;
    };
    Some(Judgement { qid, docid, grade })
}

/// A judgement against the turn's gold in the dialogues: an unknown query, a passage that is
/// no gold (and perhaps not in the corpus), or a grade that differs.
fn compare_with_gold(
    path: &Path,
    no: u64,
    j: &Judgement<'_>,
    ids: &HashSet<String>,
    gold: &GoldIndex,
    r: &mut ValidationReport,
) {
    let (q, d, grade) = (j.qid, j.docid, j.grade);
    let Some(turn) = gold.get(q) else {
        r.problem(
            "qrels-mismatch",
            InputError::new(
                path,
                format!("query `{q}` is not a turn of dialogues.jsonl"),
            )
            .line(no)
            .field("qid"),
        );
        return;
    };
    match turn.get(d) {
        None => {
            r.problem(
                "qrels-mismatch",
                InputError::new(path, format!("judgement ({q}, {d}) = {grade} is not in the turn's gold in dialogues.jsonl")).line(no).field("docid"),
            );
            if !ids.is_empty() && !ids.contains(d) {
                r.problem(
                    "missing-gold-passage",
                    InputError::new(path, format!("judged passage `{d}` is not in the corpus"))
                        .line(no)
                        .field("docid"),
                );
            }
        }
        Some((dg, _, _)) if *dg != grade => r.problem(
            "qrels-mismatch",
            InputError::new(
                path,
                format!("grade of ({q}, {d}) is {grade} here but {dg} in dialogues.jsonl"),
            )
            .line(no)
            .field("grade"),
        ),
        Some(_) => {}
    }
}

/// The gold of the dialogues that `qrels.tsv` does not hold, in dialogue-file order.
fn missing_from_qrels(
    dpath: &Path,
    gold: &GoldIndex,
    seen: &HashMap<String, HashSet<String>>,
    r: &mut ValidationReport,
) {
    let mut missing: Vec<(u64, String, String, String)> = Vec::new();
    for (q, docs) in gold {
        for (d, (_, line, field)) in docs {
            if !seen.get(q).is_some_and(|s| s.contains(d)) {
                missing.push((*line, field.clone(), q.clone(), d.clone()));
            }
        }
    }
    missing.sort();
    for (line, field, q, d) in missing {
        r.problem(
            "qrels-mismatch",
            InputError::new(dpath, format!("gold ({q}, {d}) is missing from qrels.tsv"))
                .line(line)
                .field(field)
                .hint("rewrite qrels.tsv from the dialogues or fix the gold"),
        );
    }
}
