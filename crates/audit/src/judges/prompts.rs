//! The audit's prompt templates (`prompts/audit/*.j2`, built into the binary, overridable
//! with a folder) and the render contexts they receive.
//!
//! Every prompt shows the current question with the conversation before it, and is laid out
//! so that what is shared comes first: one system message common to all four dimensions, then
//! the conversation and question (shared by every judgement of a turn), then what is judged
//! (passage, pool, answer), then the task. Servers with prefix caching reuse the prefix across
//! dimensions, golds and trials of a turn. A passage's title is not repeated when its text
//! already starts with it, and no passage appears twice in one prompt.
//!
//! A prompt must fit the judge's context: [`ContextBudget::fit`] drops the oldest turns of the
//! conversation until the prompt (counted with tiktoken, plus a safety margin and room for the
//! answer) fits, and says when even the prompt without any history does not fit, so that the
//! caller records it as skipped (`too_long`) instead of sending a prompt the server would cut.

use std::collections::HashSet;
use std::path::Path;

use mtr_core::model::{Speaker, Utterance};
use mtr_core::{Dialogue, Passage};
use mtr_llm::{ChatRequest, JsonSchema, OutputSpec, Prompt};
use serde::Serialize;

use crate::dimension::Dimension;
use crate::error::{AuditError, Result};
use crate::judges::record::{pick_schema, rating_schema};

const ALIGNMENT: &str = include_str!("../../../../prompts/audit/alignment.j2");
const COMPLETENESS: &str = include_str!("../../../../prompts/audit/completeness.j2");
const FAITHFULNESS: &str = include_str!("../../../../prompts/audit/faithfulness.j2");
const QUALITY: &str = include_str!("../../../../prompts/audit/quality.j2");
const HUMAN_COMPLETENESS: &str = include_str!("../../../../prompts/audit/human_completeness.j2");

/// The four loaded templates, and the one of the human calibration's answer completeness.
#[derive(Debug, Clone)]
pub struct AuditPrompts {
    alignment: Prompt,
    completeness: Prompt,
    faithfulness: Prompt,
    quality: Prompt,
    /// Answer completeness with the evidence passages shown (human calibration only: MTRAG's
    /// annotators rated completeness against the passages).
    human_completeness: Prompt,
}

/// File name (without `.j2`) and request label of the human-calibration completeness prompt.
pub(crate) const HUMAN_COMPLETENESS_NAME: &str = "human_completeness";

fn prompt_err(e: mtr_llm::LlmError) -> AuditError {
    match e {
        mtr_llm::LlmError::Prompt { name, message } => AuditError::Prompt { name, message },
        other => AuditError::Prompt {
            name: "audit".into(),
            message: other.to_string(),
        },
    }
}

impl AuditPrompts {
    /// The templates shipped with mtr.
    pub fn builtin() -> Result<Self> {
        Ok(Self {
            alignment: Prompt::parse("audit/alignment", ALIGNMENT).map_err(prompt_err)?,
            completeness: Prompt::parse("audit/completeness", COMPLETENESS).map_err(prompt_err)?,
            faithfulness: Prompt::parse("audit/faithfulness", FAITHFULNESS).map_err(prompt_err)?,
            quality: Prompt::parse("audit/quality", QUALITY).map_err(prompt_err)?,
            human_completeness: Prompt::parse("audit/human_completeness", HUMAN_COMPLETENESS)
                .map_err(prompt_err)?,
        })
    }

    /// Templates from a folder holding `alignment.j2`, `completeness.j2`, `faithfulness.j2`,
    /// `quality.j2`; a missing file falls back to the built-in one.
    pub fn from_dir(dir: &Path) -> Result<Self> {
        let mut p = Self::builtin()?;
        for dim in Dimension::ALL {
            let f = dir.join(format!("{}.j2", dim.name()));
            if f.is_file() {
                *p.get_mut(dim) = Prompt::load(&f).map_err(prompt_err)?;
            }
        }
        let f = dir.join(format!("{HUMAN_COMPLETENESS_NAME}.j2"));
        if f.is_file() {
            p.human_completeness = Prompt::load(&f).map_err(prompt_err)?;
        }
        Ok(p)
    }

    /// The prompt of a dimension.
    pub fn get(&self, dim: Dimension) -> &Prompt {
        match dim {
            Dimension::Alignment => &self.alignment,
            Dimension::Completeness => &self.completeness,
            Dimension::Faithfulness => &self.faithfulness,
            Dimension::Quality => &self.quality,
        }
    }

