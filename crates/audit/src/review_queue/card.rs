//! What one card shows, built from the benchmark's texts: the dialogue so far (earlier turns),
//! the question and its rewrite, the reference answer where the dimension judges it, the
//! passage(s) with title and id (a completeness pool in the order a judge saw it), the
//! question's words to mark, and the answers the reviewer can give. The judges' reasons are on
//! flagged cards only: a random-sample card is answered blind.

use std::collections::{BTreeMap, HashMap, HashSet};

use mtr_core::{Benchmark, Passage};
use serde::Serialize;

use crate::dimension::Dimension;
use crate::error::Result;

use super::Queue;
use super::flagged::{FlagKind, FlaggedItem};
use super::random_sample::SampleUnit;

/// The benchmark's texts a review needs: every dialogue and the passages of the queues.
pub struct Texts {
    bench: Benchmark,
    turns: HashMap<String, (usize, usize)>,
    passages: HashMap<String, Passage>,
    /// The review is of a judge folder's holes ([`Texts::for_holes`]): its passages are no
    /// golds.
    holes: bool,
}

impl Texts {
    /// Indexes the turns and reads the passages the queues show (one pass over the corpus).
    pub fn load(bench: Benchmark, sample: &[SampleUnit], flagged: &[FlaggedItem]) -> Result<Self> {
        let mut turns = HashMap::new();
        for (d, dl) in bench.dialogues.iter().enumerate() {
            for (t, turn) in dl.turns.iter().enumerate() {
                turns.insert(turn.id.clone(), (d, t));
            }
        }
        let mut ids: HashSet<String> = HashSet::new();
        for u in sample {
            if !u.passage_id.is_empty() {
                ids.insert(u.passage_id.clone());
            }
            ids.extend(u.pool.iter().flatten().cloned());
            if u.dimension == Dimension::Faithfulness
                && let Some(&(d, t)) = turns.get(&u.turn_id)
            {
                let turn: &mtr_core::Turn = &bench.dialogues[d].turns[t];
                ids.extend(turn.relevant().map(|g| g.passage_id.clone()));
            }
        }
        for f in flagged {
            ids.insert(f.passage_id.clone());
            ids.extend(f.gold_passage_id.iter().cloned());
        }
        let passages = crate::items::materials::load_passages(&bench, &ids)?;
        Ok(Self {
            bench,
            turns,
            passages,
            holes: false,
        })
    }

    /// The texts of a judge folder's review: the sample's passages are holes, shown as
    /// candidates, not golds.
    pub fn for_holes(mut self) -> Self {
        self.holes = true;
        self
    }

    fn turn(&self, turn_id: &str) -> Option<(&mtr_core::Dialogue, usize)> {
        self.turns
            .get(turn_id)
            .map(|&(d, t)| (&self.bench.dialogues[d], t))
    }

    fn passage(&self, id: &str, role: &str) -> CardPassage {
        match self.passages.get(id) {
            Some(p) => CardPassage {
                id: id.to_string(),
                title: p.title.clone(),
                text: p.text.clone(),
                role: role.to_string(),
            },
            None => CardPassage {
                id: id.to_string(),
                title: String::new(),
                text: "(this passage is not in the benchmark's corpus)".to_string(),
                role: role.to_string(),
            },
        }
    }
}

/// One utterance of the dialogue so far.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Utterance {
    /// `user` or `agent`.
    pub speaker: &'static str,
    /// What was said.
    pub text: String,
}

/// A passage shown on a card.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CardPassage {
    /// Its id in the corpus.
    pub id: String,
    /// Its title (may be empty).
    pub title: String,
    /// Its text.
    pub text: String,
    /// `gold`, `candidate` (a missing gold's) or `pool` (a completeness pool's, not told apart).
    pub role: String,
}

/// An answer the reviewer can give: the key that gives it and the label stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Choice {
    /// The keyboard key that gives it.
    pub key: String,
    /// The label stored.
    pub label: String,
    /// What the button says.
    pub text: String,
}

