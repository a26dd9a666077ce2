//! Tests of [`super`] (dimensions.rs).

use super::*;
use crate::items::aggregate::score_items;
use crate::items::aggregate::tests::judgement;

/// Two judges that always pick the gold, each shown its own permutation (the gold at
/// different positions), over `items` items of 3 trials.
fn perfect_pair(items: usize) -> Vec<Judgement> {
    let mut js = Vec::new();
    for i in 0..items {
        let turn = format!("d{i}::1");
        let gold = format!("g{i}");
        for (judge, offset) in [("a", 0usize), ("b", 3)] {
            for t in 0..3 {
                let mut j = judgement(
                    Dimension::Completeness,
                    &turn,
                    Some(&gold),
                    judge,
                    Some(t),
                    Some(1.0),
                    Some(&gold),
                );
                let pos = (i + t * 2 + offset) % 8 + 1;
                j.gold_position = Some(pos);
                j.pick_position = Some(pos);
                js.push(j);
            }
        }
    }
    js
}

/// The kappa as b79035c computed it: categories were pick positions.
fn position_kappa(js: &[&Judgement], judges: usize) -> Option<f64> {
    let mut by_unit: BTreeMap<(&str, usize), Vec<usize>> = BTreeMap::new();
    for j in js {
        by_unit
            .entry((j.turn_id.as_str(), j.trial.unwrap()))
            .or_default()
            .push(j.pick_position.unwrap());
    }
    let counts: Vec<Vec<usize>> = by_unit
        .values()
        .filter(|v| v.len() == judges)
        .map(|v| {
            let mut c = vec![0; 8];
            for p in v {
                c[p - 1] += 1;
            }
            c
        })
        .collect();
    agreement::fleiss_kappa(&counts).ok()
}

#[test]
fn kappa_of_two_judges_that_always_pick_the_gold_is_one_whatever_their_offsets() {
    let js = perfect_pair(12);
    let jr: Vec<&Judgement> = js.iter().collect();
    let judges = ["a".to_string(), "b".to_string()];
    let items = score_items(&js, 2, 3);
    let ir: Vec<&ItemScore> = items.iter().collect();
    let d = dimension_summary(
        Dimension::Completeness,
        &ir,
        &jr,
        &judges,
        &AuditSettings {
            resamples: 50,
            ..Default::default()
        },
    );
    let k = d.agreement.fleiss_kappa.unwrap();
    assert!((k - 1.0).abs() < 1e-12, "{k}");
    // categories as positions (each judge sees its own order) call the same two perfect
    // judges worse than chance
    let old = position_kappa(&jr, 2).unwrap();
    assert!(old < 0.0, "{old}");
    // an abstention is a category of its own: agreeing abstentions agree
    let mut js = perfect_pair(4);
    for j in js.iter_mut().filter(|j| j.turn_id == "d0::1") {
        j.score = None;
        j.pick_position = None;
        j.pick_passage_id = None;
        j.abstention = Some(crate::judges::record::Abstention::None);
    }
    let jr: Vec<&Judgement> = js.iter().collect();
    assert!((pick_kappa(&jr, 2).unwrap() - 1.0).abs() < 1e-12);
    // and a disagreement lowers it
    js[0].abstention = None;
    js[0].score = Some(0.0);
    js[0].pick_passage_id = Some("x".into());
    js[0].pick_position = Some(1);
    let jr: Vec<&Judgement> = js.iter().collect();
    assert!(pick_kappa(&jr, 2).unwrap() < 1.0);
}

#[test]
fn histogram_bins_cover_the_scale() {
    let h = histogram(Dimension::Alignment, &[1.0, 1.49, 5.0, 4.5, 3.0]);
    assert_eq!(h.len(), 8);
    assert_eq!(h[0].count, 2);
    assert_eq!(h[7].count, 2);
    assert_eq!(h[4].count, 1);
    let h = histogram(Dimension::Completeness, &[0.0, 1.0, 1.0 / 3.0, 0.1]);
    assert_eq!(h.len(), 10);
    assert_eq!(
        (h[0].count, h[1].count, h[3].count, h[9].count),
        (1, 1, 1, 1)
    );
}

