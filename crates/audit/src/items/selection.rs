//! The audit plan: which dialogues are audited (all, or a seeded sample), and which items each
//! dimension judges. Turns lacking what a dimension needs (a relevant gold passage, a
//! reference answer, an answerable question, a gold passage present in the corpus) are skipped
//! for that dimension and counted, so the report can say what was not audited and why.

use std::collections::{BTreeMap, BTreeSet};

use mtr_core::Dialogue;
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};

use crate::dimension::Dimension;
use crate::seed;

/// Why a would-be item was not audited.
#[derive(Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SkipReason {
    /// The turn has no gold passage with a positive grade (counted per turn).
    NoGold,
    /// The turn has no reference answer (counted per turn).
    NoAnswer,
    /// The turn is tagged unanswerable, so faithfulness to gold is undefined (counted per turn).
    Unanswerable,
    /// A gold passage id is not in the corpus (counted per gold passage).
    GoldNotInCorpus,
    /// The corpus yielded no hard negative for the pool (counted per gold passage).
    NoNegatives,
    /// The gold passage's text is only whitespace (real corpora have such passages): nothing
    /// to judge (counted per gold passage; for faithfulness per turn whose golds are all so).
    EmptyPassage,
    /// The prompt does not fit the judges' context even without history: never sent
    /// (counted per item).
    TooLong,
}

impl SkipReason {
    pub fn name(self) -> &'static str {
        match self {
            SkipReason::NoGold => "no_gold",
            SkipReason::NoAnswer => "no_answer",
            SkipReason::Unanswerable => "unanswerable",
            SkipReason::GoldNotInCorpus => "gold_not_in_corpus",
            SkipReason::NoNegatives => "no_negatives",
            SkipReason::EmptyPassage => "empty_passage",
            SkipReason::TooLong => "too_long",
        }
    }
}

/// One thing a dimension judges: a (turn, gold passage) for alignment and completeness, a turn
/// for faithfulness and quality.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PlanItem {
    pub dimension: Dimension,
    /// Index of the dialogue in the benchmark.
    pub dialogue: usize,
    /// Index of the turn in its dialogue.
    pub turn: usize,
    /// The gold passage judged (alignment, completeness).
    pub passage_id: Option<String>,
}

/// The audit's work list.
#[derive(Debug, Clone, Default)]
pub(crate) struct AuditPlan {
    pub dialogues_total: usize,
    pub turns_total: usize,
    /// Indices of the audited dialogues, in benchmark order.
    pub selected: Vec<usize>,
    pub turns_audited: usize,
    /// Items in a fixed order: dialogue, turn, dimension, gold passage.
    pub items: Vec<PlanItem>,
    pub skipped: BTreeMap<Dimension, BTreeMap<SkipReason, usize>>,
}

impl AuditPlan {
    pub(crate) fn count(&self, dim: Dimension) -> usize {
        self.items.iter().filter(|i| i.dimension == dim).count()
    }

    pub(crate) fn skip(&mut self, dim: Dimension, why: SkipReason) {
        *self.skipped.entry(dim).or_default().entry(why).or_default() += 1;
    }
}

/// Seeded sample of `n` dialogue indices out of `total`, returned in benchmark order.
pub(crate) fn sample_dialogues(total: usize, n: Option<usize>, seed: u64) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..total).collect();
    match n {
        Some(n) if n < total => {
            let mut rng = seed::rng(seed, &["sample"]);
            idx.shuffle(&mut rng);
            idx.truncate(n);
            idx.sort_unstable();
            idx
        }
        _ => idx,
    }
}

/// The relevant gold passage ids of a turn, deduplicated, in label order.
pub(crate) fn relevant_gold(turn: &mtr_core::Turn) -> Vec<&str> {
    let mut seen = BTreeSet::new();
    turn.relevant()
        .map(|g| g.passage_id.as_str())
        .filter(|id| seen.insert(*id))
        .collect()
}

/// Builds the plan. `in_corpus` says whether a passage id exists in the corpus.
#[cfg(test)]
pub(crate) fn build(
    dialogues: &[Dialogue],
    dims: &[Dimension],
    sample: Option<usize>,
    seed: u64,
    in_corpus: &dyn Fn(&str) -> bool,
) -> AuditPlan {
    build_with_texts(dialogues, dims, sample, seed, in_corpus, &|_| false)
}

