//! The question steps of a turn: the user agent proposes evidence and a question ([`ask`]),
//! the proposal passes the text guards before any judge is paid ([`check_question`]: language,
//! exact and reworded repeats of earlier questions, shape), and a later question is rewritten
//! the way people type when the rewrite passes its own guards ([`humanize`]).
//!
//! [`ask`]: Generator::ask
//! [`check_question`]: Generator::check_question
//! [`humanize`]: Generator::humanize

use super::attempt::{Step, TurnInput, reject};
use super::record::TurnRecord;
use super::schedule::Generator;
use super::state::DialogueState;
use crate::agents::{CallLog, UserDraw, UserProposal, Utter};
use crate::error::Result;
use crate::style::TurnStyle;
use crate::text_rules::{
    copies_example, in_language, question_problem, standalone_problem, styled_question_problem,
};

impl Generator<'_> {
    /// The user agent's proposal: one of the offered passages and a question about it.
    pub(super) async fn ask(
        &self,
        st: &mut DialogueState,
        input: &TurnInput,
        attempt: usize,
        feedback: Option<&'static str>,
        log: &mut CallLog,
    ) -> Step<UserProposal> {
        let sample = self.attempt_sample(st, attempt);
        let style = self.turn_style(st, input);
        let shown = questions_to_show(&input.asked, &input.history, feedback, style.is_some());
        let (persona, examples) = self.voice(st, input.layer, attempt);
        let ask = input
            .user_ask(&shown, feedback, self.opts.rewrites)
            .voiced(persona, examples);
        let proposal = self
            .agents
            .user(&ask, UserDraw { sample, style }, log)
            .await?;
        proposal.ok_or_else(|| reject(st, "user/parse_failed", "user", None))
    }

    /// This turn's draw of the styled profile (None: `concise`); the same for every attempt.
    fn turn_style(&self, st: &DialogueState, input: &TurnInput) -> Option<TurnStyle> {
        let follow_up = !input.first && !input.switch;
        self.agents
            .style
            .map(|s| s.turn(self.agents.seed, st.index, input.layer, follow_up))
    }

    /// The text guards of a proposal; the standalone version it keeps (empty when that fails
    /// its own guards).
    pub(super) fn check_question(
        &self,
        st: &mut DialogueState,
        input: &TurnInput,
        p: &UserProposal,
    ) -> Step<String> {
        let o = self.opts;
        let language = self.agents.language;
        if !in_language(&p.question, language) {
            let f = Some("wrong_language");
            return Err(reject(st, "user/wrong_language", "user", f));
        }
        let norm = |s: &str| {
            s.to_lowercase()
                .chars()
                .filter(|c| c.is_alphanumeric())
                .collect::<String>()
        };
        if copies_example(&p.question, language) {
            let f = Some("copied_example");
            return Err(reject(st, "user/copied_example", "user", f));
        }
        if input.asked.iter().any(|q| norm(q) == norm(&p.question)) {
            let f = Some("repeated_question");
            return Err(reject(st, "user/repeated_question", "user", f));
        }
        // a reworded repeat: the question or its rewrite nearly duplicates an earlier
        // turn's question, original question or rewrite
        if [&p.question, &p.standalone].iter().any(|t| {
            o.repetition
                .repeats(t, earlier_questions(&st.turns))
                .is_some()
        }) || o
            .repetition
            .restates(&p.standalone, earlier_questions(&st.turns))
            .is_some()
        {
            let f = Some("near_duplicate");
            return Err(reject(st, "user/near_duplicate", "near_duplicate", f));
        }
        // a near copy of a real seed question (`[synth.seed_questions]`): shown to imitate,
        // never to copy
        if let Some((seed, similarity)) = [&p.question, &p.standalone]
            .iter()
            .find_map(|t| self.agents.voices.near_copy(t))
        {
            tracing::debug!(
                seed,
                similarity,
                "the question nearly copies a seed question"
            );
            let f = Some("near_copy");
            return Err(reject(st, "user/near_copy_seed", "near_copy_seed", f));
        }
        let evidence = &input.passages[p.passage].text;
        let meta = &o.humanizer.meta_phrases;
        let problem = match self.agents.style {
            None => question_problem(&p.question, &p.standalone, evidence, language, meta),
            Some(s) => styled_question_problem(
                &p.question,
                &p.standalone,
                evidence,
                language,
                meta,
                s.max_length(),
            ),
        };
        if let Some(problem) = problem {
            return Err(reject(
                st,
                &format!("user/{problem}"),
                "user",
                Some(problem),
            ));
        }
        // the standalone version becomes the turn's rewrite only if it passes the same
        // guards, except the copy check (a pasted passage sentence still fails: it asks
        // nothing); none was asked for without rewrites
        if !o.rewrites {
            return Ok(String::new());
        }
        Ok(
            match standalone_problem(&p.standalone, language, &o.humanizer.meta_phrases) {
                None => p.standalone.clone(),
                Some(problem) => {
                    st.count("user/standalone_dropped");
                    st.count(&format!("user/standalone_{problem}"));
                    String::new()
                }
            },
        )
    }

    /// The question as the benchmark holds it, and the user agent's original when the
    /// humanizer rewrote it. The first question, and any whose rewrite fails a guard or
    /// nearly repeats an earlier question, stays as asked.
    pub(super) async fn humanize(
        &self,
        st: &mut DialogueState,
        input: &TurnInput,
        asked: &str,
        log: &mut CallLog,
    ) -> Result<(String, Option<String>)> {
        let o = self.opts;
        let mut question = asked.to_string();
        let mut original = None;
        if !o.humanizer.enabled || input.first {
            return Ok((question, original));
        }
        match self
            .agents
            .humanize(
                &input.history,
                asked,
                (input.switch, self.turn_style(st, input)),
                log,
            )
            .await?
        {
            Some(Ok(h))
                if o.repetition
                    .repeats(&h, earlier_questions(&st.turns))
                    .is_some() =>
            {
                st.count("humanizer/kept_original_near_duplicate")
            }
            Some(Ok(h)) if self.agents.voices.near_copy(&h).is_some() => {
                st.count("humanizer/kept_original_near_copy_seed")
            }
            Some(Ok(h)) => {
                st.count("humanizer/rewritten");
                original = Some(std::mem::replace(&mut question, h));
            }
            Some(Err(guard)) => st.count(&format!("humanizer/kept_original_{}", guard.name())),
            None => st.count("humanizer/parse_failed"),
        }
        Ok((question, original))
    }
}

