//! Prompts that must fit the judges' context. A prompt longer than a judge's context is cut by
//! the server (or fails), and such prompts cluster in late turns with long histories, which
//! biases every mean. Before judging, every unit's prompt is rendered and fitted to the
//! smallest context among the judges ([`ContextBudget::fit`]: the oldest turns of the history
//! go first); units whose prompt cannot fit even without history are never sent and are
//! counted as skipped (`too_long`), and the number of shortened prompts is reported.
//!
//! The same pass records each unit's prompt length, used to show failure rates by prompt length:
//! counted exactly up to [`mtr_llm::tokens::EXACT_PROMPTS`] units, above it for a seeded sample
//! (a hash of each unit's key) and estimated from their length for the others
//! ([`mtr_llm::tokens::TokenTally`], one per dimension). A prompt fitted to a context limit has
//! been counted exactly by the fitting itself.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use mtr_llm::Llm;
use mtr_llm::tokens::{self, SampleRule, TokenTally};
use serde::{Deserialize, Serialize};

use crate::dimension::Dimension;
use crate::error::Result;
use crate::judges::engine::{JudgeRef, Unit};
use crate::judges::prompts::{CONTEXT_MARGIN, ContextBudget, Fitted};

/// The budget of an ensemble: the smallest known context among its judges, less the judges'
/// `max_tokens`. `None` when no judge declares a context size.
pub(crate) fn budget_for(llm: &Llm, judges: &[JudgeRef]) -> Option<ContextBudget> {
    // a relevance judge reads no prompt: its context does not limit the chat judges'
    let names: BTreeSet<&str> = judges
        .iter()
        .filter(|j| !j.relevance)
        .map(|j| j.name.as_str())
        .collect();
    let ctx = llm
        .endpoints()
        .into_iter()
        .filter(|e| names.contains(e.name.as_str()))
        .filter_map(|e| e.context_tokens)
        .min()?;
    let max_out = llm
        .sampling(mtr_llm::Role::Judges)
        .max_tokens
        .unwrap_or(1024);
    Some(ContextBudget {
        context_tokens: u64::from(ctx),
        max_output_tokens: u64::from(max_out),
    })
}

/// Key of an item: dimension, turn, passage.
pub(crate) type ItemKey = (Dimension, String, Option<String>);

fn key(u: &Unit) -> ItemKey {
    (u.dimension, u.turn_id.clone(), u.passage_id.clone())
}

/// What a unit's prompt is sampled by: its item, trial and judge.
fn sample_key(u: &Unit) -> String {
    format!(
        "{:?}\u{1f}{}\u{1f}{:?}\u{1f}{:?}\u{1f}{:?}",
        u.dimension, u.turn_id, u.passage_id, u.trial, u.judge
    )
}

/// The tokens of unit `u`'s prompt when `rule` picks it to be counted, else `None`.
fn count_of(rule: SampleRule, u: &Unit, request: &mtr_llm::ChatRequest) -> Option<u64> {
    rule.picks(&sample_key(u))
        .then(|| tokens::count_messages("", &request.messages))
}

/// Prompt lengths of the screened units: counted, or (bytes, messages) left to the estimate.
struct Lengths {
    rule: SampleRule,
    tallies: BTreeMap<Dimension, TokenTally>,
    counted: HashMap<ItemKey, u64>,
    /// The longest uncounted prompt of an item: (content bytes, messages).
    uncounted: HashMap<ItemKey, (u64, u64)>,
}

impl Lengths {
    fn new(units: usize) -> Self {
        Self {
            rule: SampleRule::for_prompts(units as u64),
            tallies: BTreeMap::new(),
            counted: HashMap::new(),
            uncounted: HashMap::new(),
        }
    }

    fn add(&mut self, u: &Unit, k: ItemKey, request: &mtr_llm::ChatRequest) {
        let count = count_of(self.rule, u, request);
        self.add_count(u, k, request, count);
    }

    /// [`Lengths::add`] with the prompt's count ([`count_of`]) made beforehand.
    fn add_count(
        &mut self,
        u: &Unit,
        k: ItemKey,
        request: &mtr_llm::ChatRequest,
        count: Option<u64>,
    ) {
        let tally = self.tallies.entry(u.dimension).or_default();
        let msgs = &request.messages;
        tally.add_count(msgs, count);
        match count {
            Some(n) => {
                let e = self.counted.entry(k).or_default();
                *e = (*e).max(n);
            }
            None => {
                let len = (tokens::content_bytes(msgs), msgs.len() as u64);
                let e = self.uncounted.entry(k).or_default();
                *e = (*e).max(len);
            }
        }
    }

