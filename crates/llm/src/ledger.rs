//! The cost ledger: what every endpoint was asked, answered, failed and cost in this run, and
//! the `--max-cost` budget check made before each paid call. Reports print its snapshot.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::error::{LlmError, Result};

/// Usage of one endpoint in this run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EndpointUsage {
    /// The endpoint's model.
    pub model: String,
    /// Calls answered by the provider (paid), including parse failures.
    pub calls: u64,
    /// Calls answered from the cache (free).
    pub cache_hits: u64,
    /// HTTP attempts that were retried (429, 5xx, timeouts, connection errors).
    pub retries: u64,
    /// Re-asks after unparsable output.
    pub parse_retries: u64,
    /// Values recovered by the tolerant extractor.
    pub parse_extracted: u64,
    /// Calls whose output never parsed (reported, never scored).
    pub parse_failed: u64,
    /// Calls that failed at the provider after every retry.
    pub provider_failed: u64,
    /// Calls refused by the budget.
    pub budget_refused: u64,
    /// Prompt tokens of the paid calls.
    pub prompt_tokens: u64,
    /// Completion tokens of the paid calls.
    pub completion_tokens: u64,
    /// USD paid in this run.
    pub cost_usd: f64,
    /// The first failure of this run (provider error or unparsable answer), for messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
}

impl EndpointUsage {
    /// Calls that ended (answered, from the cache, or failed at the provider).
    pub fn ended(&self) -> u64 {
        self.calls + self.cache_hits + self.provider_failed
    }
    /// Calls that ended without a usable answer.
    pub fn failed(&self) -> u64 {
        self.parse_failed + self.provider_failed
    }
}

/// The ledger at one moment.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LedgerSnapshot {
    /// Usage per endpoint name.
    pub endpoints: BTreeMap<String, EndpointUsage>,
    /// USD paid in this run over every endpoint.
    pub total_cost_usd: f64,
    /// The `--max-cost` limit in USD (None: no limit).
    pub max_cost_usd: Option<f64>,
    /// True once a call was refused by `--max-cost` (the run is incomplete but resumable).
    pub budget_stopped: bool,
}

impl LedgerSnapshot {
    /// Totals over every endpoint (model field empty).
    pub fn total(&self) -> EndpointUsage {
        let mut t = EndpointUsage::default();
        for u in self.endpoints.values() {
            t.calls += u.calls;
            t.cache_hits += u.cache_hits;
            t.retries += u.retries;
            t.parse_retries += u.parse_retries;
            t.parse_extracted += u.parse_extracted;
            t.parse_failed += u.parse_failed;
            t.provider_failed += u.provider_failed;
            t.budget_refused += u.budget_refused;
            t.prompt_tokens += u.prompt_tokens;
            t.completion_tokens += u.completion_tokens;
            t.cost_usd += u.cost_usd;
        }
        t
    }

    /// A Markdown table for reports.
    pub fn to_markdown(&self) -> String {
        use mtr_core::markdown::{Align, Table};
        let mut t = Table::new(
            [
                "endpoint",
                "model",
                "calls",
                "cache hits",
                "retries",
                "parse retries",
                "extracted",
                "parse failed",
                "provider failed",
                "prompt tok",
                "completion tok",
                "cost USD",
            ]
            .into_iter()
            .enumerate()
            .map(|(i, h)| (h, if i < 2 { Align::Left } else { Align::Right })),
        );
        let row = |t: &mut Table, name: &str, u: &EndpointUsage| {
            t.row([
                name.to_string(),
                u.model.clone(),
                u.calls.to_string(),
                u.cache_hits.to_string(),
                u.retries.to_string(),
                u.parse_retries.to_string(),
                u.parse_extracted.to_string(),
                u.parse_failed.to_string(),
                u.provider_failed.to_string(),
                u.prompt_tokens.to_string(),
                u.completion_tokens.to_string(),
                format!("{:.4}", u.cost_usd),
            ]);
        };
        for (name, u) in &self.endpoints {
            row(&mut t, name, u);
        }
        row(&mut t, "**total**", &self.total());
        let mut s = t.render();
        if let Some(m) = self.max_cost_usd {
            let _ = writeln!(
                s,
                "\nBudget: ${:.4} of ${m:.4}{}",
                self.total_cost_usd,
                if self.budget_stopped {
                    " (stopped: rerun with a higher --max-cost to resume)"
                } else {
                    ""
                }
            );
        }
        s
    }
}

