//! Discriminability picks read from the label probabilities of one forward pass
//! (`[audit.letter_picks]`). The judge's answer is prefilled up to the choice (`{"choice": `)
//! and one token is generated with its top alternatives; [`mtr_llm::logprob`] reads the
//! probability of each passage label 1..N there (`rating_distribution` of the record: `probs`
//! renormalised over the labels, `mass` the probability on any label at all, `written` the
//! label the judge wrote, null when it wrote something else, such as the `"` of `"none"`).
//!
//! The rule ([`choose`]), with `p_i = probs_i * mass` the probability the judge gave label i:
//! the best label is the most probable (the first on a tie); the judge abstains `none` when
//! `p_best < none_below` (it put its probability elsewhere, or spread it thin), `several` when
//! `p_best - p_second < several_margin`, and otherwise picks the best. With
//! `debias_positions`, each judge's `probs` are first divided by its mean distribution over
//! the positions ([`position_prior`], over its pools of that size) and renormalised
//! (PriDe-style prior removal), `mass` kept.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use mtr_llm::logprob::{RatingDistribution, RatingMode};

use crate::config::LetterPicks;
use crate::dimension::Dimension;
use crate::judges::record::{Abstention, Judgement};

/// Fewest pools of one size a judge must have judged before its position prior is removed.
pub(crate) const MIN_PRIOR_POOLS: usize = 10;

/// What a distribution says: a 1-based position, or an abstention.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reading {
    Pick(usize),
    Abstain(Abstention),
}

/// The label probabilities of a distribution over `1..=n`, position by position (0 for a label
/// the distribution lacks).
fn probs_of(d: &RatingDistribution, n: usize) -> Vec<f64> {
    let mut p = vec![0.0; n];
    for &(label, q) in &d.probs {
        if label >= 1 && (label as usize) <= n {
            p[label as usize - 1] = q;
        }
    }
    p
}

/// The pick or abstention of `probs` (renormalised over the labels) with `mass` on the labels.
pub(crate) fn choose(probs: &[f64], mass: f64, rule: &LetterPicks) -> Reading {
    let raw: Vec<f64> = probs.iter().map(|p| p * mass).collect();
    let mut best = 0;
    for (i, &p) in raw.iter().enumerate() {
        if p > raw[best] {
            best = i;
        }
    }
    let second = raw
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != best)
        .map(|(_, &p)| p)
        .fold(0.0, f64::max);
    match raw.get(best) {
        None => Reading::Abstain(Abstention::None),
        Some(&p) if p < rule.none_below => Reading::Abstain(Abstention::None),
        Some(&p) if raw.len() > 1 && p - second < rule.several_margin => {
            Reading::Abstain(Abstention::Several)
        }
        Some(_) => Reading::Pick(best + 1),
    }
}

/// `probs` divided by `prior` position by position, renormalised (unchanged when the prior
/// has a zero or the result sums to nothing).
pub(crate) fn debiased(probs: &[f64], prior: &[f64]) -> Vec<f64> {
    if prior.len() != probs.len() || prior.iter().any(|&q| q <= 0.0) {
        return probs.to_vec();
    }
    let q: Vec<f64> = probs.iter().zip(prior).map(|(p, w)| p / w).collect();
    let total: f64 = q.iter().sum();
    if total <= 0.0 || !total.is_finite() {
        return probs.to_vec();
    }
    q.into_iter().map(|x| x / total).collect()
}

/// Sets `j`'s pick (position, passage, score) or abstention from what `probs` and `mass` say.
fn set_reading(j: &mut Judgement, probs: &[f64], mass: f64, rule: &LetterPicks) {
    j.pick_position = None;
    j.pick_passage_id = None;
    j.abstention = None;
    j.score = None;
    match choose(probs, mass, rule) {
        Reading::Pick(pos) => {
            j.pick_passage_id = j.pool.as_ref().and_then(|p| p.get(pos - 1)).cloned();
            j.pick_position = Some(pos);
            j.score = Some(if Some(pos) == j.gold_position {
                1.0
            } else {
                0.0
            });
        }
        Reading::Abstain(a) => j.abstention = Some(a),
    }
}

