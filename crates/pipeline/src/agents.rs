//! The four agents of a dialogue turn, as LLM calls: the user agent (picks evidence from its
//! path and asks), the humanizer (rewrites later questions the way people type, guarded), the
//! answerer (sees only the evidence and the history) and the verifier's three judges
//! (answerability, corpus-wide uniqueness, faithfulness), and the relevance judge of the
//! verifier's gate (a reranker or embedding endpoint: one score per passage). Each call goes
//! through the LLM layer's cache; every call's usage is added to a [`CallLog`] so costs can be
//! reported per dialogue and per role. A parse failure is returned as `None` and counted by the caller as a
//! rejection, never turned into a score. The text rules that shape and check what the agents
//! write are in [`crate::text_rules`].

use mtr_llm::{ChatRequest, ChatResult, Llm, LlmError, OutputSpec, Role, Sampling};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::config::{GenerationOptions, HumanizerOptions};
use crate::error::{Error, Result};
use crate::lang::Language;
use crate::prompts::SynthPrompts;
use crate::style::{Style, TurnStyle};
use crate::voices::{Persona, Voices};

mod kinds;
mod partial_proposal;
mod persona;
mod schema;
mod usage;

use crate::text_rules::{
    HumanizerGuard, clean, follow_up_example, humanizer_guard, proposal_max_tokens,
    without_source_preamble,
};
pub(crate) use kinds::TwoPassageVerdict;
pub(crate) use partial_proposal::{PartialProposal, partial_proposal_room};
pub(crate) use persona::{topic_passages, topic_persona_request, write_topic_personas};
pub(crate) use schema::partial_question_schema;
pub(crate) use schema::{answerability_schema, score_schema, uniqueness_schema};
pub(crate) use schema::{conversational_schema, two_passage_question_schema, two_passage_schema};
pub(crate) use schema::{proposal_schema, styled_proposal_schema};
pub(crate) use schema::{unanswerable_question_schema, unanswerable_schema};
pub(crate) use usage::CallLog;
use usage::usd_to_pico;

/// `s` with room for the longest reply the user agent's schema allows in `lang`, with or
/// without a standalone rewrite ([`proposal_max_tokens`]), where its `max_tokens` is lower
/// (the synthesis and its dry run).
pub(crate) fn with_proposal_room(mut s: Sampling, lang: &Language, rewrite: bool) -> Sampling {
    let room = proposal_max_tokens(lang, rewrite);
    s.max_tokens = Some(s.max_tokens.map_or(room, |m| m.max(room)));
    s
}

/// What the user agent is asked with on one attempt of one turn, for the synthesis and its
/// dry run alike.
pub(crate) struct UserAsk<'a> {
    pub(crate) history: &'a [Utter],
    /// Earlier questions the history does not show.
    pub(crate) asked: &'a [String],
    pub(crate) passages: &'a [PromptPassage],
    /// The dialogue's first turn.
    pub(crate) first: bool,
    /// The first turn after a topic switch.
    pub(crate) switch: bool,
    /// Why the last attempt was rejected, for the next.
    pub(crate) feedback: Option<&'a str>,
    /// Whether it asks for a standalone rewrite too
    /// ([`GenerationOptions::rewrites`](crate::config::GenerationOptions::rewrites)).
    pub(crate) rewrite: bool,
    /// Who the user is (`[synth.personas]`), shown after the passages and the conversation.
    pub(crate) persona: Option<&'a Persona>,
    /// Real questions to imitate, never copy (`[synth.seed_questions]`), drawn per attempt.
    pub(crate) examples: Vec<String>,
}

impl<'a> UserAsk<'a> {
    /// The ask with the dialogue's persona and the attempt's seed questions.
    pub(crate) fn voiced(mut self, persona: Option<&'a Persona>, examples: Vec<String>) -> Self {
        self.persona = persona;
        self.examples = examples;
        self
    }
}

/// What the user agent's prompt is rendered from.
pub(crate) fn user_context(lang: &Language, ask: &UserAsk<'_>) -> Value {
    json!({
        "language": lang.name(), "history": ask.history, "asked": ask.asked,
        "passages": ask.passages, "first": ask.first, "switch": ask.switch,
        "feedback": ask.feedback, "example": follow_up_example(lang), "rewrite": ask.rewrite,
        "persona": ask.persona, "seeds": ask.examples,
    })
}

/// This attempt's draw: the sample index (a new answer per attempt, cached per index) and the
/// styled profile's draw for the turn (None: `concise`).
pub(crate) struct UserDraw {
    pub(crate) sample: u32,
    pub(crate) style: Option<TurnStyle>,
}

