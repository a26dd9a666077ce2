//! The generation loop over all dialogues: turns are started breadth-first (of the turns
//! ready to start, the lowest layer first) with no barrier between layers, a bounded number at
//! a time, each dialogue's calls on one server slot; the checkpoint is written as turns
//! finish. What happens inside one turn is in `turn.rs`.
//!
//! Under a time budget ([`StartRule`]) the dialogues started in this run go first (so that
//! they finish rather than all of them growing together), and a dialogue not started yet
//! starts only when the plan took it and the time spent plus its expected time still fits
//! the budget. No turn starts (a dialogue's next one, or a new dialogue's first) when it
//! would end past the budget, taking as long as a typical finished turn (the median: one
//! turn that retried its question three times must not stop the others early), and no LLM
//! call starts once the budget is spent: a turn still in flight then is left unfinished (its
//! finished calls are cached for a rerun), so the run ends within one call of its budget with
//! every verified turn kept ([`Track`], [`Deadline`]). A dialogue the plan left starts
//! after all when the finished turns show the work running ahead of the plan
//! ([`Pace`]): the plan counts each call's prompt at the measured speed, and the servers'
//! prompt caches and batched decoding often beat it. It starts when the started dialogues'
//! remaining turns and its own first turn fit, not all of its turns: the turns that do not
//! fit are left for a rerun as any stopped dialogue's are, and the budget's last minutes are
//! not left idle.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::path::Path;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use mtr_core::progress::Progress;

use super::state::{DialogueState, GenState, Material, save_state};
use crate::agents::Agents;
use crate::clock::{Deadline, JobClock};
use crate::config::GenerationOptions;
use crate::error::Result;
use crate::search::CorpusSearch;

/// Generates layers until `turns`, checkpointing into `state_path` after each.
pub(crate) struct Generator<'a> {
    pub agents: Agents<'a>,
    pub search: Option<&'a CorpusSearch>,
    pub material: Material<'a>,
    pub opts: &'a GenerationOptions,
    pub progress: &'a dyn Progress,
    pub concurrency: usize,
    /// `[synth.mix]`: the kind each planned turn is drawn.
    pub mix: &'a crate::mix::MixOptions,
    /// `--time-budget`: which dialogues may start, and the deadline (see
    /// [`Generator::limit_starts`]).
    pub start_rule: Option<StartRule>,
}

/// Which dialogues may start under a time budget: those the plan took, while the time spent
/// since `since` plus the dialogue's expected time fits `budget_s`.
#[derive(Debug, Clone)]
pub(crate) struct StartRule {
    pub clock: JobClock,
    pub budget_s: f64,
    /// Per dialogue: taken by the plan.
    pub allowed: Vec<bool>,
    /// Per dialogue: expected seconds (0 where unknown).
    pub expected_s: Vec<Option<f64>>,
    /// A dialogue not started may start when the work runs ahead of the plan ([`Pace`]).
    pub ahead: bool,
}

impl StartRule {
    fn may_start(&self, i: usize) -> bool {
        let expected = self.expected_s.get(i).copied().flatten().unwrap_or(0.0);
        self.allowed.get(i).copied().unwrap_or(false)
            && self.clock.elapsed_s() + expected <= self.budget_s
    }

    /// The planned seconds of one turn of dialogue `i`, which had `turns_left` to go when
    /// the run began; None where its time is unknown.
    fn turn_seconds(&self, i: usize, turns_left: usize) -> Option<f64> {
        let s = self.expected_s.get(i).copied().flatten()?;
        Some(s / turns_left.max(1) as f64)
    }
}

/// The slowest the plan's pace is taken to be: the finished turns may show the work running
/// faster than planned, but a dialogue the plan left starts only as if it ran at most twice
/// as fast (turns answered from the LLM cache of an earlier run take no time at all).
pub(super) const MIN_PACE: f64 = 0.5;

/// How the run keeps to its plan: the planned seconds of the turns finished and of the turns
/// the started dialogues still have, against the generation time spent.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Pace {
    /// Planned seconds of the turns finished in this run.
    pub planned_done_s: f64,
    /// Planned seconds of the turns the started dialogues have left (those in flight whole).
    pub planned_left_s: f64,
}