/// Every earlier question of a dialogue as asked, before humanizing, and as rewritten.
pub(super) fn earlier_questions(turns: &[TurnRecord]) -> impl Iterator<Item = &str> {
    turns.iter().flat_map(|t| {
        [Some(&t.question), t.original.as_ref(), Some(&t.standalone)]
            .into_iter()
            .flatten()
            .map(String::as_str)
    })
}

/// The earlier questions the user prompt lists: those the shown history does not show
/// ([`unseen_questions`]), or, in a styled profile's prompt (whose history shows the
/// assistant's answers only, `synth/user_styled`) after an attempt was rejected for repeating
/// one, every question asked so far. Told only "the question repeated an earlier one",
/// Qwen2.5-Coder-0.5B asked it again: `user/repeated_question` was the commonest rejection of
/// the yield runs (8-9 a run of 12 planned turns) and left 4 turns a run without a question
/// (`dropped/user`, benchmarks/pipeline/README.md).
fn questions_to_show(
    asked: &[String],
    history: &[Utter],
    feedback: Option<&str>,
    styled: bool,
) -> Vec<String> {
    let repeated = matches!(feedback, Some("repeated_question" | "near_duplicate"));
    if styled && repeated {
        asked.to_vec()
    } else {
        unseen_questions(asked, history)
    }
}

/// The questions asked already that the shown history does not show (it is cut to the last
/// `history_turns`): the user prompt lists only these, since the same question twice in one
/// prompt (in the history and in the list) made the small model ask it a third time.
fn unseen_questions(asked: &[String], history: &[Utter]) -> Vec<String> {
    asked
        .iter()
        .filter(|q| !history.iter().any(|u| u.speaker == "user" && &u.text == *q))
        .cloned()
        .collect()
}

#[cfg(test)]
mod unseen_tests {
    use super::*;

    #[test]
    fn only_questions_the_history_does_not_show_are_listed() {
        let u = |speaker: &str, text: &str| Utter {
            speaker: speaker.into(),
            text: text.into(),
        };
        let asked = vec!["年假能结转几天？".to_string(), "病假要证明吗？".to_string()];
        let history = vec![u("user", "病假要证明吗？"), u("agent", "年假能结转几天？")];
        assert_eq!(unseen_questions(&asked, &history), ["年假能结转几天？"]);
        assert!(unseen_questions(&asked[1..], &history).is_empty());
    }

    #[test]
    fn a_styled_retry_after_a_repeat_lists_every_earlier_question() {
        let u = |speaker: &str, text: &str| Utter {
            speaker: speaker.into(),
            text: text.into(),
        };
        let asked = vec!["How many days carry over?".to_string()];
        let history = vec![u("user", "How many days carry over?"), u("agent", "Five.")];
        let show = |feedback, styled| questions_to_show(&asked, &history, feedback, styled);
        // the styled prompt hides the user's turns: after a repeat it is shown what was asked
        assert_eq!(show(Some("repeated_question"), true), asked);
        assert_eq!(show(Some("near_duplicate"), true), asked);
        // on a first attempt, after another rejection, or where the history shows the user's
        // turns (concise prompts), only what the history does not show
        assert!(show(None, true).is_empty());
        assert!(show(Some("copied_passage"), true).is_empty());
        assert!(show(Some("repeated_question"), false).is_empty());
    }
}
