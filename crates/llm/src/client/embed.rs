//! Embeddings: [`Llm::embed`] with the embedder role, cached per model and text, sent in
//! batches of [`EMBED_BATCH`] texts with bounded concurrency and booked in the ledger.

use futures::stream::{self, StreamExt};
use serde_json::{Value, json};

use super::Llm;
use crate::balance::Endpoint;
use crate::config::Role;
use crate::error::{LlmError, Result};
use crate::ledger::Event;
use crate::plan::PlannedEndpoint;
use crate::tokens;

/// An input's position and its embedding.
type Indexed = (usize, Vec<f32>);

/// Texts per `/v1/embeddings` request.
const EMBED_BATCH: usize = 64;

impl Llm {
    /// Embeds `texts` with the embedder role (order kept; cached per model and text).
    pub async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let ep = self.pick(Role::Embedder)?;
        let model = ep.cfg.model.clone();
        let keys: Vec<String> = texts.iter().map(|t| embed_key(&model, t)).collect();
        let mut out: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        if let Some(cache) = &self.inner.cache
            && !self.inner.options.refresh
        {
            for (i, k) in keys.iter().enumerate() {
                out[i] = cache.get_embedding(k)?;
                if out[i].is_some() {
                    self.inner.ledger.event(&ep.cfg.name, Event::CacheHit);
                }
            }
        }
        let missing: Vec<usize> = (0..texts.len()).filter(|i| out[*i].is_none()).collect();
        if self.inner.options.dry_run {
            let tok: u64 = missing
                .iter()
                .map(|i| tokens::count_text(&model, &texts[*i]))
                .sum();
            self.record_plan(
                &ep.cfg.name,
                PlannedEndpoint {
                    model: model.clone(),
                    calls: missing.len().div_ceil(EMBED_BATCH) as u64,
                    cached: (texts.len() - missing.len()) as u64,
                    prompt_tokens: tok,
                    cost_expected_usd: ep.cfg.cost(tok, 0),
                    cost_max_usd: ep.cfg.cost(tok, 0),
                    ..Default::default()
                },
            );
            return Err(LlmError::DryRun);
        }
        let width = ep.capacity().max(1);
        let chunks: Vec<Vec<usize>> = missing.chunks(EMBED_BATCH).map(|c| c.to_vec()).collect();
        let results: Vec<Result<Vec<Indexed>>> = stream::iter(chunks)
            .map(|idx| {
                let ep = ep.clone();
                let model = model.clone();
                async move { self.embed_chunk(&ep, &model, texts, &idx).await }
            })
            .buffered(width)
            .collect()
            .await;
        let mut fresh = Vec::new();
        for r in results {
            for (i, v) in r? {
                fresh.push((keys[i].clone(), v.clone()));
                out[i] = Some(v);
            }
        }
        if let Some(cache) = &self.inner.cache
            && !fresh.is_empty()
        {
            cache.put_embeddings(&model, &fresh)?;
        }
        out.into_iter()
            .enumerate()
            .map(|(i, v)| {
                v.ok_or_else(|| LlmError::Unsupported(format!("no embedding for input {i}")))
            })
            .collect()
    }

    /// One `/v1/embeddings` request for the inputs `idx` of `texts`: its cost reserved, then
    /// settled with the tokens reported; each vector placed by its `index`.
    async fn embed_chunk(
        &self,
        ep: &Endpoint,
        model: &str,
        texts: &[String],
        idx: &[usize],
    ) -> Result<Vec<Indexed>> {
        let input: Vec<&str> = idx.iter().map(|i| texts[*i].as_str()).collect();
        let tok: u64 = input.iter().map(|t| tokens::count_text(model, t)).sum();
        let estimate = ep.cfg.cost(tok, 0);
        self.inner.ledger.reserve(&ep.cfg.name, estimate)?;
        let body = json!({"model": model, "input": input, "encoding_format": "float"});
        let resp = match self.send_with(ep, &body, tok, true, None).await {
            Ok((v, _)) => v,
            Err(e) => {
                self.inner.ledger.release(estimate);
                self.inner.ledger.event(&ep.cfg.name, Event::ProviderFailed);
                return Err(e);
            }
        };
        let used = resp
            .pointer("/usage/prompt_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(tok);
        self.inner
            .ledger
            .settle(&ep.cfg.name, estimate, used, 0, ep.cfg.cost(used, 0));
        let data = resp
            .get("data")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut vecs: Vec<Option<Vec<f32>>> = vec![None; idx.len()];
        for (pos, d) in data.iter().enumerate() {
            let at = d
                .get("index")
                .and_then(Value::as_u64)
                .map(|x| x as usize)
                .unwrap_or(pos);
            let v: Option<Vec<f32>> = d.get("embedding").and_then(Value::as_array).map(|a| {
                a.iter()
                    .filter_map(Value::as_f64)
                    .map(|f| f as f32)
                    .collect()
            });
            if let (Some(slot), Some(v)) = (vecs.get_mut(at), v) {
                *slot = Some(v);
            }
        }
        idx.iter()
            .zip(vecs)
            .map(|(i, v)| {
                v.map(|v| (*i, v)).ok_or_else(|| LlmError::Provider {
                    endpoint: ep.cfg.name.clone(),
                    status: None,
                    message: format!("the embeddings response has no vector for input {i}"),
                    attempts: 1,
                })
            })
            .collect()
    }
}

pub(super) fn embed_key(model: &str, text: &str) -> String {
    let mut h = blake3::Hasher::new();
    h.update(b"mtr-llm embed v1\0");
    h.update(model.as_bytes());
    h.update(b"\0");
    h.update(text.as_bytes());
    h.finalize().to_hex().to_string()
}
