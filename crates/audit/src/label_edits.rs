//! What an audit says about a benchmark's labels, read back from an audit folder
//! (`summary.json` + `items.jsonl`) as plain data that the bench and `mtr qrels apply` turn
//! into alternative qrels:
//! - *removed golds*: gold passages whose ensemble alignment score (mean over the judges that
//!   rated it) is below the audit's own `flag_rating_below` threshold, i.e. the judges say the
//!   passage does not answer its turn;
//! - *added golds*: suggested passages whose pointwise verification made them a
//!   `probable_missing_gold`, with their grade;
//! - the turns the audit covered (a `--sample` audits some dialogues only) and the benchmark
//!   fingerprint it was made on, so a caller can refuse to apply it to another benchmark.
//!
//! This module decides nothing about scoring; the bench crate (which must not depend on the
//! audit crate) takes these lists as plain maps.

use std::collections::BTreeSet;
use std::path::Path;

use serde::Serialize;

use crate::dimension::Dimension;
use crate::error::{AuditError, Result};
use crate::items::aggregate::{SuggestionVerdict, score_items};
use crate::judges::record::Judgement;
use crate::output::{ITEMS, SUMMARY, read_summary};

/// A gold passage the judges rated as not answering its turn.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RemovedGold {
    /// The turn it is a gold of.
    pub turn_id: String,
    /// The gold passage.
    pub passage_id: String,
    /// Ensemble alignment score (1-5), below [`AuditLabels::flag_rating_below`].
    pub score: f64,
}

/// A verified probable missing gold.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AddedGold {
    /// The turn it answers.
    pub turn_id: String,
    /// The passage.
    pub passage_id: String,
    /// Its relevance grade (at least 1).
    pub grade: i32,
}

/// The label changes an audit supports, and the scope it covered.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuditLabels {
    /// The audited benchmark's data fingerprint.
    pub fingerprint: String,
    /// The audited benchmark's name.
    pub benchmark: String,
    /// Alignment threshold: a gold scored below it is removed.
    pub flag_rating_below: f64,
    /// The audit sampled dialogues (`--sample`): the labels speak for `audited_turns` only.
    pub sampled: bool,
    /// Dialogues the audit judged.
    pub dialogues_audited: usize,
    /// Dialogues in the benchmark.
    pub dialogues_total: usize,
    /// Turn ids the audit covered (all turns of the audited dialogues).
    pub audited_turns: BTreeSet<String>,
    /// Sorted by turn, then passage.
    pub removed: Vec<RemovedGold>,
    /// Sorted by turn, then passage.
    pub added: Vec<AddedGold>,
    /// Suggestions not used: not confirmed by the pointwise check, or never checked.
    pub suggestions_not_verified: usize,
    /// The audit stopped early: some judgements are missing.
    pub complete: bool,
    /// Notes for the reader (audited turns inferred, ...).
    pub notes: Vec<String>,
}

