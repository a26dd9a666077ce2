//! The benchmark data model: passages, dialogues, turns with graded gold evidence, qrels, runs.
//!
//! A turn stores only what is new at that turn; its conversation history is derived from the
//! earlier turns of its dialogue ([`Dialogue::history`]), never stored twice.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One retrievable unit of the corpus (a passage or chunk).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Passage {
    /// The passage id (unique in the corpus).
    pub id: String,
    #[serde(default)]
    /// The passage's title (empty when it has none).
    pub title: String,
    /// The passage's text.
    pub text: String,
    /// The source document this passage was cut from, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doc_id: Option<String>,
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    /// Anything else the source gave, kept as is.
    pub meta: serde_json::Map<String, serde_json::Value>,
}

/// A graded gold passage of a turn. Grades follow TREC: > 0 relevant, <= 0 judged non-relevant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gold {
    /// The passage judged.
    pub passage_id: String,
    #[serde(default = "default_grade")]
    /// Its relevance grade (0 or less: judged not relevant).
    pub grade: i32,
}

fn default_grade() -> i32 {
    1
}

/// Labels attached to a turn. The named ones are those every importer and stratifier knows;
/// anything else a source carries goes to `extra`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Tags {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The kind of question (factoid, opinion, ...), as the source says it.
    pub question_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// How the turn depends on earlier ones (follow-up, clarification, ...).
    pub multi_turn_type: Option<String>,
    /// `answerable`, `partial`, `unanswerable`, `conversational`, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answerability: Option<String>,
    /// True when this turn moves to a new topic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic_switch: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The conversation's topic at this turn.
    pub topic: Option<String>,
    #[serde(default, flatten, skip_serializing_if = "BTreeMap::is_empty")]
    /// Other tags of the source, by name.
    pub extra: BTreeMap<String, serde_json::Value>,
}

impl Tags {
    /// The value of a tag by name as a display string (named tags first, then `extra`).
    pub fn get(&self, name: &str) -> Option<String> {
        match name {
            "question_type" => self.question_type.clone(),
            "multi_turn_type" => self.multi_turn_type.clone(),
            "answerability" => self.answerability.clone(),
            "topic_switch" => self.topic_switch.map(|b| b.to_string()),
            "topic" => self.topic.clone(),
            other => self.extra.get(other).map(|v| match v {
                serde_json::Value::String(s) => s.clone(),
                v => v.to_string(),
            }),
        }
    }

    /// All tags as `(name, value)` pairs, sorted by name.
    pub fn pairs(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for name in [
            "question_type",
            "multi_turn_type",
            "answerability",
            "topic_switch",
            "topic",
        ] {
            if let Some(v) = self.get(name) {
                out.push((name.to_string(), v));
            }
        }
        for k in self.extra.keys() {
            if let Some(v) = self.get(k) {
                out.push((k.clone(), v));
            }
        }
        out.sort();
        out
    }
}

/// One user turn: the question, optionally its standalone rewrite, the reference answer, and
/// the graded gold passages. `id` is the query id used in qrels and runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Turn {
    /// The turn id (unique in the benchmark; the qrels' query id).
    pub id: String,
    /// The user's question as asked.
    pub user: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// A standalone rewrite of the question, when the source has one.
    pub rewrite: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The reference answer, when the source has one.
    pub answer: Option<String>,
    #[serde(default)]
    /// The judged passages of this turn.
    pub gold: Vec<Gold>,
    #[serde(default)]
    /// What the source says about the turn.
    pub tags: Tags,
}

impl Turn {
    /// Gold passages with a positive grade.
    pub fn relevant(&self) -> impl Iterator<Item = &Gold> {
        self.gold.iter().filter(|g| g.grade > 0)
    }
    /// True when the source marks the turn unanswerable.
    pub fn is_unanswerable(&self) -> bool {
        self.tags
            .answerability
            .as_deref()
            .is_some_and(|a| a.eq_ignore_ascii_case("unanswerable"))
    }
}

/// A multi-turn conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dialogue {
    /// The dialogue id (unique in the benchmark).
    pub id: String,
    /// Its turns, in order.
    pub turns: Vec<Turn>,
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    /// Anything else the source gave, kept as is.
    pub meta: serde_json::Map<String, serde_json::Value>,
}

/// Who spoke an utterance of a history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Speaker {
    /// The user asking.
    User,
    /// The system answering.
    Agent,
}

/// One utterance of a derived history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Utterance<'a> {
    /// Who speaks.
    pub speaker: Speaker,
    /// What is said.
    pub text: &'a str,
}

impl Dialogue {
    /// The utterances before turn `index` (user questions and, where present, agent answers),
    /// oldest first. The turn's own question is not included.
    pub fn history(&self, index: usize) -> Vec<Utterance<'_>> {
        let mut out = Vec::with_capacity(index * 2);
        for t in self.turns.iter().take(index) {
            out.push(Utterance {
                speaker: Speaker::User,
                text: &t.user,
            });
            if let Some(a) = &t.answer {
                out.push(Utterance {
                    speaker: Speaker::Agent,
                    text: a,
                });
            }
        }
        out
    }
}

/// Relevance judgements: `qid -> docid -> grade`. Negative grades are judged non-relevant.
pub type Qrels = BTreeMap<String, BTreeMap<String, i32>>;

/// A ranked run: `qid -> [(docid, score)]` in the order the system returned them.
pub type Run = BTreeMap<String, Vec<(String, f64)>>;

/// Builds qrels from the gold labels of dialogues.
pub fn qrels_from_dialogues<'a>(dialogues: impl IntoIterator<Item = &'a Dialogue>) -> Qrels {
    let mut q = Qrels::new();
    for d in dialogues {
        for t in &d.turns {
            if t.gold.is_empty() {
                continue;
            }
            let e = q.entry(t.id.clone()).or_default();
            for g in &t.gold {
                e.insert(g.passage_id.clone(), g.grade);
            }
        }
    }
    q
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(id: &str, user: &str, answer: Option<&str>) -> Turn {
        Turn {
            id: id.into(),
            user: user.into(),
            rewrite: None,
            answer: answer.map(Into::into),
            gold: vec![Gold {
                passage_id: "p1".into(),
                grade: 2,
            }],
            tags: Tags::default(),
        }
    }

    #[test]
    fn history_is_derived_from_earlier_turns() {
        let d = Dialogue {
            id: "d".into(),
            turns: vec![
                turn("d::1", "q1", Some("a1")),
                turn("d::2", "q2", None),
                turn("d::3", "q3", Some("a3")),
            ],
            meta: Default::default(),
        };
        assert!(d.history(0).is_empty());
        let h = d.history(2);
        let texts: Vec<_> = h.iter().map(|u| (u.speaker, u.text)).collect();
        assert_eq!(
            texts,
            vec![
                (Speaker::User, "q1"),
                (Speaker::Agent, "a1"),
                (Speaker::User, "q2")
            ]
        );
        let q = qrels_from_dialogues([&d]);
        assert_eq!(q.len(), 3);
        assert_eq!(q["d::1"]["p1"], 2);
    }

    #[test]
    fn tags_roundtrip_with_extra() {
        let json = r#"{"question_type":"Factoid","answerability":"answerable","lang":"en"}"#;
        let t: Tags = serde_json::from_str(json).unwrap();
        assert_eq!(t.get("lang").as_deref(), Some("en"));
        assert_eq!(serde_json::to_string(&t).unwrap(), json);
    }
}