/// A letter pick recorded from the label distribution `d` of a completeness answer (the
/// distribution and the `probability` mode kept on the record), by `rule` without a prior.
pub(crate) fn record_pick(j: &mut Judgement, d: &RatingDistribution, rule: &LetterPicks) {
    let n = j.pool.as_ref().map_or(0, Vec::len);
    j.rating_mode = Some(RatingMode::Probability);
    j.rating_distribution = Some(d.clone());
    set_reading(j, &probs_of(d, n), d.mass, rule);
}

/// True for a valid letter pick: a completeness judgement read from label probabilities.
fn is_letter_pick(j: &Judgement) -> bool {
    j.dimension == Dimension::Completeness
        && j.parse_status.is_ok()
        && j.rating_mode == Some(RatingMode::Probability)
        && j.rating_distribution.is_some()
}

/// Per (judge, pool size): the mean label distribution over the judge's letter picks, when it
/// has at least [`MIN_PRIOR_POOLS`] of them.
pub(crate) fn position_prior<'a>(
    records: impl Iterator<Item = &'a Judgement>,
) -> BTreeMap<(String, usize), Vec<f64>> {
    let mut sums: BTreeMap<(String, usize), (Vec<f64>, usize)> = BTreeMap::new();
    for j in records.filter(|j| is_letter_pick(j)) {
        let (Some(d), Some(n)) = (&j.rating_distribution, j.pool.as_ref().map(Vec::len)) else {
            continue;
        };
        let e = sums
            .entry((j.judge.clone(), n))
            .or_insert_with(|| (vec![0.0; n], 0));
        for (s, p) in e.0.iter_mut().zip(probs_of(d, n)) {
            *s += p;
        }
        e.1 += 1;
    }
    sums.into_iter()
        .filter(|(_, (_, count))| *count >= MIN_PRIOR_POOLS)
        .map(|(k, (s, count))| (k, s.into_iter().map(|x| x / count as f64).collect()))
        .collect()
}

/// Reads every letter pick of the named judges again with the configured rule (and, with
/// `debias_positions`, each judge's position prior over these records removed): the same
/// records give the same picks, however they were judged or reused.
pub(crate) fn reread(records: &mut [Option<Box<Judgement>>], rule: &LetterPicks) {
    let prior = if rule.debias_positions {
        position_prior(records.iter().flatten().map(|b| b.as_ref()))
    } else {
        BTreeMap::new()
    };
    for j in records.iter_mut().flatten() {
        if !is_letter_pick(j) || !rule.names(&j.judge, &j.model) {
            continue;
        }
        let Some(d) = j.rating_distribution.clone() else {
            continue;
        };
        let n = j.pool.as_ref().map_or(0, Vec::len);
        let mut probs = probs_of(&d, n);
        if let Some(p) = prior.get(&(j.judge.clone(), n)) {
            probs = debiased(&probs, p);
        }
        set_reading(j, &probs, d.mass, rule);
    }
}

