//! The JSON body of a chat request for one endpoint (sampling, `response_format` per its
//! abilities, a prefilled probability rating, `extra_body`) and the cache key derived from it:
//! the one place that decides what is sent, so the call, its estimate and the Batch API agree.

use serde_json::{Value, json};

use crate::chat::{ChatRequest, OutputSpec, RatingSpec};
use crate::config::Sampling;

/// Alternatives asked for per generated token when a rating is read from probabilities
/// (enough to hold every grade of a 1-5 scale next to the non-grade tokens; OpenAI allows 20).
const RATING_TOP_LOGPROBS: u32 = 10;

/// How a request's rating is read from token probabilities on this endpoint, if it is: the
/// scale, and the start of the answer sent prefilled (`""`: the whole answer is generated).
pub(super) fn probability_rating<'a>(
    ep: &crate::config::EndpointConfig,
    req: &'a ChatRequest,
) -> Option<(&'a RatingSpec, String)> {
    let spec = req
        .rating
        .as_ref()
        .filter(|_| ep.rating_mode == crate::logprob::RatingMode::Probability)?;
    let prefilled = if ep.continues_assistant {
        crate::logprob::prefill(&spec.key)
    } else {
        String::new()
    };
    Some((spec, prefilled))
}

/// Completion tokens of a prefilled probability rating: the grade.
pub(super) const PREFILLED_RATING_TOKENS: u32 = 1;

/// True when `req`'s rating is read on `ep` by continuing a prefilled answer (one token).
pub(super) fn continues_prefilled_rating(
    ep: &crate::config::EndpointConfig,
    req: &ChatRequest,
) -> bool {
    probability_rating(ep, req).is_some_and(|(_, prefilled)| !prefilled.is_empty())
}

/// The JSON body of a chat request for this endpoint (`response_format` per its abilities).
pub(super) fn request_body(
    ep: &crate::config::EndpointConfig,
    req: &ChatRequest,
    s: &Sampling,
) -> Value {
    let mut body = json!({
        "model": ep.model,
        "messages": req.messages.iter().map(|m| json!({"role": m.role, "content": m.content})).collect::<Vec<_>>(),
        "stream": false,
    });
    let obj = match body.as_object_mut() {
        Some(o) => o,
        None => return body,
    };
    if let Some(t) = s.temperature {
        obj.insert("temperature".into(), json!(t));
    }
    if let Some(p) = s.top_p {
        obj.insert("top_p".into(), json!(p));
    }
    if let Some(seed) = s.seed {
        obj.insert(
            "seed".into(),
            json!(seed.wrapping_add(u64::from(req.sample))),
        );
    }
    if let Some(m) = s.max_tokens {
        obj.insert("max_tokens".into(), json!(m));
    }
    let probability = probability_rating(ep, req);
    if let Some((_, prefilled)) = &probability {
        if let Value::Object(f) = crate::logprob::request_fields(RATING_TOP_LOGPROBS) {
            obj.extend(f);
        }
        if !prefilled.is_empty() {
            // the answer so far is `{"rating": `; its next token is the grade
            if let Some(Value::Array(msgs)) = obj.get_mut("messages") {
                msgs.push(json!({"role": "assistant", "content": prefilled}));
            }
            obj.insert("max_tokens".into(), json!(PREFILLED_RATING_TOKENS));
        }
    }
    match &req.output {
        // a prefilled answer is read token by token: no grammar around it
        _ if continues_prefilled_rating(ep, req) => {}
        OutputSpec::Schema(schema) if ep.supports_json_schema => {
            obj.insert(
                "response_format".into(),
                json!({"type": "json_schema", "json_schema": {"name": schema.name, "schema": crate::schema_caps::adapt(&schema.schema, ep.max_string_length, ep.verdict_first, ep.string_patterns), "strict": true}}),
            );
        }
        OutputSpec::Schema(_) | OutputSpec::Json if ep.json_mode => {
            obj.insert("response_format".into(), json!({"type": "json_object"}));
        }
        _ => {}
    }
    if let Some(Value::Object(extra)) = &ep.extra_body {
        for (k, v) in extra {
            obj.insert(k.clone(), v.clone());
        }
    }
    body
}

