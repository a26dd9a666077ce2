//! A turn drawn `conversational` by `[synth.mix]`, after a dialogue's first: the user agent
//! writes a message that needs no search (a thank-you, a request to clarify the last answer)
//! and the assistant's short reply ([`Agents::user_conversational`]); the message is checked
//! for language, length and repeats; the verifier scores how much it needs a new search
//! ([`Agents::conversational`]) and keeps it only at most 2 of 5. Its gold is empty (bench
//! leaves it out of its measures and counts it), the reply is its reference answer, and it is
//! tagged `answerability = conversational`, `multi_turn_type = Clarification` when it asks
//! (ends with a question mark), and `question_type = Non-Question` when it does not.
//!
//! [`Agents::user_conversational`]: crate::agents::Agents::user_conversational
//! [`Agents::conversational`]: crate::agents::Agents::conversational

use super::attempt::{Step, TurnInput, reject};
use super::record::TurnRecord;
use super::schedule::Generator;
use super::state::DialogueState;
use crate::agents::CallLog;
use crate::text_rules::in_language;
use crate::turn_types::Answerability;

/// The highest need of a search (1-5) a conversational message may be scored.
const MAX_SEARCH_NEED: i64 = 2;

/// The longest a conversational message may be: words, or characters in a CJK language.
const MAX_WORDS: usize = 30;

impl Generator<'_> {
    /// One attempt of a turn drawn `conversational`: the accepted record, or a rejection.
    pub(super) async fn conversational_attempt(
        &self,
        st: &mut DialogueState,
        input: &TurnInput,
        attempt: usize,
        feedback: Option<&'static str>,
        log: &mut CallLog,
    ) -> Step<TurnRecord> {
        let sample = self.attempt_sample(st, attempt);
        let written = self
            .agents
            .user_conversational(&input.history, (sample, feedback), log)
            .await?;
        let (message, reply) =
            written.ok_or_else(|| reject(st, "user/parse_failed", "user", None))?;
        self.check_message(st, input, &message)?;
        let need = self
            .agents
            .conversational(&input.history, &message, log)
            .await?;
        match need {
            None => {
                let e = "conversational/judge_failed";
                return Err(reject(st, e, "conversational", None));
            }
            Some(n) if n > MAX_SEARCH_NEED => {
                let (e, f) = ("conversational/needs_search", Some("needs_search"));
                return Err(reject(st, e, "conversational", f));
            }
            Some(_) => {}
        }
        st.count("conversational/verified");
        Ok(TurnRecord {
            layer: input.layer,
            question: message,
            original: None,
            standalone: String::new(),
            answer: reply,
            evidence: String::new(),
            second_evidence: None,
            extra_golds: Vec::new(),
            topic_switch: false,
            topic: input.topic,
            path: st.path,
            answerability: None,
            faithfulness: 0,
            attempts: attempt as u32 + 1,
            relevance: None,
            kind: Answerability::Conversational,
            parts: None,
        })
    }

    /// The message's guards: the corpus language, at most [`MAX_WORDS`], not an earlier
    /// message again.
    fn check_message(&self, st: &mut DialogueState, input: &TurnInput, m: &str) -> Step<()> {
        let language = self.agents.language;
        if !in_language(m, language) {
            let f = Some("wrong_language");
            return Err(reject(st, "user/wrong_language", "user", f));
        }
        let long = if language.is_cjk() {
            m.chars().count() > 2 * MAX_WORDS
        } else {
            m.split_whitespace().count() > MAX_WORDS
        };
        if long {
            return Err(reject(st, "user/too_long", "user", Some("too_long")));
        }
        let norm = |s: &str| {
            s.to_lowercase()
                .chars()
                .filter(|c| c.is_alphanumeric())
                .collect::<String>()
        };
        if input.asked.iter().any(|q| norm(q) == norm(m)) {
            let f = Some("repeated_question");
            return Err(reject(st, "user/repeated_question", "user", f));
        }
        Ok(())
    }
}