/// The earlier run's records that may be reused: all of them, less the discriminability
/// answers whose way of reading (letter pick or written) is not the judge's way now, which
/// are asked again.
pub(crate) fn reusable<'a>(
    existing: &'a HashMap<String, Judgement>,
    rule: Option<&LetterPicks>,
) -> Cow<'a, HashMap<String, Judgement>> {
    let stale = |j: &Judgement| {
        j.dimension == Dimension::Completeness
            && (j.rating_mode == Some(RatingMode::Probability))
                != rule.is_some_and(|r| r.names(&j.judge, &j.model))
    };
    if !existing.values().any(stale) {
        return Cow::Borrowed(existing);
    }
    Cow::Owned(
        existing
            .iter()
            .filter(|(_, j)| !stale(j))
            .map(|(k, j)| (k.clone(), j.clone()))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(none_below: f64, several_margin: f64) -> LetterPicks {
        LetterPicks {
            judges: vec!["q".into()],
            none_below,
            several_margin,
            debias_positions: false,
        }
    }

    fn dist(probs: &[f64], mass: f64, written: Option<i64>) -> RatingDistribution {
        RatingDistribution {
            probs: probs
                .iter()
                .enumerate()
                .map(|(i, &p)| (i as i64 + 1, p))
                .collect(),
            mean: 0.0,
            mass,
            written,
        }
    }

    fn judgement(gold: usize) -> Judgement {
        let r = crate::judges::answer::record(
            &crate::judges::unit::Unit {
                dimension: Dimension::Completeness,
                dialogue_id: "d".into(),
                turn_id: "d::1".into(),
                turn: 1,
                passage_id: Some("g".into()),
                trial: Some(0),
                pool: Some(
                    (1..=4)
                        .map(|i| {
                            if i == gold {
                                "g".into()
                            } else {
                                format!("n{i}")
                            }
                        })
                        .collect(),
                ),
                gold_position: Some(gold),
                source: 0,
                judge: Some(0),
            },
            &crate::judges::unit::JudgeRef {
                name: "q".into(),
                model: "qm".into(),
                rating_mode: RatingMode::Probability,
                relevance: false,
            },
            0,
            "audit/completeness@2",
            Err("not asked".into()),
        );
        Judgement {
            parse_status: crate::judges::record::ParseOutcome::Ok,
            parse_detail: None,
            ..r
        }
    }

    #[test]
    fn the_best_label_is_picked_unless_too_improbable_or_too_close() {
        let r = rule(0.25, 0.05);
        // a clear best
        assert_eq!(choose(&[0.1, 0.7, 0.1, 0.1], 0.9, &r), Reading::Pick(2));
        // most of the probability elsewhere (on the `"` of "none"): 0.5 * 0.4 = 0.2 < 0.25
        assert_eq!(
            choose(&[0.1, 0.5, 0.2, 0.2], 0.4, &r),
            Reading::Abstain(Abstention::None)
        );
        // the two best within 0.05 of each other
        assert_eq!(
            choose(&[0.42, 0.40, 0.1, 0.08], 1.0, &r),
            Reading::Abstain(Abstention::Several)
        );
        // thresholds of 0: the best label always, the first of a tie
        assert_eq!(choose(&[0.5, 0.5], 1.0, &rule(0.0, 0.0)), Reading::Pick(1));
        assert_eq!(choose(&[], 1.0, &r), Reading::Abstain(Abstention::None));
        assert_eq!(choose(&[1.0], 0.3, &r), Reading::Pick(1));
    }

    #[test]
    fn a_recorded_pick_keeps_its_distribution_and_scores_the_gold() {
        let r = rule(0.25, 0.05);
        let mut j = judgement(3);
        record_pick(&mut j, &dist(&[0.05, 0.05, 0.8, 0.1], 0.95, Some(3)), &r);
        assert!(j.ok());
        assert_eq!(
            (j.pick_position, j.pick_passage_id.as_deref(), j.score),
            (Some(3), Some("g"), Some(1.0))
        );
        assert_eq!(j.rating_mode, Some(RatingMode::Probability));
        assert_eq!(j.rating_distribution.as_ref().unwrap().mass, 0.95);
        // the judge wrote `"` (an abstention), its labels hold little: a valid `none`
        let mut j = judgement(3);
        record_pick(&mut j, &dist(&[0.4, 0.2, 0.2, 0.2], 0.3, None), &r);
        assert!(j.ok());
        assert_eq!(
            (j.abstention, j.score, j.pick_position),
            (Some(Abstention::None), None, None)
        );
        // a negative picked scores 0
        let mut j = judgement(3);
        record_pick(&mut j, &dist(&[0.9, 0.05, 0.05, 0.0], 1.0, Some(1)), &r);
        assert_eq!(
            (j.pick_passage_id.as_deref(), j.score),
            (Some("n1"), Some(0.0))
        );
    }

    #[test]
    fn a_position_prior_is_taken_out_once_enough_pools_show_it() {
        // a judge that leans to position 1 everywhere; the gold moves around
        let mut records: Vec<Option<Box<Judgement>>> = Vec::new();
        let r = rule(0.25, 0.05);
        for k in 0..MIN_PRIOR_POOLS {
            let gold = 1 + k % 4;
            let mut p = [0.5, 0.15, 0.15, 0.15];
            p[gold - 1] += 0.05;
            let total: f64 = p.iter().sum();
            let p: Vec<f64> = p.iter().map(|x| x / total).collect();
            let mut j = judgement(gold);
            record_pick(&mut j, &dist(&p, 1.0, Some(1)), &r);
            records.push(Some(Box::new(j)));
        }
        // without the prior: position 1 every time
        let mut plain = records.clone();
        reread(&mut plain, &r);
        assert!(
            plain
                .iter()
                .flatten()
                .all(|j| j.pick_position == Some(1) || j.abstention.is_some())
        );
        let prior = position_prior(records.iter().flatten().map(|b| b.as_ref()));
        assert_eq!(prior.len(), 1);
        assert!(prior[&("q".to_string(), 4)][0] > 0.4);
        // with it: the gold, which the judge rated a little above the rest
        let debias = LetterPicks {
            debias_positions: true,
            several_margin: 0.01,
            ..r.clone()
        };
        reread(&mut records, &debias);
        let golds = records
            .iter()
            .flatten()
            .filter(|j| j.score == Some(1.0))
            .count();
        assert_eq!(golds, MIN_PRIOR_POOLS, "{records:?}");
        // rereading is idempotent: the distribution is kept, the picks derive from it
        let again = records.clone();
        reread(&mut records, &debias);
        assert_eq!(records, again);
        // too few pools: no prior
        assert!(position_prior(records.iter().take(3).flatten().map(|b| b.as_ref())).is_empty());
        assert_eq!(debiased(&[0.5, 0.5], &[0.0, 1.0]), vec![0.5, 0.5]);
    }

    #[test]
    fn answers_read_another_way_are_not_reused() {
        let r = rule(0.25, 0.05);
        let mut letter = judgement(2);
        record_pick(&mut letter, &dist(&[0.1, 0.9, 0.0, 0.0], 1.0, Some(2)), &r);
        let mut written = judgement(2);
        written.judge = "x".into();
        written.id = "w".into();
        written.score = Some(1.0);
        let existing: HashMap<String, Judgement> = [
            (letter.id.clone(), letter.clone()),
            (written.id.clone(), written.clone()),
        ]
        .into();
        // as configured: both stand
        assert!(matches!(reusable(&existing, Some(&r)), Cow::Borrowed(_)));
        // letter picks off: the letter pick is asked again
        let kept = reusable(&existing, None);
        assert_eq!(kept.keys().collect::<Vec<_>>(), vec![&written.id]);
        // the written judge named: its written pick is asked again
        let both = LetterPicks {
            judges: vec!["q".into(), "x".into()],
            ..r
        };
        let kept = reusable(&existing, Some(&both));
        assert_eq!(kept.keys().collect::<Vec<_>>(), vec![&letter.id]);
    }

    #[test]
    fn other_judges_and_written_picks_are_left_alone() {
        let r = rule(0.25, 0.05);
        let mut j = judgement(2);
        j.pick_position = Some(2);
        j.score = Some(1.0);
        let mut records = vec![Some(Box::new(j.clone()))];
        reread(&mut records, &r);
        assert_eq!(records[0].as_deref(), Some(&j));
        let mut other = judgement(2);
        record_pick(&mut other, &dist(&[0.1, 0.9, 0.0, 0.0], 1.0, Some(2)), &r);
        other.judge = "x".into();
        other.model = "xm".into();
        let before = other.clone();
        let mut records = vec![Some(Box::new(other))];
        reread(&mut records, &rule(0.95, 0.0));
        assert_eq!(records[0].as_deref(), Some(&before));
    }
}