/// Reads the label changes from an audit folder.
pub fn read(dir: &Path) -> Result<AuditLabels> {
    let summary_path = dir.join(SUMMARY);
    if !summary_path.is_file() {
        return Err(AuditError::Core(
            mtr_core::InputError::new(dir, "not an audit folder: it has no summary.json")
                .hint("give the output folder of `mtr audit` (-o DIR)")
                .into(),
        ));
    }
    let summary = read_summary(&summary_path)?;
    let items_path = dir.join(ITEMS);
    let judgements: Vec<Judgement> = if items_path.is_file() {
        mtr_core::jsonl::read_all(&items_path)?
    } else {
        Vec::new()
    };
    let mut notes = Vec::new();
    let aligned = summary
        .settings
        .dimensions()
        .contains(&Dimension::Alignment);
    if !aligned {
        notes.push(
            "the audit did not judge alignment: no gold passage is removed (noise-removed equals the original)"
                .to_string(),
        );
    }
    let threshold = summary.settings.flag_rating_below;
    let removed = removed_golds(&summary, &judgements);

    let mut added: Vec<AddedGold> = summary
        .suggested_qrels
        .iter()
        .filter(|s| s.verdict == SuggestionVerdict::ProbableMissingGold)
        .map(|s| AddedGold {
            turn_id: s.turn_id.clone(),
            passage_id: s.passage_id.clone(),
            grade: s.grade.max(1),
        })
        .collect();
    added.sort_by(|a, b| (&a.turn_id, &a.passage_id).cmp(&(&b.turn_id, &b.passage_id)));
    let suggestions_not_verified = summary.suggested_qrels.len() - added.len();
    if suggestions_not_verified > 0 {
        notes.push(format!(
            "{suggestions_not_verified} suggested missing golds are not verified probable missing golds and are not added"
        ));
    }

    let audited_turns: BTreeSet<String> = if !summary.plan.audited_turns.is_empty() {
        summary.plan.audited_turns.iter().cloned().collect()
    } else {
        notes.push(
            "the audit summary does not list its audited turns (written by an older mtr): they are taken from items.jsonl (turns with at least one judgement)"
                .to_string(),
        );
        judgements.iter().map(|j| j.turn_id.clone()).collect()
    };

    Ok(AuditLabels {
        fingerprint: summary.benchmark.fingerprint.clone(),
        benchmark: summary.benchmark.name.clone(),
        flag_rating_below: threshold,
        sampled: summary.plan.sampled,
        dialogues_audited: summary.plan.dialogues_audited,
        dialogues_total: summary.plan.dialogues_total,
        audited_turns,
        removed,
        added,
        suggestions_not_verified,
        complete: summary.complete,
        notes,
    })
}

/// The golds whose ensemble alignment score is below the audit's threshold, sorted by turn
/// and passage. Passages verified (or rejected) as missing golds are rated pointwise too; they
/// are not golds and never "removed".
fn removed_golds(summary: &crate::Summary, judgements: &[Judgement]) -> Vec<RemovedGold> {
    let threshold = summary.settings.flag_rating_below;
    let suggested: BTreeSet<(&str, &str)> = summary
        .suggested_qrels
        .iter()
        .map(|s| (s.turn_id.as_str(), s.passage_id.as_str()))
        .collect();
    let alignment: Vec<Judgement> = judgements
        .iter()
        .filter(|j| j.dimension == Dimension::Alignment)
        .cloned()
        .collect();
    let mut removed: Vec<RemovedGold> = score_items(&alignment, summary.judges.len().max(1), 1)
        .into_iter()
        .filter_map(|it| {
            let p = it.passage_id?;
            let score = it.score?;
            let keep = score < threshold && !suggested.contains(&(it.turn_id.as_str(), p.as_str()));
            keep.then_some(RemovedGold {
                turn_id: it.turn_id,
                passage_id: p,
                score,
            })
        })
        .collect();
    removed.sort_by(|a, b| (&a.turn_id, &a.passage_id).cmp(&(&b.turn_id, &b.passage_id)));
    removed.dedup_by(|a, b| a.turn_id == b.turn_id && a.passage_id == b.passage_id);
    removed
}

