//! The cost ledger of `summary.json`: calls, cache hits, failures, tokens and dollars per judge.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::dimension::Dimension;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Ledger {
    /// Judgements.
    pub calls: usize,
    /// Judgements answered by an identical request of this audit (paid once).
    pub cache_hits: usize,
    pub failed: usize,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// The cost of the result: every answer at the price paid when it was fetched, whether
    /// this run or an earlier one paid it. What was spent over every attempt is in
    /// `spend.json`.
    pub cost_usd: f64,
}

impl Ledger {
    pub fn add(&mut self, j: &crate::judges::record::Judgement) {
        self.calls += 1;
        self.cache_hits += usize::from(j.cache_hit);
        self.failed += usize::from(!j.ok());
        self.prompt_tokens += j.prompt_tokens;
        self.completion_tokens += j.completion_tokens;
        self.cost_usd += j.cost_usd;
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CostInfo {
    pub total: Ledger,
    pub per_judge: BTreeMap<String, Ledger>,
    pub per_dimension: BTreeMap<Dimension, Ledger>,
    /// Mean prompt tokens per judgement, per dimension (what the prompts cost to send).
    pub prompt_tokens_per_judgement: BTreeMap<Dimension, f64>,
    /// The `--max-cost` budget of the run that wrote this summary, if any.
    pub max_cost_usd: Option<f64>,
}
