//! Validation of a native benchmark folder. Every problem is reported (not just the first) as
//! an [`InputError`] naming the file, the line and the field: malformed lines, missing fields,
//! duplicate passage/dialogue/turn ids, empty questions, gold passages absent from
//! the corpus, and disagreements between `qrels.tsv` and the dialogues' gold. With `lenient`
//! the problems become warnings and are counted as skipped records by kind. Passages whose
//! text is only whitespace are always a warning (`empty-passage`), never an error.
//!
//! The corpus is streamed: only the set of passage ids is kept in memory.
//!
//! The checks run file by file: [`passages`] (passage ids), [`dialogues`] (dialogue, turn and
//! gold ids against the corpus), [`qrels`] (`qrels.tsv` against the dialogues' gold); each
//! adds its problems to the [`ValidationReport`] (`report`).

mod dialogues;
mod passages;
mod qrels;
mod report;
#[cfg(test)]
mod schema;

use crate::benchmark::{BenchmarkDir, CORPUS, DIALOGUES, MANIFEST};
use crate::error::{Error, InputError, Result};

pub use report::{Issue, ValidationReport};

#[derive(Debug, Clone, Copy, Default)]
/// How [`validate`] treats problems.
pub struct ValidateOptions {
    /// Report problems as warnings and count them as skipped records.
    pub lenient: bool,
}

