//! The tests of the label sensitivity scoring.

use super::*;
use crate::query_set::tests::turn;

fn run(entries: &[(&str, &[&str])]) -> Run {
    entries
        .iter()
        .map(|(q, docs)| {
            let n = docs.len();
            (
                q.to_string(),
                docs.iter()
                    .enumerate()
                    .map(|(i, d)| (d.to_string(), (n - i) as f64))
                    .collect(),
            )
        })
        .collect()
}

/// A wins on the original labels thanks to a wrong gold (`bad`) and a missing one (`n2`);
/// B wins once they are fixed. d4 is not audited and must never enter a mean.
fn fixture() -> (Vec<Dialogue>, Qrels, Run, Run, LabelEdits) {
    let dialogues: Vec<Dialogue> = [
        ("d1", vec![turn("d1::1", &[("g1", 1)])]),
        ("d2", vec![turn("d2::1", &[("g2", 1)])]),
        ("d3", vec![turn("d3::1", &[("bad", 1), ("good", 1)])]),
        ("d4", vec![turn("d4::1", &[("g4", 1)])]),
        ("d5", vec![turn("d5::1", &[("g5", 1)])]),
    ]
    .into_iter()
    .map(|(id, turns)| Dialogue {
        id: id.into(),
        turns,
        meta: Default::default(),
    })
    .collect();
    let qrels = mtr_core::model::qrels_from_dialogues(&dialogues);
    let a = run(&[
        ("d1::1", &["g1"]),
        ("d2::1", &["g2"]),
        ("d3::1", &["bad"]),
        ("d4::1", &["n4"]),
        ("d5::1", &["g5"]),
    ]);
    let b = run(&[
        ("d1::1", &["g1"]),
        ("d2::1", &["n2", "g2"]),
        ("d3::1", &["good"]),
        ("d4::1", &["g4"]),
        ("d5::1", &["x"]),
    ]);
    let edits = LabelEdits {
        fingerprint: "fp".into(),
        flag_rating_below: 3.0,
        sampled: true,
        dialogues_audited: 4,
        dialogues_total: 5,
        audited_turns: ["d1::1", "d2::1", "d3::1", "d5::1"]
            .map(String::from)
            .into(),
        removed: [
            ("d3::1".to_string(), ["bad".to_string()].into()),
            ("d5::1".to_string(), ["g5".to_string()].into()),
            // not a gold: nothing to remove
            ("d1::1".to_string(), ["zz".to_string()].into()),
        ]
        .into(),
        added: [("d2::1".to_string(), [("n2".to_string(), 1)].into())].into(),
        complete: true,
        notes: Vec::new(),
        reviewed: None,
    };
    (dialogues, qrels, a, b, edits)
}

#[test]
fn apply_counts_what_changed() {
    let (_, qrels, _, _, edits) = fixture();
    let (q, a, changed) = apply(&qrels, &edits, Variant::NoiseRemoved);
    assert_eq!(a.golds_removed, 2);
    assert_eq!(a.golds_added, 0);
    assert_eq!(a.turns_changed, 2);
    assert_eq!(a.turns_left_without_gold, 1);
    assert!(!q.contains_key("d5::1"));
    assert_eq!(changed, ["d3::1", "d5::1"].map(String::from).into());
    let (q, a, _) = apply(&qrels, &edits, Variant::Corrected);
    assert_eq!((a.golds_removed, a.golds_added, a.turns_changed), (2, 1, 3));
    assert_eq!(q["d2::1"]["n2"], 1);
    let (q, a, _) = apply(&qrels, &edits, Variant::SparsityFilled);
    assert_eq!((a.golds_removed, a.golds_added), (0, 1));
    assert_eq!(q["d3::1"].len(), 2);
    assert_eq!("corrected".parse::<Variant>().unwrap(), Variant::Corrected);
    assert!("fixed".parse::<Variant>().is_err());
}

#[test]
fn the_reviewed_variant_applies_only_what_reviewers_decided() {
    let (dialogues, qrels, a, b, mut edits) = fixture();
    // without reviewers' decisions there is no reviewed variant, and applying it is a no-op
    assert_eq!(edits.variants(), Variant::ALL.to_vec());
    let (q, applied, _) = apply(&qrels, &edits, Variant::Reviewed);
    assert_eq!((q, applied.turns_changed), (qrels.clone(), 0));
    // reviewers kept g5 (the judges removed it) and accepted n2
    edits.reviewed = Some(ReviewedEdits {
        removed: [("d3::1".to_string(), ["bad".to_string()].into())].into(),
        added: [("d2::1".to_string(), [("n2".to_string(), 1)].into())].into(),
    });
    let (q, applied, changed) = apply(&qrels, &edits, Variant::Reviewed);
    assert_eq!((applied.golds_removed, applied.golds_added), (1, 1));
    assert_eq!(changed, ["d2::1", "d3::1"].map(String::from).into());
    assert_eq!(q["d5::1"]["g5"], 1);
    assert_eq!("reviewed".parse::<Variant>().unwrap(), Variant::Reviewed);
    let set = QuerySet::build(&dialogues, &qrels);
    let settings = Settings {
        resamples: 200,
        permutations: 200,
        ..Settings::default()
    };
    let systems = [
        SystemRun { name: "A", run: &a },
        SystemRun { name: "B", run: &b },
    ];
    let inp = Input {
        dialogues: &dialogues,
        set: &set,
        systems: &systems,
        edits: &edits,
        settings: &settings,
        moved_turns: 10,
        original_values: None,
    };
    let r = compute(&inp).unwrap();
    let v = r.variant(Variant::Reviewed).unwrap();
    assert_eq!(v.turns, 4, "d5 keeps its gold");
    assert_eq!((v.systems[0].rank, v.systems[1].rank), (2, 1));
    let d3 = v.moved_turns.iter().find(|t| t.qid == "d3::1").unwrap();
    assert_eq!(d3.removed, ["bad"]);
    assert!(v.moved_turns.iter().all(|t| t.qid != "d5::1"));
}