/// The shortest and longest a styled humanizer's rewrite may be, times the original.
const STYLED_HUMANIZER_RATIO: (f64, f64) = (0.6, 1.6);

/// `s` with room for a styled message of `t.length` units (two tokens a word, three a CJK
/// character, a short standalone question with `rewrite`, the JSON around them).
pub(crate) fn styled_proposal_room(
    mut s: Sampling,
    lang: &Language,
    rewrite: bool,
    t: &TurnStyle,
) -> Sampling {
    let per_unit = if lang.is_cjk() { 3 } else { 2 };
    let standalone = if rewrite {
        proposal_max_tokens(lang, false)
    } else {
        0
    };
    let room = t.length as u32 * per_unit + standalone + 48;
    s.max_tokens = Some(s.max_tokens.map_or(room, |m| m.max(room)));
    s
}

/// A passage as the prompts show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct PromptPassage {
    pub title: String,
    pub section: Option<String>,
    pub text: String,
}

impl PromptPassage {
    /// A chunk as shown to agents. Markdown heading markers are removed from its lines so
    /// that a passage's `## Section` cannot be mistaken for a heading of the prompt itself.
    pub(crate) fn of(c: &crate::chunk::Chunk) -> Self {
        let text = c
            .text
            .lines()
            .map(|l| match crate::curate::heading(l) {
                Some((_, h)) => h,
                None => l,
            })
            .collect::<Vec<_>>()
            .join("\n");
        Self {
            title: c.title.clone(),
            section: c.section.clone(),
            text,
        }
    }
}

/// One utterance of the history shown to agents.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Utter {
    pub speaker: String,
    pub text: String,
}

/// True when the answer was cut at `max_tokens`.
fn cut(out: &ChatResult) -> bool {
    out.finish_reason.as_deref() == Some("length")
}

/// What the user agent proposes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct UserProposal {
    /// 0-based index into the offered passages.
    pub passage: usize,
    pub question: String,
    pub standalone: String,
}

/// The agents with their prompts, models and options.
pub(crate) struct Agents<'a> {
    pub llm: &'a Llm,
    pub prompts: &'a SynthPrompts,
    pub opts: &'a GenerationOptions,
    pub language: &'a Language,
    /// Endpoint name of the verifier's judge.
    pub verifier: String,
    /// The styled profile in force (`production`, `like:BENCH`); None: `concise`, today's
    /// prompts and caps.
    pub style: Option<&'a Style>,
    /// The synthesis seed, for the style's per-turn draws.
    pub seed: u64,
    /// The personas and seed questions (`crate::voices`; empty: none).
    pub voices: &'a Voices,
    /// `--time-budget`'s deadline: no call starts after it (None: no budget).
    pub deadline: Option<crate::clock::Deadline>,
}

/// The outcome of one call: `None` when the output could not be parsed.
type Parsed<T> = Result<Option<T>>;