#[derive(Debug, Default)]
struct State {
    snap: LedgerSnapshot,
    /// Estimated cost of calls in flight (reserved against the budget).
    reserved: f64,
}

/// The live ledger (thread-safe).
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    state: Mutex<State>,
    /// Where paid calls are booked for good (the cache's spend ledger), when there is a cache.
    sink: Mutex<Option<crate::cache::SpendSink>>,
}

/// What a ledger update is about.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Event {
    CacheHit,
    Retry,
    ParseRetry,
    Extracted,
    ParseFailed,
    ProviderFailed,
}

impl Ledger {
    pub(crate) fn new(max_cost: Option<f64>) -> Self {
        let l = Self::default();
        if let Ok(mut s) = l.state.lock() {
            s.snap.max_cost_usd = max_cost;
        }
        l
    }

    /// Books every later paid call into `sink` as well.
    pub(crate) fn attach(&self, sink: crate::cache::SpendSink) {
        if let Ok(mut s) = self.sink.lock() {
            *s = Some(sink);
        }
    }

    /// Tags later bookings with `job`.
    pub(crate) fn set_job(&self, job: &str) {
        if let Ok(mut s) = self.sink.lock()
            && let Some(sink) = s.as_mut()
        {
            *sink = sink.with_job(Some(job.to_string()));
        }
    }

    /// Books a paid call into the spend ledger (`id` makes it idempotent).
    pub(crate) fn book(
        &self,
        id: Option<String>,
        endpoint: &str,
        prompt: u64,
        completion: u64,
        cost: f64,
    ) {
        if prompt + completion == 0 && cost == 0.0 {
            return;
        }
        let model = self
            .state
            .lock()
            .ok()
            .and_then(|s| s.snap.endpoints.get(endpoint).map(|u| u.model.clone()))
            .unwrap_or_default();
        if let Ok(s) = self.sink.lock()
            && let Some(sink) = s.as_ref()
        {
            sink.record(id, endpoint, &model, prompt, completion, cost);
        }
    }

    /// Keeps the first failure of `endpoint` for messages.
    pub(crate) fn note_error(&self, endpoint: &str, error: &str) {
        if let Ok(mut s) = self.state.lock() {
            let u = s.snap.endpoints.entry(endpoint.to_string()).or_default();
            if u.first_error.is_none() {
                u.first_error = Some(error.chars().take(500).collect());
            }
        }
    }

    pub(crate) fn register(&self, endpoint: &str, model: &str) {
        if let Ok(mut s) = self.state.lock() {
            s.snap
                .endpoints
                .entry(endpoint.to_string())
                .or_default()
                .model = model.to_string();
        }
    }

    /// Reserves `estimate` USD for a call, or refuses it if the budget would be passed.
    pub(crate) fn reserve(&self, endpoint: &str, estimate: f64) -> Result<()> {
        let Ok(mut s) = self.state.lock() else {
            return Ok(());
        };
        if let Some(limit) = s.snap.max_cost_usd {
            let spent = s.snap.total_cost_usd;
            // A free call never passes the budget; once a paid call was refused, every later
            // paid call is too, so a run stops at one clear point.
            if estimate > 0.0 && (s.snap.budget_stopped || spent + s.reserved + estimate > limit) {
                s.snap.budget_stopped = true;
                s.snap
                    .endpoints
                    .entry(endpoint.to_string())
                    .or_default()
                    .budget_refused += 1;
                return Err(LlmError::Budget {
                    spent,
                    limit,
                    next: estimate,
                });
            }
        }
        s.reserved += estimate;
        Ok(())
    }

