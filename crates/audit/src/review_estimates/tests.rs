//! The review of a fixture audit: one informative judge (`e5`) beside two that give every gold
//! a 5 (`qwen`, `smol`), and reviewers who rate like the truth.

use std::collections::BTreeMap;

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use super::*;
use crate::dimension::Dimension;
use crate::items::aggregate::ItemScore;
use crate::statistics::separation::Separation;
use crate::summary::Summary;

const DIALOGUES: usize = 60;
const TURNS: usize = 3;

/// A summary with judges `e5`, `qwen` and `smol` on alignment: `e5` varies, the others give
/// 5 to everything, and they do not agree (alpha 0.05).
pub(crate) fn summary() -> Summary {
    let ledger = serde_json::json!({"calls": 0, "cache_hits": 0, "failed": 0,
        "prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0});
    let n = DIALOGUES * TURNS;
    let settings = crate::AuditSettings {
        resamples: 300,
        ..Default::default()
    };
    serde_json::from_value(serde_json::json!({
        "summary_version": crate::summary::SUMMARY_VERSION,
        "benchmark": {"name": "b", "path": "", "source": "", "language": "en",
            "fingerprint": "fp", "generator": {}},
        "fingerprint": {"data": "fp", "config": "c", "prompts": "p", "tool_version": "",
            "git_commit": null},
        "settings": settings,
        "judges": [{"name": "e5", "model": "m"}, {"name": "qwen", "model": "m"},
            {"name": "smol", "model": "m"}],
        "complete": true, "stopped": null,
        "plan": {"dialogues_total": DIALOGUES, "dialogues_audited": DIALOGUES, "sampled": false,
            "turns_total": n, "turns_audited": n, "items": {}, "skipped": {},
            "judgements_planned": 0, "judgements_done": 0},
        "dimensions": {"alignment": {"title": "t", "scale": [1.0, 5.0], "items": n,
            "scored": n, "unscored": 0, "mean": 3.0, "ci": null, "flagged": 0,
            "flag_threshold": 3.0, "per_judge": {}, "histogram": [],
            "verdicts": {"e5": [n / 5, n / 5, n / 5, n / 5, n / 5],
                "qwen": [0, 0, 0, 0, n], "smol": [0, 0, 0, 0, n]},
            "agreement": {"krippendorff_alpha_ordinal": 0.05, "fleiss_kappa": null,
                "units": n, "note": null}}},
        "bias": {"position": [], "length": [], "self_preference": []},
        "failures": {}, "suggested_qrels": [], "flagged_turns": 0,
        "cost": {"total": ledger, "per_judge": {}, "per_dimension": {},
            "prompt_tokens_per_judgement": {}, "max_cost_usd": null},
        "human": null, "worst": {}, "warnings": []
    }))
    .unwrap()
}

/// The items (truth: a seeded grade per item) and the labels of a random sample of
/// `labelled`: `ann` on all of them, `bob` on every third, off by one now and then.
pub(crate) fn fixture(labelled: usize) -> (Vec<ItemScore>, EffectiveLabels) {
    let mut rng = StdRng::seed_from_u64(5);
    let mut items = Vec::new();
    let mut truth = Vec::new();
    for d in 0..DIALOGUES {
        let lean: i64 = rng.random_range(-1..=1);
        for t in 1..=TURNS {
            let g = (rng.random_range(1..=5i64) + lean).clamp(1, 5);
            let e5 = (g + rng.random_range(-1..=1i64) * i64::from(rng.random_bool(0.3))).clamp(1, 5)
                as f64;
            let per_judge = BTreeMap::from([
                ("e5".to_string(), e5),
                ("qwen".to_string(), 5.0),
                ("smol".to_string(), 5.0),
            ]);
            items.push(ItemScore {
                dimension: Dimension::Alignment,
                dialogue_id: format!("d{d}"),
                turn_id: format!("d{d}::{t}"),
                turn: t,
                passage_id: Some(format!("p{d}-{t}")),
                score: Some((e5 + 10.0) / 3.0),
                per_judge,
                judgements: 3,
                failed: 0,
                abstentions: BTreeMap::new(),
                planned: 3,
                suggestion: None,
            });
            truth.push(g);
        }
    }
    let mut order: Vec<usize> = (0..items.len()).collect();
    for i in 0..labelled {
        let j = rng.random_range(i..order.len());
        order.swap(i, j);
    }
    let mut labels = EffectiveLabels::new();
    for (k, &i) in order[..labelled].iter().enumerate() {
        let mut by = BTreeMap::from([("ann".to_string(), truth[i].to_string())]);
        if k % 3 == 0 {
            let off = i64::from(k % 9 == 0);
            by.insert("bob".into(), (truth[i] - off).clamp(1, 5).to_string());
        }
        labels.insert(sampled_labels::item_key(&items[i]), by);
    }
    labels.insert(
        "missing|d0::1|x".into(),
        BTreeMap::from([("ann".into(), "yes".into())]),
    );
    (items, labels)
}

#[test]
fn one_informative_judge_beside_constant_ones_narrows_the_share_interval() {
    // the ensemble never rates below 3 here, so PPI on its verdict alone gained nothing: the
    // interval was the reviewers' own; with each judge's score as a predictor, e5 narrows it
    let s = summary();
    let (items, labels) = fixture(60);
    let r = review(&s, &items, &labels).unwrap();
    let a = &r.dimensions[&Dimension::Alignment];
    let width = |e: &ReviewEstimate| e.ci.as_ref().map(|c| c.upper - c.lower).unwrap();
    assert!(
        width(&a.ppi) < 0.8 * width(&a.reviewers),
        "ppi {:?} reviewers {:?}",
        a.ppi,
        a.reviewers
    );
    assert!(a.weights["e5"] != 0.0, "{:?}", a.weights);
    let m = a.mean_rating.as_ref().unwrap();
    assert!(width(&m.ppi) < 0.8 * width(&m.reviewers), "{m:?}");
}

#[test]
fn three_estimates_agreement_and_the_ceiling() {
    let s = summary();
    let (items, labels) = fixture(60);
    let r = review(&s, &items, &labels).unwrap();
    assert_eq!(r.reviewers, ["ann", "bob"]);
    assert_eq!(
        (r.sample_items, r.flagged_items, r.unusable_labels),
        (60, 1, 0)
    );
    let a = &r.dimensions[&Dimension::Alignment];
    // the ensemble's mean never drops below 3.33: the judges alone see no failing gold
    assert_eq!(a.judges.estimate, Some(0.0));
    assert_eq!(a.judges.n, DIALOGUES * TURNS);
    let (rev, ppi) = (a.reviewers.estimate.unwrap(), a.ppi.estimate.unwrap());
    assert!(rev > 0.2, "{rev}");
    let pc = a.ppi.ci.as_ref().unwrap();
    assert!(pc.lower < ppi && ppi < pc.upper && pc.resamples == 0);
    // 60 reviewed items from many dialogues: every judge is a predictor, the constant ones
    // get no weight
    assert_eq!(a.lambda, None);
    assert_eq!(a.weights["qwen"], 0.0);
    assert_eq!(a.weights["smol"], 0.0);
    let m = a.mean_rating.as_ref().unwrap();
    assert!(m.ppi.estimate.is_some() && m.reviewers.n == 60);
    let k = |who: &str| a.agreement.iter().find(|x| x.who == who).unwrap().clone();
    let e5 = k("e5");
    assert!(e5.kappa.unwrap() > 0.6, "{e5:?}");
    assert!(e5.ci.as_ref().unwrap().lower > 0.3, "{e5:?}");
    assert_eq!(e5.n, 60);
    assert_eq!(k("qwen").kappa, Some(0.0));
    let ceiling = a.reviewers_agreement.as_ref().unwrap();
    assert_eq!((ceiling.who.as_str(), ceiling.n), ("ann vs bob", 20));
    assert!(ceiling.kappa.unwrap() > 0.7);
    assert!(
        a.publish
            .starts_with("alignment: publish the prediction-powered"),
        "{}",
        a.publish
    );
    assert!(r.publish.starts_with("Publish the prediction-powered"));
    // seeded: the same inputs give the same review
    assert_eq!(review(&s, &items, &labels).unwrap(), r);
}

#[test]
fn no_sample_label_no_review_and_too_few_no_interval() {
    let s = summary();
    let (items, _) = fixture(0);
    let only_flagged: EffectiveLabels = [(
        "gold|d0::1|p0-1".to_string(),
        BTreeMap::from([("ann".into(), "no".into())]),
    )]
    .into_iter()
    .collect();
    assert!(review(&s, &items, &only_flagged).is_none());
    let (items, labels) = fixture(1);
    let r = review(&s, &items, &labels).unwrap();
    let a = &r.dimensions[&Dimension::Alignment];
    assert!(a.ppi.estimate.is_none() && a.reviewers.estimate.is_some());
    assert!(
        a.publish.contains("too few reviewed items"),
        "{}",
        a.publish
    );
}

#[test]
fn one_judge_that_agrees_with_the_reviewers_makes_the_verdict() {
    let mut s = summary();
    // without labels: e5 varies, the two others are constant: nothing confirms e5
    let before = crate::statistics::verdict::of(&s);
    assert_eq!(
        before.dimensions[&Dimension::Alignment].separation,
        Separation::Unconfirmed
    );
    let (items, labels) = fixture(60);
    s.review = review(&s, &items, &labels);
    let after = crate::statistics::verdict::of(&s);
    let a = &after.dimensions[&Dimension::Alignment];
    assert_eq!(a.separation, Separation::Separates, "{}", a.reason);
    assert!(
        a.reason.starts_with("`e5` agrees with the reviewers: κ"),
        "{}",
        a.reason
    );
    assert!(a.reason.contains("`qwen` κ 0.00"), "{}", a.reason);
    assert!(
        after
            .line
            .starts_with("**The judges separate items** on alignment"),
        "{}",
        after.line
    );
}

#[test]
fn reviewers_that_agree_with_no_judge_make_it_cannot_separate() {
    let mut s = summary();
    let (mut items, labels) = fixture(60);
    for it in &mut items {
        it.per_judge.insert("e5".into(), 4.0);
    }
    s.review = review(&s, &items, &labels);
    let v = crate::statistics::verdict::of(&s);
    let a = &v.dimensions[&Dimension::Alignment];
    assert_eq!(a.separation, Separation::CannotSeparate);
    assert!(
        a.reason.starts_with("no judge agrees with the reviewers"),
        "{}",
        a.reason
    );
}

#[test]
fn attach_reads_the_labels_file_and_refuses_another_audits() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = summary();
    assert!(
        !attach(dir.path(), &mut s).unwrap(),
        "no labels file: nothing to add"
    );
    assert!(s.review.is_none());
    std::fs::create_dir_all(dir.path().join(crate::review_queue::REVIEW_DIR)).unwrap();
    let line = |fp: &str| {
        serde_json::json!({"item": "alignment|d0::1|p0-1", "queue": "sample", "label": "2",
            "reviewer": "ann", "time": "t", "seconds": 3.0, "fingerprint": fp})
        .to_string()
            + "\n"
    };
    std::fs::write(labels_path(dir.path()), line("elsewhere")).unwrap();
    let e = attach(dir.path(), &mut s).unwrap_err();
    assert!(e.is_user_error(), "{e}");
    std::fs::write(labels_path(dir.path()), line(&audit_fingerprint(&s))).unwrap();
    // no items.jsonl: the label matches no scored item, so there is nothing to review
    assert!(!attach(dir.path(), &mut s).unwrap());
}

#[test]
fn intervals_stay_within_what_a_share_and_a_rating_can_be() {
    // three reviewed dialogues, one failing item: Student's t with 2 degrees of freedom
    // reached below 0% (and a rating's interval past 5)
    let s = summary();
    let (items, _) = fixture(0);
    let mut labels = EffectiveLabels::new();
    for (k, it) in items.iter().take(3 * TURNS).enumerate() {
        let label = if k == 0 { "1" } else { "5" };
        labels.insert(
            sampled_labels::item_key(it),
            BTreeMap::from([("ann".to_string(), label.to_string())]),
        );
    }
    let r = review(&s, &items, &labels).unwrap();
    let a = &r.dimensions[&Dimension::Alignment];
    for e in [&a.judges, &a.reviewers, &a.ppi] {
        let c = e.ci.as_ref().unwrap();
        assert!(0.0 <= c.lower && c.upper <= 1.0, "{e:?}");
    }
    assert_eq!(a.reviewers.ci.as_ref().unwrap().lower, 0.0);
    let m = a.mean_rating.as_ref().unwrap();
    for e in [&m.judges, &m.reviewers, &m.ppi] {
        let c = e.ci.as_ref().unwrap();
        assert!(1.0 <= c.lower && c.upper <= 5.0, "{e:?}");
    }
}
