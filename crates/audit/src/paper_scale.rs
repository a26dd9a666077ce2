//! Completeness on the scale of the MTR-Suite paper's Figure 2a (Ruan et al., ACL 2026), as the
//! authors' released code computes it, so that an mtr audit can be put beside the paper.
//!
//! In `analysis_of_previous_benchmark/` of their repository the completeness test is
//! `find_document`: a judge sees the gold document and up to seven others (eight in all,
//! numbered `[1]`..`[8]`), names the one the question comes from, and the item scores 1 when
//! that is the gold and 0 otherwise; an answer no document number can be read from scores
//! nothing (`None`) and is left out. `analysis_result.py` then takes each judge's mean over the
//! items it scored (`tag_score`) and the figure's value for a benchmark is the mean of those
//! per-judge means, every judge weighing the same however many items it scored.
//!
//! mtr's discriminability judgements are that test (the pool is the gold plus `negatives`
//! hard negatives, eight with the default seven), run `trials` times per judge in seeded
//! orders. On the paper's scale each trial is one of the judge's items: a judge's value is the
//! share of its picks that named the gold, abstentions and failed judgements left out (the
//! paper's unreadable answers), and the benchmark's value the unweighted mean over judges. It
//! differs from mtr's `completeness.mean` (a mean over items of the judges' mean share) only in
//! the order of the two means, so the two disagree where judges failed or abstained on
//! different items. Two differences of method remain and are stated with the number: the paper
//! put the gold first when it was among the sample's contexts (mtr shuffles it, and reports the
//! position bias), and it drew the other seven from the sample's retrieved contexts or CORAL's
//! neighbouring ids (mtr retrieves hard negatives from the corpus).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::dimension::Dimension;
use crate::judges::record::Judgement;

/// Completeness as the paper's code computes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PaperScale {
    /// The paper's completeness: the mean over judges of each judge's share of picks that
    /// named the gold (0-1); none when no judge picked.
    pub completeness: Option<f64>,
    /// Each judge's share of picks that named the gold.
    pub per_judge: BTreeMap<String, f64>,
    /// Picks counted (judges x items x trials that named a passage).
    pub picks: usize,
    /// Judgements left out: failed or abstained (the paper's unreadable answers).
    pub left_out: usize,
    /// Mean number of passages shown per pool (the paper showed 8).
    pub pool_size: Option<f64>,
}

/// The paper-scale completeness of an audit's discriminability judgements; `None` when the
/// audit has none.
pub(crate) fn of(judgements: &[Judgement]) -> Option<PaperScale> {
    let picks: Vec<&Judgement> = judgements
        .iter()
        .filter(|j| j.dimension == Dimension::Completeness)
        .collect();
    if picks.is_empty() {
        return None;
    }
    let mut by_judge: BTreeMap<String, (f64, usize)> = BTreeMap::new();
    let mut left_out = 0;
    let (mut pool_total, mut pools) = (0usize, 0usize);
    for j in &picks {
        if let Some(p) = &j.pool {
            pool_total += p.len();
            pools += 1;
        }
        match j.score.filter(|_| j.abstention.is_none()) {
            Some(s) => {
                let e = by_judge.entry(j.judge.clone()).or_default();
                e.0 += s;
                e.1 += 1;
            }
            None => left_out += 1,
        }
    }
    let per_judge: BTreeMap<String, f64> = by_judge
        .iter()
        .map(|(k, (sum, n))| (k.clone(), sum / *n as f64))
        .collect();
    let completeness =
        (!per_judge.is_empty()).then(|| per_judge.values().sum::<f64>() / per_judge.len() as f64);
    Some(PaperScale {
        completeness,
        picks: by_judge.values().map(|(_, n)| n).sum(),
        per_judge,
        left_out,
        pool_size: (pools > 0).then(|| pool_total as f64 / pools as f64),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judges::record::Abstention;

    fn judgement(dim: Dimension, judge: &str, turn: &str, score: Option<f64>) -> Judgement {
        crate::items::aggregate::tests::judgement(dim, turn, Some("g"), judge, Some(0), score, None)
    }

    fn pick(judge: &str, turn: &str, score: Option<f64>) -> Judgement {
        let mut j = judgement(Dimension::Completeness, judge, turn, score);
        j.pool = Some((0..8).map(|i| format!("p{i}")).collect());
        j
    }

    #[test]
    fn the_mean_of_each_judges_mean_every_judge_weighing_the_same() {
        // judge a picked the gold on 3 of 4 items; judge b on 1 of 2, failing twice
        let js = vec![
            pick("a", "t1", Some(1.0)),
            pick("a", "t2", Some(1.0)),
            pick("a", "t3", Some(1.0)),
            pick("a", "t4", Some(0.0)),
            pick("b", "t1", Some(1.0)),
            pick("b", "t2", Some(0.0)),
            pick("b", "t3", None),
            pick("b", "t4", None),
        ];
        let p = of(&js).unwrap();
        assert_eq!(p.per_judge["a"], 0.75);
        assert_eq!(p.per_judge["b"], 0.5);
        // (0.75 + 0.5) / 2, not the 4 of 6 picks pooled
        assert_eq!(p.completeness, Some(0.625));
        assert_eq!((p.picks, p.left_out), (6, 2));
        assert_eq!(p.pool_size, Some(8.0));
    }

    #[test]
    fn abstentions_are_left_out_and_ratings_ignored() {
        let mut abstained = pick("a", "t2", None);
        abstained.abstention = Some(Abstention::None);
        let rating = judgement(Dimension::Alignment, "a", "t1", Some(2.0));
        let p = of(&[pick("a", "t1", Some(0.0)), abstained, rating]).unwrap();
        assert_eq!(p.completeness, Some(0.0));
        assert_eq!((p.picks, p.left_out), (1, 1));
        assert!(of(&[judgement(Dimension::Quality, "a", "t1", Some(5.0))]).is_none());
    }
}
