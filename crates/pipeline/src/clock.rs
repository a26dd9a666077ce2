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
}
