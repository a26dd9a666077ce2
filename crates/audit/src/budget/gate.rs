//! The run-time side of `--time-budget`: the engine asks the [`Gate`] before it starts each
//! judgement call. Past the deadline no new call starts (those in flight finish and are
//! kept), and when the plan left dialogues out, their judgements are not asked for at all.
//! Cloned into every judging run of an audit, so the human calibration set and the
//! missing-gold check keep to the same deadline.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

/// Whether a judgement may start; the default lets everything through.
#[derive(Debug, Clone, Default)]
pub(crate) struct Gate(Option<Arc<State>>);

#[derive(Debug)]
struct State {
    deadline: Instant,
    /// The dialogues the plan starts (unset: all).
    only: OnceLock<HashSet<String>>,
    /// A call was kept from starting by the deadline.
    ran_out: AtomicBool,
}

impl Gate {
    /// No new call after `deadline`.
    pub(crate) fn until(deadline: Instant) -> Self {
        Self(Some(Arc::new(State {
            deadline,
            only: OnceLock::new(),
            ran_out: AtomicBool::new(false),
        })))
    }

    /// Only the judgements of these dialogues are asked for (set once; later calls are
    /// ignored).
    pub(crate) fn restrict(&self, dialogues: HashSet<String>) {
        if let Some(s) = &self.0 {
            let _ = s.only.set(dialogues);
        }
    }

    /// Whether the plan starts the dialogue `id`.
    pub(crate) fn allows(&self, id: &str) -> bool {
        self.0
            .as_ref()
            .and_then(|s| s.only.get())
            .is_none_or(|only| only.contains(id))
    }

    /// Whether a new call may start now; past the deadline it records that it ran out.
    pub(crate) fn open(&self) -> bool {
        let Some(s) = &self.0 else {
            return true;
        };
        if Instant::now() < s.deadline {
            return true;
        }
        self.note_ran_out();
        false
    }

    /// The deadline, if there is one (the client sends no call after it).
    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.0.as_ref().map(|s| s.deadline)
    }

    /// Records that the deadline kept a call from starting (the client refused to send it).
    pub(crate) fn note_ran_out(&self) {
        if let Some(s) = &self.0 {
            s.ran_out.store(true, Ordering::Relaxed);
        }
    }

    /// Whether the deadline kept a call from starting.
    pub(crate) fn ran_out(&self) -> bool {
        self.0
            .as_ref()
            .is_some_and(|s| s.ran_out.load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_default_lets_everything_through_and_a_past_deadline_nothing() {
        let g = Gate::default();
        g.restrict(HashSet::from(["a".to_string()]));
        assert!(g.open() && g.allows("b") && !g.ran_out());
        let later = Gate::until(Instant::now() + Duration::from_secs(3600));
        assert!(later.open() && later.allows("b"));
        later.restrict(HashSet::from(["a".to_string()]));
        assert!(later.allows("a") && !later.allows("b"));
        let past = Gate::until(Instant::now());
        assert!(!past.ran_out());
        assert!(!past.open());
        assert!(past.clone().ran_out(), "clones share the state");
    }
}
