//! The fake's chat completions: the scripted or computed reply to a request, injected faults
//! (429 with `Retry-After`, 500, hangs, malformed bodies, broken JSON content) and the
//! OpenAI-shaped completion body, which the Batch API's answers reuse.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::{Faults, Shared, error_response};
use crate::fake::{FakeReply, FakeRequest};

/// Deterministic uniform number in [0, 1) from seed and n (splitmix64).
fn unit(seed: u64, n: u64, salt: u64) -> f64 {
    let mut z =
        seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ salt.wrapping_mul(0xD1B5_4A32_D192_ED03);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

pub(super) fn injected(f: &Faults, n: u64) -> Option<FakeReply> {
    let u = unit(f.seed, n, 1);
    let mut edge = 0.0;
    let mut hit = |rate: f64| {
        edge += rate;
        rate > 0.0 && u < edge
    };
    if hit(f.rate_429) {
        return Some(FakeReply::rate_limited(f.retry_after_s));
    }
    if hit(f.rate_500) {
        return Some(FakeReply::server_error());
    }
    if hit(f.rate_hang) {
        return Some(FakeReply::Hang);
    }
    if hit(f.rate_malformed_body) {
        return Some(FakeReply::RawBody(
            "{\"id\": \"fake\", \"choices\": [{\"message\": {\"role\": \"assist".into(),
        ));
    }
    None
}

pub(super) async fn chat(
    State(s): State<Arc<Shared>>,
    headers: axum::http::HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let n = s.chat_calls.fetch_add(1, Ordering::Relaxed);
    s.chat_held(n).await;
    if !s.latency.is_zero() {
        tokio::time::sleep(s.latency).await;
    }
    let body: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => return error_response(400, None, &format!("invalid JSON body: {e}")),
    };
    if s.record
        && let Ok(mut r) = s.recorded.lock()
    {
        r.push(body.clone());
    }
    let (req, reply) = decide(&s, n, body);
    let reply = header_and_finish_faults(&s, n, &headers, reply);
    render(reply, &req).await
}

/// The faults that need the request's headers or the decided reply: an error echoing
/// `Authorization`, a body without choices, an answer cut at `max_tokens`.
fn header_and_finish_faults(
    s: &Shared,
    n: u64,
    headers: &axum::http::HeaderMap,
    reply: FakeReply,
) -> FakeReply {
    let f = &s.faults;
    // only answers not already replaced by another fault
    if !matches!(reply, FakeReply::Content(_)) {
        return reply;
    }
    let hit = |rate: f64, salt: u64| {
        let yes = rate > 0.0 && unit(f.seed, n, salt) < rate;
        if yes {
            s.injected.fetch_add(1, Ordering::Relaxed);
        }
        yes
    };
    if hit(f.rate_echo_auth, 4) {
        let auth = headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("(none)");
        return FakeReply::Status {
            status: 401,
            retry_after_s: None,
            message: format!("Incorrect API key provided: {auth}"),
        };
    }
    if hit(f.rate_no_choices, 5) {
        return FakeReply::RawBody("{\"id\": \"fake\", \"object\": \"chat.completion\"}".into());
    }
    match reply {
        FakeReply::Content(text) if hit(f.rate_length, 3) => {
            let half: String = text.chars().take(text.chars().count() / 2).collect();
            FakeReply::Truncated(half)
        }
        other => other,
    }
}

/// The request as the responder sees it, and the reply (faults, script, responder).
pub(super) fn decide(s: &Shared, n: u64, body: Value) -> (FakeRequest, FakeReply) {
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let role_content = |role: &str| {
        messages
            .iter()
            .rev()
            .find(|m| m.get("role").and_then(Value::as_str) == Some(role))
            .and_then(|m| m.get("content").and_then(Value::as_str))
            .map(str::to_string)
    };
    let req = FakeRequest {
        n,
        model: body
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        last_user: role_content("user").unwrap_or_default(),
        system: role_content("system"),
        schema: body.pointer("/response_format/json_schema/schema").cloned(),
        seed: body.get("seed").and_then(Value::as_u64),
        body,
    };
    let reply = match injected(&s.faults, n) {
        Some(r) => {
            s.injected.fetch_add(1, Ordering::Relaxed);
            r
        }
        None => {
            let scripted = s.script.lock().ok().and_then(|mut q| q.pop_front());
            let mut r = scripted.unwrap_or_else(|| (s.responder)(&req));
            if s.faults.rate_broken_content > 0.0
                && unit(s.faults.seed, n, 2) < s.faults.rate_broken_content
            {
                s.injected.fetch_add(1, Ordering::Relaxed);
                r = FakeReply::Content("{\"grade\": 2, \"reason\": \"the passage".into());
            }
            r
        }
    };
    (req, reply)
}

pub(super) fn render(
    reply: FakeReply,
    req: &FakeRequest,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = Response> + Send + '_>> {
    Box::pin(async move {
        match reply {
            FakeReply::Content(text) => completion(req, &text, "stop"),
            FakeReply::Truncated(text) => completion(req, &text, "length"),
            FakeReply::Refusal(text) => axum::Json(refusal_json(req, &text)).into_response(),
            FakeReply::WithLogprobs(text, logprobs) => {
                let mut v = completion_json(req, &text, "stop");
                v["choices"][0]["logprobs"] = logprobs;
                axum::Json(v).into_response()
            }
            FakeReply::Status {
                status,
                retry_after_s,
                message,
            } => error_response(status, retry_after_s, &message),
            FakeReply::Hang => {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                error_response(504, None, "hung")
            }
            FakeReply::RawBody(b) => {
                (StatusCode::OK, [("content-type", "application/json")], b).into_response()
            }
            FakeReply::Delay(d, inner) => {
                tokio::time::sleep(d).await;
                render(*inner, req).await
            }
        }
    })
}

pub(super) fn approx_tokens(s: &str) -> u64 {
    (s.chars().count() as u64).div_ceil(4)
}

pub(super) fn completion_json(req: &FakeRequest, text: &str, finish: &str) -> Value {
    let prompt: u64 = req
        .body
        .get("messages")
        .and_then(Value::as_array)
        .map(|ms| {
            ms.iter()
                .map(|m| {
                    4 + approx_tokens(m.get("content").and_then(Value::as_str).unwrap_or_default())
                })
                .sum()
        })
        .unwrap_or(0);
    let out = approx_tokens(text);
    json!({
        "id": format!("fake-{}", req.n),
        "object": "chat.completion",
        "created": 0,
        "model": req.model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": out, "total_tokens": prompt + out}
    })
}

/// A chat completion whose message is a refusal (`content: null`, `refusal: text`).
fn refusal_json(req: &FakeRequest, text: &str) -> Value {
    let mut v = completion_json(req, "", "stop");
    if let Some(m) = v.pointer_mut("/choices/0/message") {
        m["content"] = Value::Null;
        m["refusal"] = Value::String(text.to_string());
    }
    v
}

fn completion(req: &FakeRequest, text: &str, finish: &str) -> Response {
    axum::Json(completion_json(req, text, finish)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fault_rates_are_close_and_deterministic() {
        let f = Faults {
            rate_429: 0.1,
            rate_500: 0.1,
            seed: 7,
            ..Default::default()
        };
        let hits = (0..10_000).filter(|n| injected(&f, *n).is_some()).count();
        assert!((1800..2200).contains(&hits), "{hits}");
        let again = (0..10_000).filter(|n| injected(&f, *n).is_some()).count();
        assert_eq!(hits, again);
    }
}
