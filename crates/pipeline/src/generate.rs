//! Breadth-first dialogue generation: turns are started lowest layer first (turn t of every
//! dialogue before turn t+1 of any, whenever both are ready), so that all dialogues grow
//! together; there is no barrier between layers, so a dialogue whose turn t is done goes on to
//! t+1 while slower ones finish, and the generator endpoint always has work from many
//! conversations. The checkpoint holds every dialogue's state after its last finished turn.
//!
//! One turn of one dialogue: the user agent is offered the least-used chunks of the
//! dialogue's topic path and asks about one of them; later questions go through the
//! humanizer (kept only if its guards pass); the verifier checks (a) answerability of the
//! question from its evidence, (b) uniqueness against the whole corpus: the history-aware
//! query retrieves the best other chunks and a judge grades whether each answers the question
//! too: a few partial or full answers become extra graded golds, too many mean the question is
//! too generic and it is regenerated (both after a cheap gate when a relevance judge is
//! configured: one rerank call that the evidence must pass above a floor and above its hard
//! negatives); then the answerer writes an answer from the evidence
//! alone and (c) its faithfulness is checked. A failed check regenerates (bounded attempts,
//! with the reason fed back to the user agent); a turn that never passes is dropped and its
//! reasons are counted, never written as a placeholder. Topic switches happen at a seeded turn
//! in a fixed share of dialogues: the dialogue moves to a path of another coarse topic and the
//! next accepted turn is tagged `topic_switch`.
//!
//! Every step is a pure function of the dialogue's state, the seed and the (cached) LLM
//! answers, so a killed run that restarts from the last checkpoint replays the interrupted
//! turns from the cache without paying for any call twice, and the output does not depend on
//! the order in which dialogues' turns finish.
//!
//! Files: `schedule.rs` (the loop over all dialogues), `turn.rs` (one turn's attempts as named
//! steps, sharing `attempt.rs`), `question.rs` (user agent, question guards, humanizer), `verify.rs` (answerability
//! and the corpus-wide uniqueness check with its hard negatives), `answer.rs` (answerer and
//! faithfulness), `state.rs` (dialogue state and checkpoint), `record.rs` (accepted turns and
//! their benchmark form), `unanswerable.rs`, `two_passage.rs`, `conversational.rs` and `partial.rs` (the turns
//! `[synth.mix]` draws of those kinds).

mod answer;
mod attempt;
mod conversational;
mod partial;
mod question;
mod record;
mod schedule;
mod state;
mod turn;
mod two_passage;
mod unanswerable;
mod verify;

pub(crate) use record::{TurnRecord, to_core_turn};
pub(crate) use schedule::{Finish, Generator};
pub(crate) use state::{DialogueState, GenState, Material, initial_state, load_state};
pub(crate) use two_passage::joined;
pub(crate) use unanswerable::UNANSWERABLE_CANDIDATES;
