//! Scripting the fake OpenAI-compatible server of tests and benchmarks: what it sees of a chat
//! request ([`FakeRequest`]), how it answers ([`FakeReply`]), its default answer (a minimal
//! instance of the requested schema) and its deterministic embeddings, and the server itself
//! (`FakeServer`, axum on 127.0.0.1). All of it is behind the cargo feature `fake`, which only
//! tests and benchmarks turn on (as do the scripted agents, `mtr_pipeline::fake_agents`, under
//! mtr-pipeline's own `fake`), so the product does not ship it.
//!
//! ```no_run
//! # async fn demo() {
//! use mtr_llm::fake::{FakeServer, FakeReply};
//! let fake = FakeServer::builder()
//!     .respond(|req| FakeReply::json(serde_json::json!({"grade": if req.last_user.contains("cat") { 2 } else { 0 }})))
//!     .latency_ms(5)
//!     .start()
//!     .await
//!     .unwrap();
//! let endpoint = fake.endpoint("fake", "fake-model"); // an EndpointConfig pointing at it
//! # }
//! ```

use std::time::Duration;

use serde_json::{Value, json};

#[cfg(feature = "fake")]
pub use crate::fake_server::{BatchStage, FakeBuilder, FakeRerank, FakeServer, Faults};

/// What the fake sees of one chat request.
#[derive(Debug, Clone)]
pub struct FakeRequest {
    /// 0-based number of this chat request (all attempts counted).
    pub n: u64,
    /// The `model` the request named.
    pub model: String,
    /// The whole request body.
    pub body: Value,
    /// Content of the last user message.
    pub last_user: String,
    /// The system message, if any.
    pub system: Option<String>,
    /// `response_format.json_schema.schema`, if sent.
    pub schema: Option<Value>,
    /// The sampling seed sent, if any.
    pub seed: Option<u64>,
}

/// How the fake answers one request.
#[derive(Debug, Clone)]
pub enum FakeReply {
    /// The assistant message content (usage is computed from lengths).
    Content(String),
    /// An HTTP error status with an OpenAI-style error body.
    Status {
        /// The HTTP status.
        status: u16,
        /// Sent as `Retry-After` seconds when set.
        retry_after_s: Option<f64>,
        /// The error body's message.
        message: String,
    },
    /// Never answer (the client's timeout fires).
    Hang,
    /// A 200 response whose body is this raw text (e.g. cut JSON).
    RawBody(String),
    /// Wait, then answer with the inner reply.
    Delay(Duration, Box<FakeReply>),
    /// Content with `finish_reason: length`.
    Truncated(String),
    /// A refusal: `message.refusal` holds this text and `content` is null (OpenAI's shape).
    Refusal(String),
    /// Content with `choices[0].logprobs` set to this value (OpenAI's shape:
    /// `{"content": [{"token", "logprob", "top_logprobs": [...]}, ...]}`).
    WithLogprobs(String, Value),
}

impl FakeReply {
    /// Content that is `v` as JSON text.
    pub fn json(v: Value) -> Self {
        FakeReply::Content(v.to_string())
    }
    /// A 429 with `Retry-After: retry_after_s`.
    pub fn rate_limited(retry_after_s: f64) -> Self {
        FakeReply::Status {
            status: 429,
            retry_after_s: Some(retry_after_s),
            message: "rate limited (fake)".into(),
        }
    }
    /// A 500.
    pub fn server_error() -> Self {
        FakeReply::Status {
            status: 500,
            retry_after_s: None,
            message: "internal error (fake)".into(),
        }
    }
}

/// The default responder: a minimal valid instance of the requested schema, else `"ok"`.
pub fn default_reply(req: &FakeRequest) -> FakeReply {
    match &req.schema {
        Some(s) => FakeReply::json(schema_instance(s, s)),
        None => FakeReply::Content("ok".into()),
    }
}

