//! The generation loop over all dialogues: turns are started breadth-first (of the turns
//! ready to start, the lowest layer first) with no barrier between layers, a bounded number at
//! a time, each dialogue's calls on one server slot; the checkpoint is written as turns
//! finish. What happens inside one turn is in `turn.rs`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::Path;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use mtr_core::progress::Progress;

use super::state::{DialogueState, GenState, Material, save_state};
use crate::agents::Agents;
use crate::config::GenerationOptions;
use crate::error::Result;
use crate::search::CorpusSearch;

/// Generates layers until `turns`, checkpointing into `state_path` after each.
pub struct Generator<'a> {
    pub agents: Agents<'a>,
    pub search: Option<&'a CorpusSearch>,
    pub material: Material<'a>,
    pub opts: &'a GenerationOptions,
    pub progress: &'a dyn Progress,
    pub concurrency: usize,
}

/// How generation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    Complete,
    /// The `--max-cost` budget stopped it after this many layers (state saved).
    BudgetStopped {
        layers_done: usize,
    },
}

impl Generator<'_> {
    /// Generates every dialogue up to `turns` turns. Work is scheduled breadth-first (of the
    /// turns ready to start, the lowest layer goes first, then the lowest dialogue index), but
    /// without a barrier between layers: dialogue d's turn t+1 starts as soon as its turn t is
    /// done and a slot is free, so one slow dialogue never idles the generator endpoint. The
    /// checkpoint holds each dialogue's state after its last finished turn; it is written at
    /// most every [`CHECKPOINT_EVERY`] and when generation stops. Each dialogue's turns depend
    /// only on that dialogue's state, the seed and the (cached) LLM answers, so the result does
    /// not depend on the order in which turns finish.
    pub async fn run(
        &self,
        state: &mut GenState,
        turns: usize,
        state_path: &Path,
    ) -> Result<Finish> {
        let remaining: usize = state
            .dialogues
            .iter()
            .map(|d| turns.saturating_sub(d.layers_done))
            .sum();
        self.progress.stage(
            &format!("synth {} dialogues x {turns} turns", state.dialogues.len()),
            remaining as u64,
        );
        let mut ready: BinaryHeap<Reverse<(usize, usize)>> = state
            .dialogues
            .iter()
            .enumerate()
            .filter(|(_, d)| d.layers_done < turns)
            .map(|(i, d)| Reverse((d.layers_done, i)))
            .collect();
        let mut running = FuturesUnordered::new();
        let mut last_save = std::time::Instant::now();
        let mut stop: Option<crate::Error> = None;
        loop {
            while stop.is_none() && running.len() < self.concurrency.max(1) {
                let Some(Reverse((layer, i))) = ready.pop() else {
                    break;
                };
                let d = state.dialogues[i].clone();
                // a dialogue's calls stay on one server slot, which keeps its prefix cached
                let conversation = d.id.clone();
                running.push(async move {
                    let turn = self.advance(d, layer);
                    (i, mtr_llm::affinity::scope(conversation, turn).await)
                });
            }
            let Some((i, outcome)) = running.next().await else {
                break;
            };
            match outcome {
                Ok(mut d) => {
                    d.layers_done += 1;
                    if d.layers_done < turns {
                        ready.push(Reverse((d.layers_done, i)));
                    }
                    state.dialogues[i] = d;
                }
                Err(e) => {
                    // stop scheduling; turns in flight are abandoned (their calls are cached)
                    stop.get_or_insert(e);
                    break;
                }
            }
            if last_save.elapsed() >= CHECKPOINT_EVERY {
                state.layers_done = min_layers(state);
                save_state(state_path, state)?;
                last_save = std::time::Instant::now();
            }
        }
        drop(running);
        self.progress.finish_stage();
        state.layers_done = min_layers(state);
        save_state(state_path, state)?;
        match stop {
            None => Ok(Finish::Complete),
            Some(e) if e.is_budget_stop() => Ok(Finish::BudgetStopped {
                layers_done: state.layers_done,
            }),
            Some(e) => Err(e),
        }
    }

    /// Generates turn `layer` of one dialogue.
    async fn advance(&self, mut st: DialogueState, layer: usize) -> Result<DialogueState> {
        if st.switch_at == Some(layer)
            && let Some(p) = st.switch_path
        {
            st.path = p;
            st.round = st.switch_round;
            st.pending_switch = true;
        }
        let outcome = self.turn(&mut st, layer).await;
        self.progress.advance(1);
        outcome?;
        Ok(st)
    }
}

/// How often, at most, the checkpoint is rewritten while turns finish.
pub const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_millis(500);

/// The number of layers every dialogue has finished.
fn min_layers(state: &GenState) -> usize {
    state
        .dialogues
        .iter()
        .map(|d| d.layers_done)
        .min()
        .unwrap_or(0)
}
