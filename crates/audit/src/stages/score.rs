//! Stage 5, score: the benchmark's judgements made become item scores
//! ([`crate::items::aggregate::score_items`]), and the audit says whether it stopped early: a
//! budget stop of the judging or of the human calibration set, judgements not made, or a judge
//! that failed (nearly) everything.

use crate::config::AuditSettings;
use crate::items::aggregate::{ItemScore, score_items};
use crate::judges::engine::Judged;
use crate::judges::record::Judgement;
use crate::stages::human_labels::HumanJudged;
use crate::stages::plan::Planned;

/// What was judged, scored.
pub(crate) struct Scored {
    /// Judgements planned and made.
    pub planned: usize,
    pub done: usize,
    pub judgements: Vec<Judgement>,
    /// Why the audit is not complete.
    pub stopped: Option<String>,
    pub items: Vec<ItemScore>,
}

/// Item scores of the judgements made, and why the audit stopped early, if it did: a budget
/// stop, judgements not made, or a judge that failed (nearly) everything.
pub(crate) fn score(
    judged: Judged,
    human: &HumanJudged,
    s: &AuditSettings,
    planned: &Planned,
) -> Scored {
    let human_stopped = human.judged.as_ref().and_then(|h| h.stopped.clone());
    let total = judged.records.len();
    let judgements: Vec<Judgement> = judged.records.into_iter().flatten().map(|j| *j).collect();
    let done = judgements.len();
    let mut stopped = judged
        .stopped
        .or(human_stopped.map(|s| format!("human calibration: {s}")));
    if stopped.is_none() && done < total {
        stopped = Some(format!("{} judgements were not made", total - done));
    }
    // a judge that failed (nearly) everything leaves an audit that is not complete
    let failed_judges =
        crate::statistics::failures::from_judgements(&judgements, s.max_failed_share);
    if stopped.is_none()
        && let Some(f) = failed_judges.first()
    {
        stopped = Some(f.message());
    }
    let items = score_items(
        &judgements,
        planned.judges.len(),
        s.trials * planned.samples as usize,
    );
    Scored {
        planned: total,
        done,
        judgements,
        stopped,
        items,
    }
}
