//! The corrections the reviewers made in the flagged queue, as the audit's label findings
//! ([`crate::label_edits::AuditLabels`]) so that `mtr qrels apply --variant reviewed` and
//! `mtr bench --audit` use them like the judges' own:
//! - a suggested missing gold (`missing|<turn>|<passage>`) is added when a strict majority of
//!   its reviewers said `yes` or `partly`; with grade of the suggestion (at least 1) when a
//!   strict majority said `yes`, else grade 1 (a passage that partly answers is relevant, at
//!   the lowest grade);
//! - a gold (`gold|<turn>|<passage>`) is removed when a strict majority of its reviewers said
//!   `no` (`partly` keeps it).
//!
//! Nothing the reviewers did not see changes: the judges' own findings are not used.

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::Result;
use crate::label_edits::{AddedGold, AuditLabels, RemovedGold};

use crate::review_queue::ItemKey;

use super::EffectiveLabels;

/// `(kind, turn, passage)` of a flagged-queue key (`missing|t|p`, `gold|t|p`).
fn flagged_key(key: &str) -> Option<(&'static str, String, String)> {
    match ItemKey::parse(key)? {
        ItemKey::Missing {
            turn_id,
            passage_id,
        } => Some(("missing", turn_id, passage_id)),
        ItemKey::Gold {
            turn_id,
            passage_id,
        } => Some(("gold", turn_id, passage_id)),
        ItemKey::Unit { .. } => None,
    }
}

/// Counts of `yes`, `partly` and `no` among an item's reviewers (other labels ignored).
fn votes(by: &BTreeMap<String, String>) -> (usize, usize, usize) {
    let mut v = (0, 0, 0);
    for l in by.values() {
        match l.trim().to_ascii_lowercase().as_str() {
            "yes" | "y" => v.0 += 1,
            "partly" | "p" => v.1 += 1,
            "no" | "n" => v.2 += 1,
            _ => {}
        }
    }
    v
}

/// The reviewers' corrections of `audit`: its added golds replaced by the suggestions the
/// reviewers accepted, its removed golds by those they rejected.
pub fn reviewed_edits(
    audit: &AuditLabels,
    suggested_grade: &BTreeMap<(String, String), i32>,
    labels: &EffectiveLabels,
) -> AuditLabels {
    let mut added = Vec::new();
    let mut removed = Vec::new();
    for (key, by) in labels {
        let Some((kind, turn, passage)) = flagged_key(key) else {
            continue;
        };
        let (yes, partly, no) = votes(by);
        let all = yes + partly + no;
        if kind == "missing" && (yes + partly) * 2 > all {
            let grade = if yes * 2 > all {
                suggested_grade
                    .get(&(turn.clone(), passage.clone()))
                    .copied()
                    .unwrap_or(1)
                    .max(1)
            } else {
                1
            };
            added.push(AddedGold {
                turn_id: turn,
                passage_id: passage,
                grade,
            });
        } else if kind == "gold" && no * 2 > all {
            removed.push(RemovedGold {
                turn_id: turn,
                passage_id: passage,
                score: f64::NAN,
            });
        }
    }
    let mut notes = audit.notes.clone();
    notes.push(format!(
        "reviewed: {} suggested golds accepted by the reviewers, {} golds rejected by them; nothing else changes",
        added.len(),
        removed.len()
    ));
    AuditLabels {
        added,
        removed,
        notes,
        ..audit.clone()
    }
}

/// [`reviewed_edits`] of an audit folder, read with its labels file; `None` without one.
pub fn read(audit_dir: &Path) -> Result<Option<AuditLabels>> {
    let audit = crate::label_edits::read(audit_dir)?;
    let summary = crate::summary::read_summary(&audit_dir.join(crate::summary::SUMMARY))?;
    let path = super::labels_path(audit_dir);
    if !path.is_file() {
        return Ok(None);
    }
    let lines =
        crate::review_queue::label_log::read_lines(&path, &super::audit_fingerprint(&summary))?;
    let labels = crate::review_queue::label_log::effective(&lines);
    let grades = summary
        .suggested_qrels
        .iter()
        .map(|s| ((s.turn_id.clone(), s.passage_id.clone()), s.grade))
        .collect();
    Ok(Some(reviewed_edits(&audit, &grades, &labels)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_accepted_suggestions_are_added_and_only_rejected_golds_removed() {
        let by = |xs: &[(&str, &str)]| -> BTreeMap<String, String> {
            xs.iter()
                .map(|(r, l)| (r.to_string(), l.to_string()))
                .collect()
        };
        let labels: EffectiveLabels = [
            ("missing|d::1|a", by(&[("ann", "yes")])),
            ("missing|d::1|b", by(&[("ann", "partly")])),
            ("missing|d::1|c", by(&[("ann", "no")])),
            ("missing|d::2|e", by(&[("ann", "yes"), ("bob", "no")])),
            ("gold|d::1|g", by(&[("ann", "no")])),
            ("gold|d::2|h", by(&[("ann", "partly")])),
            ("alignment|d::3|k", by(&[("ann", "1")])),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let audit = AuditLabels {
            fingerprint: "fp".into(),
            benchmark: "b".into(),
            flag_rating_below: 3.0,
            sampled: false,
            dialogues_audited: 3,
            dialogues_total: 3,
            audited_turns: Default::default(),
            removed: vec![RemovedGold {
                turn_id: "d::3".into(),
                passage_id: "k".into(),
                score: 1.0,
            }],
            added: vec![],
            suggestions_not_verified: 0,
            complete: true,
            notes: vec![],
        };
        let grades = BTreeMap::from([(("d::1".to_string(), "a".to_string()), 2)]);
        let r = reviewed_edits(&audit, &grades, &labels);
        let added: Vec<(&str, &str, i32)> = r
            .added
            .iter()
            .map(|a| (a.turn_id.as_str(), a.passage_id.as_str(), a.grade))
            .collect();
        assert_eq!(added, [("d::1", "a", 2), ("d::1", "b", 1)]);
        let removed: Vec<(&str, &str)> = r
            .removed
            .iter()
            .map(|a| (a.turn_id.as_str(), a.passage_id.as_str()))
            .collect();
        assert_eq!(removed, [("d::1", "g")]);
    }
}
