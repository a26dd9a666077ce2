//! Round trips through a dataset folder: native -> hf -> native keeps the data fingerprint;
//! MTEB's layout without the dialogues reads as BEIR does; wrong columns name file and column.

use std::path::Path;

use super::*;
use crate::benchmark::{BenchmarkDir, Manifest, write_benchmark};
use crate::formats::ImportOptions;
use crate::formats::beir_trec_export::QueryField;
use crate::model::{Dialogue, Gold, Passage, Tags, Turn};
use crate::progress::NoProgress;

fn turn(id: &str, user: &str, gold: &[(&str, i32)]) -> Turn {
    Turn {
        id: id.into(),
        user: user.into(),
        rewrite: None,
        answer: None,
        gold: gold
            .iter()
            .map(|(p, g)| Gold {
                passage_id: p.to_string(),
                grade: *g,
            })
            .collect(),
        tags: Tags::default(),
    }
}

/// A benchmark that uses every field of the native format.
fn native(root: &Path) -> BenchmarkDir {
    let mut t1 = turn("d1::1", "How many days of leave?", &[("p1", 2), ("p2", 0)]);
    t1.answer = Some("Fifteen.".into());
    t1.tags.question_type = Some("factoid".into());
    t1.tags
        .extra
        .insert("score".into(), serde_json::json!(0.25));
    let mut t2 = turn("d1::2", "And for part-time staff?", &[("p2", 1)]);
    t2.rewrite = Some("How many days of leave do part-time staff get?".into());
    t2.tags.topic_switch = Some(false);
    let mut meta = serde_json::Map::new();
    meta.insert("seed".into(), serde_json::json!(7));
    meta.insert(
        "persona".into(),
        serde_json::json!({"role": "new hire", "a": [1, 2]}),
    );
    let d1 = Dialogue {
        id: "d1".into(),
        turns: vec![t1, t2],
        meta,
    };
    let d2 = Dialogue {
        id: "d2".into(),
        turns: vec![
            turn("d2::1", "年假有几天？", &[("p3", 1)]),
            turn("d2::2", "no gold here", &[]),
        ],
        meta: Default::default(),
    };
    let mut pmeta = serde_json::Map::new();
    pmeta.insert("url".into(), serde_json::json!("https://example.org/leave"));
    pmeta.insert("n".into(), serde_json::json!(1.5e-7));
    let passages = vec![
        Passage {
            id: "p1".into(),
            title: "Leave".into(),
            text: "Staff get fifteen days of leave.\nA new line\tand a tab.".into(),
            doc_id: Some("doc-1".into()),
            meta: pmeta,
        },
        Passage {
            id: "p2".into(),
            title: String::new(),
            text: "Part-time staff get leave pro rata.".into(),
            doc_id: None,
            meta: Default::default(),
        },
        Passage {
            id: "p3".into(),
            title: "假期".into(),
            text: "员工每年有15天年假。".into(),
            doc_id: None,
            meta: Default::default(),
        },
        Passage {
            id: "p4".into(),
            title: "Other".into(),
            text: "Unrelated.".into(),
            doc_id: None,
            meta: Default::default(),
        },
    ];
    let mut m = Manifest {
        name: "leave-bench".into(),
        language: "en".into(),
        source: "mtr-synth".into(),
        license: "cc-by-4.0".into(),
        ..Default::default()
    };
    m.generator.insert("generator".into(), "qwen2.5-7b".into());
    write_benchmark(root, m, &[d1, d2], passages.into_iter().map(Ok)).unwrap()
}

fn reimport(src: &Path, out: &Path) -> BenchmarkDir {
    assert_eq!(crate::formats::detect(src).unwrap(), crate::Format::Hf);
    crate::formats::import(
        crate::Format::Hf,
        src,
        out,
        &ImportOptions::default(),
        &NoProgress,
    )
    .unwrap();
    BenchmarkDir::open(out).unwrap()
}

