//! Labels in and out as TSV, for people who label elsewhere: `--print-sample` (the sample's
//! units: `item`, `dimension`, `turn_id`, `passage_id`), `--import FILE.tsv`
//! (`item<TAB>label[<TAB>reviewer]`; every bad line is reported with its file, line and field,
//! and nothing is written if any line is bad) and `--export FILE.tsv` (the effective labels:
//! `item`, `label`, `reviewer`, which `--import` reads back).

use std::collections::HashMap;
use std::path::Path;

use crate::error::{AuditError, Result};

use super::Queue;
use super::flagged::FlaggedItem;
use super::key::ItemKey;
use super::label_log::{EffectiveLabels, LabelLine, check_label, now_rfc3339};
use super::random_sample::Sample;

pub(crate) const SAMPLE_HEADER: &str = "item\tdimension\tturn_id\tpassage_id";
pub(crate) const LABELS_HEADER: &str = "item\tlabel\treviewer";

/// The sample's units as TSV, header first.
pub fn print_sample(sample: &Sample) -> String {
    let mut s = format!("{SAMPLE_HEADER}\n");
    for u in &sample.units {
        s.push_str(&format!(
            "{}\t{}\t{}\t{}\n",
            u.item,
            u.dimension.name(),
            u.turn_id,
            u.passage_id
        ));
    }
    s
}

/// The effective labels as TSV, header first, sorted by item then reviewer.
pub fn export(labels: &EffectiveLabels) -> String {
    let mut s = format!("{LABELS_HEADER}\n");
    for (item, by) in labels {
        for (reviewer, label) in by {
            s.push_str(&format!("{item}\t{label}\t{reviewer}\n"));
        }
    }
    s
}

/// The items a label may name: the sample's units (with their pools) and the flagged items.
pub struct Reviewable<'a> {
    pools: HashMap<&'a str, Option<&'a [String]>>,
}

impl<'a> Reviewable<'a> {
    /// What the sample and the flagged queue hold.
    pub fn new(sample: &'a Sample, flagged: &'a [FlaggedItem]) -> Self {
        let mut pools: HashMap<&str, Option<&[String]>> = HashMap::new();
        for u in &sample.units {
            pools.insert(u.item.as_str(), u.pool.as_deref());
        }
        for f in flagged {
            pools.insert(f.item.as_str(), None);
        }
        Self { pools }
    }

    /// The item's queue if `label` is a valid answer for it, else why not.
    pub fn check(
        &self,
        item: &str,
        label: &str,
    ) -> std::result::Result<Queue, (&'static str, String)> {
        let key = ItemKey::parse(item).ok_or(("item", format!("`{item}` is not an item key (dimension|turn|passage, missing|turn|passage or gold|turn|passage)")))?;
        let Some(pool) = self.pools.get(item) else {
            let queue = match key.queue() {
                Queue::Sample => "the random sample",
                Queue::Flagged => "the flagged items",
            };
            return Err(("item", format!("`{item}` is not in {queue} of this audit")));
        };
        check_label(&key, *pool, label).map_err(|e| ("label", e))?;
        Ok(key.queue())
    }
}