/// Content-addressed key: model + body (messages, sampling, response_format, extras) + output
/// spec + sample index.
pub(super) fn cache_key(model: &str, req: &ChatRequest, body: &Value) -> String {
    // the same compact JSON bytes `body.to_string()` gives, written into a buffer this thread
    // reuses (no 4.5 KB String per call: a million calls are exported at a time) and hashed
    // whole: blake3 hashes a long input several chunks at a time, the many small writes of a
    // serialiser one block at a time
    KEY_BUFFERS.with(|bufs| {
        let mut bufs = bufs.borrow_mut();
        let (b, o) = &mut *bufs;
        b.clear();
        o.clear();
        // serialising a Value or an OutputSpec into memory cannot fail
        let _ = serde_json::to_writer(&mut *b, body);
        let _ = serde_json::to_writer(&mut *o, &req.output);
        let key = key_of(
            model,
            |h| {
                h.update(b);
            },
            |h| {
                h.update(o);
            },
            req.sample,
        );
        if b.capacity() > KEY_BUFFER_KEPT {
            *b = Vec::new();
        }
        if o.capacity() > KEY_BUFFER_KEPT {
            *o = Vec::new();
        }
        key
    })
}

/// Most bytes a thread keeps in each of its [`cache_key`] buffers between calls.
const KEY_BUFFER_KEPT: usize = 1 << 20;

thread_local! {
    /// The body's and the output spec's bytes of the key being computed on this thread.
    static KEY_BUFFERS: std::cell::RefCell<(Vec<u8>, Vec<u8>)> =
        const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

/// The key of [`cache_key`] from the parts' bytes, each written into the hash by its closure.
fn key_of(
    model: &str,
    body: impl FnOnce(&mut blake3::Hasher),
    output: impl FnOnce(&mut blake3::Hasher),
    sample: u32,
) -> String {
    let mut h = blake3::Hasher::new();
    h.update(b"mtr-llm chat v1\0");
    h.update(model.as_bytes());
    h.update(b"\0");
    body(&mut h);
    h.update(b"\0");
    output(&mut h);
    h.update(format!("\0{sample}").as_bytes());
    h.finalize().to_hex().to_string()
}

/// A call as a Batch file needs it: its body and output spec as compact JSON, and its cache
/// key computed from those very bytes (each serialised once, not once for the key and again
/// for the file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SerialisedCall {
    pub key: String,
    /// `body.to_string()`'s bytes.
    pub body: Vec<u8>,
    /// `serde_json::to_string(&req.output)`.
    pub output: String,
}

/// [`SerialisedCall`] of `req`'s `body` on `model`: the key equals [`cache_key`]'s.
pub(super) fn serialise_call(model: &str, req: &ChatRequest, body: &Value) -> SerialisedCall {
    // serialising a Value or an OutputSpec into memory cannot fail
    let body = serde_json::to_vec(body).unwrap_or_default();
    let output = serde_json::to_string(&req.output).unwrap_or_default();
    let key = key_of(
        model,
        |h| {
            h.update(&body);
        },
        |h| {
            h.update(output.as_bytes());
        },
        req.sample,
    );
    SerialisedCall { key, body, output }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::chat::{ChatMessage, JsonSchema};

    #[test]
    fn a_serialised_call_has_the_cache_key_and_the_bytes_of_its_parts() {
        let req = ChatRequest::new(vec![ChatMessage::user("a \"q\"\n\u{e9}")])
            .with_schema(JsonSchema::new(
                "grade",
                json!({"type": "object", "properties": {"grade": {"type": "integer"}}}),
            ))
            .with_sample(3);
        let body = json!({"model": "m", "messages": [{"role": "user", "content": "x"}], "z": 1.5, "a": null});
        let s = serialise_call("m", &req, &body);
        assert_eq!(s.key, cache_key("m", &req, &body));
        assert_eq!(s.body, body.to_string().into_bytes());
        assert_eq!(s.output, serde_json::to_string(&req.output).unwrap());
        // every part is in the key
        assert_ne!(s.key, cache_key("m2", &req, &body));
        assert_ne!(s.key, cache_key("m", &req.clone().with_sample(4), &body));
        assert_ne!(
            s.key,
            cache_key("m", &ChatRequest::new(req.messages.clone()), &body)
        );
    }

    /// The key of a fixed request does not change between versions (cached answers stay hits).
    #[test]
    fn the_cache_key_is_stable() {
        let req = ChatRequest::new(vec![ChatMessage::user("hi")]);
        let body = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
        let mut h = blake3::Hasher::new();
        h.update(b"mtr-llm chat v1\0m\0");
        h.update(body.to_string().as_bytes());
        h.update(b"\0");
        h.update(serde_json::to_string(&req.output).unwrap().as_bytes());
        h.update(b"\0");
        h.update(b"0");
        assert_eq!(
            cache_key("m", &req, &body),
            h.finalize().to_hex().to_string()
        );
    }
}
