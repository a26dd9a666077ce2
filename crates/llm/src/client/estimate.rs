//! Dry runs: what one call would cost before it is made ([`Llm::estimate`]), and the plan the
//! calls of a `--dry-run` add up to ([`Llm::plan`]), with wall time from configured speeds.
//!
//! A dry run of very many calls counts its prompts' tokens from a sample
//! ([`Llm::expect_prompts`], [`crate::tokens::SampleRule`]): the calls left out get their
//! tokens (and the cost of them) from their length when the plan is read.

use std::collections::BTreeMap;

use super::Llm;
use super::body::{PREFILLED_RATING_TOKENS, cache_key, continues_prefilled_rating, request_body};
use crate::balance::Endpoint;
use crate::chat::ChatRequest;
use crate::config::Sampling;
use crate::error::Result;
use crate::plan::{Plan, PlannedEndpoint};
use crate::tokens::{self, SampleRule, TokenTally};

/// How a dry run counts its prompts: the rule, and a tally per (endpoint, prompt id); and the
/// mean completion tokens of the cached answers per (model, prompt id), read once (nothing is
/// cached during a dry run).
#[derive(Debug)]
pub(super) struct PromptCounts {
    rule: SampleRule,
    tallies: BTreeMap<(String, String), TokenTally>,
    means: BTreeMap<(String, Option<String>), Option<f64>>,
}

impl Default for PromptCounts {
    fn default() -> Self {
        Self {
            rule: SampleRule::EXACT,
            tallies: BTreeMap::new(),
            means: BTreeMap::new(),
        }
    }
}

/// How many planned prompts were counted exactly and how many estimated from their length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PromptSample {
    /// Prompts whose tokens were counted.
    pub counted: u64,
    /// Prompts whose tokens were estimated from their length.
    pub estimated: u64,
}

impl Llm {
    /// Tells a dry run that about `n` calls will be planned: above
    /// [`tokens::EXACT_PROMPTS`] their prompt tokens are counted from a sample
    /// ([`SampleRule::for_prompts`]). Without it every prompt is counted.
    pub fn expect_prompts(&self, n: u64) {
        if let Ok(mut c) = self.inner.prompt_counts.lock() {
            c.rule = SampleRule::for_prompts(n);
        }
    }

    /// Prompts counted exactly and estimated so far; None when every one was counted.
    pub fn prompt_sample(&self) -> Option<PromptSample> {
        let c = self.inner.prompt_counts.lock().ok()?;
        let mut all = TokenTally::default();
        c.tallies.values().for_each(|t| all.merge(t));
        (all.estimated > 0).then_some(PromptSample {
            counted: all.counted,
            estimated: all.estimated,
        })
    }

    /// The prompt tokens of a planned call: counted, or 0 when it is left to the estimate
    /// that [`Llm::plan`] adds.
    fn planned_prompt_tokens(&self, ep: &Endpoint, req: &ChatRequest, key: &str) -> u64 {
        let count = || tokens::count_messages(&ep.cfg.model, &req.messages);
        let rule = match self.inner.prompt_counts.lock() {
            Ok(c) if !c.rule.is_exact() => c.rule,
            _ => return count(),
        };
        // counted outside the lock: the other calls' tallies go on meanwhile
        let counted = rule.picks(key).then(count);
        let Ok(mut c) = self.inner.prompt_counts.lock() else {
            return counted.unwrap_or(0);
        };
        let prompt = req
            .prompt
            .as_ref()
            .map(|p| p.id.clone())
            .unwrap_or_default();
        let tally = c.tallies.entry((ep.cfg.name.clone(), prompt)).or_default();
        tally.add_count(&req.messages, counted);
        counted.unwrap_or(0)
    }

    /// The mean completion tokens of `model`'s cached answers to the prompt `prompt_id` (read
    /// once per dry run: it answers nothing new).
    fn mean_completion_tokens(&self, model: &str, prompt_id: Option<&str>) -> Option<f64> {
        let cache = self.inner.cache.as_ref()?;
        if !self.inner.options.dry_run {
            return cache.mean_completion_tokens(model, prompt_id);
        }
        let key = (model.to_string(), prompt_id.map(str::to_string));
        if let Some(m) = self.inner.prompt_counts.lock().ok()?.means.get(&key) {
            return *m;
        }
        let m = cache.mean_completion_tokens(model, prompt_id);
        if let Ok(mut c) = self.inner.prompt_counts.lock() {
            c.means.insert(key, m);
        }
        m
    }

