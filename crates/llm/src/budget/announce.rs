//! The one line a budgeted job prints before its work starts (`mtr audit`, `mtr synth`, their
//! dry runs): how many of the planned units start within the budget and what they are expected
//! to take, or a warning that the endpoints' speed is unknown and the budget is a deadline only.
//! Jobs differ only in their verbs and in what stops once the budget is spent ([`Wording`]).

use super::budget_text;
use crate::plan::human_duration;

/// Whether the announcement is for a dry run (what would happen) or a real one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Run {
    /// A dry run: `would audit`, `would start`.
    Dry,
    /// A real run: `auditing`, `start`.
    Real,
}

/// A job's words in the announcement.
#[derive(Debug, Clone, Copy)]
pub struct Wording {
    /// What a dry run would do with the units it starts (`would audit`).
    pub would: &'static str,
    /// What a real run does with them (`auditing`).
    pub doing: &'static str,
    /// What no longer starts once the budget is spent (`judgement`, `dialogue`).
    pub stops: &'static str,
}

/// A budget plan as the announcement reads it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Announcement {
    /// The budget, seconds.
    pub budget_s: f64,
    /// Units the job plans.
    pub planned: usize,
    /// Units finished by an earlier run (cached), not counted as started.
    pub done_before: usize,
    /// Unfinished units the plan starts.
    pub started: usize,
    /// Unfinished units left for a rerun.
    pub left: usize,
    /// Expected wall time of the started units, `None` where an endpoint's speed is unknown.
    pub expected_s: Option<f64>,
    /// Time spent preparing before the units start, seconds.
    pub preparation_s: f64,
}

impl Announcement {
    /// The line, in `wording`, for a dry or a real run.
    pub fn line(&self, wording: &Wording, run: Run) -> String {
        let b = budget_text(self.budget_s);
        let before = if self.done_before > 0 {
            format!(", {} done before", self.done_before)
        } else {
            String::new()
        };
        let Some(expected) = self.expected_s else {
            return format!(
                "warning: time budget {b}: the endpoints' speed is unknown (run `mtr local speed`, or set output_tokens_per_s and prompt_tokens_per_s), so the budget cannot be planned: all {} unfinished of {} planned dialogues {}{before}; no new {} starts once the budget is spent",
                self.started,
                self.planned,
                match run {
                    Run::Dry => "would start",
                    Run::Real => "start",
                },
                wording.stops
            );
        };
        let verb = match run {
            Run::Dry => wording.would,
            Run::Real => wording.doing,
        };
        let mut s = format!(
            "time budget {b}: {verb} {} of {} planned dialogues{before} (expected {} at the measured speed, after {} of preparation)",
            self.started,
            self.planned,
            human_duration(expected),
            human_duration(self.preparation_s)
        );
        if self.left > 0 {
            s.push_str(&format!(
                "; {} left for a rerun with more time to continue",
                self.left
            ));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const AUDIT: Wording = Wording {
        would: "would audit",
        doing: "auditing",
        stops: "judgement",
    };

    fn plan() -> Announcement {
        Announcement {
            budget_s: 350.0,
            planned: 6,
            started: 3,
            left: 3,
            expected_s: Some(300.0),
            preparation_s: 20.0,
            ..Default::default()
        }
    }

    #[test]
    fn a_planned_budget_names_what_starts_and_what_is_left() {
        assert_eq!(
            plan().line(&AUDIT, Run::Real),
            "time budget 5m 50s: auditing 3 of 6 planned dialogues (expected 5m 00s at the measured speed, after 20s of preparation); 3 left for a rerun with more time to continue"
        );
        let all = Announcement {
            started: 6,
            left: 0,
            done_before: 2,
            ..plan()
        };
        assert_eq!(
            all.line(&AUDIT, Run::Dry),
            "time budget 5m 50s: would audit 6 of 6 planned dialogues, 2 done before (expected 5m 00s at the measured speed, after 20s of preparation)"
        );
    }

    #[test]
    fn an_unknown_speed_warns_that_the_budget_is_a_deadline_only() {
        let unknown = Announcement {
            expected_s: None,
            budget_s: 0.0,
            ..plan()
        };
        let synth = Wording {
            would: "would start",
            doing: "starting",
            stops: "dialogue",
        };
        assert_eq!(
            unknown.line(&synth, Run::Dry),
            "warning: time budget 0s: the endpoints' speed is unknown (run `mtr local speed`, or set output_tokens_per_s and prompt_tokens_per_s), so the budget cannot be planned: all 3 unfinished of 6 planned dialogues would start; no new dialogue starts once the budget is spent"
        );
        assert!(
            unknown
                .line(&AUDIT, Run::Real)
                .contains("dialogues start; no new judgement starts")
        );
    }
}