impl Agents<'_> {
    fn generator_sampling(&self) -> Sampling {
        let mut s = self.llm.sampling(Role::Generator).clone();
        s.max_tokens = Some(
            s.max_tokens
                .map_or(self.opts.max_tokens, |m| m.min(self.opts.max_tokens)),
        );
        s
    }

    /// The user agent's sampling: the generator's, with room for the longest reply its
    /// schema allows ([`proposal_max_tokens`]) where `max_tokens` is lower.
    fn proposal_sampling(&self) -> Sampling {
        with_proposal_room(self.generator_sampling(), self.language, self.opts.rewrites)
    }

    /// Whether the verifier's judges write a justification ([`judges_justify`]).
    fn justify(&self) -> bool {
        judges_justify(self.llm, &self.verifier)
    }

    /// One call; a free-text answer cut at `max_tokens` is asked again once with twice the
    /// room, and if cut again is a failed attempt (`None`, counted as `truncated`).
    async fn call(
        &self,
        role: &str,
        req: ChatRequest,
        judge: bool,
        log: &mut CallLog,
    ) -> Result<Option<ChatResult>> {
        let text = matches!(req.output, OutputSpec::Text);
        let first = self.call_once(role, req.clone(), judge, log).await?;
        let Some(out) = first else { return Ok(None) };
        if !(text && cut(&out)) {
            return Ok(Some(out));
        }
        let mut roomier = req;
        let mut s = roomier.sampling.clone().unwrap_or_else(|| {
            if judge {
                self.llm.sampling(Role::Judges).clone()
            } else {
                self.generator_sampling()
            }
        });
        s.max_tokens = Some(s.max_tokens.unwrap_or(512).saturating_mul(2));
        roomier.sampling = Some(s);
        match self.call_once(role, roomier, judge, log).await? {
            Some(out) if !cut(&out) => Ok(Some(out)),
            Some(_) => {
                let r = log.roles.entry(role.to_string()).or_default();
                r.truncated += 1;
                tracing::debug!(role, "answer cut at max_tokens twice; attempt dropped");
                Ok(None)
            }
            None => Ok(None),
        }
    }

    async fn call_once(
        &self,
        role: &str,
        req: ChatRequest,
        judge: bool,
        log: &mut CallLog,
    ) -> Result<Option<ChatResult>> {
        let start_by = self.deadline.as_ref().and_then(|d| d.start_by());
        let req = req.with_label(format!("synth/{role}")).start_by(start_by);
        // each call in its own task: the generation loop polls every dialogue from one task,
        // and HTTP handling done there would queue behind the other dialogues' work
        let target = if judge {
            mtr_llm::client::Target::Endpoint(self.verifier.clone())
        } else {
            mtr_llm::client::Target::Role(Role::Generator)
        };
        let res = self.llm.spawn_chat(target, req).await;
        let r = log.roles.entry(role.to_string()).or_default();
        r.calls += 1;
        match res {
            Ok(out) => {
                r.cached += u64::from(out.cached);
                r.prompt_tokens += out.usage.prompt_tokens;
                r.completion_tokens += out.usage.completion_tokens;
                r.cost_pusd += usd_to_pico(self.list_price(&out));
                let models = log.models.entry(role.to_string()).or_default();
                if !models.contains(&out.model) {
                    models.push(out.model.clone());
                    models.sort();
                }
                if out.status.is_ok() {
                    Ok(Some(out))
                } else {
                    r.parse_failed += 1;
                    Ok(None)
                }
            }
            Err(LlmError::Parse { .. }) => {
                r.parse_failed += 1;
                Ok(None)
            }
            Err(e) => Err(Error::Llm(e)),
        }
    }

    /// What the call costs at the endpoint's list price, computed from its usage the same way
    /// whether it was paid now or served from the cache, so per-dialogue costs do not depend
    /// on what an earlier (interrupted) run already paid.
    fn list_price(&self, out: &ChatResult) -> f64 {
        self.llm
            .config()
            .endpoint(&out.endpoint)
            .map(|e| e.cost(out.usage.prompt_tokens, out.usage.completion_tokens))
            .unwrap_or(out.cost_usd)
    }

    /// The user agent: picks one of `passages` and asks about it. Where the endpoint enforces
    /// patterns, the question and its standalone version are one short sentence that ends
    /// with a question mark ([`question_pattern`](crate::text_rules::question_pattern));
    /// everywhere the caller checks them with
    /// [`question_problem`](crate::text_rules::question_problem).
    pub(crate) async fn user(
        &self,
        ask: &UserAsk<'_>,
        draw: UserDraw,
        log: &mut CallLog,
    ) -> Parsed<UserProposal> {
        let rewrite = ask.rewrite;
        let passages = ask.passages;
        let mut ctx = user_context(self.language, ask);
        let UserDraw { sample, style } = draw;
        let req = match style {
            None => self
                .prompts
                .user_for(self.language)
                .request(
                    &ctx,
                    OutputSpec::Schema(proposal_schema(passages.len(), self.language, rewrite)),
                )?
                .with_sampling(self.proposal_sampling()),
            Some(t) => {
                ctx["style"] = json!(t);
                self.prompts
                    .user_styled
                    .request(
                        &ctx,
                        OutputSpec::Schema(styled_proposal_schema(passages.len(), rewrite)),
                    )?
                    .with_sampling(styled_proposal_room(
                        self.generator_sampling(),
                        self.language,
                        rewrite,
                        &t,
                    ))
            }
        }
        .with_sample(sample);
        let Some(out) = self.call("user", req, false, log).await? else {
            return Ok(None);
        };
        let v = out.value.unwrap_or(Value::Null);
        let passage = v.get("passage").and_then(Value::as_i64).unwrap_or(0);
        let question = clean(
            v.get("question")
                .and_then(Value::as_str)
                .unwrap_or_default(),
        );
        // a standalone version the prompt did not ask for is not used
        let standalone = if rewrite {
            clean(
                v.get("standalone")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
            )
        } else {
            String::new()
        };
        if passage < 1 || passage as usize > passages.len() || question.is_empty() {
            log.roles.entry("user".into()).or_default().parse_failed += 1;
            return Ok(None);
        }
        Ok(Some(UserProposal {
            passage: passage as usize - 1,
            question,
            standalone,
        }))
    }

    /// The humanizer's rewrite, or the guard that rejected it (`Err`), or `None` if the call
    /// could not be parsed.
    pub(crate) async fn humanize(
        &self,
        history: &[Utter],
        question: &str,
        (switch, style): (bool, Option<TurnStyle>),
        log: &mut CallLog,
    ) -> Result<Option<std::result::Result<String, HumanizerGuard>>> {
        let ctx = json!({"language": self.language.name(), "history": history, "question": question, "switch": switch, "style": style});
        let (prompt, guard) = match style {
            None => (&self.prompts.humanize, self.opts.humanizer.clone()),
            // a styled rewrite keeps the message's length: the concise ratios would cut it
            Some(_) => (
                &self.prompts.humanize_styled,
                HumanizerOptions {
                    min_ratio: STYLED_HUMANIZER_RATIO.0,
                    max_ratio: STYLED_HUMANIZER_RATIO.1,
                    ..self.opts.humanizer.clone()
                },
            ),
        };
        let req = prompt
            .request(&ctx, OutputSpec::Text)?
            .with_sampling(self.generator_sampling());
        let Some(out) = self.call("humanizer", req, false, log).await? else {
            return Ok(None);
        };
        Ok(Some(humanizer_guard(
            question,
            &clean(&out.text),
            &guard,
            self.language,
        )))
    }

    /// The answerer: sees only the evidence and the history.
    pub(crate) async fn answer(
        &self,
        passage: &PromptPassage,
        history: &[Utter],
        question: &str,
        sample: u32,
        log: &mut CallLog,
    ) -> Parsed<String> {
        let ctx = json!({"language": self.language.name(), "passage": passage, "history": history, "question": question});
        let req = self
            .prompts
            .answer
            .request(&ctx, OutputSpec::Text)?
            .with_sampling(self.generator_sampling())
            .with_sample(sample);
        let Some(out) = self.call("answerer", req, false, log).await? else {
            return Ok(None);
        };
        let a = without_source_preamble(&clean(&out.text));
        Ok((!a.is_empty()).then_some(a))
    }

    /// Answerability of the question from the evidence, 1-5.
    /// Answerability 1-5 and the judge's quote of the answering sentence (checked by the
    /// caller against the passage with
    /// [`quote_supported`](crate::text_rules::quote_supported)).
    pub(crate) async fn answerability(
        &self,
        history: &[Utter],
        question: &str,
        passage: &PromptPassage,
        log: &mut CallLog,
    ) -> Parsed<(i64, String)> {
        let justify = self.justify();
        let ctx = json!({"history": history, "question": question, "passage": passage, "justify": justify});
        let req = self
            .prompts
            .answerability
            .request(&ctx, OutputSpec::Schema(answerability_schema(justify)))?;
        let Some(out) = self.call("answerability", req, true, log).await? else {
            return Ok(None);
        };
        let v = out.value.unwrap_or(Value::Null);
        match v.get("score").and_then(Value::as_i64) {
            Some(s) if (1..=5).contains(&s) => {
                let quote = v
                    .get("quote")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                Ok(Some((s, quote)))
            }
            _ => {
                log.roles
                    .entry("answerability".into())
                    .or_default()
                    .parse_failed += 1;
                Ok(None)
            }
        }
    }

    /// Faithfulness of the answer to the evidence, 1-5.
    pub(crate) async fn faithfulness(
        &self,
        history: &[Utter],
        question: &str,
        passage: &PromptPassage,
        answer: &str,
        log: &mut CallLog,
    ) -> Parsed<i64> {
        let justify = self.justify();
        let ctx = json!({"history": history, "question": question, "passage": passage, "answer": answer, "justify": justify});
        let req = self.prompts.faithfulness.request(
            &ctx,
            OutputSpec::Schema(score_schema("faithfulness", justify)),
        )?;
        self.score("faithfulness", req, log).await
    }

    async fn score(&self, role: &str, req: ChatRequest, log: &mut CallLog) -> Parsed<i64> {
        let Some(out) = self.call(role, req, true, log).await? else {
            return Ok(None);
        };
        let s = out
            .value
            .as_ref()
            .and_then(|v| v.get("score"))
            .and_then(Value::as_i64);
        match s {
            Some(s) if (1..=5).contains(&s) => Ok(Some(s)),
            _ => {
                log.roles.entry(role.into()).or_default().parse_failed += 1;
                Ok(None)
            }
        }
    }

    /// For each candidate: 2 = answers as well as the reference, 1 = partly, 0 = no.
    pub(crate) async fn uniqueness(
        &self,
        history: &[Utter],
        question: &str,
        reference: &PromptPassage,
        candidates: &[PromptPassage],
        log: &mut CallLog,
    ) -> Parsed<Vec<(i64, String)>> {
        let n = candidates.len();
        let justify = self.justify();
        let schema = uniqueness_schema(n, justify);
        let ctx = json!({"history": history, "question": question, "reference": reference, "candidates": candidates, "justify": justify});
        let req = self
            .prompts
            .uniqueness
            .request(&ctx, OutputSpec::Schema(schema))?;
        let Some(out) = self.call("uniqueness", req, true, log).await? else {
            return Ok(None);
        };
        match grades_of(&out.value.unwrap_or(Value::Null), n) {
            Some(g) => Ok(Some(g)),
            None => {
                log.roles
                    .entry("uniqueness".into())
                    .or_default()
                    .parse_failed += 1;
                Ok(None)
            }
        }
    }
}

