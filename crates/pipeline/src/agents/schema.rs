//! What each agent must answer, as JSON schemas: the user agent's proposal (a passage's
//! number, the question, its standalone version) and the verifier's judges' verdicts.

use mtr_llm::JsonSchema;
use serde_json::{Value, json};

use crate::lang::Language;
use crate::text_rules::question_pattern;

/// The user agent's output schema under a styled profile: no pattern (a message of several
/// sentences, as long as the draw asks), the caller's guards still apply.
pub(crate) fn styled_proposal_schema(offered: usize, rewrite: bool) -> JsonSchema {
    let choices: Vec<usize> = (1..=offered).collect();
    let mut properties = json!({
        "passage": {"type": "integer", "enum": choices},
        "question": {"type": "string"},
    });
    let mut required = vec!["passage", "question"];
    if rewrite {
        properties["standalone"] = json!({"type": "string"});
        required.push("standalone");
    }
    JsonSchema::new(
        "user_turn",
        json!({
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false
        }),
    )
}

/// The user agent's output schema for `offered` passages: the styled one
/// ([`styled_proposal_schema`]) with the question, and its standalone version, shaped by
/// [`question_pattern`] where the endpoint enforces patterns.
pub(crate) fn proposal_schema(offered: usize, lang: &Language, rewrite: bool) -> JsonSchema {
    let pattern = json!(question_pattern(lang));
    let mut schema = styled_proposal_schema(offered, rewrite);
    let properties = &mut schema.schema["properties"];
    for field in ["question", "standalone"] {
        if let Some(p) = properties.get_mut(field) {
            p["pattern"] = pattern.clone();
        }
    }
    schema
}

/// The user agent's output schema of a turn drawn `unanswerable`: the question (and its
/// standalone version), shaped as [`proposal_schema`]'s, with no passage to choose.
pub(crate) fn unanswerable_question_schema(lang: &Language, rewrite: bool) -> JsonSchema {
    let mut schema = proposal_schema(1, lang, rewrite);
    schema.name = "unanswerable_turn".into();
    if let Some(p) = schema.schema["properties"].as_object_mut() {
        p.remove("passage");
    }
    if let Some(r) = schema.schema["required"].as_array_mut() {
        r.retain(|f| f != "passage");
    }
    schema
}

/// The judge's output of a turn drawn `unanswerable`: [`uniqueness_schema`]'s grades and
/// quotes of the `n` passages found, under its own name.
pub(crate) fn unanswerable_schema(n: usize, justify: bool) -> JsonSchema {
    let mut schema = uniqueness_schema(n, justify);
    schema.name = "unanswerable".into();
    schema
}

/// The user agent's output schema of a turn drawn `two_passage`: two of the `offered`
/// passages' numbers and the question (and its standalone version), shaped as
/// [`proposal_schema`]'s.
pub(crate) fn two_passage_question_schema(
    offered: usize,
    lang: &Language,
    rewrite: bool,
) -> JsonSchema {
    let mut schema = proposal_schema(offered, lang, rewrite);
    schema.name = "two_passage_turn".into();
    let choices: Vec<usize> = (1..=offered).collect();
    if let Some(p) = schema.schema["properties"].as_object_mut() {
        p.remove("passage");
        p.insert(
            "passages".into(),
            json!({"type": "array", "items": {"type": "integer", "enum": choices}, "minItems": 2, "maxItems": 2}),
        );
    }
    if let Some(r) = schema.schema["required"].as_array_mut() {
        for f in r.iter_mut() {
            if f == "passage" {
                *f = json!("passages");
            }
        }
    }
    schema
}

/// The user agent's output schema of a turn drawn `partial`: the chosen passage's number, the
/// part it answers and the part no passage answers (each a question of its own), then the
/// question that asks both (and its standalone version), each shaped as [`proposal_schema`]'s
/// question. The parts come before the question: the model settles what it asks, then words it.
pub(crate) fn partial_question_schema(
    offered: usize,
    lang: &Language,
    rewrite: bool,
) -> JsonSchema {
    let mut schema = proposal_schema(offered, lang, rewrite);
    schema.name = "partial_turn".into();
    let props = &schema.schema["properties"];
    let mut properties = serde_json::Map::new();
    properties.insert("passage".into(), props["passage"].clone());
    for part in ["answered_part", "missing_part"] {
        properties.insert(part.into(), props["question"].clone());
    }
    properties.insert("question".into(), props["question"].clone());
    if let Some(s) = props.get("standalone") {
        properties.insert("standalone".into(), s.clone());
    }
    let required: Vec<String> = properties.keys().cloned().collect();
    schema.schema["properties"] = Value::Object(properties);
    schema.schema["required"] = json!(required);
    schema
}