    fn get_mut(&mut self, dim: Dimension) -> &mut Prompt {
        match dim {
            Dimension::Alignment => &mut self.alignment,
            Dimension::Completeness => &mut self.completeness,
            Dimension::Faithfulness => &mut self.faithfulness,
            Dimension::Quality => &mut self.quality,
        }
    }

    /// Hash over the templates of the audited dimensions (the fingerprint's `prompts`).
    pub fn hash(&self, dims: &[Dimension]) -> String {
        mtr_llm::prompts_hash(dims.iter().map(|d| self.get(*d)))
    }

    /// The fingerprint's `prompts` hash: the audited dimensions' templates, and the human
    /// calibration's completeness template when human labels are calibrated against.
    pub(crate) fn hash_with_human(&self, dims: &[Dimension], human: bool) -> String {
        if !human {
            return self.hash(dims);
        }
        mtr_llm::prompts_hash(
            dims.iter()
                .map(|d| self.get(*d))
                .chain(std::iter::once(&self.human_completeness)),
        )
    }

    /// The human calibration's answer-completeness template.
    pub(crate) fn human_completeness_prompt(&self) -> &Prompt {
        &self.human_completeness
    }
}

/// A passage as shown to a judge: the title line only when the text does not start with it.
pub fn passage_display(p: &Passage) -> String {
    let title = p.title.trim();
    let text = p.text.trim();
    if title.is_empty() || text.starts_with(title) {
        text.to_string()
    } else {
        format!("{title}\n{text}")
    }
}

#[derive(Serialize, Clone, Copy)]
struct HistoryLine<'a> {
    speaker: &'static str,
    text: &'a str,
}

/// What every judgement of one turn shares: the conversation before it and the question.
#[derive(Serialize)]
pub struct TurnView<'a> {
    history: Vec<HistoryLine<'a>>,
    question: &'a str,
}

impl<'a> TurnView<'a> {
    /// The view of turn `turn` (0-based) of `dialogue`.
    pub fn new(dialogue: &'a Dialogue, turn: usize) -> Self {
        Self::from_parts(dialogue.history(turn), &dialogue.turns[turn].user)
    }

    pub(crate) fn from_parts(history: Vec<Utterance<'a>>, question: &'a str) -> Self {
        let history = history
            .into_iter()
            .map(|u| HistoryLine {
                speaker: if u.speaker == Speaker::User {
                    "user"
                } else {
                    "agent"
                },
                text: u.text,
            })
            .collect();
        Self { history, question }
    }

    /// Utterances in the conversation before the question.
    pub(crate) fn history_len(&self) -> usize {
        self.history.len()
    }

    /// The same view without the first `n` utterances; the history then starts at a user
    /// utterance (a turn is dropped with its answer).
    pub(crate) fn without_oldest(&self, n: usize) -> TurnView<'a> {
        let mut from = n.min(self.history.len());
        while from < self.history.len() && self.history[from].speaker != "user" {
            from += 1;
        }
        TurnView {
            history: self.history[from..].to_vec(),
            question: self.question,
        }
    }
}

/// How many prompt tokens a judge's context leaves: its context size, less the answer's
/// `max_tokens`, less a safety margin for tokenizer differences (prompts are counted with
/// tiktoken, which other models' tokenizers differ from by about 10-20%).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ContextBudget {
    /// The smallest context (tokens) among the judges.
    pub context_tokens: u64,
    /// Completion tokens reserved for the answer.
    pub max_output_tokens: u64,
}

/// Share of the prompt's counted tokens added as a safety margin.
pub(crate) const CONTEXT_MARGIN: f64 = 0.2;

/// A prompt fitted to a context.
#[derive(Debug, Clone)]
pub(crate) enum Fitted {
    /// The request fits after dropping `dropped` utterances of history (0: nothing dropped).
    Fits {
        request: Box<ChatRequest>,
        dropped: usize,
    },
    /// Even without any history the prompt needs `tokens` (with margin) of `limit`.
    TooLong { tokens: u64, limit: u64 },
}

impl ContextBudget {
    /// Prompt tokens (margin included) a prompt may use.
    pub(crate) fn limit(&self) -> u64 {
        self.context_tokens.saturating_sub(self.max_output_tokens)
    }

    /// Counted prompt tokens with the safety margin.
    pub(crate) fn needed(req: &ChatRequest) -> u64 {
        let n = mtr_llm::tokens::count_messages("", &req.messages) as f64;
        (n * (1.0 + CONTEXT_MARGIN)).ceil() as u64
    }

