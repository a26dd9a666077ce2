//! What every step of one turn's attempt shares: the turn's input, how an attempt stops
//! ([`Stop`]: rejected at a stage, or an error), and [`reject`], which counts the event. The
//! steps (`question.rs`, `verify.rs`, `answer.rs`) and the attempt loop (`turn.rs`) speak it.

use mtr_core::Turn;

use super::state::DialogueState;
use crate::agents::{PromptPassage, Utter};

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
