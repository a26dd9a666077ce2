//! The fake's scoring routes: rerank (`/rerank`, llama.cpp / TEI / Cohere / Jina shapes) and
//! score (vLLM), scored by a closure or the cosine of the fake embeddings, and `/embeddings`
//! with deterministic vectors.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::fake_chat::{approx_tokens, injected, render};
use super::{Shared, error_response};
use crate::fake::{FakeReply, FakeRequest, fake_embedding};

/// What the fake saw of one rerank request.
#[derive(Debug, Clone, PartialEq)]
pub struct FakeRerank {
    /// `rerank` (llama.cpp, TEI, Cohere, Jina) or `score` (vLLM).
    pub route: &'static str,
    /// The whole request body.
    pub body: Value,
    /// The `Authorization` header, if sent.
    pub authorization: Option<String>,
}

/// The default rerank scores: cosine of the fake embeddings (prefixes dropped).
pub(super) fn default_scores(query: &str, docs: &[String]) -> Vec<f64> {
    let q = fake_embedding(query, 256);
    docs.iter()
        .map(|d| {
            let v = fake_embedding(d, 256);
            q.iter().zip(&v).map(|(a, b)| f64::from(a * b)).sum()
        })
        .collect()
}

pub(super) async fn rerank(
    State(s): State<Arc<Shared>>,
    headers: axum::http::HeaderMap,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    rerank_answer(&s, "rerank", &headers, body).await
}

pub(super) async fn score(
    State(s): State<Arc<Shared>>,
    headers: axum::http::HeaderMap,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    rerank_answer(&s, "score", &headers, body).await
}

/// Answers a rerank request in the shape of the API that sent it: vLLM's `/score`
/// (`text_1`, `text_2` -> `data`), TEI's `/rerank` (`texts` -> a bare list), or the
/// llama.cpp / Cohere / Jina `/rerank` (`documents` -> `results` with `relevance_score`).
async fn rerank_answer(
    s: &Shared,
    route: &'static str,
    headers: &axum::http::HeaderMap,
    body: Value,
) -> Response {
    let n = s.rerank_calls.fetch_add(1, Ordering::Relaxed);
    if let Ok(mut r) = s.reranks.lock() {
        r.push(FakeRerank {
            route,
            body: body.clone(),
            authorization: headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string),
        });
    }
    if !s.latency.is_zero() {
        tokio::time::sleep(s.latency).await;
    }
    if n < s.rerank_failures {
        return error_response(503, None, "the fake reranker is warming up");
    }
    let strings = |v: Option<&Value>| -> Option<Vec<String>> {
        v?.as_array()?
            .iter()
            .map(|d| d.as_str().map(str::to_string))
            .collect()
    };
    let (query, docs, shape) = if route == "score" {
        (body.get("text_1"), strings(body.get("text_2")), "vllm")
    } else if body.get("texts").is_some() {
        (body.get("query"), strings(body.get("texts")), "tei")
    } else {
        (body.get("query"), strings(body.get("documents")), "results")
    };
    let (Some(query), Some(docs)) = (query.and_then(Value::as_str), docs) else {
        return error_response(
            400,
            None,
            "a rerank request needs a query and a list of passages",
        );
    };
    let scores = (s.scorer)(query, &docs);
    let tokens: u64 = approx_tokens(query) * docs.len() as u64
        + docs.iter().map(|d| approx_tokens(d)).sum::<u64>();
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|a, b| scores[*b].total_cmp(&scores[*a]));
    let answer = match shape {
        "vllm" => json!({
            "object": "list",
            "data": scores.iter().enumerate().map(|(i, x)| json!({"index": i, "object": "score", "score": x})).collect::<Vec<_>>(),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }),
        "tei" => Value::Array(
            order
                .iter()
                .map(|i| json!({"index": i, "score": scores[*i]}))
                .collect(),
        ),
        _ => json!({
            "results": order.iter().map(|i| json!({"index": i, "relevance_score": scores[*i]})).collect::<Vec<_>>(),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }),
    };
    axum::Json(answer).into_response()
}

pub(super) async fn embeddings(
    State(s): State<Arc<Shared>>,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    let n = s.embedding_calls.fetch_add(1, Ordering::Relaxed);
    if s.record
        && let Ok(mut r) = s.embedded.lock()
    {
        r.push(body.clone());
    }
    if !s.latency.is_zero() {
        tokio::time::sleep(s.latency).await;
    }
    if let Some(r) = injected(&s.faults, n) {
        s.injected.fetch_add(1, Ordering::Relaxed);
        if !matches!(r, FakeReply::Content(_)) {
            let req = FakeRequest {
                n,
                model: String::new(),
                body: Value::Null,
                last_user: String::new(),
                system: None,
                schema: None,
                seed: None,
            };
            return render(r, &req).await;
        }
    }
    let inputs: Vec<String> = match body.get("input") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| v.to_string())
            })
            .collect(),
        _ => return error_response(400, None, "`input` must be a string or an array of strings"),
    };
    let mut tokens = 0u64;
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(i, t)| {
            tokens += approx_tokens(t);
            json!({"object": "embedding", "index": i, "embedding": fake_embedding(t, s.dims)})
        })
        .collect();
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("fake-embed");
    axum::Json(json!({"object": "list", "data": data, "model": model, "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})).into_response()
}