    /// Renders with the whole history, then without the oldest turns, one turn at a time, until
    /// the prompt fits.
    pub(crate) fn fit(
        &self,
        view: &TurnView<'_>,
        render: &dyn Fn(&TurnView<'_>) -> Result<ChatRequest>,
    ) -> Result<Fitted> {
        let limit = self.limit();
        let mut dropped = 0;
        loop {
            let v = view.without_oldest(dropped);
            let req = render(&v)?;
            let need = Self::needed(&req);
            if need <= limit {
                return Ok(Fitted::Fits {
                    request: Box::new(req),
                    dropped: view.history_len() - v.history_len(),
                });
            }
            if v.history_len() == 0 {
                return Ok(Fitted::TooLong {
                    tokens: need,
                    limit,
                });
            }
            dropped = view.history_len() - v.history_len() + 1;
        }
    }
}

/// Fits a prompt to `budget` ([`ContextBudget::fit`]), or renders it whole when no judge
/// declares a context size: what every renderer (benchmark units, human calibration) does.
pub(crate) fn fit_to(
    budget: Option<&ContextBudget>,
    view: &TurnView<'_>,
    render: &dyn Fn(&TurnView<'_>) -> Result<ChatRequest>,
) -> Result<Fitted> {
    match budget {
        Some(b) => b.fit(view, render),
        None => Ok(Fitted::Fits {
            request: Box::new(render(view)?),
            dropped: 0,
        }),
    }
}

impl Fitted {
    /// The request of a unit that was screened in; a unit too long for the context was
    /// screened out before judging, so asking for its request is an internal error, worded by
    /// `too_long(tokens, limit)`.
    pub(crate) fn request(self, too_long: impl FnOnce(u64, u64) -> String) -> Result<ChatRequest> {
        match self {
            Fitted::Fits { request, .. } => Ok(*request),
            Fitted::TooLong { tokens, limit } => Err(AuditError::Internal(too_long(tokens, limit))),
        }
    }
}

#[derive(Serialize)]
struct Ctx<'a> {
    #[serde(flatten)]
    turn: &'a TurnView<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    passage: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    passages: Option<&'a [String]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    answer: Option<&'a str>,
}

fn rating_output() -> OutputSpec {
    OutputSpec::Schema(JsonSchema::new("audit_rating", rating_schema()))
}

impl AuditPrompts {
    fn request(&self, dim: Dimension, ctx: &Ctx<'_>, output: OutputSpec) -> Result<ChatRequest> {
        let p = self.get(dim);
        let req = p.request(ctx, output).map_err(prompt_err)?;
        let req = if dim.is_rating() {
            req.with_rating("rating", 1, 5)
        } else {
            req
        };
        Ok(req.with_label(dim.name()))
    }

    /// Alignment: one gold passage.
    pub fn alignment(&self, turn: &TurnView<'_>, passage: &str) -> Result<ChatRequest> {
        self.request(
            Dimension::Alignment,
            &Ctx {
                turn,
                passage: Some(passage),
                passages: None,
                answer: None,
            },
            rating_output(),
        )
    }

    /// Completeness: a pool in display order (gold and negatives, each once).
    pub fn completeness(&self, turn: &TurnView<'_>, pool: &[String]) -> Result<ChatRequest> {
        let distinct: HashSet<&String> = pool.iter().collect();
        if distinct.len() != pool.len() {
            return Err(AuditError::Internal(
                "a discriminability pool shows a passage twice".into(),
            ));
        }
        let out = OutputSpec::Schema(JsonSchema::new(
            format!("audit_pick_{}", pool.len()),
            pick_schema(pool.len()),
        ));
        self.request(
            Dimension::Completeness,
            &Ctx {
                turn,
                passage: None,
                passages: Some(pool),
                answer: None,
            },
            out,
        )
    }

    /// Faithfulness: the answer and the turn's gold passages (deduplicated by text).
    pub fn faithfulness(
        &self,
        turn: &TurnView<'_>,
        passages: &[String],
        answer: &str,
    ) -> Result<ChatRequest> {
        let mut seen = HashSet::new();
        let unique: Vec<String> = passages
            .iter()
            .filter(|p| seen.insert(crate::items::pool::text_key(p)))
            .cloned()
            .collect();
        self.request(
            Dimension::Faithfulness,
            &Ctx {
                turn,
                passage: None,
                passages: Some(&unique),
                answer: Some(answer),
            },
            rating_output(),
        )
    }

