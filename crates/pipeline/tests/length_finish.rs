//! Free-text answers cut at `max_tokens` (`finish_reason: length`) never enter a synthesized
//! benchmark: the fake server cuts every first answerer and humanizer answer; the retry with
//! twice the room gets the whole answer, except for some answerer calls that are cut again
//! (failed attempts, counted in the synth report).

#![cfg(test)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use mtr_core::BenchmarkDir;
use mtr_llm::fake::{FakeReply, FakeServer};
use mtr_llm::{Llm, LlmConfig, LlmOptions, Roles};
use mtr_pipeline::fake_agents::FakeAgents;
use mtr_pipeline::{SynthConfig, SynthJob, SynthOutcome, SynthPrompts};

const CUT: &str = "CUTMARK";

fn cut(text: &str) -> FakeReply {
    let half: String = text.chars().take(text.chars().count() / 2).collect();
    FakeReply::Truncated(format!("{half} {CUT}"))
}

/// A synthesis of `corpora/en` with `config` on `server` (generator, judge and embedder), in
/// a temporary folder (the benchmark in `bench/`).
async fn synthesize_on(
    server: &FakeServer,
    config: SynthConfig,
) -> (tempfile::TempDir, SynthOutcome) {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = LlmConfig {
        endpoints: vec![
            server.endpoint("gen", "fake-gen"),
            server.endpoint("judge", "fake-judge"),
            server.endpoint("emb", "fake-emb"),
        ],
        roles: Roles {
            judges: vec!["judge".into()],
            generator: vec!["gen".into()],
            embedder: vec!["emb".into()],
        },
        ..Default::default()
    };
    let llm = Llm::new(
        cfg,
        LlmOptions {
            cache_path: Some(tmp.path().join("cache.sqlite")),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpora/en");
    let job = SynthJob::new(
        &corpus,
        tmp.path().join("bench"),
        config,
        SynthPrompts::builtin().unwrap(),
    );
    let out = mtr_pipeline::synthesize(&job, &llm, &mtr_core::progress::NoProgress)
        .await
        .unwrap();
    (tmp, out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_cut_at_max_tokens_are_retried_or_dropped() {
    let agents = FakeAgents::default();
    let server = FakeServer::builder()
        .respond(move |r| {
            let reply = agents.reply(r);
            let system = r.system.clone().unwrap_or_default();
            // free-text calls only (the agents' JSON calls carry a schema)
            let text = r.body.get("response_format").is_none();
            let answerer = text && system.contains("search assistant");
            let humanizer = text && system.contains("rewrite questions");
            let max = r.body["max_tokens"].as_u64().unwrap_or(0);
            let FakeReply::Content(text) = &reply else {
                return reply;
            };
            // first attempts (default room, 400) are always cut; with more room, one
            // answerer call in three (by seed) is cut again
            let again = answerer && r.seed.unwrap_or(0) % 3 == 0;
            if (answerer || humanizer) && (max <= 400 || again) {
                cut(text)
            } else {
                reply
            }
        })
        .dims(64)
        .start()
        .await
        .unwrap();
    let config = SynthConfig {
        dialogues: 3,
        turns: 3,
        seed: 7,
        // the concise style these checks were written for (a fake endpoint gets production)
        style: mtr_pipeline::StyleOptions {
            profile: Some("concise".into()),
        },
        ..Default::default()
    };
    let (tmp, out) = synthesize_on(&server, config).await;
    assert!(out.turns > 0, "{:?}", out.stats.events);
    let b = BenchmarkDir::open(tmp.path().join("bench"))
        .unwrap()
        .load()
        .unwrap();
    for t in b.dialogues.iter().flat_map(|d| d.turns.iter()) {
        let answer = t.answer.clone().unwrap_or_default();
        assert!(
            !answer.contains(CUT),
            "turn {}: cut answer {answer:?}",
            t.id
        );
        assert!(
            !t.user.contains(CUT),
            "turn {}: cut question {:?}",
            t.id,
            t.user
        );
    }
    let answerer = &out.stats.calls.roles["answerer"];
    assert!(answerer.truncated > 0, "{answerer:?}");
    let report = std::fs::read_to_string(tmp.path().join("bench/synth_report.md")).unwrap();
    assert!(report.contains("cut at max_tokens"), "{report}");
}

/// The user agent's JSON reply gets room for the longest question and standalone version its
/// pattern allows, whatever `[synth.generation] max_tokens` says: a server that cuts every
/// user reply given less room than that (as Qwen2.5-Coder-0.5B's "4.2023.4.2023..."
/// standalone versions were cut at the main job's 160) loses none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_user_agent_always_has_room_for_its_longest_reply() {
    let agents = FakeAgents::default();
    let server = FakeServer::builder()
        .respond(move |r| {
            let reply = agents.reply(r);
            let system = r.system.clone().unwrap_or_default();
            let user = system.contains("looking for information");
            let max = r.body["max_tokens"].as_u64().unwrap_or(0);
            match &reply {
                FakeReply::Content(text) if user && max < 2 * 151 + 32 => cut(text),
                _ => reply,
            }
        })
        .dims(64)
        .start()
        .await
        .unwrap();
    let mut config = SynthConfig {
        dialogues: 2,
        turns: 2,
        seed: 7,
        // the concise style these checks were written for (a fake endpoint gets production)
        style: mtr_pipeline::StyleOptions {
            profile: Some("concise".into()),
        },
        ..Default::default()
    };
    config.generation.max_tokens = 160;
    let (_tmp, out) = synthesize_on(&server, config).await;
    assert_eq!(out.turns, 4, "{:?}", out.stats.events);
    assert!(!out.stats.events.contains_key("user/parse_failed"));
}
