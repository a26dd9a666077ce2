//! Triplets mined from a small benchmark with BM25: a planted missing gold that plain mining
//! makes a negative and the audit drops, near-duplicates of a gold dropped, golds never
//! negatives, whole dialogues per split.

use std::sync::Arc;

use mtr_core::benchmark::{Manifest, write_benchmark};
use mtr_core::model::{Dialogue, Gold, Passage, Tags, Turn};
use mtr_core::progress::NoProgress;

use std::path::Path;

use mtr_core::Benchmark;
use mtr_retrieve::{QueryFormulation, Retriever};

use super::*;

fn passage(id: &str, text: &str) -> Passage {
    Passage {
        id: id.into(),
        title: String::new(),
        text: text.into(),
        doc_id: None,
        meta: Default::default(),
    }
}

fn turn(id: &str, user: &str, gold: &[&str]) -> Turn {
    Turn {
        id: id.into(),
        user: user.into(),
        rewrite: None,
        answer: None,
        gold: gold
            .iter()
            .map(|g| Gold {
                passage_id: g.to_string(),
                grade: 1,
            })
            .collect(),
        tags: Tags::default(),
    }
}

const GOLD: &str = "Annual leave for full time staff is fifteen working days each calendar year.";

/// Dialogue `d0`'s first turn asks about annual leave; `planted` answers it too (a missing
/// gold), `near-dup` is the gold with one word changed, the rest are fillers of some overlap.
fn bench(root: &std::path::Path, dialogues: usize) -> Benchmark {
    let mut passages = vec![
        passage("gold", GOLD),
        passage(
            "planted",
            "How many days of annual leave do staff get? Staff get fifteen days of annual leave.",
        ),
        passage(
            "near-dup",
            "Annual leave for full time staff is fifteen working days each calendar year too.",
        ),
    ];
    for i in 0..12 {
        passages.push(passage(
            &format!("f{i}"),
            &format!("Filler {i} on staff matters: parking, canteen, leave requests and days off number {i}."),
        ));
    }
    let ds: Vec<Dialogue> = (0..dialogues)
        .map(|i| Dialogue {
            id: format!("d{i}"),
            turns: vec![
                turn(
                    &format!("d{i}::1"),
                    "How many days of annual leave do staff get?",
                    &["gold"],
                ),
                turn(&format!("d{i}::2"), "and the canteen?", &[]),
            ],
            meta: Default::default(),
        })
        .collect();
    let m = Manifest {
        name: "t".into(),
        language: "en".into(),
        ..Default::default()
    };
    let dir = write_benchmark(root, m, &ds, passages.into_iter().map(Ok)).unwrap();
    dir.load().unwrap()
}

async fn run(
    b: &Benchmark,
    audit: Option<&AuditExclusions>,
    out: &Path,
    opts: &TripletOptions,
) -> TripletReport {
    let tmp = tempfile::tempdir().unwrap();
    let idx =
        crate::items::materials::corpus_index(b, &tmp.path().join("index"), &NoProgress).unwrap();
    let bm25: Arc<dyn Retriever> = Arc::new(idx.bm25().unwrap());
    export(b, &[bm25], audit, out, opts, &NoProgress)
        .await
        .unwrap()
}

fn lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test]
async fn the_audit_drops_a_planted_missing_gold_that_bm25_mining_makes_a_negative() {
    let tmp = tempfile::tempdir().unwrap();
    let b = bench(&tmp.path().join("b"), 1);
    let opts = TripletOptions {
        negatives: 3,
        query: QueryFormulation::Last,
        ..Default::default()
    };
    let plain = tmp.path().join("plain.jsonl");
    let r = run(&b, None, &plain, &opts).await;
    assert_eq!((r.turns, r.turns_without_gold), (1, 1));
    let l = lines(&plain);
    let neg: Vec<&str> = l[0]["neg"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        neg[0].starts_with("How many days of annual leave"),
        "{neg:?}"
    );
    assert!(!neg.contains(&GOLD), "a gold is never a negative");
    assert_eq!(
        r.removed.near_duplicate, 1,
        "the near-duplicate of the gold is dropped"
    );
    assert!(!neg.iter().any(|n| n.ends_with("calendar year too.")));
    assert_eq!((r.removed.audit, r.audit_exclusions), (0, None));

    let mut audit = AuditExclusions::default();
    audit.insert("d0::1", "planted");
    let audited = tmp.path().join("audited.jsonl");
    let r = run(&b, Some(&audit), &audited, &opts).await;
    assert_eq!((r.removed.audit, r.audit_exclusions), (1, Some(1)));
    let l = lines(&audited);
    let neg = l[0]["neg"].as_array().unwrap();
    assert_eq!(
        neg.len(),
        3,
        "the dropped candidate is replaced by the next one"
    );
    assert!(
        !neg.iter()
            .any(|n| n.as_str().unwrap().starts_with("How many days"))
    );
    assert_eq!(l[0]["pos"][0], GOLD);
    assert_eq!(l[0]["turn_id"], "d0::1");
}