    /// Releases a reservation and books what was actually paid.
    pub(crate) fn settle(
        &self,
        endpoint: &str,
        estimate: f64,
        prompt: u64,
        completion: u64,
        cost: f64,
    ) {
        self.book(None, endpoint, prompt, completion, cost);
        self.settle_run(endpoint, estimate, prompt, completion, cost);
    }

    /// [`Ledger::settle`] for a call booked under `id` (a batch answer collected twice is
    /// booked once in the spend ledger).
    pub(crate) fn settle_once(
        &self,
        id: String,
        endpoint: &str,
        prompt: u64,
        completion: u64,
        cost: f64,
    ) {
        self.book(Some(id), endpoint, prompt, completion, cost);
        self.settle_run(endpoint, 0.0, prompt, completion, cost);
    }

    /// The run's share of a settlement.
    fn settle_run(&self, endpoint: &str, estimate: f64, prompt: u64, completion: u64, cost: f64) {
        if let Ok(mut s) = self.state.lock() {
            s.reserved = (s.reserved - estimate).max(0.0);
            s.snap.total_cost_usd += cost;
            let u = s.snap.endpoints.entry(endpoint.to_string()).or_default();
            u.calls += 1;
            u.prompt_tokens += prompt;
            u.completion_tokens += completion;
            u.cost_usd += cost;
        }
    }

    /// Books usage of an attempt that is not a finished call (a parse retry's tokens).
    pub(crate) fn add_usage(&self, endpoint: &str, prompt: u64, completion: u64, cost: f64) {
        self.book(None, endpoint, prompt, completion, cost);
        if let Ok(mut s) = self.state.lock() {
            s.snap.total_cost_usd += cost;
            let u = s.snap.endpoints.entry(endpoint.to_string()).or_default();
            u.prompt_tokens += prompt;
            u.completion_tokens += completion;
            u.cost_usd += cost;
        }
    }

    /// Releases a reservation without booking a call (the call failed before any answer).
    pub(crate) fn release(&self, estimate: f64) {
        if let Ok(mut s) = self.state.lock() {
            s.reserved = (s.reserved - estimate).max(0.0);
        }
    }

    pub(crate) fn event(&self, endpoint: &str, e: Event) {
        if let Ok(mut s) = self.state.lock() {
            let u = s.snap.endpoints.entry(endpoint.to_string()).or_default();
            match e {
                Event::CacheHit => u.cache_hits += 1,
                Event::Retry => u.retries += 1,
                Event::ParseRetry => u.parse_retries += 1,
                Event::Extracted => u.parse_extracted += 1,
                Event::ParseFailed => u.parse_failed += 1,
                Event::ProviderFailed => u.provider_failed += 1,
            }
        }
    }

    pub(crate) fn snapshot(&self) -> LedgerSnapshot {
        self.state
            .lock()
            .map(|s| s.snap.clone())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_refuses_before_passing_the_limit() {
        let l = Ledger::new(Some(1.0));
        l.reserve("a", 0.6).unwrap();
        assert!(l.reserve("a", 0.6).unwrap_err().is_budget_stop());
        l.settle("a", 0.6, 10, 10, 0.5);
        let s = l.snapshot();
        assert!(s.budget_stopped);
        assert_eq!(s.endpoints["a"].budget_refused, 1);
        assert!((s.total_cost_usd - 0.5).abs() < 1e-12);
        assert!(s.to_markdown().contains("rerun with a higher --max-cost"));
    }

    #[test]
    fn the_markdown_table_is_one_row_an_endpoint_and_the_total() {
        let l = Ledger::new(None);
        l.reserve("a", 0.0).unwrap();
        l.settle("a", 0.0, 10, 3, 0.25);
        let md = l.snapshot().to_markdown();
        assert!(
            md.starts_with(
                "| endpoint | model | calls | cache hits | retries | parse retries | extracted | parse failed | provider failed | prompt tok | completion tok | cost USD |\n\
                 |---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n\
                 | a |  | 1 | 0 | 0 | 0 | 0 | 0 | 0 | 10 | 3 | 0.2500 |\n\
                 | **total** |  | 1 | 0 | 0 | 0 | 0 | 0 | 0 | 10 | 3 | 0.2500 |\n"
            ),
            "{md}"
        );
    }
}
