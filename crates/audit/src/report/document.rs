//! The report as one document: the heading, the audit's scope and fingerprint, then each
//! section in order, rendered to Markdown and HTML.

use super::doc::{self, Block};
use super::format::short;
use super::{bias, human_calibration, reviewed, robust, scores, suggested, worst};
use crate::statistics::verdict::Verdict;
use crate::summary::Summary;

/// The verdict on the judges: the summary's, or computed for a summary written before it.
pub fn verdict(s: &Summary) -> Verdict {
    s.verdict
        .clone()
        .unwrap_or_else(|| crate::statistics::verdict::of(s))
}

/// The report as blocks (rendered to Markdown and HTML).
pub(super) fn blocks(s: &Summary) -> Vec<Block> {
    let v = verdict(s);
    let mut b = Vec::new();
    b.push(Block::Heading(1, format!("Audit of {}", s.benchmark.name)));
    b.push(Block::Para(v.line.clone()));
    let judges: Vec<String> = s
        .judges
        .iter()
        .map(|j| match j.rating_mode {
            mtr_llm::logprob::RatingMode::Generated => format!("`{}` ({})", j.name, j.model),
            mtr_llm::logprob::RatingMode::Probability => format!(
                "`{}` ({}; ratings read from token probabilities)",
                j.name, j.model
            ),
            mtr_llm::logprob::RatingMode::Relevance => format!(
                "`{}` ({}; relevance scores, alignment and discriminability only)",
                j.name, j.model
            ),
        })
        .collect();
    let mut intro = format!(
        "{} of {} dialogues ({} of {} turns) audited by {} judge{}: {}.",
        s.plan.dialogues_audited,
        s.plan.dialogues_total,
        s.plan.turns_audited,
        s.plan.turns_total,
        s.judges.len(),
        if s.judges.len() == 1 { "" } else { "s" },
        judges.join(", ")
    );
    if s.plan.sampled {
        intro.push_str(&format!(" Seeded sample (seed {}); the confidence intervals include the sampling error over dialogues.", s.settings.seed));
    }
    b.push(Block::Para(intro));
    if !s.complete {
        b.push(Block::Para(format!(
            "**Incomplete audit**: {} ({} of {} judgements done). Run the same command again to resume; finished judgements are not paid again.",
            s.stopped.as_deref().unwrap_or("stopped early"),
            s.plan.judgements_done,
            s.plan.judgements_planned
        )));
    }
    if let Some(t) = &s.time_budget {
        b.push(Block::Para(t.line()));
    }
    b.push(Block::Para(format!(
        "Fingerprint: data `{}`, config `{}`, prompts `{}`, mtr {}{}.",
        short(&s.fingerprint.data),
        short(&s.fingerprint.config),
        short(&s.fingerprint.prompts),
        s.fingerprint.tool_version,
        s.fingerprint
            .git_commit
            .as_ref()
            .map(|c| format!(" ({})", short(c)))
            .unwrap_or_default()
    )));

    scores::scores(&mut b, s, &v);
    if let Some(r) = &s.review {
        reviewed::section(&mut b, r, s.settings.confidence);
    }
    robust::means(&mut b, s);
    scores::skipped(&mut b, s);
    robust::context(&mut b, s);
    suggested::missing_gold(&mut b, s, &v);
    bias::bias(&mut b, s);
    if let Some(h) = &s.human {
        human_calibration::section(&mut b, h);
    }
    bias::histograms(&mut b, s);
    worst::worst(&mut b, s, &v);
    worst::cost(&mut b, s);
    if !s.warnings.is_empty() {
        b.push(Block::Heading(2, "Warnings".into()));
        b.push(Block::List(s.warnings.clone()));
    }
    b
}

/// `report.md`.
pub fn markdown(s: &Summary) -> String {
    doc::to_markdown(&blocks(s))
}

/// `report.html` (self-contained).
pub fn html(s: &Summary) -> String {
    doc::to_html(&format!("Audit of {}", s.benchmark.name), &blocks(s))
}
