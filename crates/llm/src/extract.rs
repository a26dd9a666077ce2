//! The tolerant extractor: recovers a JSON value from what a model actually wrote (the whole
//! text, a fenced block, JSON followed or preceded by prose, a bare number, or the last
//! `Rating: N` line), then checks it against the requested schema. It never invents a value:
//! when nothing valid is found it returns the reason, which is fed back to the model on retry
//! and finally recorded as [`ParseStatus::Failed`].
//!
//! The schema check is the `jsonschema` crate's, with errors worded for the model
//! ([`crate::schema_check`]).

use serde_json::{Map, Value};

use crate::chat::{OutputSpec, ParseStatus};

/// Parses `text` for `spec`: `(value, status)`; the value is `None` exactly when the status
/// is `Failed` or the spec is text.
pub(crate) fn parse_output(spec: &OutputSpec, text: &str) -> (Option<Value>, ParseStatus) {
    match spec {
        OutputSpec::Text => {
            if text.trim().is_empty() {
                (
                    None,
                    ParseStatus::Failed {
                        error: "empty answer".into(),
                    },
                )
            } else {
                (None, ParseStatus::Ok)
            }
        }
        OutputSpec::Json => match extract(text, None) {
            Ok((v, None)) => (Some(v), ParseStatus::Ok),
            Ok((v, Some(m))) => (Some(v), ParseStatus::Extracted { method: m.into() }),
            Err(e) => (None, ParseStatus::Failed { error: e }),
        },
        OutputSpec::Schema(s) => match extract(text, Some(&s.schema)) {
            Ok((v, None)) => (Some(v), ParseStatus::Ok),
            Ok((v, Some(m))) => (Some(v), ParseStatus::Extracted { method: m.into() }),
            Err(e) => (None, ParseStatus::Failed { error: e }),
        },
    }
}

/// Finds a JSON value in `text` that validates against `schema` (if given). Returns the value
/// and the recovery method (`None` when the whole text parsed), or why nothing was found.
pub(crate) fn extract(
    text: &str,
    schema: Option<&Value>,
) -> Result<(Value, Option<&'static str>), String> {
    let t = text.trim().trim_start_matches('\u{feff}');
    if t.is_empty() {
        return Err("empty answer".into());
    }
    let check = |v: &Value| match schema {
        Some(s) => validate(s, v),
        None => Ok(()),
    };
    let mut first_error: Option<String> = None;
    let mut note = |e: String| {
        if first_error.is_none() {
            first_error = Some(e);
        }
    };
    match serde_json::from_str::<Value>(t) {
        Ok(v) => match check(&v) {
            Ok(()) => return Ok((v, None)),
            Err(e) => {
                if let Some(w) = schema.and_then(|s| wrap_scalar(s, &v)) {
                    return Ok((w, Some("bare_value")));
                }
                note(format!("the JSON does not match the schema: {e}"));
            }
        },
        Err(e) => note(format!("not valid JSON: {e}")),
    }
    for block in fenced_blocks(t).into_iter().rev() {
        if let Ok(v) = serde_json::from_str::<Value>(block.trim()) {
            match check(&v) {
                Ok(()) => return Ok((v, Some("fenced_block"))),
                Err(e) => note(format!("the fenced JSON does not match the schema: {e}")),
            }
        }
    }
    for (i, c) in t.char_indices() {
        if c != '{' && c != '[' {
            continue;
        }
        let mut stream = serde_json::Deserializer::from_str(&t[i..]).into_iter::<Value>();
        if let Some(Ok(v)) = stream.next() {
            match check(&v) {
                Ok(()) => return Ok((v, Some("embedded_json"))),
                Err(e) => note(format!("the embedded JSON does not match the schema: {e}")),
            }
        }
    }
    // A cut or broken JSON object is a failure, never mined for a number.
    let looks_like_json = t.starts_with('{') || t.starts_with('[');
    if !looks_like_json && let Some(n) = last_rating(t) {
        let v = match schema {
            Some(s) => wrap_scalar(s, &n),
            None => Some(Value::Object(Map::from_iter([("rating".to_string(), n)]))),
        };
        if let Some(v) = v
            && check(&v).is_ok()
        {
            return Ok((v, Some("rating_line")));
        }
    }
    Err(first_error.unwrap_or_else(|| "no JSON found in the answer".into()))
}

/// A scalar answer (`2`, `"yes"`) wrapped into the schema's only required property when that
/// makes a valid object.
fn wrap_scalar(schema: &Value, v: &Value) -> Option<Value> {
    if v.is_object() || v.is_array() {
        return None;
    }
    let required = schema.get("required")?.as_array()?;
    if required.len() != 1 {
        return None;
    }
    let key = required[0].as_str()?;
    let obj = Value::Object(Map::from_iter([(key.to_string(), v.clone())]));
    validate(schema, &obj).is_ok().then_some(obj)
}

