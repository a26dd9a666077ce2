//! A turn drawn `partial` by `[synth.mix]` (MTRAG's PARTIAL answerability: the documents answer
//! only part of the question): the user agent asks one question in two parts on the subject of
//! the passages it is offered, chooses the passage that answers one, and names both parts as
//! questions of their own ([`Agents::user_partial`]). Verification composes the checks the
//! other kinds already have, each on its own part, rather than asking one judge about both:
//!
//! - the question passes the text guards of any question, and each part the shape guards
//!   (the answered part also the repeat guards: asking a fact again is a repeat);
//! - the answered part passes what an answerable question passes on its passage: the
//!   relevance gate and the answerability judge as configured ([`Generator::verify`]);
//! - the missing part passes what an unanswerable question passes: the corpus-wide search
//!   finds the passages best for it and the verifier finds none answering it
//!   ([`Generator::none_answers`]), the chosen passage included;
//! - the answerer answers the answered part from the passage, and the answer passes the text
//!   checks and the faithfulness judge of an answerable turn ([`Generator::answer`]);
//! - the answered part passes the uniqueness check of an answerable turn (its hard negatives,
//!   found by the relevance gate already when it is on, may become extra golds).
//!
//! The reference answer is the answerer's answer followed by a fixed sentence, in the corpus
//! language, that the documents do not answer the missing part ([`partial_answer`]): the
//! faithfulness judge grades statements against the passage, and the one statement the
//! passage cannot support (that the rest is not in the documents) is the one the corpus-wide
//! check verified. An answerer asked to write both would have its "not found" sentence read
//! by the answer's text checks as a failure to answer, and by the judge as a partial answer.
//!
//! Gold is the chosen passage (grade 2) and the uniqueness check's extra golds, as for an
//! answerable turn; the turn is tagged `answerability = partial` and keeps its two parts
//! (`answered_part`, `missing_part`). Not humanized: a rewrite could drop one of the parts.
//! A rejection at a shared step is also counted as `partial/<stage>`, so the report tells
//! the partial turns' rejections apart.
//!
//! [`Agents::user_partial`]: crate::agents::Agents::user_partial

use super::attempt::{Step, Stop, TurnInput, reject};
use super::question::earlier_questions;
use super::record::TurnRecord;
use super::schedule::Generator;
use super::state::DialogueState;
use super::unanswerable::Probe;
use super::verify::Subject;
use crate::agents::{CallLog, PartialProposal};
use crate::lang::Language;
use crate::text_rules::question_problem;
use crate::turn_types::Answerability;

/// Where the missing part's rejection is counted.
const MISSING: Probe = Probe {
    stage: "partial",
    answered: ("partial/missing_answered", "missing_answered"),
};

/// The reference answer of a partial turn: the answer `found` to the answered part, then that
/// the documents do not answer the `missing` part, in the corpus language (English where no
/// other is written).
pub(crate) fn partial_answer(found: &str, missing: &str, lang: &Language) -> String {
    let found = found.trim();
    let cjk = lang.is_cjk();
    let closed = found.ends_with(['.', '!', '?', '。', '！', '？', '"', '”', ')', '）']);
    let stop = match (closed, cjk) {
        (true, _) => "",
        (false, true) => "。",
        (false, false) => ".",
    };
    let missing = missing.trim().trim_end_matches(['?', '？']).trim();
    match lang.code() {
        "zh" => format!("{found}{stop}至于“{missing}”，文档中没有找到答案。"),
        _ => format!(
            "{found}{stop} I could not find the answer to the rest of your question in the documents ({missing}?)."
        ),
    }
}

