//! The audit folder: `items.jsonl` (every judgement), `verify_items.jsonl` (the pointwise
//! ratings of missing-gold candidates), `summary.json`, `report.md`, `report.html`,
//! `suggested_qrels.tsv` (and `human_items.jsonl` with `--human-labels`).
//! Every file is written atomically and in a fixed order, so the same inputs and seed give
//! byte-identical files.

use std::io::Write;
use std::path::Path;

use mtr_core::atomic::{AtomicFile, write_atomic};
use mtr_core::jsonl::JsonlWriter;

use crate::error::{AuditError, Result};
use crate::items::aggregate::{Suggestion, SuggestionVerdict};
use crate::judges::record::Judgement;
use crate::summary::Summary;
pub use crate::summary::{SUMMARY, read_summary, write_summary};

/// Every judgement of the audit, one JSON record a line.
pub const ITEMS: &str = "items.jsonl";
pub(crate) const HUMAN_ITEMS: &str = "human_items.jsonl";
pub(crate) const VERIFY_ITEMS: &str = "verify_items.jsonl";
/// The report as Markdown.
pub const REPORT_MD: &str = "report.md";
/// The report as one self-contained HTML page.
pub const REPORT_HTML: &str = "report.html";
pub(crate) const SUGGESTED_QRELS: &str = "suggested_qrels.tsv";

fn io(path: &Path, e: impl std::fmt::Display) -> AuditError {
    AuditError::Output {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

pub(crate) fn write_judgements(path: &Path, judgements: &[Judgement]) -> Result<()> {
    let mut w = JsonlWriter::create(path)?;
    for j in judgements {
        w.write(j)?;
    }
    w.commit()?;
    Ok(())
}

/// Header of `suggested_qrels.tsv`.
pub(crate) const SUGGESTIONS_HEADER: &str = "query-id\tcorpus-id\tscore\tvotes\tpicks\tinstead-of\tverdict\talignment-ratings\tsame-document\tshingle-overlap\n";

/// `suggested_qrels.tsv`: a BEIR-style header, then one line per missing-gold candidate:
/// `turn passage score votes picks gold verdict ratings same-document overlap`. The score is
/// the grade to add for a probable missing gold and 0 for any other verdict (not confirmed,
/// unverified), so `awk '$3 > 0' | cut -f1-3` gives the BEIR qrels to merge after human
/// review. Ratings are `judge=rating` pairs joined by `,` (`-` when none).
pub(crate) fn write_suggestions(path: &Path, suggestions: &[Suggestion]) -> Result<()> {
    let mut f = AtomicFile::create(path)?;
    let mut body = String::from(SUGGESTIONS_HEADER);
    for s in suggestions {
        let score = if s.verdict == SuggestionVerdict::ProbableMissingGold {
            s.grade
        } else {
            0
        };
        let ratings: Vec<String> = s
            .alignment_ratings
            .iter()
            .map(|(j, r)| format!("{j}={r}"))
            .collect();
        let verdict = serde_json::to_value(s.verdict)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        body.push_str(&format!(
            "{}\t{}\t{score}\t{}\t{}\t{}\t{verdict}\t{}\t{}\t{:.4}\n",
            s.turn_id,
            s.passage_id,
            s.votes,
            s.picks,
            s.gold_passage_id,
            if ratings.is_empty() {
                "-".to_string()
            } else {
                ratings.join(",")
            },
            s.same_document,
            s.shingle_overlap
        ));
    }
    f.write_all(body.as_bytes()).map_err(|e| io(path, e))?;
    f.commit()?;
    Ok(())
}

/// Renders and writes `report.md` and `report.html` from a summary.
pub fn write_reports(dir: &Path, s: &Summary) -> Result<()> {
    write_atomic(dir.join(REPORT_MD), crate::report::markdown(s).as_bytes())?;
    write_atomic(dir.join(REPORT_HTML), crate::report::html(s).as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn only_probable_missing_gold_has_a_positive_score() {
        let base = Suggestion {
            turn_id: "d::1".into(),
            passage_id: "p".into(),
            gold_passage_id: "g".into(),
            votes: 5,
            picks: 6,
            verdict: SuggestionVerdict::ProbableMissingGold,
            alignment_ratings: BTreeMap::from([("a".into(), 5.0), ("b".into(), 4.5)]),
            grade: 1,
            same_document: true,
            shingle_overlap: 0.25,
        };
        let other = Suggestion {
            passage_id: "q".into(),
            verdict: SuggestionVerdict::NotConfirmed,
            alignment_ratings: BTreeMap::new(),
            same_document: false,
            ..base.clone()
        };
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(SUGGESTED_QRELS);
        write_suggestions(&p, &[base, other]).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(format!("{}\n", lines[0]), SUGGESTIONS_HEADER);
        assert_eq!(
            lines[1],
            "d::1\tp\t1\t5\t6\tg\tprobable_missing_gold\ta=5,b=4.5\ttrue\t0.2500"
        );
        assert_eq!(
            lines[2],
            "d::1\tq\t0\t5\t6\tg\tnot_confirmed\t-\tfalse\t0.2500"
        );
    }
}
