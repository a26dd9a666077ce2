//! The verifier's relevance gate end to end on the LLM layer's fake server: a relevance judge
//! (a rerank endpoint whose scores the test scripts by position: the gold passage comes first,
//! then the hard negatives) rejects a question whose gold scores below a hard negative or
//! below the floor, passes one whose gold is best and keeps its scores with the turn; with the
//! gate off the benchmark is the one made without a relevance judge. With the chat
//! answerability judge off (`answerability_judge = false`) the gate's floor is the only
//! answerability check, and a setup where no relevance judge is found is refused.

#![cfg(test)]

use std::path::{Path, PathBuf};

use mtr_core::BenchmarkDir;
use mtr_llm::fake::FakeServer;
use mtr_llm::rerank::{RerankApi, RerankConfig};
use mtr_llm::{Llm, LlmConfig, LlmOptions, Roles};
use mtr_pipeline::fake_agents::FakeAgents;
use mtr_pipeline::{RelevanceJudge, SynthConfig, SynthJob, SynthOutcome, SynthPrompts};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpora/en")
}

/// Where the relevance judge sits in the LLM configuration.
#[derive(Clone, Copy, PartialEq)]
enum Judge {
    /// No rerank endpoint at all.
    Absent,
    /// Listed under `[llm.roles] judges` (as the embedded default's e5 judge is).
    InJudges,
    /// Configured, but in no role.
    Configured,
}

/// The fake server: scripted agents, and a reranker that gives the gold (the first passage)
/// `gold` and every hard negative `negative`.
async fn fake(gold: f64, negative: f64) -> FakeServer {
    fake_with(FakeAgents::default(), gold, negative).await
}

async fn fake_with(agents: FakeAgents, gold: f64, negative: f64) -> FakeServer {
    FakeServer::builder()
        .respond(move |r| agents.reply(r))
        .rerank(move |_, docs| {
            (0..docs.len())
                .map(|i| if i == 0 { gold } else { negative })
                .collect()
        })
        .dims(64)
        .start()
        .await
        .unwrap()
}

async fn llm(fake: &FakeServer, cache: &Path, judge: Judge) -> Llm {
    let mut endpoints = vec![
        fake.endpoint("gen", "fake-gen"),
        fake.endpoint("judge", "fake-judge"),
        fake.endpoint("emb", "fake-emb"),
    ];
    let mut judges = vec!["judge".to_string()];
    if judge != Judge::Absent {
        let mut rel = fake.endpoint("rel", "fake-reranker");
        rel.rerank = Some(RerankConfig::new(RerankApi::Tei));
        endpoints.push(rel);
    }
    if judge == Judge::InJudges {
        judges.push("rel".into());
    }
    let cfg = LlmConfig {
        endpoints,
        roles: Roles {
            judges,
            generator: vec!["gen".into()],
            embedder: vec!["emb".into()],
        },
        ..Default::default()
    };
    let opts = LlmOptions {
        cache_path: Some(cache.to_path_buf()),
        ..Default::default()
    };
    Llm::new(cfg, opts).await.unwrap()
}

/// Two dialogues of two turns with the relevance judge `setting` (`auto`, `none`, a name).
async fn run(
    server: &FakeServer,
    judge: Judge,
    setting: &str,
) -> (tempfile::TempDir, SynthOutcome) {
    let (tmp, out) = try_run(server, judge, setting, true).await;
    (tmp, out.unwrap())
}

/// As [`run`], with the chat answerability judge on or off; the synthesis's result.
async fn try_run(
    server: &FakeServer,
    judge: Judge,
    setting: &str,
    answerability_judge: bool,
) -> (tempfile::TempDir, mtr_pipeline::Result<SynthOutcome>) {
    try_run_mixed(server, (judge, setting), answerability_judge, None).await
}