/// [`build`], also skipping gold passages whose text is only whitespace (`is_empty`) as
/// [`SkipReason::EmptyPassage`]: a judge shown an empty passage can only guess.
pub(crate) fn build_with_texts(
    dialogues: &[Dialogue],
    dims: &[Dimension],
    sample: Option<usize>,
    seed: u64,
    in_corpus: &dyn Fn(&str) -> bool,
    is_empty: &dyn Fn(&str) -> bool,
) -> AuditPlan {
    let mut plan = AuditPlan {
        dialogues_total: dialogues.len(),
        turns_total: dialogues.iter().map(|d| d.turns.len()).sum(),
        selected: sample_dialogues(dialogues.len(), sample, seed),
        ..Default::default()
    };
    let mut dims = dims.to_vec();
    dims.sort();
    dims.dedup();
    for &di in &plan.selected.clone() {
        let d = &dialogues[di];
        for (ti, turn) in d.turns.iter().enumerate() {
            plan.turns_audited += 1;
            let gold = relevant_gold(turn);
            let has_answer = turn.answer.as_deref().is_some_and(|a| !a.trim().is_empty());
            for &dim in &dims {
                if dim.needs_gold() && gold.is_empty() {
                    plan.skip(dim, SkipReason::NoGold);
                    continue;
                }
                if dim.needs_answer() && !has_answer {
                    plan.skip(dim, SkipReason::NoAnswer);
                    continue;
                }
                match dim {
                    Dimension::Alignment | Dimension::Completeness => {
                        for g in &gold {
                            if !in_corpus(g) {
                                plan.skip(dim, SkipReason::GoldNotInCorpus);
                                continue;
                            }
                            if is_empty(g) {
                                plan.skip(dim, SkipReason::EmptyPassage);
                                continue;
                            }
                            plan.items.push(PlanItem {
                                dimension: dim,
                                dialogue: di,
                                turn: ti,
                                passage_id: Some((*g).to_string()),
                            });
                        }
                    }
                    Dimension::Faithfulness => {
                        if turn.is_unanswerable() {
                            plan.skip(dim, SkipReason::Unanswerable);
                            continue;
                        }
                        if !gold.iter().any(|g| in_corpus(g)) {
                            plan.skip(dim, SkipReason::GoldNotInCorpus);
                            continue;
                        }
                        if gold.iter().filter(|g| in_corpus(g)).all(|g| is_empty(g)) {
                            plan.skip(dim, SkipReason::EmptyPassage);
                            continue;
                        }
                        plan.items.push(PlanItem {
                            dimension: dim,
                            dialogue: di,
                            turn: ti,
                            passage_id: None,
                        });
                    }
                    Dimension::Quality => {
                        plan.items.push(PlanItem {
                            dimension: dim,
                            dialogue: di,
                            turn: ti,
                            passage_id: None,
                        });
                    }
                }
            }
        }
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use mtr_core::{Gold, Tags, Turn};

    fn turn(id: &str, gold: &[&str], answer: Option<&str>, unanswerable: bool) -> Turn {
        Turn {
            id: id.into(),
            user: format!("question {id}"),
            rewrite: None,
            answer: answer.map(Into::into),
            gold: gold
                .iter()
                .map(|g| Gold {
                    passage_id: (*g).into(),
                    grade: 1,
                })
                .collect(),
            tags: Tags {
                answerability: unanswerable.then(|| "UNANSWERABLE".to_string()),
                ..Default::default()
            },
        }
    }

    #[test]
    fn items_and_skips_per_dimension() {
        let d = Dialogue {
            id: "d".into(),
            turns: vec![
                turn("d::1", &[], Some("sorry"), true),
                turn("d::2", &["p1", "p2", "p1"], Some("a2"), false),
                turn("d::3", &["p3", "missing"], None, false),
            ],
            meta: Default::default(),
        };
        let plan = build(std::slice::from_ref(&d), &Dimension::ALL, None, 1, &|id| {
            id != "missing"
        });
        assert_eq!(plan.turns_audited, 3);
        // alignment: p1, p2 (deduplicated) of turn 2, p3 of turn 3
        assert_eq!(plan.count(Dimension::Alignment), 3);
        assert_eq!(plan.count(Dimension::Completeness), 3);
        assert_eq!(plan.count(Dimension::Faithfulness), 1);
        assert_eq!(plan.count(Dimension::Quality), 2);
        let s = &plan.skipped;
        assert_eq!(s[&Dimension::Alignment][&SkipReason::NoGold], 1);
        assert_eq!(s[&Dimension::Alignment][&SkipReason::GoldNotInCorpus], 1);
        assert_eq!(s[&Dimension::Faithfulness][&SkipReason::NoGold], 1);
        assert_eq!(s[&Dimension::Faithfulness][&SkipReason::NoAnswer], 1);
        assert_eq!(s[&Dimension::Quality][&SkipReason::NoAnswer], 1);
        assert!(!s[&Dimension::Quality].contains_key(&SkipReason::NoGold));
    }

    #[test]
    fn empty_gold_passages_are_skipped_as_empty_passage() {
        let d = Dialogue {
            id: "d".into(),
            turns: vec![
                turn("d::1", &["blank", "p1"], Some("a1"), false),
                turn("d::2", &["blank"], Some("a2"), false),
            ],
            meta: Default::default(),
        };
        let plan = build_with_texts(
            std::slice::from_ref(&d),
            &Dimension::ALL,
            None,
            1,
            &|_| true,
            &|id| id == "blank",
        );
        assert_eq!(plan.count(Dimension::Alignment), 1);
        assert_eq!(plan.count(Dimension::Completeness), 1);
        // turn 1 still has a passage to be faithful to; turn 2 has none
        assert_eq!(plan.count(Dimension::Faithfulness), 1);
        let s = &plan.skipped;
        assert_eq!(s[&Dimension::Alignment][&SkipReason::EmptyPassage], 2);
        assert_eq!(s[&Dimension::Faithfulness][&SkipReason::EmptyPassage], 1);
        assert_eq!(SkipReason::EmptyPassage.name(), "empty_passage");
    }

    #[test]
    fn sample_is_seeded_and_sorted() {
        let a = sample_dialogues(100, Some(10), 7);
        assert_eq!(a, sample_dialogues(100, Some(10), 7));
        assert_ne!(a, sample_dialogues(100, Some(10), 8));
        assert_eq!(a.len(), 10);
        assert!(a.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(sample_dialogues(5, Some(10), 7), vec![0, 1, 2, 3, 4]);
    }
}
