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
use crate::summary::review::LambdaRule;

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
fn an_informative_ensemble_rating_narrows_the_mean_rating_interval() {
    // the ensemble's mean rating follows e5, so PPI on it narrows the reviewers' interval; its
    // verdict (rated below 3) never fires, and a constant prediction cannot narrow the share,
    // but it is kept (lambda 1 or tuned), never dropped
    let s = summary();
    let (items, labels) = fixture(60);
    let r = review(&s, &items, &labels).unwrap();
    let a = &r.dimensions[&Dimension::Alignment];
    let width = |e: &ReviewEstimate| e.ci.as_ref().map(|c| c.upper - c.lower).unwrap();
    let m = a.mean_rating.as_ref().unwrap();
    // lambda is clipped at 1 (the ensemble's mean moves a third of e5's step), so the gain
    // is modest, but it is there
    assert!(width(&m.ppi) < 0.95 * width(&m.reviewers), "{m:?}");
    assert!(m.lambda.is_some_and(|l| l > 0.0), "{m:?}");
    assert_eq!(m.lambda_rule, Some(LambdaRule::CrossFitted));
    assert!(width(&a.ppi) > 0.0 && a.lambda.is_some(), "{a:?}");
}

/// Issue 54's audit: oracle judges on 535 alignment units (107 dialogues of 5) of which 13
/// (2.4%) fail, and a reviewer who labels a random sample of 40 correctly, none failing.
fn oracle_audit() -> (Vec<ItemScore>, EffectiveLabels, f64) {
    let mut rng = StdRng::seed_from_u64(54);
    let (dialogues, turns, failing) = (107, 5, 13);
    let mut fails = vec![false; dialogues * turns];
    let mut k = 0;
    while k < failing {
        let i = rng.random_range(0..fails.len());
        k += usize::from(!std::mem::replace(&mut fails[i], true));
    }
    let items: Vec<ItemScore> = (0..fails.len())
        .map(|i| {
            let (d, t) = (i / turns, i % turns + 1);
            let grade = if fails[i] { 1.0 } else { 5.0 };
            ItemScore {
                dimension: Dimension::Alignment,
                dialogue_id: format!("d{d}"),
                turn_id: format!("d{d}::{t}"),
                turn: t,
                passage_id: Some(format!("p{d}-{t}")),
                score: Some(grade),
                per_judge: ["e5", "qwen", "smol"]
                    .map(|j| (j.to_string(), grade))
                    .into(),
                judgements: 3,
                failed: 0,
                abstentions: BTreeMap::new(),
                planned: 3,
                suggestion: None,
            }
        })
        .collect();
    let mut passing: Vec<usize> = (0..fails.len()).filter(|i| !fails[*i]).collect();
    let mut labels = EffectiveLabels::new();
    for _ in 0..40 {
        let i = passing.swap_remove(rng.random_range(0..passing.len()));
        labels.insert(
            sampled_labels::item_key(&items[i]),
            BTreeMap::from([("ann".to_string(), "5".to_string())]),
        );
    }
    (items, labels, failing as f64 / fails.len() as f64)
}

#[test]
fn issue_54_oracle_judges_and_no_failure_in_40_labels_give_intervals_that_hold() {
    let s = summary();
    let (items, labels, truth) = oracle_audit();
    assert!((truth - 0.0243).abs() < 1e-3);
    let r = review(&s, &items, &labels).unwrap();
    let json = serde_json::to_value(&r).unwrap();
    let a = &json["dimensions"]["alignment"];
    let (lo, hi) = (
        a["ppi"]["ci"]["lower"].as_f64().unwrap(),
        a["ppi"]["ci"]["upper"].as_f64().unwrap(),
    );
    assert!(
        lo <= truth && truth <= hi,
        "PPI [{lo}, {hi}] misses {truth}"
    );
    assert_eq!(a["reviewers"]["estimate"].as_f64(), Some(0.0));
    // perfect judges: PPI is no wider than the reviewers' exact interval
    let reviewers_width = a["reviewers"]["ci"]["upper"].as_f64().unwrap()
        - a["reviewers"]["ci"]["lower"].as_f64().unwrap();
    assert!(
        hi - lo <= reviewers_width,
        "PPI [{lo}, {hi}] wider than {reviewers_width}"
    );
    assert_eq!(a["reviewers"]["method"], "clopper_pearson");
    assert_eq!(a["ppi"]["method"], "adjusted_wald");
    // the judges are kept: lambda 1 where the sample shows no spread
    assert_eq!(a["lambda"].as_f64(), Some(1.0));
    let d = &r.dimensions[&Dimension::Alignment];
    let m = d.mean_rating.as_ref().unwrap();
    for e in [
        &d.judges,
        &d.reviewers,
        &d.ppi,
        &m.judges,
        &m.reviewers,
        &m.ppi,
    ] {
        let c = e.ci.as_ref().unwrap();
        assert!(c.upper > c.lower, "zero width: {e:?}");
    }
    // the reviewers' 0 of 40 is an exact interval reaching well above 0
    assert!(d.reviewers.ci.as_ref().unwrap().upper > 0.05, "{d:?}");
    // the page prints no zero-width interval either
    let mut s = s;
    s.review = Some(r);
    let page = crate::report::markdown(&s);
    assert!(!page.contains("0.0% [0.0, 0.0]"), "{page}");
    assert!(page.contains("Clopper-Pearson"), "{page}");
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
    // 60 reviewed items from many dialogues: lambda is cross-fitted; the ensemble's verdict
    // never varies, so each fold falls back to plain PPI
    assert_eq!(a.lambda, Some(1.0));
    assert_eq!(a.lambda_rule, Some(LambdaRule::CrossFitted));
    assert_eq!(a.few_clusters, None);
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
    // one failing of 9 from 3 dialogues: Clopper-Pearson's lower end is just above 0
    assert!(a.reviewers.ci.as_ref().unwrap().lower < 0.01, "{a:?}");
    assert_eq!(a.few_clusters, Some(3));
    // and the report names the count
    let mut s = s;
    s.review = Some(r.clone());
    let page = crate::report::markdown(&s);
    assert!(
        page.contains("Only 3 dialogues were reviewed: intervals are widened for few clusters."),
        "{page}"
    );
    let m = a.mean_rating.as_ref().unwrap();
    for e in [&m.judges, &m.reviewers, &m.ppi] {
        let c = e.ci.as_ref().unwrap();
        assert!(1.0 <= c.lower && c.upper <= 5.0, "{e:?}");
    }
}
