//! Property: a benchmark imported from a format, exported to that format and imported again
//! has the same fingerprint (the same corpus, dialogues and qrels, byte for byte), for every
//! format mtr exports (BEIR and TREC folders). Sources are generated: passages with any text
//! the format can hold, turn ids grouped into dialogues, graded judgements.

use std::collections::BTreeMap;
use std::path::Path;

use proptest::prelude::*;

use super::{Format, ImportOptions, QueryField, export_beir, export_trec, import};
use crate::benchmark::BenchmarkDir;
use crate::progress::NoProgress;

/// A generated source: passages (id, title, text), queries (id, text), judgements.
#[derive(Debug, Clone)]
struct Source {
    passages: Vec<(String, String, String)>,
    queries: Vec<(String, String)>,
    qrels: BTreeMap<(String, String), i32>,
}

/// Text a TSV field can hold (no tab or line break); `rich` adds JSON's worst: quotes,
/// backslashes, control characters, line breaks, non-ASCII.
fn text(rich: bool) -> BoxedStrategy<String> {
    if rich {
        "[a-zA-Z0-9 é中\"\\\\\\n\\u{1}?]{0,24}[a-z]".boxed()
    } else {
        "[a-zA-Z0-9 é中\"?,.]{0,24}[a-z]".boxed()
    }
}

fn source(rich: bool) -> impl Strategy<Value = Source> {
    let passages = prop::collection::btree_map("[a-z0-9]{1,6}", (text(rich), text(rich)), 1..12);
    let queries = prop::collection::btree_map(("[a-z]{1,3}", 1u32..5), text(rich), 1..10);
    (passages, queries).prop_flat_map(|(ps, qs)| {
        let pids: Vec<String> = ps.keys().cloned().collect();
        let qids: Vec<String> = qs.keys().map(|(c, n)| format!("{c}_{n}")).collect();
        let n = pids.len() * qids.len();
        let judgements = prop::collection::vec((0..n, -1i32..4), 0..20);
        let passages: Vec<(String, String, String)> = ps
            .into_iter()
            .map(|(id, (title, text))| (id, title, text))
            .collect();
        let queries: Vec<(String, String)> = qids.iter().cloned().zip(qs.into_values()).collect();
        judgements.prop_map(move |js| Source {
            passages: passages.clone(),
            queries: queries.clone(),
            qrels: js
                .into_iter()
                .map(|(i, g)| {
                    (
                        (qids[i / pids.len()].clone(), pids[i % pids.len()].clone()),
                        g,
                    )
                })
                .collect(),
        })
    })
}

fn write_beir(s: &Source, dir: &Path) {
    std::fs::create_dir_all(dir.join("qrels")).unwrap();
    let corpus: String = s
        .passages
        .iter()
        .map(|(id, title, text)| {
            serde_json::json!({"_id": id, "title": title, "text": text}).to_string() + "\n"
        })
        .collect();
    std::fs::write(dir.join("corpus.jsonl"), corpus).unwrap();
    let queries: String = s
        .queries
        .iter()
        .map(|(id, text)| serde_json::json!({"_id": id, "text": text}).to_string() + "\n")
        .collect();
    std::fs::write(dir.join("queries.jsonl"), queries).unwrap();
    let mut q = String::from("query-id\tcorpus-id\tscore\n");
    for ((qid, pid), g) in &s.qrels {
        q.push_str(&format!("{qid}\t{pid}\t{g}\n"));
    }
    std::fs::write(dir.join("qrels/test.tsv"), q).unwrap();
}

fn write_trec(s: &Source, dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let topics: String = s
        .queries
        .iter()
        .map(|(id, text)| format!("{id}\t{text}\n"))
        .collect();
    std::fs::write(dir.join("topics.tsv"), topics).unwrap();
    let mut q = String::new();
    for ((qid, pid), g) in &s.qrels {
        q.push_str(&format!("{qid} 0 {pid} {g}\n"));
    }
    std::fs::write(dir.join("qrels.txt"), q).unwrap();
    let mut c = String::from("id\ttext\ttitle\n");
    for (id, title, text) in &s.passages {
        c.push_str(&format!("{id}\t{text}\t{title}\n"));
    }
    std::fs::write(dir.join("collection.tsv"), c).unwrap();
}

/// The fingerprint of `src` imported as `format`, or `None` when the import refuses it.
fn fingerprint(format: Format, src: &Path, out: &Path) -> Option<String> {
    let opts = ImportOptions {
        lenient: true,
        ..Default::default()
    };
    import(format, src, out, &opts, &NoProgress)
        .ok()
        .map(|r| r.fingerprint)
}

fn roundtrip(format: Format, s: &Source, field: QueryField) -> Result<(), TestCaseError> {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    match format {
        Format::Beir => write_beir(s, &src),
        _ => write_trec(s, &src),
    }
    // a source the importer refuses is discarded (too many would fail the test)
    let first = fingerprint(format, &src, &tmp.path().join("b1"));
    prop_assume!(first.is_some());
    let b1 = BenchmarkDir::open(tmp.path().join("b1")).unwrap();
    let exported = tmp.path().join("exported");
    match format {
        Format::Beir => export_beir(&b1, &exported, field).unwrap(),
        _ => export_trec(&b1, &exported, field).unwrap(),
    };
    let second = fingerprint(format, &exported, &tmp.path().join("b2"));
    prop_assert_eq!(first, second);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn beir_import_export_import_keeps_the_fingerprint(s in source(true)) {
        roundtrip(Format::Beir, &s, QueryField::Last)?;
    }

    #[test]
    fn trec_import_export_import_keeps_the_fingerprint(s in source(false)) {
        roundtrip(Format::Trec, &s, QueryField::Last)?;
    }
}