#[test]
fn a_native_benchmark_comes_back_with_the_same_fingerprint() {
    let tmp = tempfile::tempdir().unwrap();
    let bench = native(&tmp.path().join("b"));
    let hf = tmp.path().join("hf");
    let opts = HfOptions {
        query: QueryField::Full,
        sections: vec![CardSection {
            title: "Audit".into(),
            body: "verdict: trustworthy".into(),
        }],
    };
    let r = export_hf(&bench, &hf, &opts).unwrap();
    assert_eq!((r.queries, r.passages, r.qrels_pairs), (4, 4, 4));
    for c in CONFIGS {
        assert!(hf.join(c.file()).is_file(), "{}", c.file());
    }
    let card = std::fs::read_to_string(hf.join(CARD)).unwrap();
    assert!(card.contains("## Audit\n\nverdict: trustworthy"), "{card}");
    assert!(card.contains("- generator: `qwen2.5-7b`"));
    let back = reimport(&hf, &tmp.path().join("back"));
    let m = bench.manifest().unwrap();
    assert_eq!(back.manifest().unwrap().fingerprint, m.fingerprint);
    assert_eq!(back.compute_fingerprint().unwrap(), m.fingerprint);
    assert_eq!(back.manifest().unwrap().generator, m.generator);
    assert_eq!(back.dialogues().unwrap(), bench.dialogues().unwrap());
}

#[test]
fn a_failed_export_leaves_no_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let bench = native(&tmp.path().join("b"));
    let mut corpus = std::fs::read_to_string(bench.corpus_path()).unwrap();
    corpus.push_str("{not json\n");
    std::fs::write(bench.corpus_path(), corpus).unwrap();
    let hf = tmp.path().join("hf");
    assert!(export_hf(&bench, &hf, &HfOptions::default()).is_err());
    assert!(!hf.exists());
}

#[test]
fn an_imported_benchmark_survives_the_round_trip_too() {
    let tmp = tempfile::tempdir().unwrap();
    let b = tmp.path().join("beir");
    crate::formats::import(
        crate::Format::Beir,
        &crate::formats::test_support::fixture("beir"),
        &b,
        &ImportOptions::default(),
        &NoProgress,
    )
    .unwrap();
    let bench = BenchmarkDir::open(&b).unwrap();
    export_hf(&bench, &tmp.path().join("hf"), &HfOptions::default()).unwrap();
    let back = reimport(&tmp.path().join("hf"), &tmp.path().join("back"));
    assert_eq!(
        back.compute_fingerprint().unwrap(),
        bench.compute_fingerprint().unwrap()
    );
}

#[test]
fn the_retrieval_layout_alone_reads_as_beir_does() {
    let tmp = tempfile::tempdir().unwrap();
    let bench = native(&tmp.path().join("b"));
    let hf = tmp.path().join("hf");
    export_hf(&bench, &hf, &HfOptions::default()).unwrap();
    std::fs::remove_dir_all(hf.join("dialogues")).unwrap();
    let back = reimport(&hf, &tmp.path().join("back")).load().unwrap();
    // the conversational ids `d1::1` group the queries into their dialogues again
    let ids: Vec<_> = back.dialogues.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(ids, ["d1", "d2"]);
    assert_eq!(back.turn_count(), 4);
    assert_eq!(back.dir.qrels().unwrap(), bench.qrels().unwrap());
    let (d, i) = back.find_turn("d1::2").unwrap();
    assert_eq!(d.turns[i].user, "And for part-time staff?");
}

#[test]
fn wrong_columns_and_folders_are_user_errors_naming_file_and_column() {
    let tmp = tempfile::tempdir().unwrap();
    let bench = native(&tmp.path().join("b"));
    let hf = tmp.path().join("hf");
    export_hf(&bench, &hf, &HfOptions::default()).unwrap();
    std::fs::remove_dir_all(hf.join("dialogues")).unwrap();
    // a qrels table without `score`
    let qrels = hf.join(super::layout::QRELS.file());
    let cols = &super::layout::QRELS.columns[..2];
    let mut w = super::parquet::TableWriter::create(&qrels, cols).unwrap();
    w.push(vec![
        super::parquet::Cell::Text("d1::1".into()),
        super::parquet::Cell::Text("p1".into()),
    ])
    .unwrap();
    w.finish().unwrap();
    let out = tmp.path().join("back");
    let e = crate::formats::import(
        crate::Format::Hf,
        &hf,
        &out,
        &ImportOptions::default(),
        &NoProgress,
    )
    .unwrap_err();
    assert!(e.is_user_error(), "{e}");
    let s = e.to_string();
    assert!(
        s.contains("test-00000-of-00001.parquet") && s.contains("field `score`"),
        "{s}"
    );
    assert!(!out.exists(), "a failed import leaves no folder");
    // a folder that is not a dataset
    let e = crate::formats::import(
        crate::Format::Hf,
        tmp.path(),
        &out,
        &ImportOptions::default(),
        &NoProgress,
    )
    .unwrap_err();
    assert!(e.is_user_error() && e.to_string().contains("not a Hugging Face dataset folder"));
}