#[test]
fn summary_counts_failures_and_flags() {
    let s = AuditSettings {
        resamples: 200,
        ..Default::default()
    };
    let mut js = Vec::new();
    for (d, score_a, score_b) in [
        ("d1", Some(5.0), Some(4.0)),
        ("d2", Some(1.0), Some(2.0)),
        ("d3", Some(4.0), None),
        ("d4", Some(3.0), Some(3.0)),
    ] {
        js.push(judgement(
            Dimension::Alignment,
            &format!("{d}::1"),
            Some("p"),
            "a",
            None,
            score_a,
            None,
        ));
        js.push(judgement(
            Dimension::Alignment,
            &format!("{d}::1"),
            Some("p"),
            "b",
            None,
            score_b,
            None,
        ));
    }
    let items = score_items(&js, 2, 1);
    let judges = vec!["a".to_string(), "b".to_string()];
    let ir: Vec<&ItemScore> = items.iter().collect();
    let jr: Vec<&Judgement> = js.iter().collect();
    let sum = dimension_summary(Dimension::Alignment, &ir, &jr, &judges, &s);
    assert_eq!(sum.items, 4);
    assert_eq!(sum.scored, 4);
    assert_eq!(sum.per_judge["b"].failed, 1);
    assert_eq!(sum.per_judge["b"].n, 3);
    assert_eq!(sum.flagged, 1); // d2: 1.5 < 3
    let m = sum.mean.unwrap();
    assert!((m - (4.5 + 1.5 + 4.0 + 3.0) / 4.0).abs() < 1e-12);
    let ci = sum.ci.unwrap();
    assert!(ci.lower <= m && m <= ci.upper);
    assert_eq!(ci.clusters, 4);
    assert_eq!(sum.verdicts["a"], vec![1, 0, 1, 1, 1]);
    assert!(sum.agreement.krippendorff_alpha_ordinal.unwrap() > 0.5);
}

#[test]
fn position_table_counts_gold_and_picks() {
    let mut js = Vec::new();
    for (t, gold, pick) in [(0usize, 1usize, 1usize), (1, 2, 1), (2, 3, 1)] {
        let mut j = judgement(
            Dimension::Completeness,
            "d::1",
            Some("g"),
            "a",
            Some(t),
            Some(f64::from(u8::from(gold == pick))),
            Some("x"),
        );
        j.pool = Some(vec!["1".into(), "2".into(), "3".into()]);
        j.gold_position = Some(gold);
        j.pick_position = Some(pick);
        js.push(j);
    }
    let jr: Vec<&Judgement> = js.iter().collect();
    let pb = position_bias(&jr, &["a".to_string()]);
    assert_eq!(pb[0].gold_at, vec![1, 1, 1]);
    assert_eq!(pb[0].gold_picked, vec![1, 0, 0]);
    assert_eq!(pb[0].picked_at, vec![3, 0, 0]);
    assert_eq!(pb[0].df, Some(2));
    assert!((pb[0].chi_square_independent.unwrap() - 6.0).abs() < 1e-9);
    // one item: the clustering cannot be estimated, so no corrected test
    assert_eq!((pb[0].items, pb[0].chi_square), (1, None));
}

fn pick(item: &str, trial: usize, gold: usize, pick: usize, size: usize) -> Judgement {
    let mut j = judgement(
        Dimension::Completeness,
        item,
        Some("g"),
        "a",
        Some(trial),
        Some(f64::from(u8::from(gold == pick))),
        Some("x"),
    );
    j.pool = Some((1..=size).map(|k| format!("{item}/p{k}")).collect());
    j.gold_position = Some(gold);
    j.pick_position = Some(pick);
    j
}

#[test]
fn position_test_clusters_trials_by_item() {
    // 12 items x 3 trials of a 4-passage pool; the judge picks the same position in every
    // trial of an item (item-level habit, not a per-trial position effect): positions
    // 1,1,1,1,1,1,2,2,3,3,4,4 over items
    let habit = [1, 1, 1, 1, 1, 1, 2, 2, 3, 3, 4, 4];
    let mut js = Vec::new();
    for (i, &p) in habit.iter().enumerate() {
        for t in 0..3 {
            js.push(pick(&format!("d{i}::1"), t, (i + t) % 4 + 1, p, 4));
        }
    }
    let jr: Vec<&Judgement> = js.iter().collect();
    let pb = &position_bias(&jr, &["a".to_string()])[0];
    assert_eq!(pb.items, 12);
    // as independent trials (36): counts 18,6,6,6, chi-square 12 on 3 df -> significant
    assert!(pb.p_value_independent.unwrap() < 0.05, "{pb:?}");
    // clustered by item the evidence is that of 12 items, and it is not significant
    let deff = pb.design_effect.unwrap();
    assert!((deff - 36.0 / 11.0).abs() < 1e-9, "{deff}");
    assert!(pb.p_value.unwrap() > 0.2, "{pb:?}");
    assert!((pb.chi_square.unwrap() - 12.0 * 11.0 / 36.0).abs() < 1e-9);
}