/// Reads a TSV of labels; every line must be valid, else nothing is returned and the error
/// lists every bad line.
pub fn import(
    path: &Path,
    reviewable: &Reviewable<'_>,
    default_reviewer: &str,
    fingerprint: &str,
) -> Result<Vec<LabelLine>> {
    let text = mtr_core::jsonl::read_text(path)?;
    let mut bad: Vec<mtr_core::InputError> = Vec::new();
    let mut out = Vec::new();
    let time = now_rfc3339();
    // mtr-core's line reader ends a line at LF, CRLF or a lone CR (what Excel for Mac's
    // tab-delimited text writes) and skips blank lines, numbering lines as the file has them
    let mut lines = mtr_core::jsonl::Lines::new(text.as_bytes(), path);
    while let Some(next) = lines.next_line() {
        let (no, line) = next?;
        if no == 1 && line.starts_with("item\t") {
            continue;
        }
        let fields: Vec<&str> = line.split('\t').collect();
        let err = |field: &str, m: String| mtr_core::InputError::new(path, m).line(no).field(field);
        if !(2..=3).contains(&fields.len()) {
            bad.push(err(
                "item",
                format!(
                    "{} fields; expected item<TAB>label[<TAB>reviewer]",
                    fields.len()
                ),
            ));
            continue;
        }
        let (item, label) = (fields[0].trim(), fields[1].trim());
        let reviewer = fields.get(2).map_or(default_reviewer, |r| r.trim());
        if reviewer.is_empty() {
            bad.push(err("reviewer", "empty reviewer".into()));
            continue;
        }
        match reviewable.check(item, label) {
            Ok(queue) => out.push(LabelLine {
                item: item.to_string(),
                queue,
                label: Some(label.to_string()),
                reviewer: reviewer.to_string(),
                time: time.clone(),
                seconds: 0.0,
                fingerprint: fingerprint.to_string(),
                note: String::new(),
            }),
            Err((field, m)) => bad.push(err(field, m)),
        }
    }
    if bad.is_empty() {
        return Ok(out);
    }
    let lines: Vec<String> = bad.iter().map(ToString::to_string).collect();
    Err(AuditError::Core(
        mtr_core::InputError::new(
            path,
            format!(
                "{} bad line(s), nothing imported:\n  {}",
                bad.len(),
                lines.join("\n  ")
            ),
        )
        .hint("a label is 1-5 for a rating, a passage id of the pool or none/several for completeness, yes/partly/no for a flagged item")
        .into(),
    ))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::dimension::Dimension;
    use crate::review_queue::random_sample::{SampleHeader, SampleUnit};

    fn sample() -> Sample {
        let u = |dim: Dimension, p: &str, pool: Option<Vec<String>>| SampleUnit {
            item: ItemKey::unit(dim, "d::1", (!p.is_empty()).then_some(p)).to_string(),
            dimension: dim,
            dialogue_id: "d".into(),
            turn_id: "d::1".into(),
            turn: 1,
            passage_id: p.into(),
            pool,
        };
        Sample {
            header: SampleHeader {
                sample_version: 1,
                seed: 1,
                per_dimension: 1,
                fingerprint: "fp".into(),
            },
            units: vec![
                u(Dimension::Alignment, "g", None),
                u(
                    Dimension::Completeness,
                    "g",
                    Some(vec!["x".into(), "g".into()]),
                ),
                u(Dimension::Quality, "", None),
            ],
        }
    }

    fn flagged() -> Vec<FlaggedItem> {
        vec![FlaggedItem {
            item: "missing|d::1|x".into(),
            kind: super::super::flagged::FlagKind::Missing,
            turn_id: "d::1".into(),
            passage_id: "x".into(),
            gold_passage_id: Some("g".into()),
            confidence: 1.0,
            why: String::new(),
            reasons: BTreeMap::new(),
        }]
    }

    #[test]
    fn print_import_export_roundtrip() {
        let s = sample();
        assert_eq!(
            print_sample(&s),
            "item\tdimension\tturn_id\tpassage_id\nalignment|d::1|g\talignment\td::1\tg\ncompleteness|d::1|g\tcompleteness\td::1\tg\nquality|d::1|\tquality\td::1\t\n"
        );
        let f = flagged();
        let r = Reviewable::new(&s, &f);
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("in.tsv");
        std::fs::write(
            &p,
            "item\tlabel\treviewer\nalignment|d::1|g\t4\ncompleteness|d::1|g\tx\tbob\nquality|d::1|\t2\r\nmissing|d::1|x\tpartly\n",
        )
        .unwrap();
        let lines = import(&p, &r, "ann", "fp").unwrap();
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[1].reviewer, "bob");
        assert_eq!(lines[3].queue, Queue::Flagged);
        let eff = super::super::label_log::effective(&lines);
        let out = export(&eff);
        assert!(out.starts_with("item\tlabel\treviewer\n"));
        let q = tmp.path().join("out.tsv");
        std::fs::write(&q, &out).unwrap();
        assert_eq!(
            super::super::label_log::effective(&import(&q, &r, "x", "fp").unwrap()),
            eff
        );
    }

    #[test]
    fn lone_cr_and_bom_files_import_every_label() {
        // a lone CR as line end read as one line: the whole file was refused as one bad line
        let s = sample();
        let f = flagged();
        let r = Reviewable::new(&s, &f);
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("in.tsv");
        std::fs::write(
            &p,
            "\u{feff}item\tlabel\treviewer\ralignment|d::1|g\t4\rcompleteness|d::1|g\tx\tbob\r\rquality|d::1|\t2",
        )
        .unwrap();
        let lines = import(&p, &r, "ann", "fp").unwrap();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[1].reviewer, "bob");
        assert_eq!(lines[2].label.as_deref(), Some("2"));
    }

    #[test]
    fn every_bad_line_is_reported_and_nothing_returned() {
        let s = sample();
        let f = flagged();
        let r = Reviewable::new(&s, &f);
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("in.tsv");
        std::fs::write(
            &p,
            "alignment|d::1|g\t4\nalignment|d::1|g\t7\nfaithfulness|d::9|\t3\ncompleteness|d::1|g\tq\nmissing|d::1|x\tmaybe\nnonsense\n",
        )
        .unwrap();
        let e = import(&p, &r, "ann", "fp").unwrap_err();
        assert!(e.is_user_error());
        let m = e.to_string();
        for (line, field) in [
            (2, "label"),
            (3, "item"),
            (4, "label"),
            (5, "label"),
            (6, "item"),
        ] {
            assert!(
                m.contains(&format!("{}:{line}: field `{field}`", p.display())),
                "line {line}: {m}"
            );
        }
        assert!(!m.contains(":1:"), "{m}");
    }
}
