//! What every step of one turn's attempt shares: the turn's input, how an attempt stops
//! ([`Stop`]: rejected at a stage, or an error), and [`reject`], which counts the event. The
//! steps (`question.rs`, `verify.rs`, `answer.rs`, and the other kinds' `unanswerable.rs`,
//! `two_passage.rs`, `conversational.rs`) and the attempt loop (`turn.rs`) speak it; each
//! builds the user agent's view from [`TurnInput::user_ask`].

use mtr_core::Turn;

use super::schedule::Generator;
use super::state::DialogueState;
use crate::agents::{PromptPassage, UserAsk, Utter};
use crate::voices::Persona;

/// What every attempt of one turn shares: the conversation so far and the passages offered.
pub(super) struct TurnInput {
    /// The layer (0-based planned turn) being generated.
    pub layer: usize,
    /// The last `history_turns` turns, as the agents see them.
    pub history: Vec<Utter>,
    /// Every accepted turn so far, as the uniqueness search formulates its query from them.
    pub core_history: Vec<Turn>,
    /// Every question asked so far.
    pub asked: Vec<String>,
    /// Chunk indices offered to the user agent, and the same chunks as the prompts show them.
    pub offered: Vec<u32>,
    pub passages: Vec<PromptPassage>,
    pub first: bool,
    /// The dialogue has switched topic and this is the first turn since.
    pub switch: bool,
    /// The coarse topic of the dialogue's current path.
    pub topic: usize,
}

impl TurnInput {
    /// What the user agent is shown for an attempt of this turn, whatever its kind: the
    /// history, the earlier questions `asked`, the passages offered, where the turn stands,
    /// and why the last attempt was rejected.
    pub(super) fn user_ask<'a>(
        &'a self,
        asked: &'a [String],
        feedback: Option<&'a str>,
        rewrite: bool,
    ) -> UserAsk<'a> {
        UserAsk {
            history: &self.history,
            asked,
            passages: &self.passages,
            first: self.first,
            switch: self.switch,
            feedback,
            rewrite,
            persona: None,
            examples: Vec::new(),
        }
    }
}

impl Generator<'_> {
    /// The sampling index of an attempt: one per round of the dialogue and attempt, so that
    /// a retried attempt is asked again rather than answered from the cache.
    pub(super) fn attempt_sample(&self, st: &DialogueState, attempt: usize) -> u32 {
        (st.round * self.opts.max_attempts + attempt) as u32
    }

    /// The dialogue's persona, and the seed questions shown on this attempt (`crate::voices`).
    pub(super) fn voice(
        &self,
        st: &DialogueState,
        layer: usize,
        attempt: usize,
    ) -> (Option<&Persona>, Vec<String>) {
        let (voices, seed) = (self.agents.voices, self.agents.seed);
        let topic = self
            .material
            .path_topics
            .get(st.start_path)
            .copied()
            .unwrap_or(0);
        (
            voices.persona(seed, st.index, topic),
            voices.examples(seed, st.index, layer, attempt),
        )
    }
}

/// Why an attempt ended without a turn.
pub(super) enum Stop {
    /// A check failed. `stage` names the turn's drop (`dropped/<stage>`) if this was its last
    /// attempt; `feedback` is the reason code the user agent is told on the next attempt
    /// (`None` keeps the one it was told last).
    Rejected {
        stage: &'static str,
        feedback: Option<&'static str>,
    },
    /// An error that stops generation (the LLM client failed, the budget ran out).
    Error(crate::Error),
}

impl From<crate::Error> for Stop {
    fn from(e: crate::Error) -> Self {
        Stop::Error(e)
    }
}

/// The outcome of a step that may reject the attempt.
pub(super) type Step<T> = std::result::Result<T, Stop>;

/// Counts `event` and rejects the attempt at `stage`.
pub(super) fn reject(
    st: &mut DialogueState,
    event: &str,
    stage: &'static str,
    feedback: Option<&'static str>,
) -> Stop {
    st.count(event);
    Stop::Rejected { stage, feedback }
}