impl Pace {
    /// Whether a dialogue of `expected_s` planned seconds may start after `generating_s`
    /// seconds of generation, `spent_s` since the job began, under `budget_s`: at the pace of
    /// the finished turns (generation seconds per planned second, at least [`MIN_PACE`]),
    /// the started dialogues' remaining turns and the new one still end within the budget.
    /// Nothing starts before a turn has finished (no pace yet).
    pub(super) fn fits(
        &self,
        expected_s: f64,
        generating_s: f64,
        spent_s: f64,
        budget_s: f64,
    ) -> bool {
        if self.planned_done_s <= 0.0 {
            return false;
        }
        let pace = (generating_s / self.planned_done_s).max(MIN_PACE);
        spent_s + pace * (self.planned_left_s + expected_s) <= budget_s
    }
}

/// How generation ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Finish {
    /// Every turn that could start ran; `cut`: the dialogues (`DialogueState::index`) whose
    /// turn in flight the time budget's deadline left unfinished (a call it kept from
    /// starting).
    Complete { cut: Vec<usize> },
    /// The `--max-cost` budget stopped it after this many layers (state saved).
    BudgetStopped { layers_done: usize },
}

impl Generator<'_> {
    /// Under a time budget of `budget_s` seconds counted from `since`: only the dialogues
    /// `allowed` may start, each while the time spent plus its `expected_s` fits, and with
    /// `ahead` the others too once the pace of the finished turns fits them ([`Pace`]).
    pub(crate) fn limit_starts(
        &mut self,
        clock: JobClock,
        budget_s: f64,
        allowed: Vec<bool>,
        expected_s: Vec<Option<f64>>,
        ahead: bool,
    ) {
        self.agents.deadline = Some(Deadline {
            clock: clock.clone(),
            budget_s,
        });
        self.start_rule = Some(StartRule {
            clock,
            budget_s,
            allowed,
            expected_s,
            ahead,
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
    pub(crate) async fn run(
        &self,
        state: &mut GenState,
        turns: usize,
        state_path: &Path,
    ) -> Result<Finish> {
        self.progress.stage(
            &format!("synth {} dialogues x {turns} turns", state.dialogues.len()),
            self.turns_to_run(state, turns) as u64,
        );
        // (waiting to start under a time budget, layer, dialogue): without a budget the first
        // is always 0, so the lowest layer goes first
        let waiting = u8::from(self.start_rule.is_some());
        let mut ready: Ready = state
            .dialogues
            .iter()
            .enumerate()
            .filter(|(_, d)| d.layers_done < turns)
            .map(|(i, d)| Reverse((waiting, d.layers_done, i)))
            .collect();
        let mut running = FuturesUnordered::new();
        let mut last_save = std::time::Instant::now();
        let mut stop: Option<crate::Error> = None;
        // the dialogues whose turn in flight the deadline cut: once one is, nothing starts
        let mut cut: Vec<usize> = Vec::new();
        let rule = self.start_rule.as_ref();
        let mut track = rule.map(|r| Track::new(r, state, turns));
        loop {
            while stop.is_none() && cut.is_empty() && running.len() < self.concurrency.max(1) {
                let Some(Reverse((tier, layer, i))) = ready.pop() else {
                    break;
                };
                if let (Some(t), Some(r)) = (&mut track, rule)
                    && !t.may_start(r, (tier, layer, i), turns)
                {
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
                    let next = d.layers_done;
                    state.dialogues[i] = d;
                    let mut go_on = next < turns;
                    if let (Some(t), Some(r)) = (&mut track, rule) {
                        t.finished(r, i);
                        go_on = go_on && t.may_go_on(r, i);
                    }
                    if go_on {
                        ready.push(Reverse((0, next, i)));
                    }
                    if let (Some(t), Some(r)) = (&mut track, rule) {
                        t.start_ahead(r, &mut ready, turns);
                    }
                }
                Err(e) if e.is_deadline_stop() => {
                    // the budget is spent: this turn is left unfinished (its calls are
                    // cached); the turns in flight go on until they end or are cut too
                    tracing::info!(
                        "time budget: dialogue {} left its turn unfinished (no call starts past the budget)",
                        i + 1
                    );
                    cut.push(state.dialogues[i].index);
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
            None => Ok(Finish::Complete { cut }),
            Some(e) if e.is_budget_stop() => Ok(Finish::BudgetStopped {
                layers_done: state.layers_done,
            }),
            Some(e) => Err(e),
        }
    }

    /// The turns this run may make: every unfinished dialogue's, under a time budget those of
    /// the dialogues the plan took.
    fn turns_to_run(&self, state: &GenState, turns: usize) -> usize {
        state
            .dialogues
            .iter()
            .enumerate()
            .filter(|(i, _)| {
                self.start_rule
                    .as_ref()
                    .is_none_or(|r| r.allowed.get(*i).copied().unwrap_or(false))
            })
            .map(|(_, d)| turns.saturating_sub(d.layers_done))
            .sum()
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

/// The turns ready to start: (waiting to start under a time budget, layer, dialogue),
/// smallest first.
type Ready = BinaryHeap<Reverse<(u8, usize, usize)>>;

/// How a run under a time budget keeps to it: each dialogue's planned seconds per turn, the
/// pace of the finished turns against them, the dialogues the plan left (in plan order) that
/// may start when the pace shows the work running ahead of it, and how long turns take, so
/// that no turn starts that would end past the budget.
struct Track {
    turn_s: Vec<Option<f64>>,
    pace: Pace,
    held: VecDeque<(usize, usize)>,
    /// The clock when generation began.
    began_s: f64,
    /// The clock when each dialogue's turn in flight started.
    started_s: Vec<f64>,
    /// How long each finished turn of this run took, in the order they finished.
    turns_took_s: Vec<f64>,
}

impl Track {
    fn new(rule: &StartRule, state: &GenState, turns: usize) -> Self {
        let turn_s = state
            .dialogues
            .iter()
            .enumerate()
            .map(|(i, d)| rule.turn_seconds(i, turns.saturating_sub(d.layers_done)))
            .collect();
        Self {
            turn_s,
            pace: Pace::default(),
            held: VecDeque::new(),
            began_s: rule.clock.elapsed_s(),
            started_s: vec![0.0; state.dialogues.len()],
            turns_took_s: Vec::new(),
        }
    }

    /// Whether turn `layer` of dialogue `i` starts now (`tier` > 0: the dialogue has not
    /// started yet). Such a dialogue starts when the plan took it and its time and one more
    /// turn fit, else it is held for a start ahead of plan.
    fn may_start(&mut self, rule: &StartRule, at: (u8, usize, usize), turns: usize) -> bool {
        let (tier, layer, i) = at;
        if tier > 0 && !rule.may_start(i) {
            // not started: left for a rerun, unless the work runs ahead of plan
            if self.turn_s[i].is_some() && rule.ahead {
                self.held.push_back((i, layer));
            }
            return false;
        }
        if tier > 0 && !self.fits_one_more_turn(rule) {
            return false;
        }
        if tier > 0
            && let Some(t) = self.turn_s[i]
        {
            self.pace.planned_left_s += t * turns.saturating_sub(layer) as f64;
        }
        self.started_s[i] = rule.clock.elapsed_s();
        true
    }

    /// Dialogue `i` finished a turn: the time it took, and its planned time done.
    fn finished(&mut self, rule: &StartRule, i: usize) {
        let took = (rule.clock.elapsed_s() - self.started_s[i]).max(0.0);
        self.turns_took_s.push(took);
        if let Some(t) = self.turn_s[i] {
            self.pace.planned_done_s += t;
            self.pace.planned_left_s = (self.pace.planned_left_s - t).max(0.0);
        }
    }

    /// Whether dialogue `i` goes on to its next turn: not when that turn, taking as long as
    /// a typical one ([`Track::typical_turn_s`]), would end past the budget. It stops at this
    /// turn boundary with every verified turn kept; a rerun goes on from there.
    fn may_go_on(&self, rule: &StartRule, i: usize) -> bool {
        let go_on = self.fits_one_more_turn(rule);
        if !go_on {
            tracing::info!(
                "time budget: dialogue {} stops at a turn boundary (its next turn would end past the budget)",
                i + 1
            );
        }
        go_on
    }

    /// Whether one more turn, taking as long as a typical finished one, ends within the
    /// budget (before any turn finished: whether the budget is not spent yet).
    fn fits_one_more_turn(&self, rule: &StartRule) -> bool {
        rule.clock.elapsed_s() + self.typical_turn_s() <= rule.budget_s
    }

    /// What a turn is expected to take: the median of the finished turns (0 before any).
    /// Not the last one's time: the turns finishing near the end of a run include those
    /// that retried their question, and one of them must not stop every other dialogue
    /// early; a turn that does run long is cut at the deadline.
    fn typical_turn_s(&self) -> f64 {
        median(&self.turns_took_s)
    }

    /// Moves the dialogues not started, in plan order, to `ready` while the pace fits the
    /// first turn of each ([`Pace::fits`]) after the started dialogues' remaining turns; the
    /// first that does not fit stops the rest, as in the plan.
    fn start_ahead(&mut self, rule: &StartRule, ready: &mut Ready, turns: usize) {
        let spent = rule.clock.elapsed_s();
        let generating = spent - self.began_s;
        while let Some(&(j, layer)) = self.held.front() {
            let Some(t) = self.turn_s.get(j).copied().flatten() else {
                self.held.pop_front();
                continue;
            };
            let expected = t * turns.saturating_sub(layer) as f64;
            if !self.pace.fits(t, generating, spent, rule.budget_s) {
                break;
            }
            self.held.pop_front();
            self.pace.planned_left_s += expected;
            tracing::info!(
                "time budget: dialogue {} starts ahead of plan (the finished turns took {:.0}% of their planned time)",
                j + 1,
                100.0 * generating / self.pace.planned_done_s.max(f64::EPSILON)
            );
            ready.push(Reverse((0, layer, j)));
        }
    }
}

/// How often, at most, the checkpoint is rewritten while turns finish.
pub(crate) const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_millis(500);

/// The median of `xs` (the mean of the middle two for an even count; 0 when empty).
fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

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
        let time = crate::clock::ManualTime::default();
        time.advance_ms(100_000);
        let rule = StartRule {
            clock: JobClock::manual(&time),
            budget_s: 1000.0,
            allowed: vec![true, false, true, true],
            expected_s: vec![Some(500.0), Some(1.0), None, Some(950.0)],
            ahead: true,
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

    #[test]
    fn a_dialogue_the_plan_left_starts_only_when_the_finished_turns_ran_ahead_of_it() {
        // 200 s of planned turns done in 100 s of generation (half the planned time), 300 s
        // planned still to go in the dialogues started, 150 s spent since the job began
        let pace = Pace {
            planned_done_s: 200.0,
            planned_left_s: 300.0,
        };
        // at half the planned time: 150 + 0.5 x (300 + 200) = 400 s
        assert!(pace.fits(200.0, 100.0, 150.0, 400.0));
        assert!(!pace.fits(200.0, 100.0, 150.0, 399.0));
        // at the planned time (200 s for 200 planned): 150 + 500 = 650 s
        assert!(!pace.fits(200.0, 200.0, 150.0, 600.0));
        assert!(pace.fits(200.0, 200.0, 150.0, 650.0));
        // turns answered from the cache take no time: the pace is taken as at most twice the
        // plan's (MIN_PACE), so the same dialogue needs 400 s, not 150
        assert!(!pace.fits(200.0, 0.0, 150.0, 399.0));
        assert!(pace.fits(200.0, 0.0, 150.0, 400.0));
        // no turn finished yet: no pace, nothing starts
        let none = Pace {
            planned_done_s: 0.0,
            planned_left_s: 0.0,
        };
        assert!(!none.fits(1.0, 0.0, 0.0, 1e9));
    }

    #[test]
    fn the_next_turn_is_expected_to_take_as_long_as_a_typical_one_not_the_last() {
        let time = crate::clock::ManualTime::default();
        let rule = StartRule {
            clock: JobClock::manual(&time),
            budget_s: 100.0,
            allowed: vec![true; 3],
            expected_s: vec![None; 3],
            ahead: false,
        };
        let state = GenState {
            fingerprint: String::new(),
            layers_done: 0,
            dialogues: Vec::new(),
        };
        let mut track = Track::new(&rule, &state, 3);
        (track.started_s, track.turn_s) = (vec![0.0; 3], vec![None; 3]);
        // nothing finished: a turn starts while the budget is not spent
        assert!(track.fits_one_more_turn(&rule));
        // turns of 10 s and 12 s, then one of 60 s (its question asked three times)
        for (i, t) in [(0, 10_000), (1, 2_000), (2, 48_000)] {
            time.advance_ms(t);
            track.finished(&rule, i);
        }
        assert_eq!(track.turns_took_s, [10.0, 12.0, 60.0]);
        assert_eq!(track.typical_turn_s(), 12.0);
        // at 60 s: a 12 s turn fits the 100 s budget (a 60 s one would not)
        assert!(track.fits_one_more_turn(&rule));
        time.advance_ms(29_000);
        assert!(!track.fits_one_more_turn(&rule), "89 s + 12 s > 100 s");
        assert_eq!(median(&[3.0, 1.0, 2.0, 10.0]), 2.5);
        assert_eq!(median(&[]), 0.0);
    }

    #[test]
    fn a_held_dialogue_starts_when_its_first_turn_fits_not_all_of_its_turns() {
        let time = crate::clock::ManualTime::default();
        let rule = StartRule {
            clock: JobClock::manual(&time),
            budget_s: 100.0,
            allowed: vec![true, false],
            expected_s: vec![Some(30.0), Some(30.0)],
            ahead: true,
        };
        let state = GenState {
            fingerprint: String::new(),
            layers_done: 0,
            dialogues: Vec::new(),
        };
        // dialogue 1 held for a start ahead of the plan, 10 s planned a turn
        let held = || {
            let mut t = Track::new(&rule, &state, 3);
            t.turn_s = vec![Some(10.0), Some(10.0)];
            t.held.push_back((1, 0));
            t
        };
        let mut track = held();
        // 70 s of generation did 70 planned seconds (the plan's pace); 10 s of dialogue 0
        // are left: 70 + 10 + 10 = 90 s fits the first turn of dialogue 1 (its three turns,
        // 110 s, would not); the turns after it stop at a turn boundary
        track.pace = Pace {
            planned_done_s: 70.0,
            planned_left_s: 10.0,
        };
        time.advance_ms(70_000);
        let mut ready = Ready::new();
        track.start_ahead(&rule, &mut ready, 3);
        assert_eq!(ready.pop(), Some(Reverse((0, 0, 1))));
        assert!(track.held.is_empty());
        // its whole planned time is counted as left: nothing else starts on it
        assert_eq!(track.pace.planned_left_s, 40.0);
        // at 81 s its first turn no longer fits
        let mut late = held();
        late.pace = track.pace.clone();
        late.pace.planned_left_s = 10.0;
        time.advance_ms(11_000);
        late.began_s = 11.0;
        let mut ready = Ready::new();
        late.start_ahead(&rule, &mut ready, 3);
        assert!(ready.is_empty());
    }

    #[test]
    fn a_turns_planned_time_is_its_dialogues_spread_over_the_turns_left() {
        let rule = StartRule {
            clock: JobClock::wall(),
            budget_s: 100.0,
            allowed: vec![true, true],
            expected_s: vec![Some(90.0), None],
            ahead: true,
        };
        assert_eq!(rule.turn_seconds(0, 3), Some(30.0));
        assert_eq!(
            rule.turn_seconds(0, 0),
            Some(90.0),
            "no turn left: never divided by 0"
        );
        assert_eq!(rule.turn_seconds(1, 3), None);
        assert_eq!(rule.turn_seconds(5, 3), None);
    }
}
