//! An accepted turn as generation keeps it ([`TurnRecord`], in the checkpoint) and as the
//! benchmark holds it ([`to_core_turn`]): the one place that says how a generated turn becomes
//! a native `Turn` with its graded golds and tags.

use std::collections::BTreeMap;

use mtr_core::{Gold, Tags, Turn};
use serde::{Deserialize, Serialize};

use crate::turn_types;
use crate::turn_types::Answerability;

/// An accepted turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct TurnRecord {
    /// The layer (0-based planned turn) that produced it.
    pub layer: usize,
    /// The question as it appears in the benchmark (humanized when that passed its guards).
    pub question: String,
    /// The user agent's question before humanizing, when it was humanized.
    pub original: Option<String>,
    /// The user agent's standalone version (becomes the turn's `rewrite`).
    pub standalone: String,
    pub answer: String,
    /// Evidence chunk id (grade 2).
    pub evidence: String,
    /// The second evidence chunk of a two-passage (composite or comparative) turn, which
    /// needs both (grade 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub second_evidence: Option<String>,
    /// Other chunks the uniqueness judge found answering: `(id, grade)`.
    pub extra_golds: Vec<(String, i32)>,
    pub topic_switch: bool,
    pub topic: usize,
    pub path: usize,
    /// The chat judge's answerability 1-5; None when it is off (`answerability_judge = false`).
    pub answerability: Option<i64>,
    pub faithfulness: i64,
    /// Question attempts used (1 = first try).
    pub attempts: u32,
    /// The relevance judge's scores of the accepted attempt, when the gate is on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relevance: Option<RelevanceScores>,
    /// The turn's answerability kind (`[synth.mix]`): answerable (left out of the checkpoint,
    /// as before kinds existed) or unanswerable (no evidence, gold empty).
    #[serde(default, skip_serializing_if = "is_answerable")]
    pub kind: Answerability,
    /// A partial turn's two parts, each a question of its own: the one its evidence answers
    /// and the one no passage of the corpus answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parts: Option<(String, String)>,
}

fn is_answerable(k: &Answerability) -> bool {
    *k == Answerability::Answerable
}

/// What the verifier's relevance gate scored (0-1, the judge's normalised scale).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RelevanceScores {
    /// The gold (evidence) passage.
    pub gold: f64,
    /// The hard negatives, in retrieval order.
    pub negatives: Vec<f64>,
}

impl RelevanceScores {
    /// The best hard negative's score.
    pub(crate) fn best_negative(&self) -> Option<f64> {
        self.negatives.iter().copied().reduce(f64::max)
    }
}

/// The benchmark turn of an accepted record.
pub(crate) fn to_core_turn(dialogue_id: &str, n: usize, t: &TurnRecord) -> Turn {
    // a turn with no evidence (unanswerable) has no gold: bench leaves it out of its measures
    // and counts it, as it does MTRAG's own
    let mut gold: Vec<Gold> = (!t.evidence.is_empty())
        .then(|| Gold {
            passage_id: t.evidence.clone(),
            grade: 2,
        })
        .into_iter()
        .collect();
    gold.extend(t.second_evidence.iter().map(|id| Gold {
        passage_id: id.clone(),
        grade: 2,
    }));
    gold.extend(t.extra_golds.iter().map(|(id, g)| Gold {
        passage_id: id.clone(),
        grade: *g,
    }));
    let mut extra = BTreeMap::new();
    if !t.evidence.is_empty() {
        extra.insert(
            "evidence".to_string(),
            serde_json::Value::from(t.evidence.clone()),
        );
    }
    extra.insert(
        "humanized".to_string(),
        serde_json::Value::from(t.original.is_some()),
    );
    if let Some(o) = &t.original {
        extra.insert(
            "original_question".to_string(),
            serde_json::Value::from(o.clone()),
        );
    }
    extra.insert(
        "faithfulness_score".to_string(),
        serde_json::Value::from(t.faithfulness),
    );
    extra.insert("attempts".to_string(), serde_json::Value::from(t.attempts));
    if let Some((answered, missing)) = &t.parts {
        extra.insert("answered_part".to_string(), answered.clone().into());
        extra.insert("missing_part".to_string(), missing.clone().into());
    }
    if let Some(r) = &t.relevance {
        let rounded = |x: f64| serde_json::Value::from((x * 1e4).round() / 1e4);
        extra.insert("relevance_gold".to_string(), rounded(r.gold));
        if let Some(b) = r.best_negative() {
            extra.insert("relevance_best_negative".to_string(), rounded(b));
        }
    }
    Turn {
        id: format!("{dialogue_id}::{n}"),
        user: t.question.clone(),
        rewrite: (!t.standalone.is_empty()).then(|| t.standalone.clone()),
        answer: Some(t.answer.clone()),
        gold,
        tags: Tags {
            question_type: Some(turn_types::question_type_of(t).to_string()),
            multi_turn_type: Some(turn_types::multi_turn_type_of(n, t).to_string()),
            answerability: Some(t.kind.as_str().to_string()),
            topic_switch: Some(t.topic_switch),
            topic: Some(format!("topic-{}", t.topic)),
            extra,
        },
    }
}