    /// Adds the estimated tokens of the calls a sampled count left out, and their cost.
    fn add_estimated(&self, plan: &mut Plan) {
        let Ok(c) = self.inner.prompt_counts.lock() else {
            return;
        };
        for ((name, _), tally) in &c.tallies {
            let (Some(p), Some(ep)) =
                (plan.endpoints.get_mut(name), self.inner.endpoints.get(name))
            else {
                continue;
            };
            let est = tally.estimated_tokens();
            let cost = ep.cfg.cost(est, 0) * self.discount(ep);
            p.prompt_tokens += est;
            p.cost_max_usd += cost;
            p.cost_expected_usd += cost;
        }
    }

    /// The endpoint's Batch discount when calls go through the Batch API, else 1.
    fn discount(&self, ep: &Endpoint) -> f64 {
        if self.inner.options.batch {
            ep.cfg.batch_discount
        } else {
            1.0
        }
    }

    /// The dry-run plan so far, with each endpoint's wall time estimated from its configured
    /// speed and rate limits.
    pub fn plan(&self) -> Plan {
        let mut plan = self
            .inner
            .plan
            .lock()
            .map(|p| p.clone())
            .unwrap_or_default();
        self.add_estimated(&mut plan);
        plan.shared_cores = self.shared_cores();
        for (name, p) in plan.endpoints.iter_mut() {
            if let Some(ep) = self.inner.endpoints.get(name) {
                p.seconds_expected = crate::plan::estimate_seconds(&ep.cfg, p);
                p.shared_speed = ep.cfg.shared_speed;
            }
        }
        plan
    }

    /// The cores the shared-speed endpoints run on side by side ([`crate::plan::local_cores`]);
    /// 1 when no endpoint shares its speed.
    pub(crate) fn shared_cores(&self) -> usize {
        let shared = self.inner.endpoints.values().find(|e| e.cfg.shared_speed);
        match shared {
            Some(e) => crate::plan::local_cores(e.cfg.shared_cores),
            None => 1,
        }
    }

    /// True when this client plans calls instead of making them (`--dry-run`).
    pub fn is_dry_run(&self) -> bool {
        self.inner.options.dry_run
    }

    /// A model of `endpoint`'s prompt caches, for a caller that plans its calls in order
    /// ([`crate::prompt_cache`]); None where the endpoint keeps no prompt cache
    /// (`prefix_cache_slots`).
    pub fn prompt_cache_model(
        &self,
        endpoint: &str,
    ) -> Option<crate::prompt_cache::PromptCacheModel> {
        let ep = self.inner.endpoints.get(endpoint)?;
        let slots = ep.cfg.prefix_cache_slots?;
        let replicas = if ep.local.is_empty() {
            ep.cfg.replicas().len()
        } else {
            ep.local.len()
        };
        Some(crate::prompt_cache::PromptCacheModel::new(
            replicas,
            slots as usize,
        ))
    }

    /// The servers behind `endpoint`, as [`Llm::prompt_cache_model`]'s callers key their
    /// models: endpoints with the same key send to the same servers and so share their prompt
    /// caches (the embedded generator and the judge of its model on one server, as
    /// `MTR_LOCAL_USE_SERVER` gives each synthesis of the main job). None for an unknown
    /// endpoint.
    pub fn prompt_cache_key(&self, endpoint: &str) -> Option<String> {
        let ep = self.inner.endpoints.get(endpoint)?;
        let mut servers: Vec<String> = if ep.local.is_empty() {
            ep.cfg.replicas()
        } else {
            ep.local.iter().map(|s| s.name.clone()).collect()
        };
        servers.sort();
        Some(servers.join(" "))
    }

    /// Expected wall time of `p` on `endpoint` from its configured speed and rate limits
    /// (see [`crate::plan::estimate_seconds`]); None when unknown.
    pub fn estimate_seconds(&self, endpoint: &str, p: &PlannedEndpoint) -> Option<f64> {
        let ep = self.inner.endpoints.get(endpoint)?;
        crate::plan::estimate_seconds(&ep.cfg, p)
    }

