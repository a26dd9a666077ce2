//! `--time-budget`: which dialogues a run starts. Before generation, every dialogue's remaining
//! first-attempt calls (`calls.rs`) are planned by mtr-llm's one time-budget planner
//! ([`mtr_llm::budget::select`]): timed at the endpoints' configured or measured speed (`mtr
//! local speed`), dialogues are taken in the plan's order while the preparation already spent
//! plus their cumulative expected time fits the budget, the others are left for a rerun. Where
//! an endpoint's speed is unknown nothing is cut and the budget is only a deadline: the
//! generator starts no new dialogue once the time spent plus that dialogue's expected time
//! passes it. A turn in flight is never interrupted, but no turn starts that would end past
//! the budget: a started dialogue stops at a turn boundary, its verified turns kept
//! (`generate::schedule`, counted in [`BudgetPlan::stopped_at_turn_boundary`]). The dry run
//! prints the same plan;
//! what is synthesis's own here is the record ([`BudgetPlan`]) and its line.

use mtr_llm::budget::add_calls;
use mtr_llm::budget::{Announcement, Run, Wording};
pub(crate) use mtr_llm::budget::{Speeds, Work as DialogueWork, budget_text};
use serde::{Deserialize, Serialize};

use super::calls::DialogueCalls;
use crate::generate::GenState;

/// The time budget's plan: how many of the planned dialogues start in this run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BudgetPlan {
    /// The time budget in seconds.
    pub budget_s: f64,
    /// Dialogues of the whole plan (`--dialogues`).
    pub planned: usize,
    /// Finished by earlier runs.
    pub done_before: usize,
    /// To start (or go on with) in this run.
    pub start: usize,
    /// Left for a rerun with more time.
    pub left: usize,
    /// Seconds spent before generation (preparation and this plan).
    pub fixed_s: f64,
    /// Expected generation seconds of the dialogues started, at the endpoints' speed; None
    /// when a speed is unknown (then nothing is cut).
    pub expected_s: Option<f64>,
    /// Dialogues the deadline kept from starting at run time (the speed was slower than
    /// measured), counted in `left`.
    #[serde(default)]
    pub refused_at_run_time: usize,
    /// Dialogues the plan (or the deadline) left that started all the same when the finished
    /// turns showed the work running ahead of the plan, counted in `start`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub started_ahead: usize,
    /// Dialogues that made turns in this run and stopped at a turn boundary before their
    /// last, because their next turn would have ended past the budget: their verified turns
    /// are kept and a rerun goes on from there (counted in `start` and in `left`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub stopped_at_turn_boundary: usize,
    /// Dialogues whose turn in flight was left unfinished when the budget was spent (no LLM
    /// call starts after it): their verified turns are kept and the unfinished turn's calls
    /// are cached for a rerun (counted in `start` and in `left`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cut_at_deadline: usize,
    /// Per dialogue: whether the plan starts it.
    #[serde(skip)]
    pub selected: Vec<bool>,
    /// Per dialogue: the time it adds to the plan (for the run-time deadline).
    #[serde(skip)]
    pub seconds: Vec<Option<f64>>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Each dialogue's calls from its first unfinished turn on, per endpoint; None for a finished
/// dialogue.
pub(crate) fn remaining_work(
    calls: &[DialogueCalls],
    state: &GenState,
    turns: usize,
) -> Vec<Option<DialogueWork>> {
    calls
        .iter()
        .zip(&state.dialogues)
        .map(|(c, d)| {
            (d.layers_done < turns).then(|| {
                let mut w = DialogueWork::new();
                for call in c.iter().skip(d.layers_done).flatten() {
                    add_calls(&mut w, &call.endpoint, &call.plan);
                }
                w
            })
        })
        .collect()
}

/// Takes the unfinished dialogues in order while `fixed_s` plus their cumulative expected time
/// fits `budget_s`; all of them when a speed is unknown ([`mtr_llm::budget::select`]).
pub(crate) fn select(
    work: &[Option<DialogueWork>],
    speeds: &dyn Speeds,
    budget_s: f64,
    fixed_s: f64,
) -> BudgetPlan {
    let units: Vec<Option<&DialogueWork>> = work.iter().map(Option::as_ref).collect();
    let s = mtr_llm::budget::select(&units, speeds, budget_s, fixed_s);
    let start = s.started();
    BudgetPlan {
        budget_s,
        planned: work.len(),
        done_before: s.done_before,
        start,
        left: work.len() - s.done_before - start,
        fixed_s,
        expected_s: s.expected_s,
        selected: s.selected,
        seconds: s.seconds,
        ..Default::default()
    }
}