/// As [`try_run`], with `[synth.mix]` set to `mix` where given.
async fn try_run_mixed(
    server: &FakeServer,
    (judge, setting): (Judge, &str),
    answerability_judge: bool,
    mix: Option<mtr_pipeline::MixOptions>,
) -> (tempfile::TempDir, mtr_pipeline::Result<SynthOutcome>) {
    let tmp = tempfile::tempdir().unwrap();
    let llm = llm(server, &tmp.path().join("cache.sqlite"), judge).await;
    let mut cfg = SynthConfig {
        dialogues: 2,
        turns: 2,
        seed: 7,
        // the concise style these checks were written for (a fake endpoint gets production)
        style: mtr_pipeline::StyleOptions {
            profile: Some("concise".into()),
        },
        ..Default::default()
    };
    cfg.generation.relevance.judge = RelevanceJudge::try_from(setting.to_string()).unwrap();
    cfg.generation.answerability_judge = answerability_judge;
    if let Some(mix) = mix {
        cfg.mix = mix;
    }
    let job = SynthJob::new(
        corpus(),
        tmp.path().join("bench"),
        cfg,
        SynthPrompts::builtin().unwrap(),
    );
    let out = mtr_pipeline::synthesize(&job, &llm, &mtr_core::progress::NoProgress).await;
    (tmp, out)
}

/// A run with the relevance judge among the judges (`auto`) on a fake server of `agents`
/// whose reranker scores the first passage `gold` and every other `negative`, with the chat
/// answerability judge on or off and every turn drawn by `mix`.
async fn mixed_run(
    agents: FakeAgents,
    (gold, negative): (f64, f64),
    answerability_judge: bool,
    mix: mtr_pipeline::MixOptions,
) -> SynthOutcome {
    let server = fake_with(agents, gold, negative).await;
    let judge = (Judge::InJudges, "auto");
    let (_tmp, out) = try_run_mixed(&server, judge, answerability_judge, Some(mix)).await;
    out.unwrap()
}

