//! The `--dry-run` plan: every call a run would make, counted per endpoint with estimated
//! tokens, cost and wall time, without calling anything. Cached calls are counted apart (they
//! are free). The wall time comes from the endpoint's configured speed (`output_tokens_per_s`,
//! `prompt_tokens_per_s`, spread over `max_concurrency`) and rate limits
//! (`requests_per_minute`, `tokens_per_minute`), whichever binds; unknown without either.
//!
//! Shared-speed endpoints (`shared_speed`: the embedded local servers, whose speeds
//! `mtr local speed` measured) are different on two counts: a speed is the server's total, so
//! it is not spread over `max_concurrency`, and the servers compete for one machine's cores,
//! so the plan's wall time adds their times together (the other endpoints still work side by
//! side: the slowest of them, or the shared sum, whichever is longer).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::config::EndpointConfig;

/// Planned calls of one endpoint.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PlannedEndpoint {
    /// The endpoint's model.
    pub model: String,
    /// Calls that would be paid.
    pub calls: u64,
    /// Calls the cache already answers (free).
    pub cached: u64,
    /// Prompt tokens of the paid calls (tiktoken count).
    pub prompt_tokens: u64,
    /// Of them, those the endpoint's prompt cache is expected to hold already (see
    /// [`crate::prompt_cache`]): not timed at the prompt speed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub prompt_tokens_cached: u64,
    /// Upper bound of completion tokens (`max_tokens` per call).
    pub completion_tokens_max: u64,
    /// Expected completion tokens: the mean of this model and prompt's cached answers where
    /// known, else the upper bound.
    pub completion_tokens_expected: u64,
    /// Expected USD of the paid calls (expected completion tokens).
    pub cost_expected_usd: f64,
    /// The most the paid calls can cost in USD (completion tokens at their upper bound).
    pub cost_max_usd: f64,
    /// Expected wall time of the paid calls in seconds, from the endpoint's configured speed
    /// and rate limits; None when neither is configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds_expected: Option<f64>,
    /// The endpoint's speed is shared with the other shared-speed endpoints (its
    /// `shared_speed`): [`Plan::wall_seconds`] adds their times together.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub shared_speed: bool,
}

impl PlannedEndpoint {
    /// Adds `other`'s calls, tokens and costs (not its model or time) to these.
    pub fn add(&mut self, other: &PlannedEndpoint) {
        self.calls += other.calls;
        self.cached += other.cached;
        self.prompt_tokens += other.prompt_tokens;
        self.prompt_tokens_cached += other.prompt_tokens_cached;
        self.completion_tokens_max += other.completion_tokens_max;
        self.completion_tokens_expected += other.completion_tokens_expected;
        self.cost_expected_usd += other.cost_expected_usd;
        self.cost_max_usd += other.cost_max_usd;
    }
}

/// Expected wall time of an endpoint's planned calls: per-request speed spread over its
/// concurrency (a shared speed is the server's total already: not spread), or its rate
/// limits, whichever is slower; None when nothing is configured.
pub fn estimate_seconds(cfg: &EndpointConfig, p: &PlannedEndpoint) -> Option<f64> {
    if p.calls == 0 {
        return Some(0.0);
    }
    let positive = |x: Option<f64>| x.filter(|v| v.is_finite() && *v > 0.0);
    let mut streamed: Option<f64> = None;
    if let Some(tps) = positive(cfg.output_tokens_per_s) {
        streamed = Some(p.completion_tokens_expected as f64 / tps);
    }
    if let Some(pps) = positive(cfg.prompt_tokens_per_s) {
        let evaluated = p.prompt_tokens.saturating_sub(p.prompt_tokens_cached);
        streamed = Some(streamed.unwrap_or(0.0) + evaluated as f64 / pps);
    }
    let streams = if cfg.shared_speed {
        1
    } else {
        cfg.max_concurrency.max(1)
    };
    let mut est = streamed.map(|s| s / streams as f64);
    let mut at_least = |v: f64| est = Some(est.map_or(v, |e| e.max(v)));
    if let Some(rpm) = cfg.requests_per_minute.filter(|r| *r > 0) {
        at_least(p.calls as f64 * 60.0 / f64::from(rpm));
    }
    if let Some(tpm) = cfg.tokens_per_minute.filter(|t| *t > 0) {
        let tokens = (p.prompt_tokens + p.completion_tokens_expected) as f64;
        at_least(tokens * 60.0 / f64::from(tpm));
    }
    est
}