#[tokio::test]
async fn flat_rows_pair_each_positive_with_each_negative_and_splits_keep_dialogues_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let b = bench(&tmp.path().join("b"), 10);
    let opts = TripletOptions {
        negatives: 2,
        form: TripletForm::Flat,
        splits: "train=0.8,dev=0.2".parse().unwrap(),
        seed: 5,
        ..Default::default()
    };
    let out = tmp.path().join("tr.jsonl");
    let r = run(&b, None, &out, &opts).await;
    let by: Vec<(&str, usize, usize, u64)> = r
        .files
        .iter()
        .map(|f| (f.split.as_str(), f.dialogues, f.turns, f.lines))
        .collect();
    assert_eq!(by, [("dev", 2, 2, 4), ("train", 8, 8, 16)]);
    let dev = lines(&tmp.path().join("tr.dev.jsonl"));
    let keys: Vec<&String> = dev[0].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["anchor", "positive", "negative"]);
    assert_eq!(
        dev[0]["anchor"],
        "How many days of annual leave do staff get?"
    );
    // the same seed, the same bytes
    let again = tmp.path().join("again.jsonl");
    run(&b, None, &again, &opts).await;
    assert_eq!(
        std::fs::read(tmp.path().join("tr.train.jsonl")).unwrap(),
        std::fs::read(tmp.path().join("again.train.jsonl")).unwrap()
    );
}

/// FlagEmbedding samples a line's negatives with `ceil((group - 1) / len(neg))`: a line whose
/// `neg` is empty stops its training with a division by zero. A turn for which mining finds no
/// negative (its query matches nothing but its gold) is left out and counted, in both forms.
#[tokio::test]
async fn a_turn_without_a_negative_is_left_out_and_counted() {
    let tmp = tempfile::tempdir().unwrap();
    let mut b = bench(&tmp.path().join("b"), 2);
    // d1's first turn asks in words only its gold holds
    let lone = "Quokka zebra okapi";
    let mut passages = Vec::new();
    b.dir
        .for_each_passage(|_, p| {
            passages.push(p);
            Ok(())
        })
        .unwrap();
    passages.push(passage("lone", "The quokka, the zebra and the okapi."));
    b.dialogues[1].turns[0] = turn("d1::1", lone, &["lone"]);
    let b = write_benchmark(
        tmp.path().join("b2"),
        b.manifest.clone(),
        &b.dialogues,
        passages.into_iter().map(Ok),
    )
    .unwrap()
    .load()
    .unwrap();
    for form in [TripletForm::Lists, TripletForm::Flat] {
        let opts = TripletOptions {
            negatives: 2,
            query: QueryFormulation::Last,
            form,
            ..Default::default()
        };
        let out = tmp.path().join(format!("{form:?}.jsonl"));
        let r = run(&b, None, &out, &opts).await;
        assert_eq!(
            (r.turns, r.turns_without_negatives, r.turns_without_gold),
            (1, 1, 2),
            "{form:?}"
        );
        assert_eq!(r.files[0].turns, 1);
        let l = lines(&out);
        assert!(!l.is_empty());
        for line in &l {
            assert_ne!(line["turn_id"], "d1::1", "{line}");
            assert_ne!(line["anchor"], lone, "{line}");
            if form == TripletForm::Lists {
                assert!(!line["neg"].as_array().unwrap().is_empty(), "{line}");
            }
        }
    }
}