/// Synthesis's words in the budget announcement: its units are dialogues.
const SYNTH: Wording = Wording {
    would: "would start",
    doing: "starting",
    stops: "dialogue",
};

impl BudgetPlan {
    /// The one line a run prints before generation, in mtr-llm's one announcement.
    pub(crate) fn line(&self, run: Run) -> String {
        Announcement {
            budget_s: self.budget_s,
            planned: self.planned,
            done_before: self.done_before,
            started: self.start,
            left: self.left,
            expected_s: self.expected_s,
            preparation_s: self.fixed_s,
        }
        .line(&SYNTH, run)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mtr_llm::PlannedEndpoint;
    use mtr_llm::budget::TenPerSecond;

    /// A dialogue whose calls take `secs` on each of `endpoints`.
    fn dialogue(endpoints: &[(&str, f64)]) -> Option<DialogueWork> {
        Some(
            endpoints
                .iter()
                .map(|(n, secs)| {
                    let p = PlannedEndpoint {
                        calls: 1,
                        completion_tokens_expected: (secs * 10.0) as u64,
                        ..Default::default()
                    };
                    (n.to_string(), p)
                })
                .collect(),
        )
    }

    #[test]
    fn dialogues_start_in_order_while_they_fit() {
        let speeds = TenPerSecond { shared: false };
        // six dialogues of 100 s on the generator and 50 s on the judge each: the endpoints work
        // side by side, so k dialogues take k x 100 s
        let work: Vec<_> = (0..6)
            .map(|_| dialogue(&[("gen", 100.0), ("judge", 50.0)]))
            .collect();
        let p = select(&work, &speeds, 350.0, 20.0);
        assert_eq!((p.start, p.left, p.done_before), (3, 3, 0));
        assert_eq!(p.expected_s, Some(300.0));
        assert_eq!(p.selected, [true, true, true, false, false, false]);
        assert_eq!(p.seconds[..3], [Some(100.0); 3]);
        assert_eq!(
            p.line(Run::Real),
            "time budget 5m 50s: starting 3 of 6 planned dialogues (expected 5m 00s at the measured speed, after 20s of preparation); 3 left for a rerun with more time to continue"
        );
        // the preparation spent counts: 20 s more leave room for two
        assert_eq!(select(&work, &speeds, 350.0, 60.0).start, 2);
        // an hour fits all; a second none
        let all = select(&work, &speeds, 3600.0, 20.0);
        assert_eq!((all.start, all.left), (6, 0));
        assert!(
            !all.line(Run::Dry).contains("rerun"),
            "{}",
            all.line(Run::Dry)
        );
        assert_eq!(select(&work, &speeds, 1.0, 0.0).start, 0);
        // shared-speed endpoints add up: 150 s a dialogue
        let p = select(&work, &TenPerSecond { shared: true }, 350.0, 20.0);
        assert_eq!((p.start, p.expected_s), (2, Some(300.0)));
    }

    #[test]
    fn finished_dialogues_are_skipped_and_the_order_is_kept() {
        let speeds = TenPerSecond { shared: false };
        let work = vec![
            None,
            dialogue(&[("gen", 100.0)]),
            dialogue(&[("gen", 300.0)]),
            dialogue(&[("gen", 10.0)]),
        ];
        // the second unfinished dialogue does not fit: the third is not taken past it
        let p = select(&work, &speeds, 200.0, 0.0);
        assert_eq!(p.selected, [false, true, false, false]);
        assert_eq!((p.done_before, p.start, p.left), (1, 1, 2));
        assert!(
            p.line(Run::Real)
                .contains("starting 1 of 4 planned dialogues, 1 done before")
        );
    }

    #[test]
    fn an_unknown_speed_cuts_nothing() {
        let speeds = TenPerSecond { shared: false };
        let work = vec![
            dialogue(&[("gen", 100.0)]),
            dialogue(&[("unknown", 100.0)]),
            dialogue(&[("gen", 100.0)]),
        ];
        let p = select(&work, &speeds, 10.0, 0.0);
        assert_eq!((p.start, p.left, p.expected_s), (3, 0, None));
        assert!(p.seconds.iter().all(Option::is_none));
        assert!(
            p.line(Run::Real).contains("speed is unknown"),
            "{}",
            p.line(Run::Real)
        );
    }
}