    /// Tokens per item: the largest of its counted and estimated prompts.
    fn finish(mut self) -> HashMap<ItemKey, u64> {
        for (k, (bytes, msgs)) in self.uncounted {
            let est = self
                .tallies
                .get(&k.0)
                .map_or(0, |t| t.estimate(bytes, msgs));
            let e = self.counted.entry(k).or_default();
            *e = (*e).max(est);
        }
        self.counted
    }
}

/// Units that fit, and what fitting did.
#[derive(Debug, Default)]
pub(crate) struct Screened {
    pub kept: Vec<Unit>,
    /// Prompts (units) sent with a shortened history, per dimension.
    pub shortened: BTreeMap<Dimension, usize>,
    /// Items left out because a prompt of theirs cannot fit, per dimension.
    pub too_long: BTreeMap<Dimension, usize>,
    /// Counted prompt tokens (largest over the item's units, after fitting) per item.
    pub prompt_tokens: HashMap<ItemKey, u64>,
}

/// Fits every unit (`fit` renders it); an item any of whose prompts cannot fit is dropped
/// whole (all its trials), so that no judge sees it.
pub(crate) fn screen(units: Vec<Unit>, fit: &dyn Fn(&Unit) -> Result<Fitted>) -> Result<Screened> {
    let mut out = Screened::default();
    let mut too_long: BTreeSet<ItemKey> = BTreeSet::new();
    let mut lengths = Lengths::new(units.len());
    for u in &units {
        let k = key(u);
        match fit(u)? {
            Fitted::Fits { request, dropped } => {
                if dropped > 0 {
                    *out.shortened.entry(u.dimension).or_default() += 1;
                }
                lengths.add(u, k, &request);
            }
            Fitted::TooLong { .. } => {
                too_long.insert(k);
            }
        }
    }
    out.prompt_tokens = lengths.finish();
    for k in &too_long {
        *out.too_long.entry(k.0).or_default() += 1;
        out.prompt_tokens.remove(k);
    }
    out.kept = units
        .into_iter()
        .filter(|u| !too_long.contains(&key(u)))
        .collect();
    Ok(out)
}

/// The prompt lengths of units that need no fitting (no judge declares a context size: every
/// unit is kept whole), recorded as the judging renders them ([`Recording`]) rather than by
/// rendering every unit once more beforehand; [`Deferred::finish`] renders only the units the
/// judging did not (reused from an earlier run, left out by a stop). The same figures as
/// [`screen`]'s: every unit is added once, and [`Lengths`] sums and takes maxima, which no
/// order changes.
pub(crate) struct Deferred {
    state: std::sync::Mutex<(Lengths, Vec<bool>)>,
}

impl Deferred {
    /// For the units `units` (indexed as the judging indexes them).
    pub(crate) fn new(units: &[Unit]) -> Self {
        Self {
            state: std::sync::Mutex::new((Lengths::new(units.len()), vec![false; units.len()])),
        }
    }

    /// Records unit `ui`'s rendered request, the first time it is rendered.
    fn record(&self, ui: usize, u: &Unit, request: &mtr_llm::ChatRequest) {
        let lock = || self.state.lock().unwrap_or_else(|p| p.into_inner());
        let rule = {
            let mut state = lock();
            let (lengths, seen) = &mut *state;
            match seen.get_mut(ui) {
                Some(s) if !*s => *s = true,
                _ => return,
            }
            lengths.rule
        };
        // counted outside the lock: the units rendered on other threads meanwhile are
        // recorded without waiting for it
        let count = count_of(rule, u, request);
        lock().0.add_count(u, key(u), request, count);
    }

    /// The prompt tokens per item ([`Screened::prompt_tokens`]): the units not rendered while
    /// judging are rendered (`fit`) now.
    pub(crate) fn finish(
        self,
        units: &[Unit],
        fit: &dyn Fn(&Unit) -> Result<Fitted>,
    ) -> Result<HashMap<ItemKey, u64>> {
        let (mut lengths, seen) = self.state.into_inner().unwrap_or_else(|p| p.into_inner());
        for (u, _) in units.iter().zip(&seen).filter(|(_, s)| !**s) {
            if let Fitted::Fits { request, .. } = fit(u)? {
                lengths.add(u, key(u), &request);
            }
        }
        Ok(lengths.finish())
    }
}

