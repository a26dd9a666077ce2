//! The `--dry-run` plan: every call a run would make, counted per endpoint with estimated
//! tokens and cost, without calling anything. Cached calls are counted apart (they are free).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

/// Planned calls of one endpoint.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PlannedEndpoint {
    pub model: String,
    /// Calls that would be paid.
    pub calls: u64,
    /// Calls the cache already answers (free).
    pub cached: u64,
    /// Prompt tokens of the paid calls (tiktoken count).
    pub prompt_tokens: u64,
    /// Upper bound of completion tokens (`max_tokens` per call).
    pub completion_tokens_max: u64,
    /// Expected completion tokens: the mean of this model and prompt's cached answers where
    /// known, else the upper bound.
    pub completion_tokens_expected: u64,
    pub cost_expected_usd: f64,
    pub cost_max_usd: f64,
}

/// The plan of a dry run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub endpoints: BTreeMap<String, PlannedEndpoint>,
}

impl Plan {
    pub fn total(&self) -> PlannedEndpoint {
        let mut t = PlannedEndpoint::default();
        for p in self.endpoints.values() {
            t.calls += p.calls;
            t.cached += p.cached;
            t.prompt_tokens += p.prompt_tokens;
            t.completion_tokens_max += p.completion_tokens_max;
            t.completion_tokens_expected += p.completion_tokens_expected;
            t.cost_expected_usd += p.cost_expected_usd;
            t.cost_max_usd += p.cost_max_usd;
        }
        t
    }

    /// A plain-text table for the terminal.
    pub fn to_table(&self) -> String {
        let mut s = format!(
            "{:<16} {:<28} {:>8} {:>8} {:>12} {:>12} {:>12} {:>12} {:>12}\n",
            "endpoint",
            "model",
            "calls",
            "cached",
            "prompt tok",
            "out tok exp",
            "out tok max",
            "USD exp",
            "USD max"
        );
        let row = |s: &mut String, n: &str, p: &PlannedEndpoint| {
            let _ = writeln!(
                s,
                "{:<16} {:<28} {:>8} {:>8} {:>12} {:>12} {:>12} {:>12.4} {:>12.4}",
                n,
                p.model,
                p.calls,
                p.cached,
                p.prompt_tokens,
                p.completion_tokens_expected,
                p.completion_tokens_max,
                p.cost_expected_usd,
                p.cost_max_usd
            );
        };
        for (n, p) in &self.endpoints {
            row(&mut s, n, p);
        }
        row(&mut s, "total", &self.total());
        s
    }
}