    /// Answer completeness against the evidence passages (human calibration of MTRAG's
    /// `completeness`), on the rating scale.
    pub(crate) fn human_completeness(
        &self,
        turn: &TurnView<'_>,
        passages: &[String],
        answer: &str,
    ) -> Result<ChatRequest> {
        let ctx = Ctx {
            turn,
            passage: None,
            passages: Some(passages),
            answer: Some(answer),
        };
        let req = self
            .human_completeness
            .request(&ctx, rating_output())
            .map_err(prompt_err)?
            .with_rating("rating", 1, 5);
        Ok(req.with_label(HUMAN_COMPLETENESS_NAME))
    }

    /// Quality: the answer alone.
    pub fn quality(&self, turn: &TurnView<'_>, answer: &str) -> Result<ChatRequest> {
        self.request(
            Dimension::Quality,
            &Ctx {
                turn,
                passage: None,
                passages: None,
                answer: Some(answer),
            },
            rating_output(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mtr_core::{Gold, Tags, Turn};

    pub(crate) fn dialogue() -> Dialogue {
        let t = |id: &str, user: &str, answer: &str| Turn {
            id: id.into(),
            user: user.into(),
            rewrite: None,
            answer: Some(answer.into()),
            gold: vec![Gold {
                passage_id: "p1".into(),
                grade: 1,
            }],
            tags: Tags::default(),
        };
        Dialogue {
            id: "d1".into(),
            turns: vec![
                t(
                    "d1::1",
                    "Where do the Arizona Cardinals play?",
                    "At State Farm Stadium in Glendale.",
                ),
                t(
                    "d1::2",
                    "Did they ever play abroad?",
                    "Yes, in London in 2017 and in Mexico in 2005.",
                ),
            ],
            meta: Default::default(),
        }
    }

    fn text(req: &ChatRequest) -> String {
        req.messages
            .iter()
            .map(|m| format!("--- {:?}\n{}\n", m.role, m.content))
            .collect()
    }

    #[test]
    fn every_prompt_shows_history_and_current_question() {
        let p = AuditPrompts::builtin().unwrap();
        let d = dialogue();
        let view = TurnView::new(&d, 1);
        let passage = "2017 Arizona Cardinals season\nThe Cardinals played the Rams at Twickenham Stadium in London.".to_string();
        let reqs = [
            p.alignment(&view, &passage).unwrap(),
            p.completeness(&view, &[passage.clone(), "Another passage.".into()])
                .unwrap(),
            p.faithfulness(
                &view,
                &[passage.clone(), passage.clone()],
                "Yes, in London.",
            )
            .unwrap(),
            p.quality(&view, "Yes, in London.").unwrap(),
        ];
        let system = &reqs[0].messages[0];
        for r in &reqs {
            assert_eq!(r.messages.len(), 2);
            assert_eq!(&r.messages[0], system, "one shared system message");
            let u = &r.messages[1].content;
            assert!(
                u.contains("User: Where do the Arizona Cardinals play?"),
                "{u}"
            );
            assert!(u.contains("Assistant: At State Farm Stadium"), "{u}");
            assert!(u.contains("User: Did they ever play abroad?"), "{u}");
            // the shared prefix: the conversation comes before anything dimension-specific
            assert!(
                u.starts_with("## Conversation so far\nUser: Where do"),
                "{u}"
            );
            assert!(u.find("justification").unwrap() > u.find("## Task").unwrap());
        }
        // the faithfulness prompt shows a passage once even when two golds have the same text
        assert_eq!(reqs[2].messages[1].content.matches("Twickenham").count(), 1);
        assert!(p.completeness(&view, &[passage.clone(), passage]).is_err());
        insta::assert_snapshot!("alignment", text(&reqs[0]));
        insta::assert_snapshot!("completeness", text(&reqs[1]));
        insta::assert_snapshot!("faithfulness", text(&reqs[2]));
        insta::assert_snapshot!("quality", text(&reqs[3]));
    }

    #[test]
    fn first_turn_says_so_and_titles_are_not_repeated() {
        let p = AuditPrompts::builtin().unwrap();
        let d = dialogue();
        let r = p.quality(&TurnView::new(&d, 0), "x").unwrap();
        assert!(r.messages[1].content.contains("(this is the first turn)"));
        let pass = Passage {
            id: "p".into(),
            title: "T".into(),
            text: "T\nbody".into(),
            doc_id: None,
            meta: Default::default(),
        };
        assert_eq!(passage_display(&pass), "T\nbody");
        let pass = Passage {
            text: "body".into(),
            ..pass
        };
        assert_eq!(passage_display(&pass), "T\nbody");
    }
}
