//! Styled profiles: the question lengths and the share of follow-ups that refer back match
//! what each profile asks for.

use mtr_pipeline::{LengthDistribution, ks_critical_5pct, ks_statistic};

use super::*;

/// One styled synthesis with the scripted agents (no humanizer: the lengths are the user
/// agent's): the question lengths (words) and, over follow-ups, whether each refers back.
async fn styled_run(profile: &str, out: &Path) -> (Vec<usize>, Vec<bool>) {
    let tmp = tempfile::tempdir().unwrap();
    let server = fake(FakeAgents::default()).await;
    let llm = llm(&server, &tmp.path().join("cache.sqlite")).await;
    let mut cfg = SynthConfig {
        dialogues: 12,
        turns: 4,
        seed: 7,
        style: StyleOptions {
            profile: Some(profile.into()),
        },
        ..Default::default()
    };
    cfg.generation.humanizer.enabled = false;
    cfg.generation.switch_share = 0.0;
    let job = SynthJob::new(
        corpora().join("en"),
        out,
        cfg,
        SynthPrompts::builtin().unwrap(),
    );
    mtr_pipeline::synthesize(&job, &llm, &mtr_core::progress::NoProgress)
        .await
        .unwrap();
    let b = BenchmarkDir::open(out).unwrap().load().unwrap();
    let mut lengths = Vec::new();
    let mut refer = Vec::new();
    for d in &b.dialogues {
        for (i, t) in d.turns.iter().enumerate() {
            lengths.push(t.user.split_whitespace().count());
            if i > 0 {
                refer.push(mtr_retrieve::realism::refers_back(&t.user, "en"));
            }
        }
    }
    (lengths, refer)
}

/// The share `refer` is within three standard errors of `p`.
fn share_near(refer: &[bool], p: f64) {
    let n = refer.len() as f64;
    let share = refer.iter().filter(|r| **r).count() as f64 / n;
    let se = (p * (1.0 - p) / n).sqrt();
    assert!(
        (share - p).abs() <= 3.0 * se + 0.02,
        "{share} against {p} over {n}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_style_profile_gives_the_lengths_and_referring_back_it_asks_for() {
    let tmp = tempfile::tempdir().unwrap();
    // production: log-normal lengths (KS test), 60% of follow-ups referring back
    let (lengths, refer) = styled_run("production", &tmp.path().join("prod")).await;
    assert!(lengths.len() >= 30, "{lengths:?}");
    let production = LengthDistribution::LogNormal {
        median: 20.0,
        sigma: 0.6,
        min: 5,
        max: 120,
    };
    let d = ks_statistic(&lengths, &production);
    assert!(d < ks_critical_5pct(lengths.len()), "D = {d}: {lengths:?}");
    share_near(&refer, 0.6);
    // concise questions are far from it: the test can fail
    let (concise_lengths, _) = styled_run("concise", &tmp.path().join("concise")).await;
    let d = ks_statistic(&concise_lengths, &production);
    assert!(d > ks_critical_5pct(concise_lengths.len()), "D = {d}");
    // like:BENCH: the production set's own lengths and referring-back share
    let target = LengthDistribution::Empirical(lengths.clone());
    let target_share = refer.iter().filter(|r| **r).count() as f64 / refer.len() as f64;
    let like = format!("like:{}", tmp.path().join("prod").display());
    let (like_lengths, like_refer) = styled_run(&like, &tmp.path().join("like")).await;
    let d = ks_statistic(&like_lengths, &target);
    assert!(
        d < ks_critical_5pct(like_lengths.len()),
        "D = {d}: {like_lengths:?}"
    );
    share_near(&like_refer, target_share);
}