impl Generator<'_> {
    /// One attempt of a turn drawn `partial`: the accepted record and its evidence chunk, or
    /// a rejection.
    pub(super) async fn partial_attempt(
        &self,
        st: &mut DialogueState,
        input: &TurnInput,
        (attempt, feedback): (usize, Option<&'static str>),
        last_evidence: &mut Option<u32>,
        log: &mut CallLog,
    ) -> Step<(Vec<u32>, TurnRecord)> {
        let sample = self.attempt_sample(st, attempt);
        let (persona, examples) = self.voice(st, input.layer, attempt);
        let ask = input
            .user_ask(&input.asked, feedback, self.opts.rewrites)
            .voiced(persona, examples);
        let proposal = self.agents.user_partial(&ask, sample, log).await?;
        let pp = proposal.ok_or_else(|| reject(st, "user/parse_failed", "user", None))?;
        let evidence = input.offered[pp.proposal.passage];
        *last_evidence = Some(evidence);
        let standalone = self.check_question(st, input, &pp.proposal)?;
        self.check_parts(st, input, &pp)?;
        let passage = &input.passages[pp.proposal.passage];
        let evidence_id = self.material.chunks[evidence as usize].id.clone();
        // the answered part, as an answerable question on the chosen passage
        let subject = Subject {
            question: &pp.answered,
            standalone: "",
            evidence_id: &evidence_id,
            evidence: passage,
        };
        let verified = self.verify(st, input, &subject, log).await;
        let verified = counted(st, verified)?;
        // the missing part, as an unanswerable question on the whole corpus
        self.none_answers(st, input, &pp.missing, MISSING, log)
            .await?;
        let answered = self.answer(st, &pp.answered, "", passage, input, log).await;
        let (found, faithfulness) = counted(st, answered)?;
        let unique = self
            .unique(st, input, &subject, verified.negatives, log)
            .await;
        let extra_golds = counted(st, unique)?;
        st.count("partial/verified");
        let answer = partial_answer(&found, &pp.missing, self.agents.language);
        let record = TurnRecord {
            layer: input.layer,
            question: pp.proposal.question,
            original: None,
            standalone,
            answer,
            evidence: evidence_id,
            second_evidence: None,
            extra_golds,
            topic_switch: input.switch,
            topic: input.topic,
            path: st.path,
            answerability: verified.answerability,
            faithfulness,
            attempts: attempt as u32 + 1,
            relevance: verified.relevance,
            kind: Answerability::Partial,
            parts: Some((pp.answered, pp.missing)),
        };
        Ok((vec![evidence], record))
    }

    /// The guards of the two parts: each shaped as a question, two different questions, and
    /// the answered part not an earlier question again.
    fn check_parts(
        &self,
        st: &mut DialogueState,
        input: &TurnInput,
        pp: &PartialProposal,
    ) -> Step<()> {
        let o = self.opts;
        let language = self.agents.language;
        let meta = &o.humanizer.meta_phrases;
        let evidence = &input.passages[pp.proposal.passage].text;
        for (part, copied_from) in [(&pp.answered, evidence.as_str()), (&pp.missing, "")] {
            if let Some(problem) = question_problem(part, "", copied_from, language, meta) {
                let e = format!("partial/part_{problem}");
                return Err(reject(st, &e, "user", Some(problem)));
            }
        }
        let norm = |s: &str| {
            s.to_lowercase()
                .chars()
                .filter(|c| c.is_alphanumeric())
                .collect::<String>()
        };
        if norm(&pp.answered) == norm(&pp.missing) {
            let f = Some("same_parts");
            return Err(reject(st, "partial/same_parts", "user", f));
        }
        let asked_before = input.asked.iter().any(|q| norm(q) == norm(&pp.answered))
            || o.repetition
                .repeats(&pp.answered, earlier_questions(&st.turns))
                .is_some();
        if asked_before {
            let f = Some("near_duplicate");
            return Err(reject(st, "user/near_duplicate", "near_duplicate", f));
        }
        Ok(())
    }
}

/// `step` with its rejection also counted as `partial/<stage>`: the shared steps count under
/// their own stage (`answerability/low_score`), this tells the partial turns' apart.
fn counted<T>(st: &mut DialogueState, step: Step<T>) -> Step<T> {
    if let Err(Stop::Rejected { stage, .. }) = &step {
        st.count(&format!("partial/{stage}"));
    }
    step
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_answer_gives_the_found_part_then_says_the_rest_is_not_found() {
        let en = Language::from_code("en");
        let a = partial_answer("Up to 5 days carry over", "Do interns get them?", &en);
        assert_eq!(
            a,
            "Up to 5 days carry over. I could not find the answer to the rest of your question in the documents (Do interns get them?)."
        );
        assert!(crate::text_rules::says_not_found(&a), "{a}");
        let a = partial_answer("Up to 5 days carry over.", "Do interns get them", &en);
        assert!(a.starts_with("Up to 5 days carry over. I could"), "{a}");
        let zh = Language::from_code("zh");
        let a = partial_answer("最多可结转5天", "实习生也一样吗？", &zh);
        assert_eq!(
            a,
            "最多可结转5天。至于“实习生也一样吗”，文档中没有找到答案。"
        );
        assert!(crate::text_rules::says_not_found(&a), "{a}");
    }
}
