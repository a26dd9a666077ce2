//! What the audit says about its judges, against the fake server on the real MTRAG clapnq
//! data: self-preference and shared families warned, human ratings compared with item scores
//! (a generic file and MTRAG's own), probability ratings, and the verdict on ensembles that
//! cannot or can separate true golds.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use mtr_llm::fake::{FakeReply, FakeRequest, FakeServer};

use crate::config::AuditSettings;
use crate::dimension::Dimension;
use crate::job::Outcome;
use crate::output;
use crate::tests::fake::{read_items, validate_folder};
use crate::tests::kit::*;
use crate::tests::planted::{oracle, plant};
fn job(
    settings: AuditSettings,
    out: &Path,
    human: Option<std::path::PathBuf>,
    human_sample: Option<usize>,
) -> crate::job::AuditJob {
    crate::job::AuditJob {
        settings,
        out_dir: out.to_path_buf(),
        prompts: crate::judges::prompts::AuditPrompts::builtin().unwrap(),
        retrievers: Vec::new(),
        config_hash: "test".into(),
        tool_version: "test".into(),
        git_commit: None,
        human_labels: human,
        human_sample,
        progress: mtr_core::progress::none(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn self_preference_and_shared_family_are_warned() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(mut bench) = clapnq(tmp.path()) else {
        return;
    };
    bench
        .manifest
        .generator
        .insert("answers".into(), "Qwen/Qwen2.5-72B-Instruct".into());
    let fake = FakeServer::builder()
        .respond(hashed_judge)
        .start()
        .await
        .unwrap();
    let endpoints = vec![
        fake.endpoint("q1", "qwen2.5-7b-instruct"),
        fake.endpoint("q2", "qwen3-8b"),
        fake.endpoint("l", "llama-3.1-8b"),
    ];
    let config = mtr_llm::LlmConfig {
        endpoints,
        roles: mtr_llm::Roles {
            judges: vec!["q1".into(), "q2".into(), "l".into()],
            ..Default::default()
        },
        ..Default::default()
    };
    let llm = llm_with_cache(config, &tmp.path().join("c.sqlite")).await;
    let s = AuditSettings {
        sample: Some(2),
        dimensions: vec![Dimension::Quality],
        resamples: 100,
        ..Default::default()
    };
    let Outcome::Audited(s) =
        crate::run::run(&bench, job(s, &tmp.path().join("a"), None, None), &llm)
            .await
            .unwrap()
    else {
        panic!()
    };
    assert_eq!(
        s.bias.self_preference.len(),
        2,
        "{:?}",
        s.bias.self_preference
    );
    assert!(s.bias.self_preference.iter().all(|w| w.contains("`qwen`")));
    assert!(
        s.warnings
            .iter()
            .any(|w| w.contains("q1, q2") && w.contains("qwen")),
        "{:?}",
        s.warnings
    );
    let md = std::fs::read_to_string(tmp.path().join("a").join(output::REPORT_MD)).unwrap();
    assert!(md.contains("Self-preference"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generic_human_ratings_are_compared_with_item_scores() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(bench) = clapnq(tmp.path()) else {
        return;
    };
    let fake = FakeServer::builder()
        .respond(hashed_judge)
        .start()
        .await
        .unwrap();
    let llm = fake_llm(&fake, &["a", "b"], &tmp.path().join("c.sqlite"), 8).await;
    let settings = AuditSettings {
        sample: Some(6),
        dimensions: vec![Dimension::Quality],
        resamples: 100,
        ..Default::default()
    };
    let first = tmp.path().join("first");
    let Outcome::Audited(_) =
        crate::run::run(&bench, job(settings.clone(), &first, None, None), &llm)
            .await
            .unwrap()
    else {
        panic!()
    };
    // two annotators: one equal to the ensemble item score (rounded), one off by one on every
    // third item
    let items = crate::items::aggregate::score_items(&read_items(&first), 2, 3);
    let mut lines = String::new();
    for (n, it) in items.iter().filter(|i| i.score.is_some()).enumerate() {
        let x = it.score.unwrap().round();
        let y = if n % 3 == 0 {
            if x < 5.0 { x + 1.0 } else { x - 1.0 }
        } else {
            x
        };
        lines.push_str(&serde_json::json!({"turn_id": it.turn_id, "dimension": "quality", "score": x, "annotator": "h1"}).to_string());
        lines.push('\n');
        lines.push_str(&serde_json::json!({"turn_id": it.turn_id, "dimension": "quality", "score": y, "annotator": "h2"}).to_string());
        lines.push('\n');
    }
    let file = tmp.path().join("human.jsonl");
    std::fs::write(&file, lines).unwrap();
    let Outcome::Audited(s) = crate::run::run(
        &bench,
        job(settings, &tmp.path().join("second"), Some(file), None),
        &llm,
    )
    .await
    .unwrap() else {
        panic!()
    };
    let h = s.human.as_ref().unwrap();
    assert_eq!(h.kind, "items");
    let c = &h.comparisons[0];
    assert_eq!(c.dimension, Dimension::Quality);
    assert_eq!(c.ensemble.n, items.len());
    assert!(c.ensemble.pearson.unwrap() > 0.9, "{:?}", c.ensemble);
    assert!(c.ensemble.spearman.unwrap() > 0.9);
    assert_eq!(c.ceiling.units, items.len());
    assert_eq!(c.ceiling.annotators_per_unit, 2.0);
    assert!(c.ceiling.pearson_pairwise.unwrap() > 0.8);
    validate_folder(&tmp.path().join("second"));
}

/// A judge that knows the MTRAG annotators' median ratings of each answer (faithfulness for
/// the faithfulness prompt, completeness for the quality prompt) and maps them onto 1-5.
fn human_oracle(
    medians: Arc<HashMap<String, (f64, f64)>>,
) -> impl Fn(&FakeRequest) -> FakeReply + Send + Sync + 'static {
    move |r: &FakeRequest| {
        let sec = sections(&r.last_user);
        let answer = sec
            .get("Reference answer")
            .or_else(|| sec.get("Answer"))
            .map(|a| a.trim_start_matches("Assistant: ").trim().to_string())
            .unwrap_or_default();
        let (faith, comp) = medians.get(&answer).copied().unwrap_or((1.0, 1.0));
        // the answer-completeness prompt (human_completeness.j2) shows passages too
        let completeness = sec
            .get("Task")
            .is_some_and(|t| t.contains("Is the answer complete"));
        let m = if sec.contains_key("Evidence passages") && !completeness {
            faith
        } else {
            comp
        };
        let rating = (1.0 + (m - 1.0) * 4.0 / 3.0).round() as i64;
        FakeReply::json(
            serde_json::json!({"justification": "knows the annotators", "rating": rating}),
        )
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mtrag_human_calibration_on_the_real_file() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(bench) = clapnq(tmp.path()) else {
        return;
    };
    let file = shared().unwrap().join("human_evaluations_clapnq_govt.json");
    let crate::human::annotator_agreement::HumanLabels::Mtrag { items, .. } =
        crate::human::annotator_agreement::load(&file).unwrap()
    else {
        panic!()
    };
    let medians: HashMap<String, (f64, f64)> = items
        .iter()
        .map(|i| {
            let med = |m: &str| {
                crate::human::annotator_agreement::median(
                    &i.ratings
                        .get(m)
                        .map(|r| r.values().copied().collect::<Vec<_>>())
                        .unwrap_or_default(),
                )
                .unwrap_or(1.0)
            };
            (
                i.answer.trim().to_string(),
                (med("faithfulness"), med("completeness")),
            )
        })
        .collect();
    let fake = FakeServer::builder()
        .respond(human_oracle(Arc::new(medians)))
        .start()
        .await
        .unwrap();
    let llm = fake_llm(&fake, &["oracle"], &tmp.path().join("c.sqlite"), 16).await;
    let settings = AuditSettings {
        sample: Some(1),
        dimensions: vec![Dimension::Faithfulness, Dimension::Quality],
        resamples: 100,
        ..Default::default()
    };
    let out = tmp.path().join("audit");
    let Outcome::Audited(s) = crate::run::run(&bench, job(settings, &out, Some(file), None), &llm)
        .await
        .unwrap()
    else {
        panic!()
    };
    let h = s.human.as_ref().unwrap();
    assert_eq!(
        (h.kind.as_str(), h.units, h.failed_judgements),
        ("mtrag", 234, 0)
    );
    for c in &h.comparisons {
        println!(
            "{} vs human {}: oracle judge r={:.3} rho={:.3} kappa={:.3} (n={}); annotators: alpha={:.3} pairwise r={:.3} leave-one-out r={:.3} kappa={:.3} ({:.2} per answer)",
            c.dimension,
            c.human_metric,
            c.ensemble.pearson.unwrap_or(f64::NAN),
            c.ensemble.spearman.unwrap_or(f64::NAN),
            c.ensemble.kappa_quadratic.unwrap_or(f64::NAN),
            c.ensemble.n,
            c.ceiling.krippendorff_alpha_ordinal.unwrap_or(f64::NAN),
            c.ceiling.pearson_pairwise.unwrap_or(f64::NAN),
            c.ceiling.pearson_leave_one_out.unwrap_or(f64::NAN),
            c.ceiling.kappa_quadratic_pairwise.unwrap_or(f64::NAN),
            c.ceiling.annotators_per_unit
        );
    }
    let f = h
        .comparisons
        .iter()
        .find(|c| c.human_metric == "faithfulness")
        .unwrap();
    let q = h
        .comparisons
        .iter()
        .find(|c| c.human_metric == "completeness")
        .unwrap();
    // the oracle reproduces the human median (up to the 1-4 -> 1-5 rounding)
    assert!(f.ensemble.pearson.unwrap() > 0.97 && q.ensemble.pearson.unwrap() > 0.97);
    // answers whose task has no passage text in the file are not judged for faithfulness nor
    // for completeness (judged with the passages shown, its own prompt)
    assert!(
        f.ensemble.n >= 210 && q.ensemble.n == f.ensemble.n,
        "{} {}",
        f.ensemble.n,
        q.ensemble.n
    );
    assert_eq!(q.judged_with.as_deref(), Some("audit/human_completeness@1"));
    // and beats the annotators' own agreement, which is far from perfect
    let ceiling = f.ceiling.pearson_leave_one_out.unwrap();
    assert!(ceiling > 0.2 && ceiling < 0.9, "{ceiling}");
    // the ceiling is computed on the judged units (the file's is kept beside it)
    assert!(f.ceiling.units <= f.ensemble.n && f.ceiling.annotators_per_unit > 2.9);
    assert!(f.ceiling_all_units.as_ref().unwrap().units >= 220);
    assert!(f.ensemble.pearson_ci.is_some() && f.ceiling.kappa_quadratic_pairwise_ci.is_some());
    // the answer sources (reference, GPT-4o, Llama-3.1-405B) each get a residual
    assert_eq!(f.residual_by_source["ensemble"].len(), 3);
    assert!(
        h.comparisons
            .iter()
            .any(|c| c.human_metric == "appropriateness")
            && h.comparisons
                .iter()
                .any(|c| c.human_metric == "naturalness")
    );
    validate_folder(&out);
    let md = std::fs::read_to_string(out.join(output::REPORT_MD)).unwrap();
    assert!(md.contains("Human calibration") && md.contains("annotators (ceiling)"));
    assert!(md.contains("Self-preference: residual by answer source"));
}
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probability_ratings_are_offered_per_judge_and_recorded_per_judgement() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(bench) = clapnq(tmp.path()) else {
        return;
    };
    // every answer writes 4; asked for logprobs, the grade token is 4 or 3 with equal odds
    let fake = FakeServer::builder()
        .respond(|r: &FakeRequest| {
            if r.body.get("logprobs").is_some() {
                let alt = |t: &str| serde_json::json!({"token": t, "logprob": 0.5f64.ln()});
                FakeReply::WithLogprobs(
                    "4".into(),
                    serde_json::json!({"content": [{"token": "4", "logprob": 0.5f64.ln(), "top_logprobs": [alt("4"), alt("3")]}]}),
                )
            } else {
                FakeReply::json(serde_json::json!({"justification": "ok", "rating": 4}))
            }
        })
        .start()
        .await
        .unwrap();
    let config = |mode| crate::tests::kit::probability_pair_config(&fake, mode);
    let cache = tmp.path().join("c.sqlite");
    let settings = AuditSettings {
        sample: Some(2),
        dimensions: vec![Dimension::Alignment, Dimension::Quality],
        resamples: 100,
        ..Default::default()
    };
    let out = tmp.path().join("audit");
    let llm = llm_with_cache(config(mtr_llm::logprob::RatingMode::Probability), &cache).await;
    let s = audited(
        &bench,
        &llm,
        settings.clone(),
        &out,
        &tmp.path().join("index"),
    )
    .await;
    use mtr_llm::logprob::RatingMode;
    let modes: BTreeMap<&str, RatingMode> = s
        .judges
        .iter()
        .map(|j| (j.name.as_str(), j.rating_mode))
        .collect();
    assert_eq!(modes["p"], RatingMode::Probability);
    assert_eq!(modes["a"], RatingMode::Generated);
    let items = read_items(&out);
    assert!(!items.is_empty());
    for j in &items {
        match j.judge.as_str() {
            "p" => {
                assert_eq!(j.rating_mode, Some(RatingMode::Probability), "{j:?}");
                assert_eq!(j.score, Some(3.5));
                let d = j.rating_distribution.as_ref().unwrap();
                assert_eq!(d.written, Some(4));
            }
            _ => {
                assert_eq!(j.rating_mode, Some(RatingMode::Generated));
                assert_eq!(j.score, Some(4.0));
                assert!(j.rating_distribution.is_none());
            }
        }
    }
    let q = &s.dimensions[&Dimension::Quality];
    assert_eq!(q.per_judge["p"].mean, Some(3.5));
    let report = std::fs::read_to_string(out.join(output::REPORT_MD)).unwrap();
    assert!(report.contains("ratings read from token probabilities"));
    validate_folder(&out);
    // the same judge switched to written grades: its old judgements are not reused
    let calls = fake.chat_calls();
    let llm = llm_with_cache(config(RatingMode::Generated), &cache).await;
    let s = audited(&bench, &llm, settings, &out, &tmp.path().join("index")).await;
    let p_items = read_items(&out)
        .into_iter()
        .filter(|j| j.judge == "p")
        .collect::<Vec<_>>();
    assert_eq!(fake.chat_calls() - calls, p_items.len() as u64);
    assert!(
        p_items
            .iter()
            .all(|j| j.score == Some(4.0) && j.rating_mode == Some(RatingMode::Generated))
    );
    assert_eq!(
        s.dimensions[&Dimension::Quality].per_judge["p"].mean,
        Some(4.0)
    );
}

/// Judges that give every item a 5 and abstain ("none") on every pool.
fn constant_judge(r: &FakeRequest) -> FakeReply {
    let schema = r.schema.clone().unwrap_or_default();
    if crate::judges::record::pick_max(&schema).is_some() {
        FakeReply::json(serde_json::json!({"justification": "constant", "choice": "none"}))
    } else {
        FakeReply::json(serde_json::json!({"justification": "constant", "rating": 5}))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ensemble_of_constant_judges_is_reported_as_unable_to_separate() {
    use crate::statistics::verdict::{Behaviour, Separation};
    let tmp = tempfile::tempdir().unwrap();
    let Some(bench) = clapnq(tmp.path()) else {
        return;
    };
    let fake = FakeServer::builder()
        .respond(constant_judge)
        .start()
        .await
        .unwrap();
    let llm = fake_llm(&fake, &["qwen", "smol"], &tmp.path().join("c.sqlite"), 16).await;
    let settings = AuditSettings {
        sample: Some(3),
        resamples: 100,
        ..Default::default()
    };
    let out = tmp.path().join("audit");
    let s = audited(&bench, &llm, settings, &out, &tmp.path().join("index")).await;
    let v = s.verdict.clone().unwrap();
    assert_eq!(v.separation, Separation::CannotSeparate, "{v:#?}");
    for (d, x) in &v.dimensions {
        assert_eq!(x.separation, Separation::CannotSeparate, "{d}");
        let want = if d.is_rating() {
            Behaviour::Constant
        } else {
            Behaviour::Abstains
        };
        assert!(x.judges.iter().all(|j| j.behaviour == want), "{d}: {x:#?}");
    }
    // the verdict opens the report, and the flags are the judges' failure
    let md = std::fs::read_to_string(out.join(output::REPORT_MD)).unwrap();
    let head: Vec<&str> = md.lines().take(3).collect();
    assert!(
        head[2].starts_with("**The judges cannot separate anything**"),
        "{head:?}"
    );
    assert!(md.contains("## Worst items: the judges' failure, not the benchmark's"));
    assert!(md.contains("## Probable missing gold (the judges' failure, not the benchmark's"));
    insta::assert_snapshot!("constant_judges_report_head", head.join("\n"));
    let html = std::fs::read_to_string(out.join(output::REPORT_HTML)).unwrap();
    let body = html.split("<body>").nth(1).unwrap_or_default();
    let h1 = body.find("<h1>").unwrap();
    let first_para = body.find("<p>").unwrap();
    assert!(h1 < first_para);
    assert!(
        body[first_para..].starts_with("<p><strong>The judges cannot separate anything</strong>")
    );
    // summary.json carries it and validates; `mtr report` re-renders the same head
    validate_folder(&out);
    let back = output::read_summary(&out.join(output::SUMMARY)).unwrap();
    assert_eq!(back.verdict, s.verdict);
    let mut old = back.clone();
    old.verdict = None;
    assert_eq!(
        crate::report::markdown(&old),
        md,
        "a summary written before the verdict gets the same report"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ensemble_that_rates_true_golds_high_is_reported_as_separating() {
    use crate::statistics::verdict::Separation;
    let tmp = tempfile::tempdir().unwrap();
    let Some(src) = clapnq(tmp.path()) else {
        return;
    };
    let p = plant(&src, &tmp.path().join("planted"), 7);
    let fake = FakeServer::builder()
        .respond(oracle(Arc::new(p.truth.clone())))
        .start()
        .await
        .unwrap();
    let llm = fake_llm(
        &fake,
        &["oracle-a", "oracle-b"],
        &tmp.path().join("c.sqlite"),
        16,
    )
    .await;
    let settings = AuditSettings {
        sample: Some(30),
        dimensions: vec![Dimension::Alignment, Dimension::Completeness],
        resamples: 100,
        ..Default::default()
    };
    let out = tmp.path().join("audit");
    let s = audited(&p.bench, &llm, settings, &out, &tmp.path().join("index")).await;
    let v = s.verdict.clone().unwrap();
    assert_eq!(v.separation, Separation::Separates, "{v:#?}");
    assert_eq!(
        v.dimensions[&Dimension::Alignment].separation,
        Separation::Separates,
        "{v:#?}"
    );
    let md = std::fs::read_to_string(out.join(output::REPORT_MD)).unwrap();
    let head: Vec<&str> = md.lines().take(3).collect();
    assert!(
        head[2].starts_with("**The judges separate items** on alignment (α 1.00)"),
        "{head:?}"
    );
    assert!(!md.contains("judges' failure"), "{}", head[2]);
    assert!(md.contains("## Worst items\n"));
}
