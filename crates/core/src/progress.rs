//! Progress reporting for long jobs. Libraries report through this trait; the binary decides
//! whether that becomes a progress bar (on a terminal) or periodic plain log lines.

use std::sync::Arc;

/// Receives progress of a long job: stages with a known number of items, and LLM usage.
pub trait Progress: Send + Sync {
    /// A new stage starts with `total` items (0 if unknown).
    fn stage(&self, name: &str, total: u64);
    /// `n` more items of the current stage are done.
    fn advance(&self, n: u64);
    /// LLM usage so far in this stage changed by these amounts.
    fn usage(&self, _tokens: u64, _cost_usd: f64) {}
    /// The current stage ended.
    fn finish_stage(&self) {}
}

/// Progress that goes nowhere (tests, library callers that do not care).
#[derive(Debug, Default, Clone, Copy)]
pub struct NoProgress;

impl Progress for NoProgress {
    fn stage(&self, _name: &str, _total: u64) {}
    fn advance(&self, _n: u64) {}
}

/// A progress sink shared across threads.
pub type SharedProgress = Arc<dyn Progress>;

/// A sink that shows nothing.
pub fn none() -> SharedProgress {
    Arc::new(NoProgress)
}