/// The contents of ``` fenced blocks, in order.
fn fenced_blocks(t: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = t;
    while let Some(start) = rest.find("```") {
        let after = &rest[start + 3..];
        let body_start = after.find('\n').map(|i| i + 1).unwrap_or(0);
        let body = &after[body_start..];
        match body.find("```") {
            Some(end) => {
                out.push(&body[..end]);
                rest = &body[end + 3..];
            }
            None => {
                out.push(body);
                break;
            }
        }
    }
    out
}

/// The number after the last `rating`/`score`/`grade` label (`Rating: 3`, `score = 2.5`,
/// `**Grade**: 1`).
fn last_rating(t: &str) -> Option<Value> {
    let lower = t.to_ascii_lowercase();
    let mut best: Option<(usize, Value)> = None;
    for label in ["rating", "score", "grade"] {
        let mut from = 0;
        while let Some(i) = lower[from..].find(label) {
            let at = from + i;
            from = at + label.len();
            if at > 0 && t.as_bytes()[at - 1] == b'"' {
                continue; // a JSON key, not a label
            }
            let rest = &t[from..];
            let rest = rest.trim_start_matches(|c: char| c == '*' || c.is_whitespace());
            let Some(rest) = rest.strip_prefix([':', '=']) else {
                continue;
            };
            let rest = rest.trim_start_matches(|c: char| c == '*' || c.is_whitespace());
            let num: String = rest
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == '-')
                .collect();
            let num = num.trim_end_matches('.');
            let v = if let Ok(i) = num.parse::<i64>() {
                Value::from(i)
            } else if let Ok(f) = num.parse::<f64>() {
                Value::from(f)
            } else {
                continue;
            };
            if best.as_ref().is_none_or(|(p, _)| at > *p) {
                best = Some((at, v));
            }
        }
    }
    best.map(|(_, v)| v)
}

/// Checks `value` against `schema` (the `jsonschema` crate, full JSON Schema: `pattern`,
/// `allOf`, `$ref`s and the rest); the error names the JSON path (see [`crate::schema_check`]).
pub(crate) fn validate(schema: &Value, value: &Value) -> Result<(), String> {
    crate::schema_check::validate(schema, value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::JsonSchema;
    use serde_json::json;

    fn grade_schema() -> Value {
        json!({"type": "object", "properties": {"grade": {"type": "integer", "minimum": 0, "maximum": 3}, "reason": {"type": "string"}}, "required": ["grade"], "additionalProperties": false})
    }

    #[test]
    fn whole_fenced_embedded_rating() {
        let s = grade_schema();
        assert_eq!(
            extract(r#"{"grade": 2}"#, Some(&s)).unwrap(),
            (json!({"grade": 2}), None)
        );
        let fenced = "Sure!\n```json\n{\"grade\": 1, \"reason\": \"ok\"}\n```\nHope this helps.";
        assert_eq!(extract(fenced, Some(&s)).unwrap().1, Some("fenced_block"));
        let trailing = "{\"grade\": 3} because the passage answers it {fully}.";
        assert_eq!(
            extract(trailing, Some(&s)).unwrap(),
            (json!({"grade": 3}), Some("embedded_json"))
        );
        let rating = "The passage is partly relevant.\nRating: 1\n...on reflection, Rating: 2";
        assert_eq!(
            extract(rating, Some(&s)).unwrap(),
            (json!({"grade": 2}), Some("rating_line"))
        );
        assert_eq!(
            extract("2", Some(&s)).unwrap(),
            (json!({"grade": 2}), Some("bare_value"))
        );
        assert_eq!(
            extract("**Score**: 4", None).unwrap(),
            (json!({"rating": 4}), Some("rating_line"))
        );
    }

    #[test]
    fn failures_are_reported_not_defaulted() {
        let s = grade_schema();
        let e = extract(r#"{"grade": 7}"#, Some(&s)).unwrap_err();
        assert!(e.contains("above the maximum"), "{e}");
        let e = extract(r#"{"grade": 2, "reason": "x", "extra": 1}"#, Some(&s)).unwrap_err();
        assert!(e.contains("unexpected field `extra`"), "{e}");
        let e = extract(r#"{"grade": 2, "reas"#, Some(&s)).unwrap_err();
        assert!(e.contains("not valid JSON"), "{e}");
        assert!(extract("I cannot judge this.", Some(&s)).is_err());
        let (v, st) = parse_output(&OutputSpec::Schema(JsonSchema::new("g", s)), "no idea");
        assert!(v.is_none());
        assert!(matches!(st, ParseStatus::Failed { .. }));
    }

    #[test]
    fn refs_and_arrays() {
        let s = json!({"type": "object", "required": ["items"], "properties": {"items": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/It"}}}, "$defs": {"It": {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}, "kind": {"enum": ["a", "b"]}}}}});
        assert!(validate(&s, &json!({"items": [{"id": "x", "kind": "a"}]})).is_ok());
        let e = validate(&s, &json!({"items": [{"id": "x", "kind": "c"}]})).unwrap_err();
        assert!(e.starts_with("$.items[0].kind"), "{e}");
        assert!(validate(&s, &json!({"items": []})).is_err());
    }
}