fn event(out: &SynthOutcome, name: &str) -> Option<u64> {
    out.stats.events.get(name).copied()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gold_scored_below_a_hard_negative_is_not_unique() {
    let server = fake(0.6, 0.9).await;
    let (_tmp, out) = run(&server, Judge::Configured, "auto").await;
    assert_eq!(out.turns, 0, "{:?}", out.stats.events);
    // 2 dialogues x 2 turns x 3 attempts, each stopped by the gate before any chat judge
    assert_eq!(event(&out, "uniqueness/gold_not_best"), Some(12));
    assert_eq!(event(&out, "dropped/uniqueness"), Some(4));
    assert_eq!(event(&out, "relevance/passed"), None);
    assert!(!out.stats.calls.roles.contains_key("answerability"));
    assert!(!out.stats.calls.roles.contains_key("uniqueness"));
    // a repeated attempt asks the same question again: answered from the cache
    assert_eq!(out.stats.calls.roles["relevance"].calls, 12);
    assert!(server.rerank_calls() >= 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gold_below_the_floor_is_not_answerable() {
    let server = fake(0.1, 0.05).await;
    let (_tmp, out) = run(&server, Judge::InJudges, "auto").await;
    assert_eq!(out.turns, 0, "{:?}", out.stats.events);
    assert_eq!(event(&out, "answerability/relevance_below_floor"), Some(12));
    assert_eq!(event(&out, "dropped/answerability"), Some(4));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_best_gold_passes_and_its_scores_are_kept() {
    let server = fake(0.9, 0.3).await;
    let (tmp, out) = run(&server, Judge::InJudges, "rel").await;
    assert_eq!(out.turns, 4, "{:?}", out.stats.events);
    assert_eq!(event(&out, "relevance/passed"), Some(4));
    assert_eq!(event(&out, "uniqueness/unique"), Some(4));
    assert_eq!(out.stats.calls.roles["relevance"].calls, 4);
    let b = BenchmarkDir::open(tmp.path().join("bench"))
        .unwrap()
        .load()
        .unwrap();
    for t in b.dialogues.iter().flat_map(|d| d.turns.iter()) {
        assert_eq!(t.tags.extra["relevance_gold"], 0.9);
        assert_eq!(t.tags.extra["relevance_best_negative"], 0.3);
    }
    // the judge was asked about the gold and every hard negative in one call
    for r in server.rerank_requests() {
        let texts = r.body["texts"].as_array().unwrap();
        assert_eq!(texts.len(), 6, "gold and 5 hard negatives");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_gate_off_the_benchmark_is_the_one_without_a_judge() {
    let server = fake(0.1, 0.9).await;
    let (without, a) = run(&server, Judge::Absent, "auto").await;
    let (off, b) = run(&server, Judge::InJudges, "none").await;
    assert_eq!(server.rerank_calls(), 0);
    assert_eq!(a.turns, 4, "{:?}", a.stats.events);
    assert_eq!(a.stats.events, b.stats.events);
    let dialogues = |dir: &tempfile::TempDir| {
        std::fs::read_to_string(dir.path().join("bench/dialogues.jsonl")).unwrap()
    };
    assert_eq!(dialogues(&without), dialogues(&off));
    assert!(!dialogues(&off).contains("relevance_gold"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_chat_answerability_judge_the_floor_decides() {
    // a chat judge that would reject every question as unanswerable is never asked
    let agents = FakeAgents {
        answerability: 1,
        ..Default::default()
    };
    let server = fake_with(agents, 0.9, 0.3).await;
    let (_tmp, out) = try_run(&server, Judge::InJudges, "auto", false).await;
    let out = out.unwrap();
    assert_eq!(out.turns, 4, "{:?}", out.stats.events);
    assert!(!out.stats.calls.roles.contains_key("answerability"));
    assert_eq!(event(&out, "relevance/passed"), Some(4));
    // with it on, the same judge rejects them all
    let server = fake_with(agents, 0.9, 0.3).await;
    let (_tmp, on) = try_run(&server, Judge::InJudges, "auto", true).await;
    assert_eq!(on.unwrap().turns, 0);
    // and the floor still rejects a gold the relevance judge scores below it
    let server = fake_with(agents, 0.1, 0.05).await;
    let (_tmp, low) = try_run(&server, Judge::InJudges, "auto", false).await;
    let low = low.unwrap();
    assert_eq!(low.turns, 0);
    assert_eq!(event(&low, "answerability/relevance_below_floor"), Some(12));
}

/// Every turn drawn `two_passage` (a dialogue's first included).
fn two_passages_only() -> mtr_pipeline::MixOptions {
    mtr_pipeline::MixOptions {
        partial: 0.0,
        unanswerable: 0.0,
        conversational: 0.0,
        two_passage: 1.0,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_chat_answerability_judge_the_floor_decides_two_passage_turns_too() {
    // a chat judge that scores both passages together 1 of 5 is not asked for answerability:
    // each passage clearing the floor (the reranker scores the first 0.9, the second 0.3)
    // stands in for it, as for a one-passage question; its grades of each passage still count
    let agents = FakeAgents {
        answerability: 1,
        ..Default::default()
    };
    let out = mixed_run(agents, (0.9, 0.3), false, two_passages_only()).await;
    assert_eq!(out.turns, 4, "{:?}", out.stats.events);
    assert_eq!(event(&out, "two_passage/verified"), Some(4));
    assert_eq!(event(&out, "two_passage/low_score"), None);
    // with the chat judge rating answerability, its score rejects them all
    let on = mixed_run(agents, (0.9, 0.3), true, two_passages_only()).await;
    assert_eq!(on.turns, 0);
    assert_eq!(event(&on, "two_passage/low_score"), Some(12));
    // and a second passage the relevance judge scores below the floor (0.25) is rejected
    // before the chat judge is paid
    let low = mixed_run(
        FakeAgents::default(),
        (0.9, 0.1),
        false,
        two_passages_only(),
    )
    .await;
    assert_eq!(low.turns, 0);
    assert_eq!(
        event(&low, "two_passage/relevance_below_floor"),
        Some(12),
        "{:?}",
        low.stats.events
    );
    assert!(!low.stats.calls.roles.contains_key("two_passage"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_chat_answerability_judge_a_two_passage_part_needs_no_quote_of_its_own() {
    // the judge grades both passages 1 but quotes the first passage for both (as the 0.5B
    // judge did): both cleared the floor, so each answers a part as any gold does
    let agents = FakeAgents {
        two_passage_one_quote: true,
        ..Default::default()
    };
    let out = mixed_run(agents, (0.9, 0.3), false, two_passages_only()).await;
    assert_eq!(out.turns, 4, "{:?}", out.stats.events);
    assert_eq!(event(&out, "two_passage/one_unused"), None);
    // where the chat judge rates answerability, the missing quote still rejects the turn
    let agents = FakeAgents {
        answerability: 5,
        ..agents
    };
    let on = mixed_run(agents, (0.9, 0.3), true, two_passages_only()).await;
    assert_eq!(on.turns, 0);
    assert_eq!(event(&on, "two_passage/one_unused"), Some(12));
    // and a verifier that finds one passage enough still rejects it without the chat judge
    let agents = FakeAgents {
        two_passage_one_suffices: true,
        ..Default::default()
    };
    let one = mixed_run(agents, (0.9, 0.3), false, two_passages_only()).await;
    assert_eq!(one.turns, 0);
    assert_eq!(event(&one, "two_passage/one_suffices"), Some(12));
}

/// Every turn drawn `unanswerable`.
fn unanswerable_only() -> mtr_pipeline::MixOptions {
    mtr_pipeline::MixOptions {
        partial: 0.0,
        unanswerable: 1.0,
        conversational: 0.0,
        two_passage: 0.0,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_chat_answerability_judge_a_claimed_answer_must_clear_the_floor() {
    // the verifier claims the first passage found answers each unanswerable question (with
    // its opening line as the quote, as the 0.5B judge did); the reranker scores that passage
    // 0.1, below the floor (0.25) an answerable question's gold must clear: the claim is set
    // aside and the turns are kept
    let agents = FakeAgents {
        unanswerable_answered: true,
        ..Default::default()
    };
    let out = mixed_run(agents, (0.1, 0.1), false, unanswerable_only()).await;
    assert!(out.turns > 0, "{:?}", out.stats.events);
    let verified = event(&out, "unanswerable/verified");
    assert_eq!(verified, Some(out.turns as u64), "{:?}", out.stats.events);
    assert_eq!(event(&out, "unanswerable/claim_below_floor"), verified);
    assert_eq!(event(&out, "unanswerable/answered"), None);
    // a claimed passage that clears the floor answers it: rejected
    let high = mixed_run(agents, (0.9, 0.9), false, unanswerable_only()).await;
    assert_eq!(high.turns, 0);
    assert!(event(&high, "unanswerable/answered").is_some_and(|n| n > 0));
    // where the chat judge rates answerability, its claim decides, whatever the floor says
    let on = mixed_run(agents, (0.1, 0.1), true, unanswerable_only()).await;
    assert_eq!(on.turns, 0);
    assert_eq!(event(&on, "unanswerable/claim_below_floor"), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_chat_answerability_judge_a_missing_gate_is_refused() {
    let server = fake(0.9, 0.3).await;
    let (_tmp, out) = try_run(&server, Judge::Absent, "auto", false).await;
    let e = out.unwrap_err().to_string();
    assert!(e.contains("generation.answerability_judge"), "{e}");
    assert!(!tmp_has_benchmark(&_tmp), "refused before any dialogue");
}

fn tmp_has_benchmark(tmp: &tempfile::TempDir) -> bool {
    tmp.path().join("bench/dialogues.jsonl").exists()
}