/// Seconds as `1h 02m`, `3m 20s` or `45s`.
pub fn human_duration(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m {:02}s", s / 60, s % 60),
        _ => format!("{}h {:02}m", s / 3600, (s % 3600) / 60),
    }
}

/// The plan of a dry run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// Planned calls per endpoint name.
    pub endpoints: BTreeMap<String, PlannedEndpoint>,
    /// Cores the shared-speed endpoints (the embedded local servers, one thread each) run
    /// on side by side; 0 or 1: one after another (see [`Plan::wall_seconds`]).
    #[serde(default, skip_serializing_if = "is_one_or_less")]
    pub shared_cores: usize,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn is_one_or_less(n: &usize) -> bool {
    *n <= 1
}

/// The cores local model servers may use side by side: `[llm.local] cores` when set (env
/// `MTR_LOCAL_CORES`: a job that runs two mtr commands at once gives each its share), else the
/// machine's.
pub(crate) fn local_cores(configured: Option<usize>) -> usize {
    configured
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

impl Plan {
    /// The plan's calls, tokens and costs summed over every endpoint.
    pub fn total(&self) -> PlannedEndpoint {
        let mut t = PlannedEndpoint::default();
        for p in self.endpoints.values() {
            t.add(p);
        }
        t.seconds_expected = self.wall_seconds().map(|(parallel, _)| parallel);
        t
    }

    /// Expected wall time when the endpoints work at the same time (the slowest one) and one
    /// after another (the sum); None when any endpoint with paid calls has no known speed.
    /// The shared-speed endpoints (one-thread local servers) compete for `shared_cores`
    /// cores: together they take their summed time spread over those cores, but never less
    /// than the slowest one's own time (one server uses one core).
    pub(crate) fn wall_seconds(&self) -> Option<(f64, f64)> {
        let mut max = 0.0f64;
        let (mut shared, mut shared_max) = (0.0f64, 0.0f64);
        let mut sum = 0.0f64;
        for p in self.endpoints.values().filter(|p| p.calls > 0) {
            let s = p.seconds_expected?;
            if p.shared_speed {
                shared += s;
                shared_max = shared_max.max(s);
            } else {
                max = max.max(s);
            }
            sum += s;
        }
        let cores = self.shared_cores.max(1) as f64;
        Some((max.max(shared_max.max(shared / cores)), sum))
    }

    /// A plain-text table for the terminal.
    pub fn to_table(&self) -> String {
        let mut s = format!(
            "{:<16} {:<28} {:>8} {:>8} {:>12} {:>12} {:>12} {:>12} {:>12} {:>10}\n",
            "endpoint",
            "model",
            "calls",
            "cached",
            "prompt tok",
            "out tok exp",
            "out tok max",
            "USD exp",
            "USD max",
            "time exp"
        );
        let row = |s: &mut String, n: &str, p: &PlannedEndpoint| {
            let _ = writeln!(
                s,
                "{:<16} {:<28} {:>8} {:>8} {:>12} {:>12} {:>12} {:>12.4} {:>12.4} {:>10}",
                n,
                p.model,
                p.calls,
                p.cached,
                p.prompt_tokens,
                p.completion_tokens_expected,
                p.completion_tokens_max,
                p.cost_expected_usd,
                p.cost_max_usd,
                p.seconds_expected
                    .map_or_else(|| "?".to_string(), human_duration)
            );
        };
        for (n, p) in &self.endpoints {
            row(&mut s, n, p);
        }
        row(&mut s, "total", &self.total());
        let total = self.total();
        if total.prompt_tokens_cached > 0 {
            let _ = writeln!(
                s,
                "prompt tokens the servers' prompt caches are expected to hold: {} of {} (not timed)",
                total.prompt_tokens_cached, total.prompt_tokens
            );
        }
        match self.wall_seconds() {
            Some((parallel, serial)) if serial > parallel => {
                let _ = writeln!(
                    s,
                    "wall time: about {} with the endpoints working at once, {} one after another",
                    human_duration(parallel),
                    human_duration(serial)
                );
            }
            Some((parallel, _)) => {
                let _ = writeln!(s, "wall time: about {}", human_duration(parallel));
            }
            None => {
                let _ = writeln!(
                    s,
                    "wall time: unknown (set output_tokens_per_s, prompt_tokens_per_s, \
                     requests_per_minute or tokens_per_minute on the endpoints; the embedded \
                     local models: run `mtr local speed`)"
                );
            }
        }
        s
    }
}

/// How long planned calls take on an endpoint, whether its speed is shared with the other
/// shared-speed endpoints (the embedded local servers compete for the same cores), and on how
/// many cores those run: what a time budget (`mtr synth` and `mtr audit --time-budget`) plans
/// with. [`crate::Llm`] answers from its endpoints; tests answer with fixed speeds.
pub trait Speeds {
    /// Seconds the planned calls `p` take on `endpoint`; None when its speed is unknown.
    fn seconds(&self, endpoint: &str, p: &PlannedEndpoint) -> Option<f64>;
    /// Whether `endpoint`'s speed is shared with the other shared-speed endpoints.
    fn shared(&self, endpoint: &str) -> bool;
    /// Cores the shared-speed endpoints run on side by side (see [`Plan::wall_seconds`]).
    fn shared_cores(&self) -> usize {
        1
    }
}

/// The wall time of the planned `calls` per endpoint at `speeds` (see [`Plan::wall_seconds`]):
/// the dry run's figure, which a time budget compares with what is left.
pub(crate) fn wall_seconds_of(
    calls: &BTreeMap<String, PlannedEndpoint>,
    speeds: &dyn Speeds,
) -> Option<f64> {
    let endpoints = calls
        .iter()
        .map(|(name, p)| {
            let mut p = p.clone();
            p.seconds_expected = speeds.seconds(name, &p);
            p.shared_speed = speeds.shared(name);
            (name.clone(), p)
        })
        .collect();
    Plan {
        endpoints,
        shared_cores: speeds.shared_cores(),
    }
    .wall_seconds()
    .map(|(parallel, _)| parallel)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn planned(calls: u64, prompt: u64, out: u64) -> PlannedEndpoint {
        PlannedEndpoint {
            calls,
            prompt_tokens: prompt,
            completion_tokens_expected: out,
            ..Default::default()
        }
    }

    #[test]
    fn wall_time_from_speed_concurrency_and_rate_limits() {
        let mut cfg = EndpointConfig::new("e", "http://x/v1", "m");
        let p = planned(100, 50_000, 10_000);
        assert_eq!(estimate_seconds(&cfg, &p), None);
        cfg.output_tokens_per_s = Some(20.0);
        cfg.max_concurrency = 4;
        // 10,000 tokens at 20/s = 500 s over 4 streams
        assert_eq!(estimate_seconds(&cfg, &p), Some(125.0));
        cfg.prompt_tokens_per_s = Some(100.0);
        assert_eq!(estimate_seconds(&cfg, &p), Some(250.0));
        // a rate limit that binds harder wins: 100 calls at 10 per minute = 600 s
        cfg.requests_per_minute = Some(10);
        assert_eq!(estimate_seconds(&cfg, &p), Some(600.0));
        assert_eq!(estimate_seconds(&cfg, &planned(0, 0, 0)), Some(0.0));
        assert_eq!(human_duration(3725.0), "1h 02m");
        assert_eq!(human_duration(200.0), "3m 20s");
    }

    #[test]
    fn prompt_tokens_a_prompt_cache_holds_are_not_timed() {
        let mut cfg = EndpointConfig::new("local", "http://127.0.0.1/v1", "m");
        cfg.prompt_tokens_per_s = Some(50.0);
        cfg.output_tokens_per_s = Some(10.0);
        cfg.shared_speed = true;
        let mut p = planned(20, 5_000, 1_000);
        assert_eq!(estimate_seconds(&cfg, &p), Some(200.0));
        // 4,000 of the 5,000 prompt tokens held: 1,000 at 50/s + 1,000 at 10/s
        p.prompt_tokens_cached = 4_000;
        assert_eq!(estimate_seconds(&cfg, &p), Some(120.0));
        let mut sum = PlannedEndpoint::default();
        sum.add(&p);
        sum.add(&p);
        assert_eq!(sum.prompt_tokens_cached, 8_000);
        let plan = Plan {
            endpoints: [("local".to_string(), p)].into_iter().collect(),
            ..Default::default()
        };
        assert!(
            plan.to_table()
                .contains("prompt caches are expected to hold: 4000 of 5000 (not timed)")
        );
    }

    #[test]
    fn a_shared_speed_is_the_servers_total_and_shared_endpoints_add_up() {
        let mut cfg = EndpointConfig::new("local", "http://127.0.0.1/v1", "m");
        cfg.max_concurrency = 2;
        cfg.prompt_tokens_per_s = Some(50.0);
        cfg.output_tokens_per_s = Some(10.0);
        // 5,000 prompt tokens at 50/s + 1,000 answer tokens at 10/s = 200 s; over 2 slots
        let p = planned(20, 5_000, 1_000);
        assert_eq!(estimate_seconds(&cfg, &p), Some(100.0));
        // a server's total, whatever its slots
        cfg.shared_speed = true;
        assert_eq!(estimate_seconds(&cfg, &p), Some(200.0));
        cfg.max_concurrency = 8;
        assert_eq!(estimate_seconds(&cfg, &p), Some(200.0));
        // the embeddings server: a prompt speed only
        cfg.output_tokens_per_s = None;
        assert_eq!(estimate_seconds(&cfg, &p), Some(100.0));

        let timed = |secs: f64, shared: bool| PlannedEndpoint {
            seconds_expected: Some(secs),
            shared_speed: shared,
            ..planned(1, 1, 1)
        };
        let mut plan = Plan::default();
        plan.endpoints.insert("local-a".into(), timed(200.0, true));
        plan.endpoints.insert("local-b".into(), timed(100.0, true));
        plan.endpoints.insert("remote".into(), timed(250.0, false));
        // the local servers share the cores (300 s), beside the remote endpoint (250 s)
        assert_eq!(plan.wall_seconds(), Some((300.0, 550.0)));
        plan.endpoints
            .insert("slow-remote".into(), timed(400.0, false));
        assert_eq!(plan.wall_seconds(), Some((400.0, 950.0)));
        assert_eq!(plan.total().seconds_expected, Some(400.0));
        // on two cores the local servers run side by side: their 300 s take 200 s, the
        // time of the slower one, which uses one core
        plan.endpoints.remove("slow-remote");
        plan.shared_cores = 2;
        assert_eq!(plan.wall_seconds(), Some((250.0, 550.0)));
        plan.endpoints.remove("remote");
        assert_eq!(plan.wall_seconds(), Some((200.0, 300.0)));
        plan.endpoints.insert("local-c".into(), timed(100.0, true));
        assert_eq!(
            plan.wall_seconds(),
            Some((200.0, 400.0)),
            "400 s over 2 cores"
        );
        plan.shared_cores = 4;
        assert_eq!(
            plan.wall_seconds(),
            Some((200.0, 400.0)),
            "never below one server's"
        );
        plan.endpoints.remove("local-c");
        plan.shared_cores = 1;
        plan.endpoints.insert("remote".into(), timed(250.0, false));
        plan.endpoints
            .insert("slow-remote".into(), timed(400.0, false));
        // an endpoint without paid calls takes no time, known or not
        plan.endpoints.insert(
            "local-idle".into(),
            PlannedEndpoint {
                cached: 3,
                shared_speed: true,
                ..Default::default()
            },
        );
        assert_eq!(plan.wall_seconds(), Some((400.0, 950.0)));
        // one shared endpoint with paid calls and no speed: unknown, and the table says how
        if let Some(p) = plan.endpoints.get_mut("local-b") {
            p.seconds_expected = None;
        }
        assert_eq!(plan.wall_seconds(), None);
        assert!(plan.to_table().contains("run `mtr local speed`"));
        // the flag is left out of the JSON when false (older plans read the same)
        let json = serde_json::to_string(&planned(1, 2, 3)).unwrap();
        assert!(!json.contains("shared_speed"), "{json}");
        let back: PlannedEndpoint =
            serde_json::from_str(&serde_json::to_string(&timed(1.0, true)).unwrap()).unwrap();
        assert!(back.shared_speed);
    }

    #[test]
    fn the_table_says_when_the_time_is_unknown() {
        let mut plan = Plan::default();
        plan.endpoints.insert("a".into(), planned(3, 30, 30));
        assert!(plan.to_table().contains("wall time: unknown"));
        if let Some(p) = plan.endpoints.get_mut("a") {
            p.seconds_expected = Some(90.0);
        }
        let mut b = planned(1, 1, 1);
        b.seconds_expected = Some(30.0);
        plan.endpoints.insert("b".into(), b);
        let t = plan.to_table();
        assert!(t.contains("wall time: about 1m 30s with the endpoints working at once, 2m 00s one after another"), "{t}");
    }
}
