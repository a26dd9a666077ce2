//! Checks a judge's answer (after the tolerant extraction) against its JSON schema with the
//! `jsonschema` crate, which knows all of JSON Schema (`pattern`, `allOf`, `not`, `$ref`s...)
//! where the hand-written subset it replaced knew a few keywords and skipped the rest. Its
//! first error is worded as before (`$.items[0].kind: "c" is not one of ["a","b"]`): the
//! message is fed back to the model on a retry and recorded with a failed judgement.
//! Compiled validators are kept per schema text, since one schema checks many answers.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::paths::LocationSegment;
use jsonschema::{ValidationError, Validator};
use serde_json::Value;

/// Compiled validators kept at most (a run uses a handful of schemas).
const VALIDATORS_KEPT: usize = 256;

static VALIDATORS: Mutex<Option<HashMap<String, Arc<Validator>>>> = Mutex::new(None);

/// The validator of `schema`, compiled once per schema text.
fn validator(schema: &Value) -> Result<Arc<Validator>, String> {
    let key = schema.to_string();
    if let Ok(cache) = VALIDATORS.lock()
        && let Some(v) = cache.as_ref().and_then(|c| c.get(&key))
    {
        return Ok(v.clone());
    }
    let compiled =
        Arc::new(jsonschema::validator_for(schema).map_err(|e| format!("invalid schema: {e}"))?);
    if let Ok(mut cache) = VALIDATORS.lock() {
        let map = cache.get_or_insert_with(HashMap::new);
        if map.len() >= VALIDATORS_KEPT {
            map.clear();
        }
        map.insert(key, compiled.clone());
    }
    Ok(compiled)
}

/// Checks `value` against `schema`; the error is the first violation, naming its JSON path.
pub(crate) fn validate(schema: &Value, value: &Value) -> Result<(), String> {
    let validator = validator(schema)?;
    match validator.iter_errors(value).next() {
        None => Ok(()),
        Some(e) => Err(describe(&e)),
    }
}

/// `$`, `$.a.b`, `$.items[0]`: the path of the error's instance.
fn path_of(e: &ValidationError<'_>) -> String {
    let mut path = String::from("$");
    for segment in e.instance_path() {
        match segment {
            LocationSegment::Property(p) => {
                path.push('.');
                path.push_str(&p);
            }
            LocationSegment::Index(i) => path.push_str(&format!("[{i}]")),
        }
    }
    path
}

fn number(v: &Value) -> String {
    v.as_f64().map_or_else(|| v.to_string(), |n| n.to_string())
}

/// One error in the words the model is given.
fn describe(e: &ValidationError<'_>) -> String {
    let path = path_of(e);
    let v: &Value = e.instance();
    let n = number(v);
    match e.kind() {
        ValidationErrorKind::Type { kind } => {
            let t = match kind {
                TypeKind::Single(t) => Value::String(t.to_string()),
                TypeKind::Multiple(ts) => {
                    Value::Array(ts.iter().map(|t| Value::String(t.to_string())).collect())
                }
            };
            format!("{path}: expected type {t}, got {}", short(v))
        }
        ValidationErrorKind::Enum { options } => {
            format!("{path}: {} is not one of {options}", short(v))
        }
        ValidationErrorKind::Constant { expected_value } => {
            format!("{path}: expected {expected_value}, got {}", short(v))
        }
        ValidationErrorKind::AnyOf { .. } => {
            format!(
                "{path}: {} matches none of the anyOf alternatives",
                short(v)
            )
        }
        ValidationErrorKind::OneOfNotValid { .. } => {
            format!(
                "{path}: {} matches none of the oneOf alternatives",
                short(v)
            )
        }
        ValidationErrorKind::OneOfMultipleValid { .. } => {
            format!(
                "{path}: {} matches more than one oneOf alternative",
                short(v)
            )
        }
        ValidationErrorKind::Minimum { limit } => {
            format!("{path}: {n} is below the minimum {}", number(limit))
        }
        ValidationErrorKind::Maximum { limit } => {
            format!("{path}: {n} is above the maximum {}", number(limit))
        }
        ValidationErrorKind::ExclusiveMinimum { limit } => {
            format!("{path}: {n} must be above {}", number(limit))
        }
        ValidationErrorKind::ExclusiveMaximum { limit } => {
            format!("{path}: {n} must be below {}", number(limit))
        }
        ValidationErrorKind::MinLength { limit } => format!("{path}: string shorter than {limit}"),
        ValidationErrorKind::MaxLength { limit } => format!("{path}: string longer than {limit}"),
        ValidationErrorKind::MinItems { limit } => format!("{path}: fewer than {limit} items"),
        ValidationErrorKind::MaxItems { limit } => format!("{path}: more than {limit} items"),
        ValidationErrorKind::Required { property } => {
            let name = property
                .as_str()
                .map_or_else(|| property.to_string(), str::to_string);
            format!("{path}: missing required field `{name}`")
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            format!("{path}: unexpected field `{}`", unexpected.join("`, `"))
        }
        ValidationErrorKind::Pattern { pattern } => {
            format!("{path}: {} does not match the pattern {pattern}", short(v))
        }
        _ => format!("{path}: {e}"),
    }
}

/// A value as an error message quotes it: its JSON, cut after 60 characters.
fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 60 {
        format!("{}...", s.chars().take(60).collect::<String>())
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Keywords the hand-written subset skipped: an answer breaking them passed.
    #[test]
    fn pattern_and_all_of_are_checked() {
        let s = json!({
            "type": "object",
            "required": ["question", "rating"],
            "properties": {
                "question": {"type": "string", "pattern": "\\?$"},
                "rating": {"allOf": [{"type": "integer", "minimum": 0}, {"maximum": 3}]}
            }
        });
        assert!(validate(&s, &json!({"question": "Why?", "rating": 2})).is_ok());
        let e = validate(&s, &json!({"question": "Why.", "rating": 2})).unwrap_err();
        assert!(
            e.starts_with("$.question: \"Why.\" does not match the pattern"),
            "{e}"
        );
        let e = validate(&s, &json!({"question": "Why?", "rating": 5})).unwrap_err();
        assert_eq!(e, "$.rating: 5 is above the maximum 3");
        let e = validate(&s, &json!({"question": "Why?", "rating": 1.5})).unwrap_err();
        assert!(e.starts_with("$.rating: expected type \"integer\""), "{e}");
    }

    #[test]
    fn errors_read_as_before() {
        let s = json!({"type": "object", "properties": {"grade": {"type": "integer", "minimum": 0, "maximum": 3}, "kind": {"enum": ["a", "b"]}}, "required": ["grade"], "additionalProperties": false});
        let err = |v: Value| validate(&s, &v).unwrap_err();
        assert_eq!(
            err(json!({"grade": 7})),
            "$.grade: 7 is above the maximum 3"
        );
        assert_eq!(
            err(json!({"grade": -1})),
            "$.grade: -1 is below the minimum 0"
        );
        assert_eq!(err(json!({})), "$: missing required field `grade`");
        assert_eq!(err(json!({"grade": 1, "x": 1})), "$: unexpected field `x`");
        assert_eq!(
            err(json!({"grade": 1, "kind": "c"})),
            "$.kind: \"c\" is not one of [\"a\",\"b\"]"
        );
        assert_eq!(
            err(json!({"grade": "2"})),
            "$.grade: expected type \"integer\", got \"2\""
        );
    }
}
