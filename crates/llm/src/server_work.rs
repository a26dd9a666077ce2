//! What the servers say they did: llama.cpp answers every completion with `timings`
//! (`prompt_n`: the prompt tokens it evaluated, after the part its slot had cached;
//! `prompt_ms`, `predicted_n`, `predicted_ms`). The usage's `prompt_tokens` counts the whole
//! prompt, so only the timings tell how much of a run's prompt processing the servers' prompt
//! caches saved, and how long prompt processing and generation took on the server. Kept per
//! endpoint for this process; reported on stderr, never in an output that must be
//! byte-identical (the numbers depend on which slot a call met).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One endpoint's calls that carried llama.cpp timings, added up.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerWork {
    /// Calls whose response had `timings`.
    pub calls: u64,
    /// Their prompt tokens as the usage counts them (the whole prompt).
    pub prompt_tokens: u64,
    /// Of those, the tokens the server evaluated (`timings.prompt_n`); the rest came from its
    /// prompt cache.
    pub prompt_evaluated: u64,
    /// Milliseconds the server spent on those prompt tokens (`timings.prompt_ms`).
    pub prompt_ms: f64,
    /// Tokens generated (`timings.predicted_n`) and the time it took.
    pub predicted_n: u64,
    /// Milliseconds spent generating (`timings.predicted_ms`).
    pub predicted_ms: f64,
}

impl ServerWork {
    /// The work of one response, when it carries llama.cpp's `timings`; `prompt_tokens` is the
    /// usage's count of the whole prompt.
    pub(crate) fn of_response(resp: &Value, prompt_tokens: u64) -> Option<ServerWork> {
        let t = resp.get("timings")?;
        let n = |k: &str| t.get(k).and_then(Value::as_u64);
        let ms = |k: &str| t.get(k).and_then(Value::as_f64).unwrap_or(0.0);
        Some(ServerWork {
            calls: 1,
            prompt_tokens,
            prompt_evaluated: n("prompt_n")?,
            prompt_ms: ms("prompt_ms"),
            predicted_n: n("predicted_n").unwrap_or(0),
            predicted_ms: ms("predicted_ms"),
        })
    }

    /// Adds `o`'s calls, tokens and times.
    pub fn add(&mut self, o: &ServerWork) {
        self.calls += o.calls;
        self.prompt_tokens += o.prompt_tokens;
        self.prompt_evaluated += o.prompt_evaluated;
        self.prompt_ms += o.prompt_ms;
        self.predicted_n += o.predicted_n;
        self.predicted_ms += o.predicted_ms;
    }

    /// Share of the prompt tokens the servers' prompt caches supplied (0 when none were sent).
    pub(crate) fn reused_share(&self) -> f64 {
        if self.prompt_tokens == 0 {
            return 0.0;
        }
        1.0 - (self.prompt_evaluated.min(self.prompt_tokens) as f64 / self.prompt_tokens as f64)
    }
}

/// The work per endpoint, summed over all of them.
pub fn total(per_endpoint: &BTreeMap<String, ServerWork>) -> ServerWork {
    let mut t = ServerWork::default();
    per_endpoint.values().for_each(|w| t.add(w));
    t
}

/// One line for stderr: how many prompt tokens the servers evaluated of those sent, and the
/// time they spent; None when no response carried timings.
pub fn summary_line(per_endpoint: &BTreeMap<String, ServerWork>) -> Option<String> {
    let t = total(per_endpoint);
    (t.calls > 0).then(|| {
        format!(
            "llama.cpp servers: {} calls; evaluated {} of {} prompt tokens ({:.0}% reused from \
             their prompt caches) in {:.0} s; generated {} tokens in {:.0} s",
            t.calls,
            t.prompt_evaluated,
            t.prompt_tokens,
            100.0 * t.reused_share(),
            t.prompt_ms / 1000.0,
            t.predicted_n,
            t.predicted_ms / 1000.0
        )
    })
}

/// One line for stderr: this run's llama.cpp work divided over `turns` turns (a synthesis's
/// verified turns): calls, prompt tokens sent, evaluated and found in the slots' prompt caches,
/// tokens generated. None without timings or turns. A resumed run's earlier turns cost it
/// nothing, so its figures per turn are low: compare runs made from scratch.
pub fn per_turn_line(per_endpoint: &BTreeMap<String, ServerWork>, turns: usize) -> Option<String> {
    let t = total(per_endpoint);
    (t.calls > 0 && turns > 0).then(|| {
        let per = |x: u64| x as f64 / turns as f64;
        format!(
            "llama.cpp work per verified turn ({turns}): {:.1} calls, {:.0} prompt tokens sent, \
             {:.0} evaluated and {:.0} reused from the prompt caches, {:.0} generated",
            per(t.calls),
            per(t.prompt_tokens),
            per(t.prompt_evaluated.min(t.prompt_tokens)),
            per(t.prompt_tokens.saturating_sub(t.prompt_evaluated)),
            per(t.predicted_n)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_work_per_turn_divides_this_runs_work_over_the_turns() {
        let mut all = BTreeMap::new();
        let w = ServerWork {
            calls: 9,
            prompt_tokens: 3000,
            prompt_evaluated: 1800,
            prompt_ms: 1.0,
            predicted_n: 300,
            predicted_ms: 1.0,
        };
        all.insert("a".to_string(), w);
        all.insert("b".to_string(), w);
        assert_eq!(
            per_turn_line(&all, 4).unwrap(),
            "llama.cpp work per verified turn (4): 4.5 calls, 1500 prompt tokens sent, 900 \
             evaluated and 600 reused from the prompt caches, 150 generated"
        );
        assert_eq!(per_turn_line(&all, 0), None);
        assert_eq!(per_turn_line(&BTreeMap::new(), 4), None);
    }

    #[test]
    fn timings_are_read_and_added_up_and_a_response_without_them_counts_nothing() {
        let resp = json!({"choices": [], "timings": {
            "prompt_n": 120, "prompt_ms": 2400.0, "predicted_n": 30, "predicted_ms": 2000.0,
            "cache_n": 380}});
        let w = ServerWork::of_response(&resp, 500).unwrap();
        assert_eq!(
            (w.prompt_tokens, w.prompt_evaluated, w.predicted_n),
            (500, 120, 30)
        );
        assert!((w.reused_share() - 0.76).abs() < 1e-9);
        assert_eq!(ServerWork::of_response(&json!({"choices": []}), 500), None);
        let mut per = BTreeMap::new();
        per.insert("a".to_string(), w);
        per.entry("a".to_string())
            .or_insert_with(ServerWork::default)
            .add(&w);
        let t = total(&per);
        assert_eq!(
            (t.calls, t.prompt_tokens, t.prompt_evaluated),
            (2, 1000, 240)
        );
        let line = summary_line(&per).unwrap();
        assert!(
            line.contains("evaluated 240 of 1000 prompt tokens (76% reused"),
            "{line}"
        );
        assert_eq!(summary_line(&BTreeMap::new()), None);
    }
}
