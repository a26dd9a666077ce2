//! [`Llm::rerank`]: one relevance-judge call (see [`crate::rerank`]), going the way a chat call
//! goes: cache -> budget -> rate limits -> replica slot -> HTTP with retries -> cache ->
//! ledger. An answer is cached under its API, model, query and passages, so that no rerun pays
//! for it twice.

use std::sync::atomic::Ordering;

use serde_json::{Value, json};

use super::Llm;
use crate::balance::Endpoint;
use crate::cache::StoredChat;
use crate::chat::{ParseStatus, Usage};
use crate::error::{LlmError, Result};
use crate::ledger::Event;
use crate::plan::PlannedEndpoint;
use crate::rerank::{RerankApi, RerankConfig, Reranked, cache_key, merge_split, reported_tokens};
use crate::retry::Delays;
use crate::tokens;

/// The prompt id rerank answers are stored under in the cache (for `mtr cache stats`).
const RERANK_PROMPT_ID: &str = "rerank";

impl Llm {
    /// The rerank settings of an endpoint, when it is a relevance judge rather than a chat
    /// model.
    pub fn reranker(&self, endpoint: &str) -> Option<&RerankConfig> {
        self.inner
            .endpoints
            .get(endpoint)
            .and_then(|e| e.cfg.rerank.as_ref())
    }

    /// Scores each of `passages` for relevance to `query` on the named rerank endpoint.
    pub async fn rerank(
        &self,
        endpoint: &str,
        query: &str,
        passages: &[String],
    ) -> Result<Reranked> {
        let ep = self.endpoint(endpoint)?.clone();
        let cfg = ep.cfg.rerank.clone().ok_or_else(|| {
            LlmError::Config(format!(
                "endpoint `{endpoint}` has no [llm.endpoints.rerank] table: it is not a relevance judge"
            ))
        })?;
        ep.load.fetch_add(1, Ordering::Relaxed);
        let r = self.rerank_inner(&ep, &cfg, query, passages).await;
        ep.load.fetch_sub(1, Ordering::Relaxed);
        r
    }

    async fn rerank_inner(
        &self,
        ep: &Endpoint,
        cfg: &RerankConfig,
        query: &str,
        passages: &[String],
    ) -> Result<Reranked> {
        let name = ep.cfg.name.as_str();
        let model = ep.cfg.model.clone();
        // the server adds the E5 prefixes itself: query and passages go with their input_type
        let typed = ep.cfg.prefix_as_input_type && cfg.api == RerankApi::Embeddings;
        let key = cache_key(cfg, &model, query, passages, typed);
        let done =
            |raw: Vec<f64>, tokens: u64, cost: f64, answer_cost: f64, cached, attempts| Reranked {
                scores: raw.iter().map(|r| cfg.normalise(*r)).collect(),
                raw,
                prompt_tokens: tokens,
                cost_usd: cost,
                answer_cost_usd: answer_cost,
                cached,
                endpoint: name.to_string(),
                model: model.clone(),
                attempts,
                key: key.clone(),
            };
        let cached = match &self.inner.cache {
            Some(c) if !self.inner.options.refresh => c.get_chat(&key)?,
            _ => None,
        };
        if let Some(hit) = cached
            && let Some(raw) = stored_scores(&hit.value, passages.len())
        {
            self.inner.ledger.event(name, Event::CacheHit);
            return Ok(done(
                raw,
                hit.usage.prompt_tokens,
                0.0,
                hit.cost_usd,
                true,
                0,
            ));
        }
        let tok: u64 = std::iter::once(cfg.query_text(query))
            .chain(passages.iter().map(|p| cfg.passage_text(p)))
            .map(|t| tokens::count_text(&model, &t))
            .sum();
        let estimate = ep.cfg.cost(tok, 0);
        if self.inner.options.dry_run {
            let calls = if typed { 2 } else { 1 };
            self.record_plan(name, rerank_plan(&model, calls, tok, estimate));
            return Err(LlmError::DryRun);
        }
        self.inner.ledger.reserve(name, estimate)?;
        let parsed = self
            .fetch_scores(ep, cfg, query, passages, typed, tok)
            .await;
        let (raw, used, attempts) = match parsed {
            Ok(p) => p,
            Err(e) => {
                self.inner.ledger.release(estimate);
                self.inner.ledger.event(name, Event::ProviderFailed);
                self.inner.ledger.note_error(name, &e.to_string());
                return Err(e);
            }
        };
        let cost = ep.cfg.cost(used, 0);
        self.inner.ledger.settle(name, estimate, used, 0, cost);
        if let Some(p) = &self.inner.options.progress {
            p.usage(used, cost);
        }
        if let Some(cache) = &self.inner.cache {
            let stored = stored_scores_answer(&model, &raw, used, cost);
            cache.put_chat(&key, Some(RERANK_PROMPT_ID), &stored)?;
        }
        Ok(done(raw, used, cost, cost, false, attempts))
    }

