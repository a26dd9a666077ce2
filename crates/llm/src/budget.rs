//! Time budgets (`--time-budget`) for a job that works through a list of units in order (the
//! dialogues `mtr audit` judges, the dialogues `mtr synth` generates): the duration as a user
//! writes it ([`parse_duration`], [`budget_text`]) and the one planner ([`select`]). Before
//! any call, each unit's remaining calls are timed at the endpoints' configured or measured
//! speed ([`Speeds`], [`wall_seconds_of`]: endpoints work side by side, shared-speed ones add
//! up); units are taken in order while the time already spent plus their cumulative expected
//! time fits the budget, and the first that does not fit ends the plan. Where an endpoint's
//! speed is unknown nothing is cut and the budget is only a deadline. What a caller records
//! of the plan is its own; the line it prints is the one [`Announcement`].

use std::collections::BTreeMap;
use std::time::Duration;

use crate::PlannedEndpoint;
use crate::plan::human_duration;

mod announce;
pub use crate::plan::Speeds;
use crate::plan::wall_seconds_of;
pub use announce::{Announcement, Run, Wording};

/// One unit's remaining calls per endpoint (their tokens and costs added up).
pub type Work = BTreeMap<String, PlannedEndpoint>;

/// Adds the calls `p` of `endpoint` to `work`.
pub fn add_calls(work: &mut Work, endpoint: &str, p: &PlannedEndpoint) {
    let e = work.entry(endpoint.to_string()).or_default();
    e.add(p);
    e.model.clone_from(&p.model);
}

/// Which units a budget starts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Selection {
    /// Units finished before (no work left).
    pub done_before: usize,
    /// Expected seconds of the units started, at the endpoints' speed; None when a speed is
    /// unknown (then nothing is cut).
    pub expected_s: Option<f64>,
    /// Per unit: whether the plan starts it.
    pub selected: Vec<bool>,
    /// Per unit: the time it adds to the plan; None when unknown or finished before.
    pub seconds: Vec<Option<f64>>,
}

impl Selection {
    /// Units the plan starts.
    pub fn started(&self) -> usize {
        self.selected.iter().filter(|s| **s).count()
    }
}

/// Takes the unfinished units (`None`: finished before) in order while `fixed_s` plus their
/// cumulative expected time fits `budget_s` (the first that does not fit ends the plan); all of
/// them when a speed is unknown.
pub fn select(
    work: &[Option<&Work>],
    speeds: &dyn Speeds,
    budget_s: f64,
    fixed_s: f64,
) -> Selection {
    let n = work.len();
    let mut plan = Selection {
        done_before: work.iter().filter(|w| w.is_none()).count(),
        expected_s: Some(0.0),
        selected: vec![false; n],
        seconds: vec![None; n],
    };
    let mut taken = Work::new();
    let mut fits = true;
    for (i, w) in work.iter().enumerate() {
        let Some(w) = w else { continue };
        let mut with = taken.clone();
        for (name, p) in *w {
            add_calls(&mut with, name, p);
        }
        let (Some(before), Some(after)) = (plan.expected_s, wall_seconds_of(&with, speeds)) else {
            // a speed is unknown: nothing is cut, the budget is a deadline only
            plan.expected_s = None;
            continue;
        };
        plan.seconds[i] = Some(after - before);
        if fits && fixed_s + after <= budget_s {
            plan.selected[i] = true;
            plan.expected_s = Some(after);
            taken = with;
        } else {
            fits = false;
        }
    }
    if plan.expected_s.is_none() {
        plan.seconds = vec![None; n];
        for (s, w) in plan.selected.iter_mut().zip(work) {
            *s = w.is_some();
        }
    }
    plan
}

/// A budget as it was given: `14m`, `2h`, `45s`, else [`human_duration`] (`1m 30s`).
pub fn budget_text(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    match s {
        s if s >= 3600 && s % 3600 == 0 => format!("{}h", s / 3600),
        s if s >= 60 && s % 60 == 0 => format!("{}m", s / 60),
        s if s < 60 => format!("{s}s"),
        _ => human_duration(secs),
    }
}

/// Parses a duration: `90s`, `14m`, `1h`, `1h30m`, `2.5m`, or plain seconds.
pub fn parse_duration(text: &str) -> std::result::Result<Duration, String> {
    let t = text.trim();
    let bad = || format!("`{text}` is not a duration (e.g. 90s, 14m, 1h30m)");
    if t.is_empty() {
        return Err(bad());
    }
    if let Ok(secs) = t.parse::<f64>() {
        return Duration::try_from_secs_f64(secs).map_err(|_| bad());
    }
    let mut total = 0.0f64;
    let mut number = String::new();
    for c in t.chars() {
        if c.is_ascii_digit() || c == '.' {
            number.push(c);
            continue;
        }
        let unit = match c {
            'h' => 3600.0,
            'm' => 60.0,
            's' => 1.0,
            ' ' if number.is_empty() => continue,
            _ => return Err(bad()),
        };
        let n: f64 = number.parse().map_err(|_| bad())?;
        total += n * unit;
        number.clear();
    }
    if !number.is_empty() {
        return Err(bad());
    }
    Duration::try_from_secs_f64(total).map_err(|_| bad())
}

/// Speeds for tests (here and in the crates that plan with [`select`]): every endpoint
/// answers 10 output tokens a second, one call at a time; one named `unknown` has no known
/// speed.
#[cfg(any(test, feature = "fake"))]
pub struct TenPerSecond {
    /// Whether the endpoints share the machine ([`Speeds::shared`]).
    pub shared: bool,
}

#[cfg(any(test, feature = "fake"))]
impl Speeds for TenPerSecond {
    fn seconds(&self, endpoint: &str, p: &PlannedEndpoint) -> Option<f64> {
        (endpoint != "unknown").then(|| p.completion_tokens_expected as f64 / 10.0)
    }
    fn shared(&self, _: &str) -> bool {
        self.shared
    }
}

#[cfg(test)]
mod tests;
