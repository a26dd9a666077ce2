//! From judgements to item scores. An item's score is the mean over judges of each judge's
//! score for it: the judge's rating (alignment, faithfulness, quality), or the share of the
//! judge's trials that picked the gold (completeness). Failed judgements are left out of every
//! mean and counted; an item whose judgements all failed has no score.
//!
//! A discriminability judge may abstain ("none answers it", "several answer it equally"):
//! an abstention is a valid answer, counted apart, never a miss and never a pick, so a judge's
//! share is over the trials it picked in. An item where a strict majority of all planned
//! picks said "none" is flagged (the judges found no passage, the gold included, that answers).
//!
//! Completeness items also look for missing gold: a non-gold passage picked by a strict
//! majority of all planned (judge x trial) picks of the item is a *candidate*
//! ([`SuggestionVerdict::Unverified`]); the pointwise check in [`crate::items::missing_gold`] decides whether
//! it is a *probable missing gold*.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::dimension::Dimension;
use crate::judges::record::{Abstention, Judgement};

/// A probable missing gold passage for a turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Suggestion {
    pub turn_id: String,
    /// The suggested passage (picked instead of the gold).
    pub passage_id: String,
    /// The gold passage whose pool it came from.
    pub gold_passage_id: String,
    /// Picks of the suggested passage.
    pub votes: usize,
    /// All planned picks (judges x trials), failed ones included.
    pub picks: usize,
    /// Whether the pointwise check confirmed the passage (see [`SuggestionVerdict`]).
    #[serde(default)]
    pub verdict: SuggestionVerdict,
    /// Each judge's pointwise alignment rating (1-5) of the suggested passage.
    #[serde(default)]
    pub alignment_ratings: BTreeMap<String, f64>,
    /// The relevance grade to add to the qrels if the suggestion is accepted.
    #[serde(default = "default_grade")]
    pub grade: i32,
    /// The suggested passage comes from the gold passage's own document.
    #[serde(default)]
    pub same_document: bool,
    /// Jaccard overlap of the word 5-shingles of the suggested passage and the gold (0-1).
    #[serde(default)]
    pub shingle_overlap: f64,
}

fn default_grade() -> i32 {
    1
}

/// What the pointwise verification made of a candidate missing gold.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum SuggestionVerdict {
    /// A majority of the judges rated the passage at or above the threshold.
    ProbableMissingGold,
    /// The judges rated it, and no majority reached the threshold.
    NotConfirmed,
    /// Not rated (yet): verification was off or its judgements failed.
    #[default]
    Unverified,
}

/// The aggregated score of one item.
#[derive(Debug, Clone, PartialEq)]
pub struct ItemScore {
    pub dimension: Dimension,
    pub dialogue_id: String,
    pub turn_id: String,
    /// 1-based turn number.
    pub turn: usize,
    pub passage_id: Option<String>,
    /// Mean over judges; `None` when every judgement failed.
    pub score: Option<f64>,
    /// Each judge's score for this item (only judges with a valid judgement).
    pub per_judge: BTreeMap<String, f64>,
    pub judgements: usize,
    pub failed: usize,
    /// Valid abstentions (completeness), by kind.
    pub abstentions: BTreeMap<Abstention, usize>,
    /// Planned judgements of the item (judges x trials x samples), failed ones included.
    pub planned: usize,
    pub suggestion: Option<Suggestion>,
}

impl ItemScore {
    /// A strict majority of all planned picks said that no passage answers the question.
    pub(crate) fn none_majority(&self) -> bool {
        self.abstentions
            .get(&Abstention::None)
            .copied()
            .unwrap_or(0)
            * 2
            > self.planned
    }
}

/// Groups judgements by item (dimension, turn, passage) and scores each item. The output
/// follows the order of first appearance in `judgements`.
pub(crate) fn score_items(
    judgements: &[Judgement],
    judges: usize,
    trials: usize,
) -> Vec<ItemScore> {
    let mut order: Vec<(Dimension, String, Option<String>)> = Vec::new();
    let mut groups: BTreeMap<(Dimension, String, Option<String>), Vec<&Judgement>> =
        BTreeMap::new();
    for j in judgements {
        let k = (j.dimension, j.turn_id.clone(), j.passage_id.clone());
        let e = groups.entry(k.clone()).or_default();
        if e.is_empty() {
            order.push(k);
        }
        e.push(j);
    }
    order
        .into_iter()
        .filter_map(|k| {
            let js = groups.remove(&k)?;
            Some(score_item(k.0, &js, judges, trials))
        })
        .collect()
}