    /// Estimate of one call to `endpoint` (no side effects).
    pub fn estimate(&self, endpoint: &str, req: &ChatRequest) -> Result<PlannedEndpoint> {
        let ep = self.endpoint(endpoint)?;
        let sampling = req
            .sampling
            .clone()
            .unwrap_or_else(|| self.inner.config.sampling.judges.clone());
        let body = request_body(&ep.cfg, req, &sampling);
        let key = cache_key(&ep.cfg.model, req, &body);
        let prompt = || tokens::count_messages(&ep.cfg.model, &req.messages);
        Ok(self.estimate_with(ep, req, &sampling, &key, &prompt))
    }

    /// Estimate of one planned call of a dry run (its prompt perhaps left to the estimate of
    /// [`Llm::expect_prompts`]).
    pub(super) fn estimate_inner(
        &self,
        ep: &Endpoint,
        req: &ChatRequest,
        sampling: &Sampling,
        key: &str,
    ) -> PlannedEndpoint {
        let prompt = || self.planned_prompt_tokens(ep, req, key);
        self.estimate_with(ep, req, sampling, key, &prompt)
    }

    fn estimate_with(
        &self,
        ep: &Endpoint,
        req: &ChatRequest,
        sampling: &Sampling,
        key: &str,
        prompt: &dyn Fn() -> u64,
    ) -> PlannedEndpoint {
        // a dry run's calls end at once: an empty cache is not asked a million times
        let cached = self.inner.cache.as_ref().is_some_and(|c| {
            !self.inner.options.refresh
                && if self.inner.options.dry_run {
                    c.contains_chat_unless_empty(key)
                } else {
                    c.contains_chat(key)
                }
        });
        let mut p = PlannedEndpoint {
            model: ep.cfg.model.clone(),
            ..Default::default()
        };
        if cached {
            p.cached = 1;
            return p;
        }
        let prompt = prompt();
        let max_out = if continues_prefilled_rating(&ep.cfg, req) {
            u64::from(PREFILLED_RATING_TOKENS)
        } else {
            u64::from(sampling.max_tokens.unwrap_or(1024))
        };
        let expected = self
            .mean_completion_tokens(&ep.cfg.model, req.prompt.as_ref().map(|p| p.id.as_str()))
            .map(|m| (m.round() as u64).min(max_out))
            .or_else(|| {
                ep.cfg
                    .expected_completion_tokens
                    .map(|t| u64::from(t).min(max_out))
            })
            .unwrap_or(max_out);
        let discount = self.discount(ep);
        p.calls = 1;
        p.prompt_tokens = prompt;
        p.prompt_tokens_cached = req
            .planned_cached_share
            .filter(|_| ep.cfg.prefix_cache_slots.is_some())
            .map_or(0, |share| {
                (prompt as f64 * share.clamp(0.0, 1.0)).round() as u64
            });
        p.completion_tokens_max = max_out;
        p.completion_tokens_expected = expected;
        p.cost_max_usd = ep.cfg.cost(prompt, max_out) * discount;
        p.cost_expected_usd = ep.cfg.cost(prompt, expected) * discount;
        p
    }

    pub(super) fn record_plan(&self, endpoint: &str, p: PlannedEndpoint) {
        if let Ok(mut plan) = self.inner.plan.lock() {
            let e = plan.endpoints.entry(endpoint.to_string()).or_default();
            e.add(&p);
            e.model = p.model;
        }
    }
}