/// Refuses labels made on another benchmark: `fingerprint` is the data fingerprint of the
/// benchmark the caller is about to score.
pub fn check_fingerprint(labels: &AuditLabels, dir: &Path, fingerprint: &str) -> Result<()> {
    if labels.fingerprint == fingerprint {
        return Ok(());
    }
    Err(AuditError::Core(
        mtr_core::InputError::new(
            dir,
            format!(
                "this audit was made on another benchmark (or another version of it): the audit's benchmark `{}` has fingerprint {}, the benchmark given has {}",
                labels.benchmark,
                mtr_core::fingerprint::short(&labels.fingerprint),
                mtr_core::fingerprint::short(fingerprint)
            ),
        )
        .hint("audit this benchmark (`mtr audit BENCH -o AUDIT_DIR`) or give the benchmark the audit was made on")
        .into(),
    ))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::items::aggregate::Suggestion;
    use crate::items::aggregate::tests::judgement;

    /// A minimal summary, from JSON so that fields added later with defaults do not break it.
    fn summary() -> crate::Summary {
        let ledger = serde_json::json!({"calls": 0, "cache_hits": 0, "failed": 0,
            "prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0});
        serde_json::from_value(serde_json::json!({
            "summary_version": crate::summary::SUMMARY_VERSION,
            "benchmark": {"name": "b", "path": "", "source": "", "language": "en",
                "fingerprint": "fp", "generator": {}},
            "fingerprint": {"data": "fp", "config": "", "prompts": "", "tool_version": "",
                "git_commit": null},
            "settings": crate::AuditSettings::default(),
            "judges": [], "complete": true, "stopped": null,
            "plan": {"dialogues_total": 3, "dialogues_audited": 3, "sampled": false,
                "turns_total": 3, "turns_audited": 3, "items": {}, "skipped": {},
                "judgements_planned": 0, "judgements_done": 0},
            "dimensions": {}, "bias": {"position": [], "length": [], "self_preference": []},
            "failures": {}, "suggested_qrels": [], "flagged_turns": 0,
            "cost": {"total": ledger, "per_judge": {}, "per_dimension": {},
                "prompt_tokens_per_judgement": {}, "max_cost_usd": null},
            "human": null, "worst": {}, "warnings": []
        }))
        .unwrap()
    }

    #[test]
    fn removed_are_low_alignment_golds_added_are_verified_suggestions() {
        let a = Dimension::Alignment;
        let js = vec![
            judgement(a, "d::1", Some("g1"), "x", None, Some(1.0), None),
            judgement(a, "d::1", Some("g1"), "y", None, Some(2.0), None),
            judgement(a, "d::1", Some("g2"), "x", None, Some(5.0), None),
            judgement(a, "d::1", Some("g2"), "y", None, Some(1.0), None),
            // a suggestion rated pointwise: never "removed"
            judgement(a, "d::1", Some("s1"), "x", None, Some(1.0), None),
            judgement(a, "d::2", Some("g3"), "x", None, None, None),
        ];
        let tmp = tempfile::tempdir().unwrap();
        crate::output::write_judgements(&tmp.path().join(ITEMS), &js).unwrap();
        let mut s = summary();
        let sug = |p: &str, v: SuggestionVerdict, grade: i32| Suggestion {
            turn_id: "d::1".into(),
            passage_id: p.into(),
            gold_passage_id: "g1".into(),
            votes: 2,
            picks: 2,
            verdict: v,
            alignment_ratings: BTreeMap::new(),
            grade,
            same_document: false,
            shingle_overlap: 0.0,
        };
        s.suggested_qrels = vec![
            sug("s1", SuggestionVerdict::NotConfirmed, 1),
            sug("s2", SuggestionVerdict::ProbableMissingGold, 2),
            sug("s3", SuggestionVerdict::Unverified, 1),
        ];
        s.plan.audited_turns = vec!["d::1".into(), "d::2".into(), "d::3".into()];
        crate::output::write_summary(&tmp.path().join(SUMMARY), &s).unwrap();
        let l = read(tmp.path()).unwrap();
        assert_eq!(
            l.removed,
            vec![RemovedGold {
                turn_id: "d::1".into(),
                passage_id: "g1".into(),
                score: 1.5
            }]
        );
        assert_eq!(
            l.added,
            vec![AddedGold {
                turn_id: "d::1".into(),
                passage_id: "s2".into(),
                grade: 2
            }]
        );
        assert_eq!(l.suggestions_not_verified, 2);
        assert_eq!(l.audited_turns.len(), 3);
        assert_eq!(l.flag_rating_below, 3.0);
        check_fingerprint(&l, tmp.path(), "fp").unwrap();
        let e = check_fingerprint(&l, tmp.path(), "other").unwrap_err();
        assert!(e.to_string().contains("another benchmark"), "{e}");
        assert!(read(&tmp.path().join("nope")).is_err());
    }
}
