//! Dry runs: what one call would cost before it is made ([`Llm::estimate`]), and the plan the
//! calls of a `--dry-run` add up to ([`Llm::plan`]), with wall time from configured speeds.

use super::Llm;
use super::body::{PREFILLED_RATING_TOKENS, cache_key, continues_prefilled_rating, request_body};
use crate::balance::Endpoint;
use crate::chat::ChatRequest;
use crate::config::Sampling;
use crate::error::Result;
use crate::plan::{Plan, PlannedEndpoint};
use crate::tokens;

impl Llm {
    /// The dry-run plan so far, with each endpoint's wall time estimated from its configured
    /// speed and rate limits.
    pub fn plan(&self) -> Plan {
        let mut plan = self
            .inner
            .plan
            .lock()
            .map(|p| p.clone())
            .unwrap_or_default();
        for (name, p) in plan.endpoints.iter_mut() {
            if let Some(ep) = self.inner.endpoints.get(name) {
                p.seconds_expected = crate::plan::estimate_seconds(&ep.cfg, p);
            }
        }
        plan
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
        Ok(self.estimate_inner(ep, req, &sampling, &key))
    }

    pub(super) fn estimate_inner(
        &self,
        ep: &Endpoint,
        req: &ChatRequest,
        sampling: &Sampling,
        key: &str,
    ) -> PlannedEndpoint {
        let cached = self
            .inner
            .cache
            .as_ref()
            .is_some_and(|c| !self.inner.options.refresh && c.contains_chat(key));
        let mut p = PlannedEndpoint {
            model: ep.cfg.model.clone(),
            ..Default::default()
        };
        if cached {
            p.cached = 1;
            return p;
        }
        let prompt = tokens::count_messages(&ep.cfg.model, &req.messages);
        let max_out = if continues_prefilled_rating(&ep.cfg, req) {
            u64::from(PREFILLED_RATING_TOKENS)
        } else {
            u64::from(sampling.max_tokens.unwrap_or(1024))
        };
        let expected = self
            .inner
            .cache
            .as_ref()
            .and_then(|c| {
                c.mean_completion_tokens(&ep.cfg.model, req.prompt.as_ref().map(|p| p.id.as_str()))
            })
            .map(|m| (m.round() as u64).min(max_out))
            .unwrap_or(max_out);
        let discount = if self.inner.options.batch {
            ep.cfg.batch_discount
        } else {
            1.0
        };
        p.calls = 1;
        p.prompt_tokens = prompt;
        p.completion_tokens_max = max_out;
        p.completion_tokens_expected = expected;
        p.cost_max_usd = ep.cfg.cost(prompt, max_out) * discount;
        p.cost_expected_usd = ep.cfg.cost(prompt, expected) * discount;
        p
    }

    pub(super) fn record_plan(&self, endpoint: &str, p: PlannedEndpoint) {
        if let Ok(mut plan) = self.inner.plan.lock() {
            let e = plan.endpoints.entry(endpoint.to_string()).or_default();
            e.model = p.model;
            e.calls += p.calls;
            e.cached += p.cached;
            e.prompt_tokens += p.prompt_tokens;
            e.completion_tokens_max += p.completion_tokens_max;
            e.completion_tokens_expected += p.completion_tokens_expected;
            e.cost_max_usd += p.cost_max_usd;
            e.cost_expected_usd += p.cost_expected_usd;
        }
    }
}