/// What a time budget plans with: the endpoints' configured or measured speeds.
impl crate::plan::Speeds for Llm {
    fn seconds(&self, endpoint: &str, p: &PlannedEndpoint) -> Option<f64> {
        self.estimate_seconds(endpoint, p)
    }
    fn shared(&self, endpoint: &str) -> bool {
        self.config()
            .endpoint(endpoint)
            .is_some_and(|e| e.shared_speed)
    }
    fn shared_cores(&self) -> usize {
        Llm::shared_cores(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::ChatMessage;
    use crate::config::{EndpointConfig, LlmConfig, LlmOptions};
    use crate::error::LlmError;

    /// A dry-run client of one priced endpoint (nothing listens: nothing is called).
    async fn dry_client() -> Llm {
        let mut e = EndpointConfig::new("a", "http://127.0.0.1:9/v1", "gpt-4o-mini");
        e.price_in_per_mtok = 1.0;
        let mut cfg = LlmConfig {
            endpoints: vec![e],
            ..Default::default()
        };
        cfg.roles.judges = vec!["a".into()];
        let o = LlmOptions {
            dry_run: true,
            ..Default::default()
        };
        Llm::new(cfg, o).await.unwrap()
    }

    fn req(i: usize) -> ChatRequest {
        let words = ["rivers", "the", "mill", "passage", "asks", "2024"];
        let text: Vec<&str> = (0..40 + i % 50).map(|k| words[(k * 7 + i) % 6]).collect();
        ChatRequest::new(vec![
            ChatMessage::system("Rate the passage."),
            ChatMessage::user(format!("item {i}: {}", text.join(" "))),
        ])
    }

    async fn plan_of(n: usize, expect: Option<u64>) -> (PlannedEndpoint, Option<PromptSample>) {
        let llm = dry_client().await;
        if let Some(e) = expect {
            llm.expect_prompts(e);
        }
        for i in 0..n {
            assert!(matches!(
                llm.chat("a", &req(i)).await,
                Err(LlmError::DryRun)
            ));
        }
        (llm.plan().endpoints["a"].clone(), llm.prompt_sample())
    }

    #[tokio::test]
    async fn a_dry_run_counts_every_prompt_unless_told_it_is_very_large() {
        let exact: u64 = (0..2000)
            .map(|i| tokens::count_messages("gpt-4o-mini", &req(i).messages))
            .sum();
        let (p, sample) = plan_of(2000, Some(2000)).await;
        assert_eq!((p.calls, p.prompt_tokens, sample), (2000, exact, None));
        // told of 20 times the sampled size: about a twentieth counted, the rest estimated
        let (s, sample) = plan_of(2000, Some(tokens::SAMPLED_PROMPTS * 20)).await;
        let sample = sample.unwrap();
        assert_eq!(sample.counted + sample.estimated, 2000);
        assert!((50..160).contains(&sample.counted), "{sample:?}");
        let err = (s.prompt_tokens as f64 - exact as f64).abs() / exact as f64;
        assert!(err < 0.02, "{err}");
        // the cost follows the tokens (1 USD per million prompt tokens, nothing out)
        assert!((p.cost_max_usd - exact as f64 / 1e6).abs() < 1e-9);
        assert!((s.cost_max_usd - s.prompt_tokens as f64 / 1e6).abs() < 1e-9);
        // the same calls, the same figure
        assert_eq!(plan_of(2000, Some(tokens::SAMPLED_PROMPTS * 20)).await.0, s);
    }

    #[tokio::test]
    async fn an_uncached_call_is_expected_to_use_the_endpoints_prior_else_max_tokens() {
        let plan = |prior: Option<u32>, max_tokens: u32| async move {
            let mut e = EndpointConfig::new("a", "http://127.0.0.1:9/v1", "gpt-4o-mini");
            e.expected_completion_tokens = prior;
            let mut cfg = LlmConfig {
                endpoints: vec![e],
                ..Default::default()
            };
            cfg.roles.judges = vec!["a".into()];
            let o = LlmOptions {
                dry_run: true,
                no_cache: true,
                ..Default::default()
            };
            let llm = Llm::new(cfg, o).await.unwrap();
            let mut r = req(1);
            r.sampling = Some(crate::config::Sampling {
                max_tokens: Some(max_tokens),
                ..Default::default()
            });
            assert!(matches!(llm.chat("a", &r).await, Err(LlmError::DryRun)));
            let p = llm.plan().endpoints["a"].clone();
            (p.completion_tokens_expected, p.completion_tokens_max)
        };
        assert_eq!(plan(None, 256).await, (256, 256));
        assert_eq!(plan(Some(48), 256).await, (48, 256));
        // never above the call's own bound
        assert_eq!(plan(Some(48), 20).await, (20, 20));
    }
}
