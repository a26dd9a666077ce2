//! The agents' calls of the turn kinds `[synth.mix]` asks for beyond an answerable question on
//! one passage: for a turn drawn `unanswerable`, the user agent's question that the passages
//! shown do not answer ([`Agents::user_unanswerable`]) and the verifier's grades of the
//! passages the corpus-wide search found for it ([`Agents::unanswerable`]); for a turn drawn
//! `two_passage`, the user agent's question on two passages ([`Agents::user_two_passage`]) and
//! the verifier's verdict on each alone and both together ([`Agents::two_passage`]). Apart
//! from `agents.rs` so each kind's calls sit together.

use mtr_llm::OutputSpec;
use serde_json::{Value, json};

use super::schema::{
    conversational_schema, score_schema, two_passage_question_schema, two_passage_schema,
    unanswerable_question_schema, unanswerable_schema,
};
use super::{Agents, Parsed, PromptPassage, UserAsk, UserProposal, user_context};
use crate::agents::CallLog;
use crate::text_rules::clean;

impl Agents<'_> {
    /// The user agent of a turn drawn `unanswerable`: a question on the subject of the
    /// passages that none of them answers (its `passage` is 0: it has none).
    pub(crate) async fn user_unanswerable(
        &self,
        ask: &UserAsk<'_>,
        sample: u32,
        log: &mut CallLog,
    ) -> Parsed<UserProposal> {
        let rewrite = ask.rewrite;
        let ctx = user_context(self.language, ask);
        let req = self
            .prompts
            .user_unanswerable
            .request(
                &ctx,
                OutputSpec::Schema(unanswerable_question_schema(self.language, rewrite)),
            )?
            .with_sampling(self.proposal_sampling())
            .with_sample(sample);
        let Some(out) = self.call("user", req, false, log).await? else {
            return Ok(None);
        };
        let v = out.value.unwrap_or(Value::Null);
        let field = |k: &str| clean(v.get(k).and_then(Value::as_str).unwrap_or_default());
        let question = field("question");
        let standalone = if rewrite {
            field("standalone")
        } else {
            String::new()
        };
        if question.is_empty() {
            log.roles.entry("user".into()).or_default().parse_failed += 1;
            return Ok(None);
        }
        Ok(Some(UserProposal {
            passage: 0,
            question,
            standalone,
        }))
    }

    /// The verifier of a turn drawn `unanswerable`: for each passage found, 2 = answers the
    /// question, 1 = partly, 0 = no, with the quote that answers.
    pub(crate) async fn unanswerable(
        &self,
        history: &[super::Utter],
        question: &str,
        candidates: &[PromptPassage],
        log: &mut CallLog,
    ) -> Parsed<Vec<(i64, String)>> {
        let n = candidates.len();
        let justify = self.justify();
        let ctx = json!({"history": history, "question": question, "candidates": candidates, "justify": justify});
        let req = self
            .prompts
            .unanswerable
            .request(&ctx, OutputSpec::Schema(unanswerable_schema(n, justify)))?;
        let Some(out) = self.call("unanswerable", req, true, log).await? else {
            return Ok(None);
        };
        let graded = super::grades_of(&out.value.unwrap_or(Value::Null), n);
        if graded.is_none() {
            log.roles
                .entry("unanswerable".into())
                .or_default()
                .parse_failed += 1;
        }
        Ok(graded)
    }
}

/// The user agent's proposal of a turn drawn `two_passage`: two different offered passages
/// (0-based) and the question on both.
pub(crate) struct TwoProposal {
    pub passages: (usize, usize),
    pub proposal: UserProposal,
}

/// The verifier's verdict on a two-passage question: each passage alone (0-2), both
/// together (1-5), and the quote of each passage's part.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TwoPassageVerdict {
    pub a: i64,
    pub b: i64,
    pub both: i64,
    pub quote_a: String,
    pub quote_b: String,
}