/// The judge's output of a turn drawn `two_passage`: each passage alone graded 0-2, both
/// together scored 1-5, and the quote of each passage's part.
pub(crate) fn two_passage_schema(justify: bool) -> JsonSchema {
    let grade = json!({"type": "integer", "enum": [0, 1, 2]});
    judge_schema(
        "two_passage",
        justify,
        vec![
            ("a", grade.clone()),
            ("b", grade),
            ("both", json!({"type": "integer", "enum": [1, 2, 3, 4, 5]})),
            ("quote_a", json!({"type": "string"})),
            ("quote_b", json!({"type": "string"})),
        ],
    )
}

/// The user agent's output schema of a turn drawn `conversational`: the message and the
/// assistant's reply.
pub(crate) fn conversational_schema() -> JsonSchema {
    JsonSchema::new(
        "conversational_turn",
        json!({
            "type": "object",
            "properties": {"message": {"type": "string"}, "reply": {"type": "string"}},
            "required": ["message", "reply"],
            "additionalProperties": false
        }),
    )
}

/// `properties` and `required` of a judge's output, with a free-text `justification` first
/// when `justify`.
fn judge_schema(name: &str, justify: bool, fields: Vec<(&str, Value)>) -> JsonSchema {
    let mut properties = serde_json::Map::new();
    if justify {
        properties.insert("justification".into(), json!({"type": "string"}));
    }
    for (k, v) in fields {
        properties.insert(k.into(), v);
    }
    let required: Vec<&String> = properties.keys().collect();
    let schema = json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false
    });
    JsonSchema::new(name, schema)
}

/// The answerability judge's output: (a justification,) the quoted answering sentence, a score.
pub(crate) fn answerability_schema(justify: bool) -> JsonSchema {
    judge_schema(
        "answerability",
        justify,
        vec![
            ("quote", json!({"type": "string"})),
            ("score", json!({"type": "integer", "enum": [1, 2, 3, 4, 5]})),
        ],
    )
}

/// The uniqueness judge's output for `n` candidates: (a justification,) a grade and a quote for
/// each.
pub(crate) fn uniqueness_schema(n: usize, justify: bool) -> JsonSchema {
    judge_schema(
        "uniqueness",
        justify,
        vec![
            (
                "grades",
                json!({"type": "array", "items": {"type": "integer", "enum": [0, 1, 2]}, "minItems": n, "maxItems": n}),
            ),
            (
                "quotes",
                json!({"type": "array", "items": {"type": "string"}, "minItems": n, "maxItems": n}),
            ),
        ],
    )
}

/// A 1-5 score (after a justification when `justify`).
pub(crate) fn score_schema(name: &str, justify: bool) -> JsonSchema {
    judge_schema(
        name,
        justify,
        vec![("score", json!({"type": "integer", "enum": [1, 2, 3, 4, 5]}))],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_proposal_schema_is_the_styled_one_with_the_question_pattern() {
        let en = Language::from_code("en");
        let pattern = question_pattern(&en);
        let with = proposal_schema(3, &en, true);
        let expected = json!({
            "type": "object",
            "properties": {
                "passage": {"type": "integer", "enum": [1, 2, 3]},
                "question": {"type": "string", "pattern": pattern},
                "standalone": {"type": "string", "pattern": pattern},
            },
            "required": ["passage", "question", "standalone"],
            "additionalProperties": false
        });
        assert_eq!(with.name, "user_turn");
        // the bytes the cache key and the request body are made of
        assert_eq!(with.schema.to_string(), expected.to_string());
        let without = proposal_schema(2, &en, false).schema;
        assert_eq!(without["required"], json!(["passage", "question"]));
        assert!(without["properties"].get("standalone").is_none());
        let partial = partial_question_schema(2, &en, true);
        assert_eq!(partial.name, "partial_turn");
        assert_eq!(
            partial.schema["required"],
            json!([
                "passage",
                "answered_part",
                "missing_part",
                "question",
                "standalone"
            ])
        );
        for part in ["answered_part", "missing_part"] {
            assert_eq!(
                partial.schema["properties"][part]["pattern"],
                json!(pattern)
            );
        }
        let partial = partial_question_schema(2, &en, false).schema;
        assert!(partial["properties"].get("standalone").is_none());
        let styled = styled_proposal_schema(2, false).schema;
        assert!(styled["properties"]["question"].get("pattern").is_none());
    }
}
