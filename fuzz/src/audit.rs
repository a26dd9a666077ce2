//! The audit's review files: the labels TSV a reviewer brings back (`mtr review --import`,
//! `review_queue::tsv::import`) against a sample and a flagged queue of each kind of unit, and
//! the label log (`review/labels.jsonl`, `label_log::read_lines`).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use mtr_audit::Dimension;
use mtr_audit::review_queue::ItemKey;
use mtr_audit::review_queue::flagged::{FlagKind, FlaggedItem};
use mtr_audit::review_queue::random_sample::{Sample, SampleHeader, SampleUnit};
use mtr_audit::review_queue::{label_log, tsv};

/// The audit fingerprint the label files are checked against.
pub const FINGERPRINT: &str = "fp";

fn unit(dimension: Dimension, passage: &str, pool: Option<Vec<String>>) -> SampleUnit {
    SampleUnit {
        item: ItemKey::unit(dimension, "d::1", (!passage.is_empty()).then_some(passage))
            .to_string(),
        dimension,
        dialogue_id: "d".into(),
        turn_id: "d::1".into(),
        turn: 1,
        passage_id: passage.into(),
        pool,
    }
}

/// A sample with a unit of each dimension and a flagged item of each kind.
fn queues() -> &'static (Sample, Vec<FlaggedItem>) {
    static Q: OnceLock<(Sample, Vec<FlaggedItem>)> = OnceLock::new();
    Q.get_or_init(|| {
        let sample = Sample {
            header: SampleHeader {
                sample_version: 1,
                seed: 1,
                per_dimension: 1,
                fingerprint: FINGERPRINT.into(),
            },
            units: vec![
                unit(Dimension::Alignment, "g", None),
                unit(
                    Dimension::Completeness,
                    "g",
                    Some(vec!["x".into(), "g".into()]),
                ),
                unit(Dimension::Faithfulness, "", None),
                unit(Dimension::Quality, "", None),
            ],
        };
        let flag = |kind, item: &str, passage: &str| FlaggedItem {
            item: item.into(),
            kind,
            turn_id: "d::1".into(),
            passage_id: passage.into(),
            gold_passage_id: Some("g".into()),
            confidence: 1.0,
            why: String::new(),
            reasons: BTreeMap::new(),
        };
        let flagged = vec![
            flag(FlagKind::Missing, "missing|d::1|x", "x"),
            flag(FlagKind::Gold, "gold|d::1|g", "g"),
        ];
        (sample, flagged)
    })
}

/// Imports `data` as a labels TSV.
pub fn review_tsv(data: &[u8]) {
    let (sample, flagged) = queues();
    let reviewable = tsv::Reviewable::new(sample, flagged);
    let p = crate::file("labels.tsv", data);
    let _ = tsv::import(&p, &reviewable, "ann", FINGERPRINT);
}

/// Reads `data` as the label log.
pub fn label_log(data: &[u8]) {
    let p = crate::file("labels.jsonl", data);
    let _ = label_log::read_lines(&p, FINGERPRINT);
}

/// Seeds of the labels TSV: a file `--export` writes, and one with every kind of label.
pub fn review_tsv_seeds() -> Vec<(String, Vec<u8>)> {
    let every = "item\tlabel\treviewer\nalignment|d::1|g\t4\ncompleteness|d::1|g\tx\tbob\n\
                 faithfulness|d::1|\t5\nquality|d::1|\t2\r\nmissing|d::1|x\tpartly\n\
                 gold|d::1|g\tno\tann\n";
    let bad = "alignment|d::1|g\t7\nfaithfulness|d::9|\t3\nnonsense\n";
    vec![
        ("every".into(), every.as_bytes().to_vec()),
        ("bad".into(), bad.as_bytes().to_vec()),
    ]
}

/// Seeds of the label log: lines as `mtr review` appends them, an undo, a partial last line.
pub fn label_log_seeds() -> Vec<(String, Vec<u8>)> {
    let line = |item: &str, queue: &str, label: &str| {
        format!(
            "{{\"item\":\"{item}\",\"queue\":\"{queue}\",\"label\":{label},\"reviewer\":\"ann\",\"time\":\"2026-12-07T10:00:00.000Z\",\"seconds\":3.5,\"fingerprint\":\"{FINGERPRINT}\"}}\n"
        )
    };
    let log = [
        line("alignment|d::1|g", "sample", "\"4\""),
        line("missing|d::1|x", "flagged", "\"yes\""),
        line("alignment|d::1|g", "sample", "null"),
    ]
    .concat();
    let partial = format!("{log}{{\"item\":\"quality|d::1|\",\"queue\":\"sam");
    vec![
        ("log".into(), log.into_bytes()),
        ("partial".into(), partial.into_bytes()),
    ]
}