/// One card of the review: an item, its turn with the history, the passages and the answers a reviewer can give.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Card {
    /// The item's key ([`crate::review_queue::ItemKey`]).
    pub item: String,
    /// The queue it comes from.
    pub queue: Queue,
    /// A dimension name, or `missing` / `gold` for flagged items.
    pub kind: String,
    /// The question the reviewer answers.
    pub prompt: String,
    /// The dialogue of the turn.
    pub dialogue_id: String,
    /// The turn's id.
    pub turn_id: String,
    /// 1-based turn number.
    pub turn: usize,
    /// The earlier utterances of the dialogue.
    pub history: Vec<Utterance>,
    /// The user's question.
    pub question: String,
    /// The benchmark's standalone rewrite of the question, when it has one.
    pub rewrite: Option<String>,
    /// The reference answer (faithfulness, quality).
    pub answer: Option<String>,
    /// The passages to judge, in display order.
    pub passages: Vec<CardPassage>,
    /// The question's words, to mark in the passages.
    pub words: Vec<String>,
    /// The answers the reviewer can give.
    pub choices: Vec<Choice>,
    /// Flagged items: why flagged, and each judge's reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// Each judge's reason, by judge.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub reasons: BTreeMap<String, String>,
}

const RATING_TEXT: [&str; 5] = ["1 no", "2", "3 partly", "4", "5 fully"];

fn ratings() -> Vec<Choice> {
    (1..=5)
        .map(|i| Choice {
            key: i.to_string(),
            label: i.to_string(),
            text: RATING_TEXT[i - 1].to_string(),
        })
        .collect()
}

fn relevance() -> Vec<Choice> {
    [("y", "yes"), ("p", "partly"), ("n", "no")]
        .into_iter()
        .map(|(k, l)| Choice {
            key: k.into(),
            label: l.into(),
            text: l.into(),
        })
        .collect()
}

/// A card with the turn's texts; `None` when the turn is not in the benchmark.
fn base(texts: &Texts, item: &str, queue: Queue, kind: &str, turn_id: &str) -> Option<Card> {
    let (d, t) = texts.turn(turn_id)?;
    let turn = &d.turns[t];
    let history = d
        .history(t)
        .into_iter()
        .map(|u| Utterance {
            speaker: match u.speaker {
                mtr_core::model::Speaker::User => "user",
                mtr_core::model::Speaker::Agent => "agent",
            },
            text: u.text.to_string(),
        })
        .collect();
    let rewrite = turn.rewrite.clone().filter(|r| !r.trim().is_empty());
    Some(Card {
        item: item.to_string(),
        queue,
        kind: kind.to_string(),
        prompt: String::new(),
        dialogue_id: d.id.clone(),
        turn_id: turn_id.to_string(),
        turn: t + 1,
        history,
        words: question_words(&turn.user, rewrite.as_deref()),
        question: turn.user.clone(),
        rewrite,
        answer: None,
        passages: Vec::new(),
        choices: Vec::new(),
        why: None,
        reasons: BTreeMap::new(),
    })
}

