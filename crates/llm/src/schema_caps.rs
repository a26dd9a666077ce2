//! What an endpoint's structured-output decoder can enforce, applied to a request's JSON
//! schema before it is sent. Small local models ramble: asked for `{"justification": ...,
//! "rating": N}` they write justifications until `max_tokens` cuts the JSON, and the judgement
//! fails. llama.cpp turns the schema into a grammar and honours `maxLength`, so a length limit
//! on every string makes such a failure impossible; OpenAI's strict mode rejects `maxLength`,
//! so the limit is a per-endpoint capability (`max_string_length`). `verdict_first` moves
//! the verdict (every property that is not a string, such as `rating`, `score`, `choice`)
//! before the free-text ones, so the verdict is written before any reasoning and survives a
//! cut; the grammar follows the order of `properties`. Both leave the schema's meaning
//! unchanged: any answer to the adapted schema is an answer to the original.
//!
//! A string's `pattern` (a question must end with a question mark) is sent only to an
//! endpoint that enforces it (`string_patterns`: llama.cpp grammars do); elsewhere it is
//! removed, since some endpoints reject the keyword, and the caller checks the answer itself.

use serde_json::{Map, Value};

/// Adapts `schema` to an endpoint: `max_string_length` adds `maxLength` to every string
/// schema without a smaller one (recursively, array items included); `verdict_first` puts the
/// non-string properties of every object first (order among them kept); without
/// `string_patterns` every `pattern` is removed.
pub(crate) fn adapt(
    schema: &Value,
    max_string_length: Option<u32>,
    verdict_first: bool,
    string_patterns: bool,
) -> Value {
    let mut s = schema.clone();
    if max_string_length.is_some() || verdict_first || !string_patterns {
        walk(&mut s, max_string_length, verdict_first, string_patterns);
    }
    s
}

fn is_string_schema(v: &Value) -> bool {
    v.get("type").and_then(Value::as_str) == Some("string") && v.get("enum").is_none()
}

fn walk(v: &mut Value, max_len: Option<u32>, verdict_first: bool, patterns: bool) {
    let Value::Object(obj) = v else {
        if let Value::Array(items) = v {
            for i in items {
                walk(i, max_len, verdict_first, patterns);
            }
        }
        return;
    };
    if !patterns && obj.get("type").and_then(Value::as_str) == Some("string") {
        obj.remove("pattern");
    }
    if let Some(m) = max_len
        && obj.get("type").and_then(Value::as_str) == Some("string")
        && obj.get("enum").is_none()
        && obj.get("const").is_none()
    {
        let cur = obj.get("maxLength").and_then(Value::as_u64);
        if cur.is_none_or(|c| c > u64::from(m)) {
            obj.insert("maxLength".into(), Value::from(m));
        }
    }
    if verdict_first && let Some(Value::Object(props)) = obj.get_mut("properties") {
        let taken = std::mem::take(props);
        let (text, verdict): (Vec<_>, Vec<_>) =
            taken.into_iter().partition(|(_, p)| is_string_schema(p));
        let mut reordered = Map::new();
        reordered.extend(verdict);
        reordered.extend(text);
        *props = reordered;
        if let Some(Value::Array(req)) = obj.get("required").cloned() {
            let order: Vec<&String> = obj
                .get("properties")
                .and_then(Value::as_object)
                .map(|p| p.keys().collect())
                .unwrap_or_default();
            let mut req: Vec<Value> = req;
            req.sort_by_key(|r| {
                r.as_str()
                    .and_then(|n| order.iter().position(|k| k.as_str() == n))
                    .unwrap_or(usize::MAX)
            });
            obj.insert("required".into(), Value::Array(req));
        }
    }
    for (_, child) in obj.iter_mut() {
        walk(child, max_len, verdict_first, patterns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn judge_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "justification": {"type": "string"},
                "quotes": {"type": "array", "items": {"type": "string", "maxLength": 50}},
                "label": {"type": "string", "enum": ["yes", "no"]},
                "rating": {"type": "integer", "minimum": 1, "maximum": 5}
            },
            "required": ["justification", "quotes", "label", "rating"],
            "additionalProperties": false
        })
    }

    #[test]
    fn limits_every_free_string_and_keeps_tighter_limits() {
        let s = adapt(&judge_schema(), Some(120), false, true);
        assert_eq!(s["properties"]["justification"]["maxLength"], 120);
        assert_eq!(s["properties"]["quotes"]["items"]["maxLength"], 50);
        assert!(s["properties"]["label"].get("maxLength").is_none());
        assert!(s["properties"]["rating"].get("maxLength").is_none());
        let keys: Vec<_> = s["properties"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["justification", "quotes", "label", "rating"]);
    }

    #[test]
    fn verdict_first_moves_the_verdict_before_the_reasoning() {
        let s = adapt(&judge_schema(), None, true, true);
        let keys: Vec<_> = s["properties"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["quotes", "label", "rating", "justification"]);
        assert_eq!(
            s["required"],
            json!(["quotes", "label", "rating", "justification"])
        );
        assert!(s["properties"]["justification"].get("maxLength").is_none());
    }

    #[test]
    fn without_capabilities_the_schema_is_unchanged() {
        assert_eq!(adapt(&judge_schema(), None, false, true), judge_schema());
    }

    #[test]
    fn a_pattern_goes_only_to_an_endpoint_that_enforces_it() {
        let schema = json!({
            "type": "object",
            "properties": {
                "question": {"type": "string", "pattern": "^[^\\n]{3,150}[?？]$"},
                "passage": {"type": "integer"}
            }
        });
        let kept = adapt(&schema, None, false, true);
        assert_eq!(kept, schema);
        let removed = adapt(&schema, Some(100), false, false);
        assert!(removed["properties"]["question"].get("pattern").is_none());
        assert_eq!(removed["properties"]["question"]["maxLength"], 100);
        assert_eq!(
            removed["properties"]["passage"],
            schema["properties"]["passage"]
        );
    }
}
