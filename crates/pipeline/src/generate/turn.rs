//! One turn of one dialogue as named steps, retried up to `max_attempts` times: [`ask`] (the
//! user agent proposes evidence and a question), [`check_question`] (language, repeats,
//! shape), [`humanize`], [`verify`] (the relevance gate when a relevance judge is configured,
//! and [`answerability`]), [`answer`] (answerer and faithfulness judge), [`unique`]
//! ([`uniqueness`]: the corpus search for hard negatives and their judge, last because it
//! reads the most passages and, at the small-model settings, cannot reject), then the turn is
//! accepted. A step that fails
//! rejects the attempt with the stage and the reason fed back to the next one
//! ([`Stop::Rejected`]); a turn whose attempts all fail is dropped and counted under the stage
//! of its last failure. Every attempt of a turn is offered the same passages, so a retried
//! prompt shares all but its last lines with the one before and the server's prompt cache
//! holds it: offering other passages after a rejection as a repeat was tried and measured
//! worse (docs/main-job.md: less prefix reuse, no fewer dropped turns).
//!
//! [`ask`]: Generator::ask
//! [`check_question`]: Generator::check_question
//! [`humanize`]: Generator::humanize
//! [`verify`]: Generator::verify
//! [`answerability`]: Generator::answerability
//! [`uniqueness`]: Generator::uniqueness
//! [`answer`]: Generator::answer
//! [`unique`]: Generator::unique

use mtr_core::Turn;

use super::attempt::{Step, Stop, TurnInput};
use super::record::{TurnRecord, to_core_turn};
use super::schedule::Generator;
use super::state::DialogueState;
use super::verify::Subject;
use crate::agents::{CallLog, PromptPassage, Utter};
use crate::error::Result;
use crate::turn_types::Answerability;

/// The kind a turn is made as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Made {
    /// Answerable from one passage (the default, and any kind not made yet).
    Answerable,
    /// No passage of the corpus answers it.
    Unanswerable,
    /// Two passages of the path answer it together.
    TwoPassage,
    /// Needs no retrieval (thanks, a request to clarify).
    Conversational,
    /// One passage answers one part of it, no passage of the corpus the other.
    Partial,
}

