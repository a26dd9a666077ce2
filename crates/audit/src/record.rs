//! One line of `items.jsonl`: a single judgement by one judge, with everything needed to audit
//! the auditor: what was judged (turn, passage, pool order, trial), what came back (score or
//! pick, parse status, justification), and what it cost (tokens, USD, cache hit).
//!
//! Failed judgements are recorded with `score: null` and `parse_status: "failed"`; they are
//! counted, never scored.

use serde::{Deserialize, Serialize};

use crate::dimension::Dimension;

/// How a judgement's value was obtained.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ParseOutcome {
    /// The answer parsed as JSON matching the schema.
    Ok,
    /// The value was recovered from surrounding text (fenced block, trailing prose, `Rating: N`).
    Extracted,
    /// No valid value after the LLM layer's retries (or a provider error): excluded from scores.
    Failed,
}

impl ParseOutcome {
    pub fn is_ok(self) -> bool {
        !matches!(self, ParseOutcome::Failed)
    }
}

/// One judgement (a line of `items.jsonl`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Judgement {
    /// Stable id of this judgement: dimension, turn, passage, trial and judge.
    pub id: String,
    pub dimension: Dimension,
    /// Judge (endpoint) name as configured.
    pub judge: String,
    /// Model that answered.
    pub model: String,
    pub dialogue_id: String,
    pub turn_id: String,
    /// 1-based turn number in its dialogue.
    pub turn: usize,
    /// The gold passage judged (alignment, completeness).
    pub passage_id: Option<String>,
    /// Trial index (completeness: which permutation of the pool, 0-based).
    pub trial: Option<usize>,
    /// Self-consistency sample index of the judge (0 unless `[llm.sampling.judges] n` > 1).
    pub sample: u32,
    /// Passage ids in the order shown (completeness).
    pub pool: Option<Vec<String>>,
    /// 1-based position of the gold in `pool` (completeness).
    pub gold_position: Option<usize>,
    /// 1-based position the judge picked (completeness).
    pub pick_position: Option<usize>,
    /// Passage id the judge picked (completeness).
    pub pick_passage_id: Option<String>,
    /// Rating 1-5, or for completeness 1 when the gold was picked and 0 otherwise; null when failed.
    pub score: Option<f64>,
    pub parse_status: ParseOutcome,
    /// How the value was extracted, or why it failed.
    pub parse_detail: Option<String>,
    /// The judge's justification (written before its verdict).
    pub justification: Option<String>,
    /// Prompt id `name@version`.
    pub prompt: String,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// USD its answer cost when it was fetched, whether this run paid it or found it in the
    /// LLM cache (0 for a copy of an identical request, counted once): the cost of the result,
    /// the same whatever the interruptions. The money spent across attempts is in `spend.json`.
    pub cost_usd: f64,
    /// The answer is that of an identical request earlier in this audit (nothing paid for it).
    /// Whether the LLM cache answered is not recorded: it depends on earlier runs.
    pub cache_hit: bool,
    /// Content-addressed LLM cache key.
    pub cache_key: String,
}

impl Judgement {
    pub fn ok(&self) -> bool {
        self.parse_status.is_ok() && self.score.is_some()
    }
}

/// Stable id of a judgement from what it is about.
pub fn judgement_id(
    dim: Dimension,
    turn_id: &str,
    passage_id: Option<&str>,
    trial: Option<usize>,
    judge: &str,
    sample: u32,
) -> String {
    let trial = trial.map(|t| t.to_string()).unwrap_or_default();
    let s = format!(
        "{}\u{1f}{turn_id}\u{1f}{}\u{1f}{trial}\u{1f}{judge}\u{1f}{sample}",
        dim.name(),
        passage_id.unwrap_or("")
    );
    blake3::hash(s.as_bytes()).to_hex()[..20].to_string()
}

/// The verdict a rating judge returns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RatingVerdict {
    pub justification: String,
    pub rating: i64,
}

/// The verdict a discriminability judge returns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PickVerdict {
    pub justification: String,
    pub choice: i64,
}

/// JSON Schema of a rating verdict (strict: justification first, then an integer 1-5).
pub fn rating_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "justification": {"type": "string", "description": "One or two sentences of reasoning, written before the rating."},
            "rating": {"type": "integer", "minimum": 1, "maximum": 5}
        },
        "required": ["justification", "rating"],
        "additionalProperties": false
    })
}

/// JSON Schema of a pick verdict over a pool of `n` passages.
pub fn pick_schema(n: usize) -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "justification": {"type": "string", "description": "One or two sentences of reasoning, written before the choice."},
            "choice": {"type": "integer", "minimum": 1, "maximum": n}
        },
        "required": ["justification", "choice"],
        "additionalProperties": false
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable_and_distinct() {
        let a = judgement_id(Dimension::Completeness, "t1", Some("p"), Some(0), "j", 0);
        assert_eq!(
            a,
            judgement_id(Dimension::Completeness, "t1", Some("p"), Some(0), "j", 0)
        );
        assert_ne!(
            a,
            judgement_id(Dimension::Completeness, "t1", Some("p"), Some(1), "j", 0)
        );
        assert_ne!(
            a,
            judgement_id(Dimension::Completeness, "t1", Some("p"), Some(0), "k", 0)
        );
        assert_ne!(
            a,
            judgement_id(Dimension::Completeness, "t1", Some("p"), Some(0), "j", 1)
        );
        assert_eq!(a.len(), 20);
    }

    #[test]
    fn schemas_order_justification_first() {
        let s = rating_schema();
        let keys: Vec<_> = s["properties"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        assert_eq!(keys, ["justification", "rating"]);
        assert_eq!(pick_schema(8)["properties"]["choice"]["maximum"], 8);
    }
}