/// A minimal instance of a JSON schema (first enum value, minimum, required fields only).
pub fn schema_instance(root: &Value, schema: &Value) -> Value {
    let mut s = schema;
    if let Some(r) = s.get("$ref").and_then(Value::as_str)
        && let Some(path) = r.strip_prefix("#/")
    {
        let mut cur = root;
        for part in path.split('/') {
            cur = cur.get(part).unwrap_or(&Value::Null);
        }
        s = cur;
    }
    if let Some(e) = s
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
    {
        return e.clone();
    }
    if let Some(c) = s.get("const") {
        return c.clone();
    }
    if let Some(alts) = s
        .get("anyOf")
        .or_else(|| s.get("oneOf"))
        .and_then(Value::as_array)
        && let Some(a) = alts.first()
    {
        return schema_instance(root, a);
    }
    let ty = match s.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        _ => {
            if s.get("properties").is_some() {
                "object"
            } else {
                "string"
            }
        }
    };
    match ty {
        "object" => {
            let mut m = serde_json::Map::new();
            let props = s.get("properties").and_then(Value::as_object);
            for r in s
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                let sub = props.and_then(|p| p.get(r)).unwrap_or(&Value::Null);
                m.insert(r.to_string(), schema_instance(root, sub));
            }
            Value::Object(m)
        }
        "array" => {
            let n = s.get("minItems").and_then(Value::as_u64).unwrap_or(0);
            let item = s.get("items").cloned().unwrap_or(Value::Null);
            Value::Array((0..n).map(|_| schema_instance(root, &item)).collect())
        }
        "integer" => json!(s.get("minimum").and_then(Value::as_i64).unwrap_or(0)),
        "number" => json!(s.get("minimum").and_then(Value::as_f64).unwrap_or(0.0)),
        "boolean" => json!(false),
        "null" => Value::Null,
        _ => {
            let n = s.get("minLength").and_then(Value::as_u64).unwrap_or(1) as usize;
            Value::String("x".repeat(n.max(1)))
        }
    }
}

fn fnv(bytes: &[u8], salt: u64) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ salt;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The fake's deterministic embedding: e5 prefixes (`query: `, `passage: `) dropped, lower
/// case, words (CJK characters count as words) weighted 1 and their character trigrams 0.5,
/// hashed with a sign into `dims` buckets, L2-normalised. Texts sharing words are close.
pub fn fake_embedding(text: &str, dims: usize) -> Vec<f32> {
    let dims = dims.max(1);
    let mut v = vec![0f32; dims];
    let t = text.trim_start();
    let t = t
        .strip_prefix("query: ")
        .or_else(|| t.strip_prefix("passage: "))
        .unwrap_or(t)
        .to_lowercase();
    let mut add = |feature: &[u8], w: f32| {
        let h = fnv(feature, 0x006d_7472);
        let idx = (h % dims as u64) as usize;
        let sign = if (h >> 63) == 0 { 1.0 } else { -1.0 };
        v[idx] += sign * w;
    };
    let mut words: Vec<String> = Vec::new();
    let mut cur = String::new();
    for c in t.chars() {
        let cjk = ('\u{4e00}'..='\u{9fff}').contains(&c) || ('\u{3400}'..='\u{4dbf}').contains(&c);
        if cjk {
            if !cur.is_empty() {
                words.push(std::mem::take(&mut cur));
            }
            words.push(c.to_string());
        } else if c.is_alphanumeric() {
            cur.push(c);
        } else if !cur.is_empty() {
            words.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    for w in &words {
        add(w.as_bytes(), 1.0);
        let padded: Vec<char> = format!("#{w}#").chars().collect();
        if padded.len() > 3 {
            for g in padded.windows(3) {
                add(g.iter().collect::<String>().as_bytes(), 0.5);
            }
        }
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cos(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn embeddings_are_deterministic_and_similarity_aware() {
        let a = fake_embedding("query: How do cats sleep?", 256);
        let b = fake_embedding("passage: Cats sleep about 15 hours a day.", 256);
        let c = fake_embedding("passage: The stock market fell sharply on Monday.", 256);
        assert_eq!(a, fake_embedding("query: How do cats sleep?", 256));
        assert!((cos(&a, &a) - 1.0).abs() < 1e-5);
        assert!(
            cos(&a, &b) > cos(&a, &c) + 0.2,
            "{} vs {}",
            cos(&a, &b),
            cos(&a, &c)
        );
        let zh1 = fake_embedding("猫每天睡多久", 256);
        let zh2 = fake_embedding("猫一天睡十五个小时", 256);
        let zh3 = fake_embedding("股市周一大跌", 256);
        assert!(cos(&zh1, &zh2) > cos(&zh1, &zh3));
    }

    #[test]
    fn schema_instances_validate() {
        let s = json!({"type": "object", "required": ["grade", "why", "tags"], "additionalProperties": false,
            "properties": {"grade": {"type": "integer", "minimum": 0, "maximum": 3}, "why": {"type": "string"},
            "tags": {"type": "array", "minItems": 1, "items": {"enum": ["a", "b"]}}}});
        let v = schema_instance(&s, &s);
        crate::extract::validate(&s, &v).unwrap();
    }
}