#[test]
fn corrected_labels_flip_the_pair_on_audited_turns_only() {
    let (dialogues, qrels, a, b, edits) = fixture();
    let set = QuerySet::build(&dialogues, &qrels);
    let settings = Settings {
        resamples: 300,
        permutations: 500,
        ..Settings::default()
    };
    let systems = [
        SystemRun { name: "A", run: &a },
        SystemRun { name: "B", run: &b },
    ];
    let inp = Input {
        dialogues: &dialogues,
        set: &set,
        systems: &systems,
        edits: &edits,
        settings: &settings,
        moved_turns: 10,
        original_values: None,
    };
    let r = compute(&inp).unwrap();
    assert_eq!(r.scope.scored_turns, 5);
    assert_eq!(r.scope.scored_turns_audited, 4);
    assert!(r.scope.partial);
    assert_eq!(r.scope.flag_rating_below, 3.0);
    // original on the 4 audited turns: A 1,1,x,1 ; B 1,y,x,0 (x = both retrieve one of two
    // golds at rank 1, y = the gold at rank 2)
    let x = 1.0 / (1.0 + 1.0 / 3f64.log2());
    let y = 1.0 / 3f64.log2();
    let a0 = (3.0 + x) / 4.0;
    let b0 = (1.0 + y + x) / 4.0;
    assert!((r.original[0].estimate.mean - a0).abs() < 1e-12);
    assert!((r.original[1].estimate.mean - b0).abs() < 1e-12);
    assert_eq!((r.original[0].rank, r.original[1].rank), (1, 2));

    let c = r.variant(Variant::Corrected).unwrap();
    // d5 leaves the mean; d3 now has only `good`; d2 has two golds, B finds both
    assert_eq!(c.turns, 3);
    assert_eq!(c.applied.turns_left_without_gold, 1);
    let d2a = 1.0 / (1.0 + 1.0 / 3f64.log2());
    let (ac, bc) = ((1.0 + d2a + 0.0) / 3.0, 1.0);
    assert!((c.systems[0].estimate.mean - ac).abs() < 1e-12);
    assert!((c.systems[1].estimate.mean - bc).abs() < 1e-12);
    assert!((c.systems[0].change.mean - (ac - a0)).abs() < 1e-12);
    assert!(c.systems[0].change.ci_low <= c.systems[0].change.mean);
    assert_eq!((c.systems[0].rank, c.systems[1].rank), (2, 1));
    assert_eq!(c.kendall_tau.unwrap().mean, -1.0);
    assert_eq!(c.tau_ap.unwrap().mean, -1.0);
    assert_eq!(c.flips.len(), 1);
    assert_eq!(
        (c.flips[0].above.as_str(), c.flips[0].below.as_str()),
        ("A", "B")
    );
    assert!(c.flips[0].original_diff > 0.0 && c.flips[0].variant_diff < 0.0);
    // too few turns for anything to be significant
    assert!(!c.flips[0].original_significant);
    // moved turns: d5 leaves the mean (A loses a 1), d3 moves A by -x, d2 moves A by
    // 1 - x (= 0.387) and B by 1 - y (= 0.369)
    let qids: Vec<&str> = c.moved_turns.iter().map(|t| t.qid.as_str()).collect();
    assert_eq!(qids, ["d5::1", "d3::1", "d2::1"]);
    assert_eq!(c.moved_turns[2].systems[0].system, "A");
    let d5 = c.moved_turns.iter().find(|t| t.qid == "d5::1").unwrap();
    assert!(d5.left_the_mean);
    assert_eq!(d5.removed, ["g5"]);
    assert_eq!(d5.systems[0].system, "A");
    assert_eq!(d5.systems[0].shift, -1.0);
    // d4 (not audited) is nowhere
    assert!(
        r.variants
            .iter()
            .all(|v| v.moved_turns.iter().all(|t| t.qid != "d4::1"))
    );
    let rob = r.robustness_of("A").unwrap();
    assert_eq!((rob.best, rob.worst, rob.robust), (1, 2, false));
    // the same inputs and seed give the same numbers
    assert_eq!(compute(&inp).unwrap(), r);
    // and the bench's own per-turn values give the same as scoring again
    let values: Vec<Vec<f64>> = [&a, &b]
        .iter()
        .map(|run| {
            crate::score::score_run(&set, run, &[settings.main])
                .unwrap()
                .values
                .remove(0)
        })
        .collect();
    let refs: Vec<&[f64]> = values.iter().map(Vec::as_slice).collect();
    let given = compute(&Input {
        original_values: Some(&refs),
        ..inp
    })
    .unwrap();
    assert_eq!(given, r);
}

#[test]
fn an_audit_of_other_turns_is_refused() {
    let (dialogues, qrels, a, _, mut edits) = fixture();
    edits.audited_turns = ["x::1".to_string()].into();
    let set = QuerySet::build(&dialogues, &qrels);
    let settings = Settings::default();
    let systems = [SystemRun { name: "A", run: &a }];
    let e = compute(&Input {
        dialogues: &dialogues,
        set: &set,
        systems: &systems,
        edits: &edits,
        settings: &settings,
        moved_turns: 10,
        original_values: None,
    })
    .unwrap_err();
    assert!(e.to_string().contains("covers none"), "{e}");
}