/// A renderer that records, in [`Deferred`], the prompt length of each unit it renders.
pub(crate) struct Recording<'a> {
    pub render: &'a dyn crate::judges::engine::Render,
    pub lengths: &'a Deferred,
}

impl crate::judges::engine::Render for Recording<'_> {
    fn render(&self, unit: &Unit) -> Result<mtr_llm::ChatRequest> {
        self.render.render(unit)
    }
    fn prompt_id(&self, dim: Dimension) -> String {
        self.render.prompt_id(dim)
    }
    fn relevance(&self, unit: &Unit) -> Result<Option<crate::judges::relevance::RelevanceInput>> {
        self.render.relevance(unit)
    }
    fn rendered(&self, ui: usize, unit: &Unit, req: &mtr_llm::ChatRequest) {
        self.lengths.record(ui, unit, req);
    }
}

/// What fitting prompts to the judges' context did (`summary.json`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextInfo {
    /// The smallest context among the judges (tokens); none = unknown, nothing was fitted.
    pub context_tokens: Option<u64>,
    /// Prompt tokens allowed: context less the answer's `max_tokens` (tiktoken count times
    /// `1 + margin` must stay within it).
    pub prompt_limit: Option<u64>,
    pub margin: f64,
    /// Prompts sent with their oldest turns left out, per dimension.
    pub shortened: BTreeMap<Dimension, usize>,
    /// Items skipped as `too_long` (never sent), per dimension.
    pub too_long: BTreeMap<Dimension, usize>,
    /// The same for the human calibration set.
    pub human_shortened: usize,
    pub human_too_long: usize,
}

impl ContextInfo {
    pub(crate) fn new(budget: Option<&ContextBudget>) -> Self {
        Self {
            context_tokens: budget.map(|b| b.context_tokens),
            prompt_limit: budget.map(ContextBudget::limit),
            margin: CONTEXT_MARGIN,
            ..Default::default()
        }
    }

