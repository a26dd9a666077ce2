//! What the agents' calls used, per role: calls, cache hits, failures, tokens and the list
//! price in picodollars (exact integer sums that survive the checkpoint bit for bit).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Usage of one agent role.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RoleUsage {
    pub calls: u64,
    /// Calls answered from the LLM cache (paid in an earlier run).
    pub cached: u64,
    pub parse_failed: u64,
    /// Free-text answers cut at `max_tokens` (`finish_reason: length`) after the retry with
    /// twice the room: failed attempts, never used (a cut answer would enter the benchmark).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub truncated: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// List price of the calls (what they cost when first made, cache hits included), in
    /// picodollars: integer sums are exact and survive the JSON checkpoint bit for bit, so a
    /// resumed run reports the same cost as an uninterrupted one.
    pub cost_pusd: u64,
}

impl RoleUsage {
    pub fn cost_usd(&self) -> f64 {
        pico_to_usd(self.cost_pusd)
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

pub(super) fn usd_to_pico(usd: f64) -> u64 {
    (usd.max(0.0) * 1e12).round() as u64
}

fn pico_to_usd(p: u64) -> f64 {
    p as f64 / 1e12
}

/// Usage per agent role (`user`, `humanizer`, `answerer`, `answerability`, `uniqueness`,
/// `faithfulness`) and the models that answered.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CallLog {
    pub roles: BTreeMap<String, RoleUsage>,
    /// Role -> model ids that answered its calls.
    pub models: BTreeMap<String, Vec<String>>,
}

impl CallLog {
    pub fn cost(&self) -> f64 {
        pico_to_usd(self.roles.values().map(|r| r.cost_pusd).sum())
    }
    pub fn calls(&self) -> u64 {
        self.roles.values().map(|r| r.calls).sum()
    }
    pub fn merge(&mut self, other: &CallLog) {
        for (k, v) in &other.roles {
            let e = self.roles.entry(k.clone()).or_default();
            e.calls += v.calls;
            e.cached += v.cached;
            e.parse_failed += v.parse_failed;
            e.truncated += v.truncated;
            e.prompt_tokens += v.prompt_tokens;
            e.completion_tokens += v.completion_tokens;
            e.cost_pusd += v.cost_pusd;
        }
        for (k, ms) in &other.models {
            let e = self.models.entry(k.clone()).or_default();
            for m in ms {
                if !e.contains(m) {
                    e.push(m.clone());
                    e.sort();
                }
            }
        }
    }
}
