//! The JSON body of a chat request for one endpoint (sampling, `response_format` per its
//! abilities, a prefilled probability rating, `extra_body`) and the cache key derived from it:
//! the one place that decides what is sent, so the call, its estimate and the Batch API agree.

use serde::Serialize;
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde_json::{Map, Value, json};

use crate::chat::{ChatMessage, ChatRequest, MessageRole, OutputSpec, RatingSpec};
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
    RequestBody::new(ep, req, s).into_value()
}

/// A request's body for one endpoint ([`request_body`]) with the request's messages not copied
/// into it: serialised, it writes the bytes of [`request_body`]'s `Value`, the messages read
/// straight from the request (a dry run or an export serialises a million bodies and sends
/// none); [`RequestBody::into_value`] builds that `Value` where a call needs one.
pub(super) struct RequestBody<'a> {
    /// The body's fields in order, `messages` left `null` where they are the request's.
    fields: Map<String, Value>,
    req: &'a ChatRequest,
    /// Whether `messages` holds the request's messages (then a prefilled answer after them);
    /// not when `extra_body` sets `messages` itself.
    own_messages: bool,
    /// The start of the answer, sent as a last assistant message (a prefilled rating).
    prefilled: Option<String>,
}

impl<'a> RequestBody<'a> {
    pub(super) fn new(
        ep: &crate::config::EndpointConfig,
        req: &'a ChatRequest,
        s: &Sampling,
    ) -> Self {
        let mut obj = Map::new();
        obj.insert("model".into(), json!(ep.model));
        obj.insert("messages".into(), Value::Null);
        obj.insert("stream".into(), json!(false));
        let mut prefilled_msg = None;
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
                prefilled_msg = Some(prefilled.clone());
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
        let mut own_messages = true;
        if let Some(Value::Object(extra)) = &ep.extra_body {
            for (k, v) in extra {
                own_messages &= k != "messages";
                obj.insert(k.clone(), v.clone());
            }
        }
        Self {
            fields: obj,
            req,
            own_messages,
            prefilled: prefilled_msg,
        }
    }

    /// The body as a `Value` (the request's messages copied in, where they go).
    pub(super) fn into_value(self) -> Value {
        let mut fields = self.fields;
        if self.own_messages {
            let mut msgs: Vec<Value> = self
                .req
                .messages
                .iter()
                .map(|m| json!({"role": m.role, "content": m.content}))
                .collect();
            if let Some(p) = self.prefilled {
                msgs.push(json!({"role": "assistant", "content": p}));
            }
            // an existing key keeps its place
            fields.insert("messages".into(), Value::Array(msgs));
        }
        Value::Object(fields)
    }
}

impl Serialize for RequestBody<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // what serialising the `Value` of `into_value` does: its fields as a map, in order
        let mut map = serializer.serialize_map(Some(self.fields.len()))?;
        for (k, v) in &self.fields {
            if self.own_messages && k == "messages" {
                let messages = Messages {
                    list: &self.req.messages,
                    prefilled: self.prefilled.as_deref(),
                };
                map.serialize_entry(k, &messages)?;
            } else {
                map.serialize_entry(k, v)?;
            }
        }
        map.end()
    }
}

/// A body's `messages`: the request's, then a prefilled answer, each `{"role", "content"}`.
struct Messages<'a> {
    list: &'a [ChatMessage],
    prefilled: Option<&'a str>,
}

impl Serialize for Messages<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let n = self.list.len() + usize::from(self.prefilled.is_some());
        let mut seq = serializer.serialize_seq(Some(n))?;
        for m in self.list {
            seq.serialize_element(&Message {
                role: m.role,
                content: &m.content,
            })?;
        }
        if let Some(p) = self.prefilled {
            seq.serialize_element(&Message {
                role: MessageRole::Assistant,
                content: p,
            })?;
        }
        seq.end()
    }
}

/// One message of a body, borrowed.
#[derive(Serialize)]
struct Message<'a> {
    role: MessageRole,
    content: &'a str,
}