/// The card of a random-sample unit (blind: no judge's answer or reason).
pub fn sample_card(texts: &Texts, u: &SampleUnit) -> Option<Card> {
    let mut c = base(
        texts,
        &u.item,
        Queue::Sample,
        u.dimension.name(),
        &u.turn_id,
    )?;
    let (d, t) = texts.turn(&u.turn_id)?;
    let turn = &d.turns[t];
    match u.dimension {
        Dimension::Alignment => {
            c.prompt = "Does this passage answer the question, in the context of the dialogue? (1 not at all - 5 fully)".into();
            // a judge folder's holes are no golds: the card does not say the passage is one
            let role = if texts.holes { "candidate" } else { "gold" };
            c.passages.push(texts.passage(&u.passage_id, role));
            c.choices = ratings();
        }
        Dimension::Completeness => {
            c.prompt =
                "Which passage best answers the question? (or none / several equally)".into();
            let pool = u.pool.clone().unwrap_or_else(|| vec![u.passage_id.clone()]);
            for (i, p) in pool.iter().enumerate() {
                c.passages.push(texts.passage(p, "pool"));
                c.choices.push(Choice {
                    key: (i + 1).to_string(),
                    label: p.clone(),
                    text: format!("passage {}", i + 1),
                });
            }
            c.choices.push(Choice {
                key: "n".into(),
                label: "none".into(),
                text: "none answers".into(),
            });
            c.choices.push(Choice {
                key: "s".into(),
                label: "several".into(),
                text: "several equally".into(),
            });
        }
        Dimension::Faithfulness => {
            c.prompt =
                "Is the reference answer supported by these passages? (1 not at all - 5 fully)"
                    .into();
            c.answer = turn.answer.clone();
            for g in turn.relevant() {
                c.passages.push(texts.passage(&g.passage_id, "gold"));
            }
            c.choices = ratings();
        }
        Dimension::Quality => {
            c.prompt = "Is the reference answer coherent, helpful and complete for the question? (1 poor - 5 excellent)".into();
            c.answer = turn.answer.clone();
            c.choices = ratings();
        }
    }
    Some(c)
}

/// The card of a flagged item, with the judges' reasons.
pub fn flagged_card(texts: &Texts, f: &FlaggedItem) -> Option<Card> {
    let kind = match f.kind {
        FlagKind::Missing => "missing",
        FlagKind::Gold => "gold",
        FlagKind::Hole => "hole",
    };
    let mut c = base(texts, &f.item, Queue::Flagged, kind, &f.turn_id)?;
    match f.kind {
        FlagKind::Missing => {
            c.prompt = "Is the candidate passage (left) relevant to the question? The current gold is beside it.".into();
            c.passages.push(texts.passage(&f.passage_id, "candidate"));
            if let Some(g) = &f.gold_passage_id {
                c.passages.push(texts.passage(g, "gold"));
            }
        }
        FlagKind::Gold => {
            c.prompt =
                "Is this gold passage relevant to the question? The judges say it is not.".into();
            c.passages.push(texts.passage(&f.passage_id, "gold"));
        }
        FlagKind::Hole => {
            c.prompt = "Is this passage relevant to the question? A run ranks it high, the benchmark never judged it, and the judges say it is relevant.".into();
            c.passages.push(texts.passage(&f.passage_id, "candidate"));
        }
    }
    c.choices = relevance();
    c.why = Some(f.why.clone());
    c.reasons = f.reasons.clone();
    Some(c)
}

const STOPWORDS: &[&str] = &[
    "the", "and", "for", "are", "but", "not", "you", "all", "any", "can", "had", "her", "was",
    "one", "our", "out", "has", "him", "his", "how", "its", "may", "who", "did", "does", "what",
    "when", "where", "which", "why", "with", "this", "that", "there", "their", "they", "them",
    "then", "than", "from", "into", "about", "also", "been", "were", "will", "would", "could",
    "should", "have", "more", "some", "such", "your", "these", "those", "is", "it", "of", "to",
    "in", "on", "a", "an", "do", "be", "me", "my", "we", "tell",
];

/// The question's (and rewrite's) words worth marking: lowercase, at least 3 characters, no
/// stopwords, first occurrence order.
pub(crate) fn question_words(question: &str, rewrite: Option<&str>) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for text in std::iter::once(question).chain(rewrite) {
        for w in text.split(|c: char| !c.is_alphanumeric()) {
            let w = w.to_lowercase();
            if w.chars().count() >= 3 && !STOPWORDS.contains(&w.as_str()) && seen.insert(w.clone())
            {
                out.push(w);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn question_words_skip_stopwords_and_repeats() {
        assert_eq!(
            question_words(
                "What does the Eiffel tower weigh?",
                Some("Eiffel Tower weight")
            ),
            ["eiffel", "tower", "weigh", "weight"]
        );
    }
}
