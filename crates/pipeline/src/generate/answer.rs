//! The answer step of a turn: the answerer writes an answer from the evidence alone (up to
//! `answer_attempts` samples), each is checked as text (language, "not found", only the
//! passage's headings, an echo of the question, a repeat of an earlier answer) and then (c) for faithfulness by the verifier's
//! judge. Why no answer passed decides what the user agent is told on its next attempt.

use super::attempt::{Step, Stop, TurnInput};
use super::schedule::Generator;
use super::state::DialogueState;
use crate::agents::{CallLog, PromptPassage};
use crate::text_rules::{in_language, names_only_headings, says_not_found};

/// Why an answer was not used.
enum Unused {
    /// Try another sample.
    Retry,
    /// It nearly repeats an earlier answer of the dialogue: try another sample, and if none
    /// passes, ask about another fact.
    Repeated,
    /// The answerer found no answer in the evidence: the question does not fit it, and
    /// another answer would not change that.
    NotFound,
}

impl Generator<'_> {
    /// The accepted answer and its faithfulness score.
    pub(super) async fn answer(
        &self,
        st: &mut DialogueState,
        question: &str,
        standalone: &str,
        evidence: &PromptPassage,
        input: &TurnInput,
        log: &mut CallLog,
    ) -> Step<(String, i64)> {
        let o = self.opts;
        let mut repeated_answer = false;
        let mut not_found = false;
        for a in 0..o.answer_attempts {
            let sample = (st.round * o.answer_attempts + a) as u32;
            let Some(answer) = self
                .agents
                .answer(evidence, &input.history, question, sample, log)
                .await?
            else {
                st.count("answerer/parse_failed");
                continue;
            };
            match self.answer_problem(st, &answer, question, standalone, evidence) {
                Some(Unused::NotFound) => {
                    not_found = true;
                    break;
                }
                Some(Unused::Repeated) => {
                    repeated_answer = true;
                    continue;
                }
                Some(Unused::Retry) => continue,
                None => {}
            }
            match self
                .agents
                .faithfulness(&input.history, question, evidence, &answer, log)
                .await?
            {
                None => st.count("faithfulness/judge_failed"),
                Some(s) if s < o.min_faithfulness => st.count("faithfulness/low_score"),
                Some(s) => return Ok((answer, s)),
            }
        }
        let rejected = |stage, feedback| Err(Stop::Rejected { stage, feedback });
        if repeated_answer {
            // the evidence only yields an answer already given: ask about another fact
            return rejected("near_duplicate", Some("repeated_answer"));
        }
        if not_found {
            return rejected("answerability", Some("not_answerable"));
        }
        rejected("faithfulness", None)
    }

    /// The text checks of an answer before its faithfulness is judged; counts what failed.
    fn answer_problem(
        &self,
        st: &mut DialogueState,
        answer: &str,
        question: &str,
        standalone: &str,
        evidence: &PromptPassage,
    ) -> Option<Unused> {
        let repetition = &self.opts.repetition;
        if !in_language(answer, self.agents.language) {
            st.count("answerer/wrong_language");
            return Some(Unused::Retry);
        }
        if says_not_found(answer) {
            st.count("answerer/not_found");
            return Some(Unused::NotFound);
        }
        // an answer that only names the passage's headings answers nothing, however faithful
        // the small judge finds it
        let (title, section) = (&evidence.title, evidence.section.as_deref());
        if names_only_headings(answer, title, section, &evidence.text) {
            st.count("answerer/heading_only");
            return Some(Unused::Retry);
        }
        // an answer that asks the question back answers nothing (a main-job run kept
        // "节假日加班是否需要事先经部门负责人批准？" as the answer to itself, with a
        // faithfulness of 4); a yes/no answer may restate the question, so only an
        // answer that is itself a question counts
        if answer.trim_end().ends_with(['?', '？'])
            && repetition.repeats(answer, [question, standalone]).is_some()
        {
            st.count("answerer/echoed_question");
            return Some(Unused::Retry);
        }
        if repetition
            .repeats(answer, st.turns.iter().map(|t| t.answer.as_str()))
            .is_some()
        {
            st.count("answerer/near_duplicate");
            return Some(Unused::Repeated);
        }
        None
    }
}