fn score_item(dim: Dimension, js: &[&Judgement], judges: usize, trials: usize) -> ItemScore {
    let first = js[0];
    let mut per_judge_vals: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut failed = 0;
    let mut abstentions: BTreeMap<Abstention, usize> = BTreeMap::new();
    for j in js {
        match (j.ok(), j.score, j.abstention) {
            (true, Some(s), _) => per_judge_vals.entry(j.judge.clone()).or_default().push(s),
            (true, None, Some(a)) => *abstentions.entry(a).or_default() += 1,
            _ => failed += 1,
        }
    }
    let per_judge: BTreeMap<String, f64> = per_judge_vals
        .iter()
        .map(|(k, v)| (k.clone(), mean(v)))
        .collect();
    let score =
        (!per_judge.is_empty()).then(|| mean(&per_judge.values().copied().collect::<Vec<_>>()));
    let suggestion = if dim == Dimension::Completeness {
        missing_gold(js, judges * trials)
    } else {
        None
    };
    ItemScore {
        dimension: dim,
        dialogue_id: first.dialogue_id.clone(),
        turn_id: first.turn_id.clone(),
        turn: first.turn,
        passage_id: first.passage_id.clone(),
        score,
        per_judge,
        judgements: js.len(),
        failed,
        abstentions,
        planned: (judges * trials).max(js.len()),
        suggestion,
    }
}

/// A non-gold passage picked by more than half of all planned picks (abstentions and failures
/// count in the denominator, never as votes).
fn missing_gold(js: &[&Judgement], planned: usize) -> Option<Suggestion> {
    let planned = planned.max(js.len());
    let mut votes: BTreeMap<&str, usize> = BTreeMap::new();
    for j in js {
        if j.ok()
            && j.score == Some(0.0)
            && let Some(p) = j.pick_passage_id.as_deref()
        {
            *votes.entry(p).or_default() += 1;
        }
    }
    let (best, n) = votes
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(a.0)))?;
    (n * 2 > planned).then(|| Suggestion {
        turn_id: js[0].turn_id.clone(),
        passage_id: best.to_string(),
        gold_passage_id: js[0].passage_id.clone().unwrap_or_default(),
        votes: n,
        picks: planned,
        verdict: SuggestionVerdict::Unverified,
        alignment_ratings: BTreeMap::new(),
        grade: default_grade(),
        same_document: false,
        shingle_overlap: 0.0,
    })
}

/// The mean of `v`; NaN when empty (mtr-metrics' `mean`).
pub(crate) fn mean(v: &[f64]) -> f64 {
    mtr_metrics::stats::mean(v).unwrap_or(f64::NAN)
}

