//! `spend.json`: the money actually spent on an output folder, across every attempt (from the
//! spend ledger in the LLM cache), next to the cost of the result that `summary.json` (audit)
//! and `synth_report.md` (synthesis) give. The result files are byte-identical whatever the
//! interruptions; this file is the one that differs between an uninterrupted run and a
//! killed-and-resumed one, and is outside the byte-identity promise.

use std::path::Path;

use serde::Serialize;

/// File name, in the output folder.
pub const SPEND: &str = "spend.json";

/// What `spend.json` holds.
#[derive(Debug, Clone, Serialize)]
pub struct SpendFile {
    pub spend_version: u32,
    /// What the result cost: every answer it rests on at the price paid when it was fetched,
    /// counted once (the same figure as `summary.json` `cost.total.cost_usd`).
    pub result_cost_usd: f64,
    /// USD actually paid for this folder over every attempt (interrupted ones included),
    /// from the spend ledger in the LLM cache; `null` without a cache.
    pub spent_usd: Option<f64>,
    /// Paid calls behind `spent_usd` (each counted once).
    pub paid_calls: Option<u64>,
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    /// This process alone.
    pub this_run: ThisRun,
}

#[derive(Debug, Clone, Serialize)]
pub struct ThisRun {
    pub paid_calls: u64,
    pub cache_hits: u64,
    pub cost_usd: f64,
    /// Per endpoint: calls, cache hits, retries, failures, tokens, cost of this process.
    pub endpoints: std::collections::BTreeMap<String, mtr_llm::EndpointUsage>,
    /// Per endpoint: what its llama.cpp servers reported doing (`timings`: the prompt tokens
    /// they evaluated after their prompt caches, and the time); empty for other servers.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub server_work: std::collections::BTreeMap<String, mtr_llm::server_work::ServerWork>,
}

/// Round to the micro-dollar so the file does not carry float noise.
fn usd(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// Writes `dir/spend.json` and returns what it holds.
pub fn write(
    dir: &Path,
    job: &str,
    llm: &mtr_llm::Llm,
    result_cost_usd: f64,
) -> anyhow::Result<SpendFile> {
    let spent = llm.spent(job)?;
    let ledger = llm.ledger();
    let t = ledger.total();
    let f = SpendFile {
        spend_version: 1,
        result_cost_usd: usd(result_cost_usd),
        spent_usd: spent.map(|s| usd(s.cost_usd)),
        paid_calls: spent.map(|s| s.calls),
        prompt_tokens: spent.map(|s| s.prompt_tokens),
        completion_tokens: spent.map(|s| s.completion_tokens),
        this_run: ThisRun {
            paid_calls: t.calls,
            cache_hits: t.cache_hits,
            cost_usd: usd(ledger.total_cost_usd),
            endpoints: ledger.endpoints.clone(),
            server_work: llm.server_work(),
        },
    };
    if let Some(line) = mtr_llm::server_work::summary_line(&f.this_run.server_work) {
        eprintln!("{line}");
    }
    let text = serde_json::to_string_pretty(&f)? + "\n";
    mtr_core::atomic::write_atomic(dir.join(SPEND), text.as_bytes())?;
    Ok(f)
}

/// Endpoints of this run that failed every call they ended, or more than `max_share` of them:
/// one message each, naming the endpoint and its first error.
pub fn failed_endpoints(ledger: &mtr_llm::LedgerSnapshot, max_share: f64) -> Vec<String> {
    let mut out = Vec::new();
    for (name, u) in &ledger.endpoints {
        let (failed, ended) = (u.failed() as usize, u.ended() as usize);
        if mtr_audit::statistics::failures::too_many(failed, ended, max_share) {
            let what = if failed == ended {
                format!("failed every call ({failed} of {ended})")
            } else {
                format!("failed {failed} of {ended} calls")
            };
            out.push(match &u.first_error {
                Some(e) => format!("endpoint `{name}` {what}; first error: {e}"),
                None => format!("endpoint `{name}` {what}"),
            });
        }
    }
    out
}