/// A judge's `grades` (each 0-2, exactly `n`) with the `quotes` beside them; None when the
/// grades are missing, too few or too many, or out of range.
fn grades_of(v: &Value, n: usize) -> Option<Vec<(i64, String)>> {
    let grades: Vec<i64> = v
        .get("grades")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_i64).collect())?;
    if grades.len() != n || !grades.iter().all(|x| (0..=2).contains(x)) {
        return None;
    }
    let quotes: Vec<String> = v
        .get("quotes")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|q| q.as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default();
    Some(
        grades
            .into_iter()
            .enumerate()
            .map(|(i, g)| (g, quotes.get(i).cloned().unwrap_or_default()))
            .collect(),
    )
}

impl Agents<'_> {
    /// The relevance judge of the verifier's gate (`[synth.generation.relevance] judge`), or
    /// `None` when there is no gate ([`RelevanceJudge::resolve`](crate::config::RelevanceJudge::resolve)).
    pub(crate) fn relevance_judge(&self) -> Option<String> {
        self.opts.relevance.judge.resolve(self.llm)
    }

    /// The 0-1 relevance of each of `passages` to `query` on relevance judge `judge` (one
    /// rerank call, cached like a chat call); its usage is logged under the role `relevance`.
    pub(crate) async fn relevance(
        &self,
        judge: &str,
        query: &str,
        passages: &[String],
        log: &mut CallLog,
    ) -> Result<Vec<f64>> {
        let r = self.llm.rerank(judge, query, passages).await?;
        let price = self
            .llm
            .config()
            .endpoint(&r.endpoint)
            .map(|e| e.cost(r.prompt_tokens, 0))
            .unwrap_or(r.answer_cost_usd);
        let u = log.roles.entry("relevance".into()).or_default();
        u.calls += 1;
        u.cached += u64::from(r.cached);
        u.prompt_tokens += r.prompt_tokens;
        u.cost_pusd += usd_to_pico(price);
        let models = log.models.entry("relevance".into()).or_default();
        if !models.contains(&r.model) {
            models.push(r.model.clone());
            models.sort();
        }
        Ok(r.scores)
    }
}