impl Generator<'_> {
    /// Generates turn `layer` of the dialogue: accepts the first attempt that passes every
    /// check, or drops the turn.
    pub(super) async fn turn(&self, st: &mut DialogueState, layer: usize) -> Result<()> {
        let input = self.turn_input(st, layer);
        let kind = self.kind_made(st, layer);
        // why the last attempt was rejected, as a reason code the user prompt words
        let mut feedback: Option<&'static str> = None;
        let mut last_reason = "user";
        let mut last_evidence: Option<u32> = None;
        let mut log = std::mem::take(&mut st.log);
        for attempt in 0..self.opts.max_attempts {
            let outcome = self
                .attempt(
                    st,
                    (&input, kind),
                    attempt,
                    feedback,
                    &mut last_evidence,
                    &mut log,
                )
                .await;
            match outcome {
                Ok((evidence, record)) => {
                    for c in evidence {
                        *st.used.entry(c).or_default() += 1;
                    }
                    st.pending_switch = false;
                    st.turns.push(record);
                    st.count("turn/accepted");
                    st.log = log;
                    return Ok(());
                }
                Err(Stop::Rejected { stage, feedback: f }) => {
                    last_reason = stage;
                    if f.is_some() {
                        feedback = f;
                    }
                }
                Err(Stop::Error(e)) => return Err(e),
            }
        }
        if let Some(c) = last_evidence {
            *st.used.entry(c).or_default() += 1;
        }
        st.count(&format!("dropped/{last_reason}"));
        st.log = log;
        Ok(())
    }

    /// The kind turn `layer` is made as: the mix's draw where the synthesizer can make it,
    /// else answerable from one passage (drawn and obtained then differ in the report).
    fn kind_made(&self, st: &DialogueState, layer: usize) -> Made {
        let asked = self.mix.draw(self.agents.seed, st.index, layer);
        match asked.answerability {
            Answerability::Unanswerable if self.can_make_unanswerable() => Made::Unanswerable,
            // its missing part is verified as an unanswerable question is
            Answerability::Partial if self.can_make_unanswerable() => Made::Partial,
            // a conversation to react to: not a dialogue's first turn
            Answerability::Conversational if layer > 0 && !st.turns.is_empty() => {
                Made::Conversational
            }
            // two passages offered at least (a path of one chunk offers one)
            Answerability::Answerable
                if asked.two_passage
                    && self.opts.offer >= 2
                    && self.material.paths[st.path].len() >= 2 =>
            {
                Made::TwoPassage
            }
            _ => Made::Answerable,
        }
    }

    /// One attempt: every step in order; the accepted turn and its evidence chunks (none for
    /// an unanswerable turn, two for a two-passage one).
    async fn attempt(
        &self,
        st: &mut DialogueState,
        (input, kind): (&TurnInput, Made),
        attempt: usize,
        feedback: Option<&'static str>,
        last_evidence: &mut Option<u32>,
        log: &mut CallLog,
    ) -> Step<(Vec<u32>, TurnRecord)> {
        match kind {
            Made::Unanswerable => {
                let record = self
                    .unanswerable_attempt(st, input, attempt, feedback, log)
                    .await?;
                return Ok((Vec::new(), record));
            }
            Made::TwoPassage => {
                return self
                    .two_passage_attempt(st, input, (attempt, feedback), last_evidence, log)
                    .await;
            }
            Made::Conversational => {
                let record = self
                    .conversational_attempt(st, input, attempt, feedback, log)
                    .await?;
                return Ok((Vec::new(), record));
            }
            Made::Partial => {
                return self
                    .partial_attempt(st, input, (attempt, feedback), last_evidence, log)
                    .await;
            }
            Made::Answerable => {}
        }
        let p = self.ask(st, input, attempt, feedback, log).await?;
        let evidence = input.offered[p.passage];
        *last_evidence = Some(evidence);
        let standalone = self.check_question(st, input, &p)?;
        let (question, original) = self.humanize(st, input, &p.question, log).await?;
        let evidence_passage = &input.passages[p.passage];
        let evidence_id = self.material.chunks[evidence as usize].id.clone();
        let subject = Subject {
            question: &question,
            standalone: &standalone,
            evidence_id: &evidence_id,
            evidence: evidence_passage,
        };
        let verified = self.verify(st, input, &subject, log).await?;
        let (answer, faithfulness) = self
            .answer(st, &question, &p.standalone, evidence_passage, input, log)
            .await?;
        let extra_golds = self
            .unique(st, input, &subject, verified.negatives, log)
            .await?;
        let record = TurnRecord {
            layer: input.layer,
            question,
            original,
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
            kind: Answerability::Answerable,
            parts: None,
        };
        Ok((vec![evidence], record))
    }

    /// What the attempts of the dialogue's next turn share.
    fn turn_input(&self, st: &DialogueState, layer: usize) -> TurnInput {
        let keep = self.opts.history_turns.min(st.turns.len());
        let recent = &st.turns[st.turns.len() - keep..];
        let history: Vec<Utter> = recent
            .iter()
            .flat_map(|t| {
                [
                    Utter {
                        speaker: "user".into(),
                        text: t.question.clone(),
                    },
                    Utter {
                        speaker: "agent".into(),
                        text: t.answer.clone(),
                    },
                ]
            })
            .collect();
        let core_history: Vec<Turn> = st
            .turns
            .iter()
            .map(|t| to_core_turn(&st.id, 0, t))
            .collect();
        let offered = self.offered(st);
        let first = st.turns.is_empty();
        TurnInput {
            layer,
            history,
            core_history,
            asked: st.turns.iter().map(|t| t.question.clone()).collect(),
            passages: offered.iter().map(|&c| self.passage(c)).collect(),
            offered,
            first,
            switch: st.pending_switch && !first,
            topic: self.material.path_topics[st.path],
        }
    }

    /// Chunk `c` as the prompts show it.
    pub(super) fn passage(&self, c: u32) -> PromptPassage {
        PromptPassage::of(&self.material.chunks[c as usize])
    }

    /// The `offer` least-used chunks of the current path, in path order (rotated by the
    /// dialogue's round on a shared path).
    fn offered(&self, st: &DialogueState) -> Vec<u32> {
        let path = &self.material.paths[st.path];
        let shift = (st.round * self.opts.offer) % path.len().max(1);
        let mut ranked: Vec<(u32, usize, u32)> = path
            .iter()
            .enumerate()
            .map(|(pos, &c)| {
                (
                    st.used.get(&c).copied().unwrap_or(0),
                    (pos + path.len() - shift) % path.len(),
                    c,
                )
            })
            .collect();
        ranked.sort();
        let mut chosen: Vec<(usize, u32)> = ranked
            .into_iter()
            .take(self.opts.offer)
            .map(|(_, pos, c)| (pos, c))
            .collect();
        chosen.sort();
        chosen.into_iter().map(|(_, c)| c).collect()
    }
}