impl Agents<'_> {
    /// The user agent of a turn drawn `two_passage`: two of the passages and a question that
    /// needs both.
    pub(crate) async fn user_two_passage(
        &self,
        ask: &UserAsk<'_>,
        sample: u32,
        log: &mut CallLog,
    ) -> Parsed<TwoProposal> {
        let (rewrite, n) = (ask.rewrite, ask.passages.len());
        let ctx = user_context(self.language, ask);
        let schema = two_passage_question_schema(n, self.language, rewrite);
        let req = self
            .prompts
            .user_two_passage
            .request(&ctx, OutputSpec::Schema(schema))?
            .with_sampling(self.proposal_sampling())
            .with_sample(sample);
        let Some(out) = self.call("user", req, false, log).await? else {
            return Ok(None);
        };
        let v = out.value.unwrap_or(Value::Null);
        let field = |k: &str| clean(v.get(k).and_then(Value::as_str).unwrap_or_default());
        let chosen: Vec<i64> = v
            .get("passages")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_i64).collect())
            .unwrap_or_default();
        let question = field("question");
        let standalone = if rewrite {
            field("standalone")
        } else {
            String::new()
        };
        let valid = |i: i64| i >= 1 && i as usize <= n;
        match chosen[..] {
            [a, b] if valid(a) && valid(b) && a != b && !question.is_empty() => {
                Ok(Some(TwoProposal {
                    passages: (a as usize - 1, b as usize - 1),
                    proposal: UserProposal {
                        passage: a as usize - 1,
                        question,
                        standalone,
                    },
                }))
            }
            _ => {
                log.roles.entry("user".into()).or_default().parse_failed += 1;
                Ok(None)
            }
        }
    }

    /// The verifier of a turn drawn `two_passage`: passages `a` and `b` graded alone and
    /// together.
    pub(crate) async fn two_passage(
        &self,
        history: &[super::Utter],
        question: &str,
        (a, b): (&PromptPassage, &PromptPassage),
        log: &mut CallLog,
    ) -> Parsed<TwoPassageVerdict> {
        let justify = self.justify();
        let ctx =
            json!({"history": history, "question": question, "a": a, "b": b, "justify": justify});
        let req = self
            .prompts
            .two_passage
            .request(&ctx, OutputSpec::Schema(two_passage_schema(justify)))?;
        let Some(out) = self.call("two_passage", req, true, log).await? else {
            return Ok(None);
        };
        let v = out.value.unwrap_or(Value::Null);
        let int = |k: &str| v.get(k).and_then(Value::as_i64);
        let text = |k: &str| {
            v.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        match (int("a"), int("b"), int("both")) {
            (Some(ga), Some(gb), Some(both))
                if (0..=2).contains(&ga) && (0..=2).contains(&gb) && (1..=5).contains(&both) =>
            {
                Ok(Some(TwoPassageVerdict {
                    a: ga,
                    b: gb,
                    both,
                    quote_a: text("quote_a"),
                    quote_b: text("quote_b"),
                }))
            }
            _ => {
                log.roles
                    .entry("two_passage".into())
                    .or_default()
                    .parse_failed += 1;
                Ok(None)
            }
        }
    }
}

impl Agents<'_> {
    /// The user agent of a turn drawn `conversational`: the message (thanks, a request to
    /// clarify) and the assistant's reply.
    pub(crate) async fn user_conversational(
        &self,
        history: &[super::Utter],
        (sample, feedback): (u32, Option<&str>),
        log: &mut CallLog,
    ) -> Parsed<(String, String)> {
        let ctx =
            json!({"language": self.language.name(), "history": history, "feedback": feedback});
        let req = self
            .prompts
            .user_conversational
            .request(&ctx, OutputSpec::Schema(conversational_schema()))?
            .with_sampling(self.proposal_sampling())
            .with_sample(sample);
        let Some(out) = self.call("user", req, false, log).await? else {
            return Ok(None);
        };
        let v = out.value.unwrap_or(Value::Null);
        let field = |k: &str| clean(v.get(k).and_then(Value::as_str).unwrap_or_default());
        let (message, reply) = (field("message"), field("reply"));
        if message.is_empty() || reply.is_empty() {
            log.roles.entry("user".into()).or_default().parse_failed += 1;
            return Ok(None);
        }
        Ok(Some((message, reply)))
    }

    /// The verifier of a turn drawn `conversational`: how much the message needs a new
    /// search, 1-5.
    pub(crate) async fn conversational(
        &self,
        history: &[super::Utter],
        message: &str,
        log: &mut CallLog,
    ) -> Parsed<i64> {
        let justify = self.justify();
        let ctx = json!({"history": history, "question": message, "justify": justify});
        let schema = score_schema("conversational", justify);
        let req = self
            .prompts
            .conversational
            .request(&ctx, OutputSpec::Schema(schema))?;
        self.score("conversational", req, log).await
    }
}