/// Content-addressed key: model + body (messages, sampling, response_format, extras) + output
/// spec + sample index.
pub(super) fn cache_key(model: &str, req: &ChatRequest, body: &impl Serialize) -> String {
    // the same compact JSON bytes `body.to_string()` gives, written into a buffer this thread
    // reuses (no 4.5 KB String per call: a million calls are exported at a time) and hashed
    // whole: blake3 hashes a long input several chunks at a time, the many small writes of a
    // serialiser one block at a time
    KEY_BUFFERS.with(|bufs| {
        let mut bufs = bufs.borrow_mut();
        let (b, o) = &mut *bufs;
        b.clear();
        o.clear();
        // serialising a body or an OutputSpec into memory cannot fail
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
pub(super) fn serialise_call(
    model: &str,
    req: &ChatRequest,
    body: &impl Serialize,
) -> SerialisedCall {
    // serialising a body or an OutputSpec into memory cannot fail
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

    /// The body as `request_body` built it before [`RequestBody`]: every message copied into a
    /// `Value`, then the fields in order.
    fn reference_body(
        ep: &crate::config::EndpointConfig,
        req: &ChatRequest,
        s: &Sampling,
    ) -> Value {
        let mut body = json!({
            "model": ep.model,
            "messages": req.messages.iter().map(|m| json!({"role": m.role, "content": m.content})).collect::<Vec<_>>(),
            "stream": false,
        });
        let obj = body.as_object_mut().unwrap();
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
        if let Some((_, prefilled)) = &probability_rating(ep, req) {
            if let Value::Object(f) = crate::logprob::request_fields(RATING_TOP_LOGPROBS) {
                obj.extend(f);
            }
            if !prefilled.is_empty() {
                if let Some(Value::Array(msgs)) = obj.get_mut("messages") {
                    msgs.push(json!({"role": "assistant", "content": prefilled}));
                }
                obj.insert("max_tokens".into(), json!(PREFILLED_RATING_TOKENS));
            }
        }
        match &req.output {
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

    /// Serialised straight from the request, a body has the bytes of the `Value` that copies
    /// every message (and `into_value` is that `Value`), for every kind of endpoint, sampling
    /// and request: schemas with and without the endpoint's support, JSON mode, probability
    /// ratings with and without a prefilled answer, `extra_body` adding fields and replacing
    /// `messages`, the sampling's fields, and text that needs escaping.
    #[test]
    fn a_body_serialised_from_the_request_is_the_bytes_of_its_value() {
        use crate::config::EndpointConfig;
        use crate::logprob::RatingMode;
        let schema = JsonSchema::new(
            "grade",
            json!({"type": "object", "properties": {"why": {"type": "string", "pattern": "."}, "rating": {"type": "integer"}}, "required": ["why", "rating"]}),
        );
        let msgs = vec![
            ChatMessage::system("Rate it. \"quoted\"\n\ttab \u{1}"),
            ChatMessage::user("caf\u{e9} \u{1f600} </script> \\ back"),
            ChatMessage::assistant("earlier answer"),
        ];
        let requests = [
            ChatRequest::new(msgs.clone()),
            ChatRequest::new(Vec::new()),
            ChatRequest::new(msgs.clone()).with_schema(schema.clone()),
            ChatRequest::new(msgs.clone()).json().with_sample(2),
            ChatRequest::new(msgs.clone())
                .with_schema(schema.clone())
                .with_rating("rating", 1, 5)
                .with_sample(1),
        ];
        let samplings = [
            Sampling::default(),
            Sampling {
                temperature: Some(0.7),
                top_p: Some(0.95),
                seed: Some(u64::MAX),
                max_tokens: Some(300),
                n: 3,
            },
            Sampling {
                temperature: None,
                top_p: None,
                seed: None,
                max_tokens: None,
                n: 1,
            },
        ];
        let mut endpoints = Vec::new();
        for (schema_ok, json_mode, mode, continues, extra) in [
            (true, false, RatingMode::Generated, false, None),
            (false, true, RatingMode::Generated, false, None),
            (false, false, RatingMode::Generated, false, None),
            (true, false, RatingMode::Probability, false, None),
            (true, true, RatingMode::Probability, true, None),
            (
                true,
                false,
                RatingMode::Generated,
                false,
                Some(
                    json!({"top_k": 20, "stream": true, "model": "other", "chat_template_kwargs": {"enable_thinking": false}}),
                ),
            ),
            (
                true,
                false,
                RatingMode::Probability,
                true,
                Some(json!({"messages": [{"role": "user", "content": "fixed"}], "z": null})),
            ),
        ] {
            let mut e = EndpointConfig::new("e", "http://127.0.0.1:9/v1", "m \"x\"");
            e.supports_json_schema = schema_ok;
            e.json_mode = json_mode;
            e.rating_mode = mode;
            e.continues_assistant = continues;
            e.extra_body = extra;
            e.max_string_length = Some(200);
            e.verdict_first = true;
            endpoints.push(e);
        }
        let mut compared = 0;
        for ep in &endpoints {
            for req in &requests {
                for s in &samplings {
                    let reference = reference_body(ep, req, s);
                    let body = RequestBody::new(ep, req, s);
                    assert_eq!(
                        serde_json::to_vec(&body).unwrap(),
                        serde_json::to_vec(&reference).unwrap(),
                        "{ep:?} {req:?} {s:?}"
                    );
                    assert_eq!(cache_key("m", req, &body), cache_key("m", req, &reference));
                    assert_eq!(
                        serialise_call("m", req, &body),
                        serialise_call("m", req, &reference)
                    );
                    assert_eq!(body.into_value(), reference);
                    assert_eq!(request_body(ep, req, s), reference);
                    compared += 1;
                }
            }
        }
        assert_eq!(compared, 7 * 5 * 3);
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