    /// The scores from the provider, the prompt tokens it reports (else `tok`) and the
    /// attempts made.
    async fn fetch_scores(
        &self,
        ep: &Endpoint,
        cfg: &RerankConfig,
        query: &str,
        passages: &[String],
        typed: bool,
        tok: u64,
    ) -> Result<(Vec<f64>, u64, u32)> {
        let name = ep.cfg.name.as_str();
        match self.exchange(ep, cfg, query, passages, typed).await {
            Ok((resp, attempts)) => cfg
                .parse(&resp, passages.len())
                .map(|raw| (raw, reported_tokens(&resp).unwrap_or(tok), attempts))
                .map_err(|message| LlmError::Provider {
                    endpoint: name.to_string(),
                    status: None,
                    message,
                    attempts,
                }),
            Err(e) => Err(e),
        }
    }

    /// The request(s) of one rerank call: one body, or, `typed`, the query's and the
    /// passages' (see [`RerankConfig::split_bodies`]), their answers merged into one. Returns
    /// the answer and the attempts made.
    async fn exchange(
        &self,
        ep: &Endpoint,
        cfg: &RerankConfig,
        query: &str,
        passages: &[String],
        typed: bool,
    ) -> Result<(Value, u32)> {
        let model = ep.cfg.model.as_str();
        let count = |t: String| tokens::count_text(model, &t);
        let q_tok = count(cfg.query_text(query));
        let p_tok: u64 = passages.iter().map(|p| count(cfg.passage_text(p))).sum();
        if !typed {
            let body = cfg.body(model, query, passages);
            return self.send_rerank(ep, cfg, &body, q_tok + p_tok).await;
        }
        let [q_body, p_body] = cfg.split_bodies(model, query, passages);
        let (q, qa) = self.send_rerank(ep, cfg, &q_body, q_tok).await?;
        let (p, pa) = self.send_rerank(ep, cfg, &p_body, p_tok).await?;
        Ok((merge_split(&q, &p), qa + pa))
    }

    /// One rerank exchange with retries; returns the response JSON and the attempts made.
    async fn send_rerank(
        &self,
        ep: &Endpoint,
        cfg: &RerankConfig,
        body: &Value,
        tokens: u64,
    ) -> Result<(Value, u32)> {
        let mut delays = Delays::new(&self.inner.config.retry);
        let mut attempts = 0u32;
        loop {
            ep.rate_limit(tokens).await;
            let slot = ep.slot(None).await?;
            attempts += 1;
            let res = match cfg.api {
                RerankApi::Embeddings => slot.replica.embeddings(body).await,
                api => slot.replica.post_json(api.path(), body).await,
            };
            drop(slot);
            let err = match res {
                Ok(v) => return Ok((v, attempts)),
                Err(e) => e,
            };
            self.retry_or_fail(ep, err, &mut delays, attempts, "rerank")
                .await?;
        }
    }
}

/// The raw scores of a cached answer, when it holds one per passage.
fn stored_scores(value: &Option<Value>, n: usize) -> Option<Vec<f64>> {
    let scores: Vec<f64> = value
        .as_ref()?
        .get("scores")?
        .as_array()?
        .iter()
        .filter_map(Value::as_f64)
        .collect();
    (scores.len() == n).then_some(scores)
}

/// The plan of one rerank call in a dry run: `calls` requests of `tokens` prompt tokens.
fn rerank_plan(model: &str, calls: u64, tokens: u64, estimate: f64) -> PlannedEndpoint {
    PlannedEndpoint {
        model: model.to_string(),
        calls,
        prompt_tokens: tokens,
        cost_expected_usd: estimate,
        cost_max_usd: estimate,
        ..Default::default()
    }
}

/// A rerank answer as the cache stores it: the raw scores, the prompt tokens and the cost.
fn stored_scores_answer(model: &str, raw: &[f64], used: u64, cost: f64) -> StoredChat {
    StoredChat {
        value: Some(json!({"scores": raw})),
        text: String::new(),
        status: ParseStatus::Ok,
        usage: Usage {
            prompt_tokens: used,
            completion_tokens: 0,
        },
        cost_usd: cost,
        model: model.to_string(),
        finish_reason: None,
        rating: None,
    }
}