    pub(crate) fn add(&mut self, s: &Screened) {
        for (d, n) in &s.shortened {
            *self.shortened.entry(*d).or_default() += n;
        }
        for (d, n) in &s.too_long {
            *self.too_long.entry(*d).or_default() += n;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judges::prompts::{AuditPrompts, TurnView};

    fn unit(turn: usize) -> Unit {
        Unit {
            dimension: Dimension::Quality,
            dialogue_id: "d1".into(),
            turn_id: format!("d1::{turn}"),
            turn,
            passage_id: None,
            trial: None,
            pool: None,
            gold_position: None,
            source: turn - 1,
            judge: None,
        }
    }

    fn request(words: usize) -> mtr_llm::ChatRequest {
        mtr_llm::ChatRequest::new(vec![
            mtr_llm::ChatMessage::system("Rate the answer."),
            mtr_llm::ChatMessage::user("the river passes the old mill. ".repeat(words)),
        ])
    }

    #[test]
    fn prompt_lengths_counted_exactly_or_estimated_from_a_sample() {
        let units: Vec<Unit> = (1..=2000).map(unit).collect();
        let exact = |u: &Unit| tokens::count_messages("", &request(u.turn % 37 + 5).messages);
        // up to the threshold: every prompt counted
        let mut l = Lengths::new(units.len());
        for u in &units {
            l.add(u, key(u), &request(u.turn % 37 + 5));
        }
        let got = l.finish();
        assert!(units.iter().all(|u| got[&key(u)] == exact(u)));
        // above it: a sample counted, the rest within 2% of their count, the same every time
        let sampled = || {
            let mut l = Lengths::new(units.len());
            l.rule = SampleRule::for_prompts(tokens::SAMPLED_PROMPTS * 20);
            for u in &units {
                l.add(u, key(u), &request(u.turn % 37 + 5));
            }
            let counted = l.counted.len();
            (counted, l.finish())
        };
        let (counted, est) = sampled();
        assert!(counted > 50 && counted < 170, "{counted}");
        for u in &units {
            let (e, x) = (est[&key(u)] as f64, exact(u) as f64);
            assert!((e - x).abs() / x < 0.02, "{} vs {x}", e);
        }
        assert_eq!(sampled().1, est);
    }

    /// What the judging records ([`Deferred`]: in its own order, some units rendered twice,
    /// some never, rendered by `finish`) gives the screening's prompt tokens, counted exactly
    /// or from a sample.
    #[test]
    fn lengths_recorded_while_judging_are_the_screenings() {
        let units: Vec<Unit> = (1..=2000).map(unit).collect();
        let req = |u: &Unit| request(u.turn % 37 + 5);
        let fit = |u: &Unit| -> Result<Fitted> {
            Ok(Fitted::Fits {
                request: Box::new(req(u)),
                dropped: 0,
            })
        };
        let screened = screen(units.clone(), &fit).unwrap().prompt_tokens;
        for rule in [
            SampleRule::EXACT,
            SampleRule::for_prompts(tokens::SAMPLED_PROMPTS * 20),
        ] {
            let mut l = Lengths::new(units.len());
            l.rule = rule;
            for u in &units {
                l.add(u, key(u), &req(u));
            }
            let want = l.finish();
            if rule.is_exact() {
                assert_eq!(want, screened);
            }
            let d = Deferred::new(&units);
            d.state.lock().unwrap().0.rule = rule;
            for (ui, u) in units.iter().enumerate().rev() {
                if ui % 7 == 3 {
                    continue;
                }
                d.record(ui, u, &req(u));
                if ui % 5 == 0 {
                    d.record(ui, u, &req(u));
                }
            }
            assert_eq!(d.finish(&units, &fit).unwrap(), want);
        }
    }

    #[test]
    fn tiny_context_shortens_late_turns_and_skips_what_cannot_fit() {
        let p = AuditPrompts::builtin().unwrap();
        let long = "word ".repeat(120);
        let questions: Vec<String> = (0..6).map(|i| format!("question {i} {long}")).collect();
        let answers: Vec<String> = (0..6).map(|i| format!("answer {i} {long}")).collect();
        let huge = "many words ".repeat(2000);
        let fit_with = |budget: ContextBudget, u: &Unit| -> Result<Fitted> {
            let t = u.source;
            let mut hist = Vec::new();
            for k in 0..t {
                hist.push(mtr_core::model::Utterance {
                    speaker: mtr_core::model::Speaker::User,
                    text: &questions[k],
                });
                hist.push(mtr_core::model::Utterance {
                    speaker: mtr_core::model::Speaker::Agent,
                    text: &answers[k],
                });
            }
            let view = TurnView::from_parts(hist, &questions[t]);
            let answer = if t == 5 { huge.as_str() } else { &answers[t] };
            budget.fit(&view, &|v: &TurnView<'_>| p.quality(v, answer))
        };
        // a context that holds the system prompt, the question and about two earlier turns
        let budget = ContextBudget {
            context_tokens: 1400,
            max_output_tokens: 256,
        };
        let units: Vec<Unit> = (1..=6).map(unit).collect();
        let s = screen(units, &|u: &Unit| fit_with(budget, u)).unwrap();
        // turn 6's answer alone overflows: skipped, never sent
        assert_eq!(s.too_long.get(&Dimension::Quality), Some(&1));
        assert_eq!(s.kept.len(), 5);
        assert!(s.kept.iter().all(|u| u.turn != 6));
        // late turns lose their oldest history; early turns are sent whole
        let shortened = s.shortened[&Dimension::Quality];
        assert!((1..=3).contains(&shortened), "{shortened}");
        for u in &s.kept {
            let Fitted::Fits { request, dropped } = fit_with(budget, u).unwrap() else {
                panic!("kept unit does not fit")
            };
            assert!(ContextBudget::needed(&request) <= budget.limit());
            assert_eq!(
                dropped > 0,
                u.turn >= 3,
                "turn {} dropped {dropped}",
                u.turn
            );
            if dropped > 0 {
                // the oldest turn went first; the previous turn is still there
                let text = &request.messages[1].content;
                assert!(!text.contains("question 0 "), "{text}");
                assert!(text.contains(&format!("answer {} ", u.turn - 2)), "{text}");
            }
        }
        // with a context large enough nothing changes
        let roomy = ContextBudget {
            context_tokens: 1_000_000,
            max_output_tokens: 256,
        };
        let s = screen((1..=6).map(unit).collect(), &|u: &Unit| fit_with(roomy, u)).unwrap();
        assert!(s.shortened.is_empty() && s.too_long.is_empty());
        assert_eq!(s.kept.len(), 6);
    }
}