/// Merges suggestions that name the same (turn, passage) from several gold pools: votes and
/// picks add up. Sorted by turn id, then passage id.
pub(crate) fn merge_suggestions(items: &[ItemScore]) -> Vec<Suggestion> {
    let mut m: BTreeMap<(String, String), Suggestion> = BTreeMap::new();
    for s in items.iter().filter_map(|i| i.suggestion.as_ref()) {
        m.entry((s.turn_id.clone(), s.passage_id.clone()))
            .and_modify(|e| {
                e.votes += s.votes;
                e.picks += s.picks;
                if s.gold_passage_id < e.gold_passage_id {
                    e.gold_passage_id = s.gold_passage_id.clone();
                }
            })
            .or_insert_with(|| s.clone());
    }
    m.into_values().collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::judges::record::{Judgement, ParseOutcome, judgement_id};

    pub(crate) fn judgement(
        dim: Dimension,
        turn: &str,
        passage: Option<&str>,
        judge: &str,
        trial: Option<usize>,
        score: Option<f64>,
        pick: Option<&str>,
    ) -> Judgement {
        Judgement {
            id: judgement_id(dim, turn, passage, trial, judge, 0),
            dimension: dim,
            judge: judge.into(),
            model: format!("{judge}-model"),
            dialogue_id: turn.split("::").next().unwrap().into(),
            turn_id: turn.into(),
            turn: 1,
            passage_id: passage.map(Into::into),
            trial,
            sample: 0,
            pool: None,
            gold_position: None,
            pick_position: None,
            pick_passage_id: pick.map(Into::into),
            abstention: None,
            score,
            rating_mode: None,
            rating_distribution: None,
            parse_status: if score.is_some() {
                ParseOutcome::Ok
            } else {
                ParseOutcome::Failed
            },
            parse_detail: None,
            raw_excerpt: None,
            justification: Some("because".into()),
            prompt: "audit/x@1".into(),
            prompt_tokens: 10,
            completion_tokens: 5,
            cost_usd: 0.0,
            cache_hit: false,
            cache_key: "k".into(),
        }
    }

    #[test]
    fn ratings_mean_over_judges_and_failures_excluded() {
        let js = vec![
            judgement(
                Dimension::Alignment,
                "d::1",
                Some("p"),
                "a",
                None,
                Some(5.0),
                None,
            ),
            judgement(
                Dimension::Alignment,
                "d::1",
                Some("p"),
                "b",
                None,
                Some(2.0),
                None,
            ),
            judgement(
                Dimension::Alignment,
                "d::1",
                Some("p"),
                "c",
                None,
                None,
                None,
            ),
            judgement(
                Dimension::Alignment,
                "d::2",
                Some("p"),
                "a",
                None,
                None,
                None,
            ),
        ];
        let items = score_items(&js, 3, 1);
        assert_eq!(items.len(), 2);
        assert_eq!(items[0].score, Some(3.5));
        assert_eq!(items[0].failed, 1);
        assert_eq!(items[0].per_judge.len(), 2);
        assert_eq!(items[1].score, None, "all failed: no score, never 0");
    }

    #[test]
    fn pick_share_and_missing_gold_majority() {
        let c = Dimension::Completeness;
        let mut js = Vec::new();
        // judge a: gold, x, x ; judge b: x, x, failed  => a share 1/3, b share 0/2
        for (judge, t, s, p) in [
            ("a", 0, Some(1.0), "g"),
            ("a", 1, Some(0.0), "x"),
            ("a", 2, Some(0.0), "x"),
            ("b", 0, Some(0.0), "x"),
            ("b", 1, Some(0.0), "x"),
            ("b", 2, None, "x"),
        ] {
            js.push(judgement(c, "d::1", Some("g"), judge, Some(t), s, Some(p)));
        }
        let items = score_items(&js, 2, 3);
        let it = &items[0];
        assert!((it.score.unwrap() - (1.0 / 3.0 + 0.0) / 2.0).abs() < 1e-12);
        let s = it.suggestion.as_ref().unwrap();
        assert_eq!((s.passage_id.as_str(), s.votes, s.picks), ("x", 4, 6));
        // 3 of 6 is not a strict majority
        js.truncate(5);
        js[4].score = Some(1.0);
        js[4].pick_passage_id = Some("g".into());
        assert!(score_items(&js, 2, 3)[0].suggestion.is_none());
    }

    fn abstain(mut j: Judgement, a: Abstention) -> Judgement {
        j.score = None;
        j.pick_passage_id = None;
        j.abstention = Some(a);
        j.parse_status = ParseOutcome::Ok;
        j
    }

    #[test]
    fn abstentions_are_counted_apart_never_a_miss_nor_a_pick() {
        let c = Dimension::Completeness;
        let j = |judge: &str, t: usize, s: Option<f64>, p: Option<&str>| {
            judgement(c, "d::1", Some("g"), judge, Some(t), s, p)
        };
        // judge a: gold, several, several; judge b: none, none, x
        let js = vec![
            j("a", 0, Some(1.0), Some("g")),
            abstain(j("a", 1, Some(0.0), None), Abstention::Several),
            abstain(j("a", 2, Some(0.0), None), Abstention::Several),
            abstain(j("b", 0, Some(0.0), None), Abstention::None),
            abstain(j("b", 1, Some(0.0), None), Abstention::None),
            j("b", 2, Some(0.0), Some("x")),
        ];
        assert!(
            js.iter().all(Judgement::ok),
            "an abstention is a valid answer"
        );
        let it = &score_items(&js, 2, 3)[0];
        // a's share is over its one pick, b's over its one pick
        assert_eq!(it.per_judge["a"], 1.0);
        assert_eq!(it.per_judge["b"], 0.0);
        assert_eq!(it.score, Some(0.5));
        assert_eq!(it.failed, 0);
        assert_eq!(it.abstentions[&Abstention::Several], 2);
        assert_eq!(it.abstentions[&Abstention::None], 2);
        assert!(it.suggestion.is_none());
        assert!(!it.none_majority(), "2 of 6 is no majority");
        // every judge says none: no share, no candidate, but flagged by the none majority
        let js: Vec<Judgement> = (0..3)
            .flat_map(|t| {
                [
                    abstain(j("a", t, None, None), Abstention::None),
                    abstain(j("b", t, None, None), Abstention::None),
                ]
            })
            .collect();
        let it = &score_items(&js, 2, 3)[0];
        assert_eq!(
            (it.score, it.failed, it.suggestion.is_none()),
            (None, 0, true)
        );
        assert!(it.none_majority());
        assert!(crate::statistics::dimension_statistics::is_flagged(
            it,
            &Default::default()
        ));
    }
}
