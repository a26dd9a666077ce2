//! A turn drawn `two_passage` by `[synth.mix]`: the user agent chooses two of the passages it
//! is offered (one topic path) and asks one question that needs a fact from each, a comparison
//! or two facts at once; the text guards check it as any question; the verifier grades each
//! passage alone and both together ([`Agents::two_passage`]) and keeps the question only when
//! both together answer it, neither alone answers all of it, and each answers a part with its
//! quote found in it (with `answerability_judge = false`: each cleared the relevance floor).
//! "Both together answer it" is the chat judge's score (at least
//! `min_answerability`) where it rates answerability, else, as for a one-passage question
//! (`answerability_judge = false`), the relevance gate's floor on each passage, checked before
//! the chat judge is paid. The answerer then answers from both
//! and its faithfulness is checked as for any turn. Both passages are gold (grade 2: the first
//! as `evidence`, the second as `second_evidence`); the turn is tagged `Comparative` when its
//! wording compares, else `Composite`. Not humanized, and not searched for hard negatives:
//! the two golds are what the question is made of.
//!
//! [`Agents::two_passage`]: crate::agents::Agents::two_passage

use super::attempt::{Step, TurnInput, reject};
use super::record::TurnRecord;
use super::schedule::Generator;
use super::state::DialogueState;
use crate::agents::{CallLog, PromptPassage, TwoPassageVerdict};
use crate::text_rules::quote_supported;
use crate::turn_types::Answerability;

impl Generator<'_> {
    /// One attempt of a turn drawn `two_passage`: the accepted record and its two evidence
    /// chunks, or a rejection.
    pub(super) async fn two_passage_attempt(
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
        let proposal = self.agents.user_two_passage(&ask, sample, log).await?;
        let tp = proposal.ok_or_else(|| reject(st, "user/parse_failed", "user", None))?;
        let (a, b) = tp.passages;
        *last_evidence = Some(input.offered[a]);
        let standalone = self.check_question(st, input, &tp.proposal)?;
        let question = tp.proposal.question;
        let (pa, pb) = (&input.passages[a], &input.passages[b]);
        if !self.opts.answerability_judge {
            self.both_above_floor(st, (&question, &standalone), (pa, pb), log)
                .await?;
        }
        let verdict = self
            .agents
            .two_passage(&input.history, &question, (pa, pb), log)
            .await?;
        let both = self.needs_both(st, verdict, (pa, pb))?;
        // the chat judge's score is kept only where it decided
        let both = Some(both).filter(|_| self.opts.answerability_judge);
        let together = joined(pa, pb);
        let (answer, faithfulness) = self
            .answer(st, &question, &standalone, &together, input, log)
            .await?;
        st.count("two_passage/verified");
        let (ca, cb) = (input.offered[a], input.offered[b]);
        let id = |c: u32| self.material.chunks[c as usize].id.clone();
        let record = TurnRecord {
            layer: input.layer,
            question,
            original: None,
            standalone,
            answer,
            evidence: id(ca),
            second_evidence: Some(id(cb)),
            extra_golds: Vec::new(),
            topic_switch: input.switch,
            topic: input.topic,
            path: st.path,
            answerability: both,
            faithfulness,
            attempts: attempt as u32 + 1,
            relevance: None,
            kind: Answerability::Answerable,
            parts: None,
        };
        Ok((vec![ca, cb], record))
    }

    /// The verifier's verdict checked: both together answer (the score returned; checked
    /// here only where the chat judge rates answerability), neither alone answers all, each
    /// answers a part with its quote found in it (where the chat judge rates answerability;
    /// else the relevance floor each cleared stands for that, as for any gold: the 0.5B judge
    /// graded both passages 1 with one passage's sentence as both quotes, and 9 two-passage
    /// turns of three main-job runs were rejected so, none kept).
    fn needs_both(
        &self,
        st: &mut DialogueState,
        verdict: Option<TwoPassageVerdict>,
        (pa, pb): (&PromptPassage, &PromptPassage),
    ) -> Step<i64> {
        let Some(v) = verdict else {
            return Err(reject(st, "two_passage/judge_failed", "two_passage", None));
        };
        let f = Some("not_answerable");
        if self.opts.answerability_judge && v.both < self.opts.min_answerability {
            return Err(reject(st, "two_passage/low_score", "two_passage", f));
        }
        if v.a == 2 || v.b == 2 {
            let f = Some("one_suffices");
            return Err(reject(st, "two_passage/one_suffices", "two_passage", f));
        }
        // where the floor decides answerability, both passages cleared it before this call
        // (`both_above_floor`): each answers a part by the same rule a one-passage question's
        // gold does, and the judge is asked only whether one alone answers all of it
        let floor_decides = self.floor_judge().is_some();
        let part =
            |g: i64, quote: &str, p: &PromptPassage| g >= 1 && quote_supported(quote, &p.text);
        if !floor_decides && (!part(v.a, &v.quote_a, pa) || !part(v.b, &v.quote_b, pb)) {
            return Err(reject(st, "two_passage/one_unused", "two_passage", f));
        }
        Ok(v.both)
    }
}

/// The two passages as the answerer reads them: one evidence, the second after the first.
pub(crate) fn joined(a: &PromptPassage, b: &PromptPassage) -> PromptPassage {
    let head = |p: &PromptPassage| match &p.section {
        Some(s) => format!("{} / {s}", p.title),
        None => p.title.clone(),
    };
    PromptPassage {
        title: head(a),
        section: None,
        text: format!("{}\n\n{}\n\n{}", a.text, head(b), b.text),
    }
}
