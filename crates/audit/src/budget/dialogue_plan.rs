//! The time budget's plan for the audit: which dialogues this run starts ([`select`]), the
//! line announcing it, and its record in `summary.json`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use mtr_llm::budget::{Speeds, budget_text};
use mtr_llm::plan::human_duration;
use serde::{Deserialize, Serialize};

use super::DialogueWork;

/// The audit's words in the time budget's announcement.
const AUDIT_WORDING: mtr_llm::budget::Wording = mtr_llm::budget::Wording {
    would: "would audit",
    doing: "auditing",
    stops: "judgement",
};

/// Prints a line of the run (the binary: to stderr).
pub(super) type Announce = Arc<dyn Fn(&str) + Send + Sync>;

/// The budget a run was given, and since when the clock runs.
#[derive(Clone)]
pub struct TimeBudget {
    /// How long the run may take.
    pub budget: Duration,
    /// When the command started: the preparation (index, benchmark) counts against the budget.
    pub started: Instant,
    /// Where the plan's line goes.
    pub announce: Option<Announce>,
}

impl TimeBudget {
    /// A budget whose clock started at `started`, announced nowhere.
    pub fn new(budget: Duration, started: Instant) -> Self {
        Self {
            budget,
            started,
            announce: None,
        }
    }

    /// When no new judgement may start.
    pub fn deadline(&self) -> Instant {
        self.started + self.budget
    }
}

/// The time budget's record in `summary.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TimeBudgetInfo {
    pub budget_s: f64,
    /// Seconds spent before judging (benchmark, index, hard negatives, this plan).
    pub preparation_s: f64,
    /// Expected judging seconds of the dialogues started, at the endpoints' speed; None when
    /// an endpoint's speed is unknown (then nothing was cut).
    pub expected_s: Option<f64>,
    /// Dialogues of the audit's plan (all, or `--sample`).
    pub dialogues_planned: usize,
    /// Whose every judgement an earlier run had made.
    pub dialogues_done_before: usize,
    /// Started by this run (those the budget fitted).
    pub dialogues_started: usize,
    /// Whose every judgement is made now (not counting those done before).
    pub dialogues_audited: usize,
    /// Not fully judged: left for a rerun with more time.
    pub dialogues_left: usize,
    /// The deadline kept judgements from starting (the endpoints were slower than expected).
    pub deadline_stopped: bool,
}

/// The plan: the record, and per planned dialogue whether it is started.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BudgetPlan {
    /// What `summary.json` records of the plan.
    pub info: TimeBudgetInfo,
    /// Dialogue ids in plan order.
    pub dialogues: Vec<String>,
    /// Per dialogue: whether the plan starts it.
    pub selected: Vec<bool>,
    /// Per dialogue: the time it adds to the plan; None when unknown or done before.
    pub seconds: Vec<Option<f64>>,
    /// Per dialogue: the judgements it needs.
    pub jobs: Vec<usize>,
}

/// Takes the dialogues not done before in order while `fixed_s` plus their cumulative expected
/// time fits `budget_s` (the first that does not fit ends the plan); all of them when a speed
/// is unknown ([`mtr_llm::budget::select`]).
pub(crate) fn select(
    work: &[(String, DialogueWork)],
    speeds: &dyn Speeds,
    budget_s: f64,
    fixed_s: f64,
) -> BudgetPlan {
    let n = work.len();
    let units: Vec<_> = work
        .iter()
        .map(|(_, w)| (!w.done_before()).then_some(&w.calls))
        .collect();
    let s = mtr_llm::budget::select(&units, speeds, budget_s, fixed_s);
    BudgetPlan {
        info: TimeBudgetInfo {
            budget_s,
            preparation_s: fixed_s,
            expected_s: s.expected_s,
            dialogues_planned: n,
            dialogues_done_before: s.done_before,
            dialogues_started: s.started(),
            dialogues_left: n - s.done_before,
            ..Default::default()
        },
        dialogues: work.iter().map(|(id, _)| id.clone()).collect(),
        selected: s.selected,
        seconds: s.seconds,
        jobs: work.iter().map(|(_, w)| w.jobs).collect(),
    }
}

impl BudgetPlan {
    /// Dialogues the plan does not start (not done before either).
    pub(crate) fn not_started(&self) -> usize {
        let i = &self.info;
        i.dialogues_planned - i.dialogues_done_before - i.dialogues_started
    }

    /// Counts the dialogues whose every judgement is made after the run (`records`: the
    /// judgements of the benchmark's units, `None` where not made).
    pub fn finish(&mut self, records: &[Option<Box<crate::judges::record::Judgement>>]) {
        let mut done: std::collections::HashMap<&str, usize> = Default::default();
        for r in records.iter().flatten() {
            *done.entry(r.dialogue_id.as_str()).or_default() += 1;
        }
        let before = self.info.dialogues_done_before;
        let complete = self
            .dialogues
            .iter()
            .zip(&self.jobs)
            .filter(|(id, jobs)| done.get(id.as_str()).copied().unwrap_or(0) >= **jobs)
            .count();
        self.info.dialogues_audited = complete.saturating_sub(before);
        self.info.dialogues_left = self.info.dialogues_planned - complete.max(before);
    }

    /// The one line a run prints before judging, in the audit's words for a dry or a real
    /// run (mtr-llm's one budget announcement).
    pub fn line(&self, run: mtr_llm::budget::Run) -> String {
        let i = &self.info;
        mtr_llm::budget::Announcement {
            budget_s: i.budget_s,
            planned: i.dialogues_planned,
            done_before: i.dialogues_done_before,
            started: i.dialogues_started,
            left: self.not_started(),
            expected_s: i.expected_s,
            preparation_s: i.preparation_s,
        }
        .line(&AUDIT_WORDING, run)
    }

    /// The ids of the dialogues the plan starts, when it leaves some out.
    pub(crate) fn restriction(&self) -> Option<std::collections::HashSet<String>> {
        (self.not_started() > 0).then(|| {
            self.dialogues
                .iter()
                .zip(&self.selected)
                .filter(|(_, s)| **s)
                .map(|(id, _)| id.clone())
                .collect()
        })
    }
}

impl TimeBudgetInfo {
    /// The report's line.
    pub fn line(&self) -> String {
        let expected = self.expected_s.map_or_else(
            || "unknown (no speed for an endpoint)".to_string(),
            human_duration,
        );
        let mut s = format!(
            "Time budget {}: {} of {} planned dialogues audited in this run ({} done before, {} left for a rerun with more time); expected judging time {expected} after {} of preparation.",
            budget_text(self.budget_s),
            self.dialogues_audited,
            self.dialogues_planned,
            self.dialogues_done_before,
            self.dialogues_left,
            human_duration(self.preparation_s)
        );
        if self.deadline_stopped {
            s.push_str(" The deadline stopped judging (the endpoints were slower than expected).");
        }
        s
    }
}
