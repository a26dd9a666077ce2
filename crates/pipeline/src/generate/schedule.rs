//! The generation loop over all dialogues: turns are started breadth-first (of the turns
//! ready to start, the lowest layer first) with no barrier between layers, a bounded number at
//! a time, each dialogue's calls on one server slot; the checkpoint is written as turns
//! finish. What happens inside one turn is in `turn.rs`.
//!
//! Under a time budget ([`StartRule`]) the dialogues started in this run go first (so that
//! they finish rather than all of them growing together), and a dialogue not started yet
//! starts only when the plan took it and the time spent plus its expected time still fits
//! the budget; a dialogue in flight is never interrupted.

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
    /// `--time-budget`: which dialogues may start, and the deadline (see
    /// [`Generator::limit_starts`]).
    pub start_rule: Option<StartRule>,
}

/// Which dialogues may start under a time budget: those the plan took, while the time spent
/// since `since` plus the dialogue's expected time fits `budget_s`.
#[derive(Debug, Clone)]
pub struct StartRule {
    pub since: std::time::Instant,
    pub budget_s: f64,
    /// Per dialogue: taken by the plan.
    pub allowed: Vec<bool>,
    /// Per dialogue: expected seconds (0 where unknown).
    pub expected_s: Vec<Option<f64>>,
}

impl StartRule {
    fn may_start(&self, i: usize) -> bool {
        let expected = self.expected_s.get(i).copied().flatten().unwrap_or(0.0);
        self.allowed.get(i).copied().unwrap_or(false)
            && self.since.elapsed().as_secs_f64() + expected <= self.budget_s
    }
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
    /// Under a time budget of `budget_s` seconds counted from `since`: only the dialogues
    /// `allowed` may start, each while the time spent plus its `expected_s` fits.
    pub fn limit_starts(
        &mut self,
        since: std::time::Instant,
        budget_s: f64,
        allowed: Vec<bool>,
        expected_s: Vec<Option<f64>>,
    ) {
        self.start_rule = Some(StartRule {
            since,
            budget_s,
            allowed,
            expected_s,
        });
    }

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
            .enumerate()
            .filter(|(i, _)| {
                self.start_rule
                    .as_ref()
                    .is_none_or(|r| r.allowed.get(*i).copied().unwrap_or(false))
            })
            .map(|(_, d)| turns.saturating_sub(d.layers_done))
            .sum();
        self.progress.stage(
            &format!("synth {} dialogues x {turns} turns", state.dialogues.len()),
            remaining as u64,
        );
        // (waiting to start under a time budget, layer, dialogue): without a budget the first
        // is always 0, so the lowest layer goes first
        let waiting = u8::from(self.start_rule.is_some());
        let mut ready: BinaryHeap<Reverse<(u8, usize, usize)>> = state
            .dialogues
            .iter()
            .enumerate()
            .filter(|(_, d)| d.layers_done < turns)
            .map(|(i, d)| Reverse((waiting, d.layers_done, i)))
            .collect();
        let mut running = FuturesUnordered::new();
        let mut last_save = std::time::Instant::now();
        let mut stop: Option<crate::Error> = None;
        loop {
            while stop.is_none() && running.len() < self.concurrency.max(1) {
                let Some(Reverse((tier, layer, i))) = ready.pop() else {
                    break;
                };
                if tier > 0 && self.start_rule.as_ref().is_some_and(|r| !r.may_start(i)) {
                    // not started: left for a rerun
                    continue;
                }
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
                        ready.push(Reverse((0, d.layers_done, i)));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dialogue_starts_only_when_taken_and_its_time_still_fits() {
        let Some(since) =
            std::time::Instant::now().checked_sub(std::time::Duration::from_secs(100))
        else {
            return;
        };
        let rule = StartRule {
            since,
            budget_s: 1000.0,
            allowed: vec![true, false, true, true],
            expected_s: vec![Some(500.0), Some(1.0), None, Some(950.0)],
        };
        // 100 s spent: 500 more fit, an unknown time fits, 950 more do not
        assert!(rule.may_start(0));
        assert!(!rule.may_start(1), "not taken by the plan");
        assert!(rule.may_start(2));
        assert!(!rule.may_start(3));
        assert!(!rule.may_start(4), "no such dialogue");
        // once the budget is spent nothing starts, whatever its time
        let spent = StartRule {
            budget_s: 50.0,
            ..rule
        };
        assert!(!spent.may_start(2));
    }
}