/// Whether the verifier's judges on `endpoint` are asked for a justification. Not where the
/// endpoint writes the verdict first (`verdict_first`, the embedded local default): a
/// justification written after the score cannot inform it, and synthesis keeps none, so it
/// would only cost generated tokens (on the local 0.5B judge, Chinese corpus: 187 completion
/// tokens per answerability call, most of them the justification).
pub(crate) fn judges_justify(llm: &Llm, endpoint: &str) -> bool {
    !llm.config()
        .endpoint(endpoint)
        .is_some_and(|e| e.verdict_first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_styled_message_gets_room_for_its_length() {
        let en = Language::from_code("en");
        let room = |length: usize| {
            let t = TurnStyle {
                length,
                unit: "words",
                refer_back: false,
            };
            let unset = Sampling {
                max_tokens: None,
                ..Default::default()
            };
            styled_proposal_room(unset, &en, true, &t)
                .max_tokens
                .unwrap_or(0)
        };
        assert!(room(120) > room(20));
        // two tokens a word and a standalone question of the concise pattern's length
        assert!(room(120) >= 240 + proposal_max_tokens(&en, false));
        // a configured max_tokens above the room stays
        let t = TurnStyle {
            length: 10,
            unit: "words",
            refer_back: false,
        };
        let s = Sampling {
            max_tokens: Some(4000),
            ..Default::default()
        };
        assert_eq!(
            styled_proposal_room(s, &en, false, &t).max_tokens,
            Some(4000)
        );
    }
}