#[test]
fn length_check_compares_the_pick_with_the_rest_of_its_pool() {
    // pools of 4: passage k has 10*k words (the 4th is the longest); the gold rotates
    let mut lengths = Lengths::default();
    let mut js = Vec::new();
    for i in 0..10 {
        let item = format!("d{i}::1");
        for k in 1..=4 {
            lengths.passage_words.insert(format!("{item}/p{k}"), 10 * k);
        }
        for t in 0..3 {
            let gold = (i + t) % 4 + 1;
            let mut long = pick(&item, t, gold, 4, 4);
            long.judge = "long".into();
            let mut fair = pick(&item, t, gold, gold, 4);
            fair.judge = "fair".into();
            js.push(long);
            js.push(fair);
        }
    }
    let jr: Vec<&Judgement> = js.iter().collect();
    let r = Resampling {
        resamples: 300,
        level: 0.95,
        seed: 1,
    };
    let out = pool_length_bias(&jr, &["fair".to_string(), "long".to_string()], &lengths, &r);
    let get = |n: &str| out.iter().find(|b| b.judge == n).unwrap();
    let (fair, long) = (get("fair"), get("long"));
    assert_eq!(
        (fair.picks, long.picks, get("ensemble").picks),
        (30, 30, 60)
    );
    // the gold-picker shows no preference beyond the gold's own length
    assert!(fair.excess.unwrap().abs() < 1e-9);
    assert!((fair.longest_picked.unwrap() - fair.longest_is_gold.unwrap()).abs() < 1e-9);
    // the long-picker does, with an interval (clustered by item) above 0
    assert!(long.excess.unwrap() > 10.0, "{long:?}");
    let ci = long.excess_ci.as_ref().unwrap();
    assert!(ci.lower > 0.0 && ci.clusters == 10, "{ci:?}");
    assert_eq!(long.longest_picked, Some(1.0));
}

#[test]
fn complete_case_and_judge_adjusted_means_do_not_drift_with_failures() {
    // every item's true quality is the same; the strict judge `s` says 2, the lenient
    // judge `l` says 4, and `s` fails on every late turn (turn >= 4)
    let s = AuditSettings {
        resamples: 200,
        ..Default::default()
    };
    let mut js = Vec::new();
    for d in 0..8 {
        for t in 1..=6 {
            let id = format!("d{d}::{t}");
            let mut a = judgement(Dimension::Quality, &id, None, "l", None, Some(4.0), None);
            let strict = (t < 4).then_some(2.0);
            let mut b = judgement(Dimension::Quality, &id, None, "s", None, strict, None);
            a.turn = t;
            b.turn = t;
            if strict.is_none() {
                b.parse_status = crate::judges::record::ParseOutcome::Failed;
            }
            js.push(a);
            js.push(b);
        }
    }
    let items = score_items(&js, 2, 1);
    let judges = vec!["l".to_string(), "s".to_string()];
    let ir: Vec<&ItemScore> = items.iter().collect();
    let jr: Vec<&Judgement> = js.iter().collect();
    let sum = dimension_summary(Dimension::Quality, &ir, &jr, &judges, &s);
    // today's mean drifts toward the lenient judge: (24 x 3 + 24 x 4) / 48 = 3.5
    assert!((sum.mean.unwrap() - 3.5).abs() < 1e-9);
    let cc = sum.complete_case.as_ref().unwrap();
    assert_eq!(cc.n, 24);
    assert!((cc.mean.unwrap() - 3.0).abs() < 1e-9);
    let adj = sum.judge_adjusted.as_ref().unwrap();
    assert_eq!(adj.n, 48);
    assert!((adj.mean.unwrap() - 3.0).abs() < 1e-9, "{adj:?}");
    assert!((adj.offsets["l"] - 1.0).abs() < 1e-9 && (adj.offsets["s"] + 1.0).abs() < 1e-9);
    let ci = adj.ci.as_ref().unwrap();
    assert!(ci.lower <= 3.0 + 1e-9 && 3.0 <= ci.upper + 1e-9 && ci.clusters == 8);
    // and the failures show up where they are: late turns
    let fr = failure_rates(&js, &HashMap::new());
    let all = &fr["all"];
    assert_eq!((all.judgements, all.failed), (96, 24));
    let by_turn: Vec<(u64, Option<f64>)> =
        fr["s"].by_turn.iter().map(|b| (b.lower, b.rate)).collect();
    assert_eq!(
        by_turn,
        vec![
            (1, Some(0.0)),
            (2, Some(0.0)),
            (3, Some(0.0)),
            (4, Some(1.0)),
            (6, Some(1.0)),
            (9, None)
        ]
    );
    assert_eq!(fr["l"].failed, 0);
}
