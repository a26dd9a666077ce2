//! One line of `items.jsonl`: a single judgement by one judge, with everything needed to audit
//! the auditor: what was judged (turn, passage, pool order, trial), what came back (score or
//! pick, parse status, justification), and what it cost (tokens, USD, cache hit).
//!
//! Failed judgements are recorded with `score: null` and `parse_status: "failed"` (or
//! `"refused"` when the provider refused to answer), with the start of the raw answer in
//! `raw_excerpt`; they are counted, never scored. A discriminability judge may also abstain
//! ("none answers it", "several answer it equally"): a valid answer with `score: null` and
//! `abstention` set, counted apart, never a miss and never a pick.

use serde::{Deserialize, Serialize};

use crate::dimension::Dimension;

/// How a judgement's value was obtained.
#[derive(Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ParseOutcome {
    /// The answer parsed as JSON matching the schema.
    Ok,
    /// The value was recovered from surrounding text (fenced block, trailing prose, `Rating: N`).
    Extracted,
    /// No valid value after the LLM layer's retries (or a provider error): excluded from scores.
    Failed,
    /// The provider refused to answer (OpenAI's `message.refusal`): excluded from scores.
    Refused,
}

impl ParseOutcome {
    pub fn is_ok(self) -> bool {
        !matches!(self, ParseOutcome::Failed | ParseOutcome::Refused)
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
    /// The discriminability judge abstained instead of picking (`none`: no passage answers
    /// the question; `several`: several answer it equally): `score` is null, the answer valid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abstention: Option<Abstention>,
    /// Rating 1-5, or for completeness 1 when the gold was picked and 0 otherwise; null when failed.
    pub score: Option<f64>,
    /// How a rating's score was read (rating dimensions only): `generated`, the grade the
    /// judge wrote, `probability`, the probability-weighted mean over the grade tokens
    /// (then `score` is fractional and `rating_distribution` holds the grades' probabilities),
    /// or `relevance`, a relevance judge's 0-1 score mapped to `1 + 4 * score`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rating_mode: Option<mtr_llm::logprob::RatingMode>,
    /// The grade probabilities behind a `probability` rating: per grade, renormalised over
    /// the scale; `mass` is what the judge put on the scale's grades at all; `written` the
    /// grade it wrote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rating_distribution: Option<mtr_llm::logprob::RatingDistribution>,
    pub parse_status: ParseOutcome,
    /// How the value was extracted, or why it failed.
    pub parse_detail: Option<String>,
    /// The start of the raw answer of a failed or refused judgement (at most
    /// [`RAW_EXCERPT_CHARS`] characters, cut at a character boundary), so a reader sees why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_excerpt: Option<String>,
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

/// Characters of a failed answer kept in `raw_excerpt`.
pub(crate) const RAW_EXCERPT_CHARS: usize = 300;

/// The first `max` characters of `text` (never cut inside a character), `None` when empty.
pub(crate) fn raw_excerpt(text: &str, max: usize) -> Option<String> {
    let t = text.trim();
    if t.is_empty() {
        return None;
    }
    match t.char_indices().nth(max) {
        Some((at, _)) => Some(format!("{}...", &t[..at])),
        None => Some(t.to_string()),
    }
}

/// Why a discriminability judge did not pick a passage.
#[derive(Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Abstention {
    /// No candidate answers the question.
    None,
    /// Several candidates answer it equally well.
    Several,
}

impl Abstention {
    pub fn name(self) -> &'static str {
        match self {
            Abstention::None => "none",
            Abstention::Several => "several",
        }
    }
}

impl Judgement {
    /// A valid answer: a score, or (discriminability) an explicit abstention.
    pub fn ok(&self) -> bool {
        self.parse_status.is_ok() && (self.score.is_some() || self.abstention.is_some())
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
pub(crate) struct RatingVerdict {
    pub justification: String,
    pub rating: i64,
}

/// The verdict a discriminability judge returns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct PickVerdict {
    pub justification: String,
    pub choice: Choice,
}

/// A discriminability choice: a 1-based passage number, or an abstention.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub(crate) enum Choice {
    Passage(i64),
    Abstain(Abstention),
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

/// JSON Schema of a pick verdict over a pool of `n` passages: `choice` is a passage number
/// 1..n, or `"none"` (no passage answers the question) or `"several"` (several answer it
/// equally well).
pub(crate) fn pick_schema(n: usize) -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "justification": {"type": "string", "description": "One or two sentences of reasoning, written before the choice."},
            "choice": {"anyOf": [
                {"type": "integer", "minimum": 1, "maximum": n, "description": "The number of the passage that best answers the question."},
                {"type": "string", "enum": ["none", "several"], "description": "`none`: no passage answers it; `several`: several answer it equally well."}
            ]}
        },
        "required": ["justification", "choice"],
        "additionalProperties": false
    })
}

/// The pool size a pick schema allows (`None` for any other schema): what a fake judge reads.
pub fn pick_max(schema: &serde_json::Value) -> Option<u64> {
    schema
        .pointer("/properties/choice/anyOf/0/maximum")
        .or_else(|| schema.pointer("/properties/choice/maximum"))
        .and_then(serde_json::Value::as_u64)
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
        assert_eq!(pick_max(&pick_schema(8)), Some(8));
    }

    #[test]
    fn pick_verdicts_parse_numbers_and_abstentions() {
        let v: PickVerdict =
            serde_json::from_value(serde_json::json!({"justification": "x", "choice": 3})).unwrap();
        assert_eq!(v.choice, Choice::Passage(3));
        for (s, a) in [("none", Abstention::None), ("several", Abstention::Several)] {
            let v: PickVerdict =
                serde_json::from_value(serde_json::json!({"justification": "x", "choice": s}))
                    .unwrap();
            assert_eq!(v.choice, Choice::Abstain(a));
        }
        assert!(
            serde_json::from_value::<PickVerdict>(
                serde_json::json!({"justification": "x", "choice": "maybe"})
            )
            .is_err()
        );
        // the schema accepts both forms and nothing else
        let schema = pick_schema(8);
        let v = jsonschema::validator_for(&schema).unwrap();
        assert!(v.is_valid(&serde_json::json!({"justification": "x", "choice": "none"})));
        assert!(v.is_valid(&serde_json::json!({"justification": "x", "choice": 8})));
        assert!(!v.is_valid(&serde_json::json!({"justification": "x", "choice": 9})));
        assert!(!v.is_valid(&serde_json::json!({"justification": "x", "choice": "all"})));
    }

    #[test]
    fn raw_excerpts_cut_at_a_character_boundary() {
        assert_eq!(raw_excerpt("  ", 5), None);
        assert_eq!(raw_excerpt("abc", 5).as_deref(), Some("abc"));
        assert_eq!(raw_excerpt("ééééééé", 3).as_deref(), Some("ééé..."));
    }
}