/// Validates a native benchmark folder.
pub fn validate(dir: &BenchmarkDir, opts: &ValidateOptions) -> Result<ValidationReport> {
    let mut r = ValidationReport::new(opts.lenient);
    for name in [MANIFEST, CORPUS, DIALOGUES] {
        if !dir.path(name).is_file() {
            r.problem(
                "missing-file",
                InputError::new(dir.path(name), "missing file of a native benchmark"),
            );
        }
    }
    if !r.is_ok() {
        return Ok(r);
    }
    let manifest = match dir.manifest() {
        Ok(m) => Some(m),
        Err(Error::Input(e)) => {
            r.problem("malformed-record", *e);
            None
        }
        Err(e) => return Err(e),
    };
    let ids = passages::check(dir, &mut r)?;
    let gold = dialogues::check(dir, &ids, &mut r)?;
    qrels::check(dir, &ids, &gold, &mut r)?;
    if let Some(m) = manifest {
        let actual = dir.compute_fingerprint()?;
        if m.fingerprint != actual {
            r.warn(
                "stale-fingerprint",
                InputError::new(dir.path(MANIFEST), format!("fingerprint {} does not match the data files ({})", crate::fingerprint::short(&m.fingerprint), crate::fingerprint::short(&actual)))
                    .field("fingerprint")
                    .hint("the data changed after the manifest was written; reports will carry the manifest's value"),
            );
        }
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::benchmark::{Manifest, QRELS, write_benchmark};
    use crate::model::{Dialogue, Passage};
    use crate::model::{Gold, Tags, Turn};

    fn bench(tmp: &std::path::Path) -> BenchmarkDir {
        let d = Dialogue {
            id: "d1".into(),
            turns: vec![Turn {
                id: "d1::1".into(),
                user: "年假有几天？".into(),
                rewrite: None,
                answer: None,
                gold: vec![Gold {
                    passage_id: "p1".into(),
                    grade: 1,
                }],
                tags: Tags::default(),
            }],
            meta: Default::default(),
        };
        let p = Passage {
            id: "p1".into(),
            title: String::new(),
            text: "员工每年有15天年假。".into(),
            doc_id: None,
            meta: Default::default(),
        };
        write_benchmark(
            tmp.join("b"),
            Manifest {
                name: "t".into(),
                ..Default::default()
            },
            &[d],
            [Ok(p)],
        )
        .unwrap()
    }

    fn kinds(r: &ValidationReport) -> Vec<String> {
        r.errors.iter().map(|i| i.kind.clone()).collect()
    }

    #[test]
    fn clean_benchmark_validates() {
        let tmp = tempfile::tempdir().unwrap();
        let r = validate(&bench(tmp.path()), &ValidateOptions::default()).unwrap();
        assert!(r.is_ok(), "{:?}", r.errors);
        assert_eq!(
            (
                r.passages,
                r.dialogues,
                r.turns,
                r.judged_turns,
                r.qrels_pairs
            ),
            (1, 1, 1, 1, 1)
        );
        assert_eq!(r.warning_count, 0, "{:?}", r.warnings);
    }

    #[test]
    fn whitespace_in_passage_ids_and_empty_files_are_errors() {
        let tmp = tempfile::tempdir().unwrap();
        let b = bench(tmp.path());
        std::fs::write(
            b.path(CORPUS),
            "{\"id\":\"p1\",\"text\":\"a\"}\n{\"id\":\"p\\t2\",\"text\":\"b\"}\n{\"id\":\"p\\n3\",\"text\":\"c\"}\n",
        )
        .unwrap();
        let r = validate(&b, &ValidateOptions::default()).unwrap();
        let text: Vec<String> = r
            .errors
            .iter()
            .filter(|i| i.kind == "passage-id-whitespace")
            .map(|i| i.error.to_string())
            .collect();
        assert_eq!(text.len(), 2, "{:?}", r.errors);
        assert!(text[0].contains("corpus.jsonl:2: field `id`"), "{text:?}");
        assert!(text[1].contains("corpus.jsonl:3: field `id`"), "{text:?}");
        // a space (INSCIT's Wikipedia titles) is a warning
        std::fs::write(
            b.path(CORPUS),
            "{\"id\":\"p1\",\"text\":\"a\"}\n{\"id\":\"Types of cheese:19\",\"text\":\"b\"}\n",
        )
        .unwrap();
        let r = validate(&b, &ValidateOptions::default()).unwrap();
        assert!(r.is_ok(), "{:?}", r.errors);
        assert!(r.warnings.iter().any(|w| w.kind == "passage-id-space"));

        // an empty corpus and an empty qrels file: errors, warnings with --lenient
        std::fs::write(b.path(CORPUS), "").unwrap();
        std::fs::write(b.path(QRELS), "").unwrap();
        let r = validate(&b, &ValidateOptions::default()).unwrap();
        let k = kinds(&r);
        assert!(k.iter().any(|x| x == "empty-corpus"), "{k:?}");
        assert!(k.iter().any(|x| x == "empty-qrels"), "{k:?}");
        assert!(!r.is_ok());
        let lenient = validate(&b, &ValidateOptions { lenient: true }).unwrap();
        assert!(lenient.is_ok(), "{:?}", lenient.errors);
        assert_eq!(lenient.skipped.get("empty-corpus"), Some(&1));
        assert_eq!(lenient.skipped.get("empty-qrels"), Some(&1));
    }

    #[test]
    fn each_bad_input_class_is_named() {
        let tmp = tempfile::tempdir().unwrap();
        let b = bench(tmp.path());
        let corpus = "{\"id\":\"p1\",\"text\":\"a\"}\r\n{\"id\":\"p1\",\"text\":\"b\"}\n{\"id\":\"p2\",\"text\":\"  \"}\n{\"text\":\"no id\"}\nnot json\n";
        std::fs::write(b.path(CORPUS), corpus).unwrap();
        let dialogues = concat!(
            "{\"id\":\"d1\",\"turns\":[{\"id\":\"t1\",\"user\":\"q\",\"gold\":[{\"passage_id\":\"p9\",\"grade\":1}]}]}\n",
            "{\"id\":\"d1\",\"turns\":[{\"id\":\"t1\",\"user\":\"q\"},{\"id\":\"t2\",\"user\":\"\"}]}\n",
            "{\"id\":\"d3\",\"turns\":[{\"id\":\"t3\"}]}\n",
        );
        std::fs::write(b.path(DIALOGUES), dialogues).unwrap();
        std::fs::write(b.path(QRELS), "t1\t0\tp9\t1\nt2\t0\tp1\t1\n").unwrap();
        let r = validate(&b, &ValidateOptions::default()).unwrap();
        let k = kinds(&r);
        for want in [
            "duplicate-passage",
            "malformed-record",
            "missing-gold-passage",
            "duplicate-dialogue",
            "duplicate-turn",
            "empty-query",
            "qrels-mismatch",
        ] {
            assert!(k.iter().any(|x| x == want), "{want} missing from {k:?}");
        }
        let text: Vec<String> = r.errors.iter().map(|i| i.error.to_string()).collect();
        assert!(
            text.iter()
                .any(|t| t.contains("corpus.jsonl:2: field `id`") && t.contains("duplicate")),
            "{text:?}"
        );
        assert!(
            text.iter()
                .any(|t| t.contains("corpus.jsonl:4: field `id`") && t.contains("missing field")),
            "{text:?}"
        );
        assert!(
            text.iter()
                .any(|t| t.contains("dialogues.jsonl:1: field `turns[0].gold[0].passage_id`")),
            "{text:?}"
        );
        assert!(
            text.iter()
                .any(|t| t.contains("dialogues.jsonl:3: field `turns[0].user`")),
            "{text:?}"
        );
        assert!(
            text.iter()
                .any(|t| t.contains("qrels.tsv:2") && t.contains("not in the turn's gold")),
            "{text:?}"
        );
        assert!(!r.is_ok());
        // A whitespace-only passage is real data: a warning with its line, not an error.
        assert!(!k.iter().any(|x| x == "empty-passage"), "{k:?}");
        assert!(
            r.warnings.iter().any(|w| w.kind == "empty-passage"
                && w.error.to_string().contains("corpus.jsonl:3: field `text`")),
            "{:?}",
            r.warnings
        );

        let lenient = validate(&b, &ValidateOptions { lenient: true }).unwrap();
        assert!(lenient.is_ok());
        assert_eq!(lenient.skipped.values().sum::<u64>(), r.error_count);
        assert!(lenient.skipped["duplicate-passage"] >= 1);
    }

    #[test]
    fn stale_fingerprint_is_a_warning() {
        let tmp = tempfile::tempdir().unwrap();
        let b = bench(tmp.path());
        let mut text = std::fs::read_to_string(b.path(CORPUS)).unwrap();
        text.push_str("{\"id\":\"p2\",\"text\":\"more\"}\n");
        std::fs::write(b.path(CORPUS), text).unwrap();
        let r = validate(&b, &ValidateOptions::default()).unwrap();
        assert!(r.is_ok());
        assert!(r.warnings.iter().any(|w| w.kind == "stale-fingerprint"));
    }
}
