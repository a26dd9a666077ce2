//! The job's clock: the seconds since a synthesis began, which its time budget is counted
//! against. A run reads the wall clock; a test sets the time itself ([`JobClock::manual`], e.g.
//! one second per LLM call), so what a budget decides is the same on a loaded machine and a
//! quiet one.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Seconds since the job began.
#[derive(Debug, Clone)]
pub struct JobClock(Source);

#[derive(Debug, Clone)]
enum Source {
    Wall(Instant),
    Manual(ManualTime),
}

/// The time of a manual clock, in milliseconds, set by whoever holds it.
#[derive(Debug, Clone, Default)]
pub struct ManualTime(Arc<AtomicU64>);

impl ManualTime {
    /// Moves the clock on by `ms` milliseconds.
    pub fn advance_ms(&self, ms: u64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

impl JobClock {
    /// The wall clock, counted from now.
    pub fn wall() -> Self {
        Self(Source::Wall(Instant::now()))
    }

    /// A clock at 0 that moves only when `time` is advanced.
    pub fn manual(time: &ManualTime) -> Self {
        Self(Source::Manual(time.clone()))
    }

    /// Seconds since the job began.
    pub fn elapsed_s(&self) -> f64 {
        match &self.0 {
            Source::Wall(t) => t.elapsed().as_secs_f64(),
            Source::Manual(m) => m.0.load(Ordering::SeqCst) as f64 / 1000.0,
        }
    }
}

/// When no new LLM call may start: `budget_s` seconds on `clock`. Calls already sent go on,
/// so a run under a time budget ends within one call's time of it.
#[derive(Debug, Clone)]
pub(crate) struct Deadline {
    pub clock: JobClock,
    pub budget_s: f64,
}

impl Deadline {
    /// The deadline as an instant of the wall clock, for the LLM client's `start_by`. A
    /// manual clock does not move while a call waits: its deadline has passed (now) or lies
    /// beyond the wait (none).
    pub(crate) fn start_by(&self) -> Option<Instant> {
        match &self.clock.0 {
            // a negative budget has passed at the start; one too far off for an Instant never
            Source::Wall(began) => match std::time::Duration::try_from_secs_f64(self.budget_s) {
                Ok(d) => began.checked_add(d),
                Err(_) => Some(*began),
            },
            Source::Manual(_) => (self.clock.elapsed_s() >= self.budget_s).then(Instant::now),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_advanced() {
        let time = ManualTime::default();
        let clock = JobClock::manual(&time);
        assert_eq!(clock.elapsed_s(), 0.0);
        time.advance_ms(1500);
        assert_eq!(clock.clone().elapsed_s(), 1.5);
    }

    #[test]
    fn a_deadline_is_passed_once_its_budget_is_spent() {
        let time = ManualTime::default();
        let d = Deadline {
            clock: JobClock::manual(&time),
            budget_s: 2.0,
        };
        assert_eq!(d.start_by(), None, "2 s left: no call is refused");
        time.advance_ms(2000);
        assert!(d.start_by().is_some_and(|t| t <= Instant::now()));
        let wall = Deadline {
            clock: JobClock::wall(),
            budget_s: 60.0,
        };
        let by = wall.start_by().unwrap();
        assert!(by > Instant::now() + std::time::Duration::from_secs(50));
        let spent = Deadline {
            clock: JobClock::wall(),
            budget_s: -1.0,
        };
        assert!(spent.start_by().unwrap() <= Instant::now());
    }
}
