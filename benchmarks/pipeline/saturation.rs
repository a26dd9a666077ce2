//! Benchmark: does breadth-first generation keep the generator endpoint saturated? The fake
//! server answers every call after a fixed latency; the generator endpoint allows
//! `max_concurrency` calls in flight, so at most `max_concurrency / latency` generator calls
//! per second are possible. The pipeline's scripted agents write `dialogues x turns` turns over
//! the shipped English handbook; the benchmark prints the generator calls per second achieved
//! and their share of that ceiling, and the same for the verifier (judge) endpoint.
//!
//! A turn makes more judge calls (answerability, uniqueness, faithfulness) than generator
//! calls (question, humanizer, answer), so with equal capacities the judge endpoint is the
//! bottleneck and no schedule can saturate the generator: the judge's capacity is a separate
//! argument (default twice the generator's) to measure the generator's saturation, and the
//! judge's own saturation is printed for the equal-capacity case.
//!
//! Usage: saturation [DIALOGUES] [TURNS] [LATENCY_MS] [MAX_CONCURRENCY] [JUDGE_MAX_CONCURRENCY]
//! [DIALOGUES_IN_FLIGHT (0 = the pipeline's default)]

#![allow(clippy::print_stdout, clippy::panic)] // a benchmark program: prints results, stops on bad input

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use mtr_llm::fake::FakeServer;
use mtr_llm::{Llm, LlmConfig, LlmOptions, Roles};
use mtr_pipeline::fake_agents::FakeAgents;
use mtr_pipeline::{SynthConfig, SynthJob, SynthPrompts};

fn arg(i: usize, default: u64) -> u64 {
    std::env::args()
        .nth(i)
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let (dialogues, turns, latency_ms, width) = (arg(1, 64), arg(2, 4), arg(3, 40), arg(4, 16));
    let judge_width = arg(5, 2 * width);
    let in_flight = arg(6, 0) as usize;
    let gen_calls = Arc::new(AtomicU64::new(0));
    let judge_calls = Arc::new(AtomicU64::new(0));
    let (counter, judge_counter) = (gen_calls.clone(), judge_calls.clone());
    let agents = FakeAgents::default();
    let fake = FakeServer::builder()
        .respond(move |r| {
            if r.model == "fake-gen" {
                counter.fetch_add(1, Ordering::Relaxed);
            } else if r.model == "fake-judge" {
                judge_counter.fetch_add(1, Ordering::Relaxed);
            }
            agents.reply(r)
        })
        .latency_ms(latency_ms)
        .start()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let mut gen_ep = fake.endpoint("gen", "fake-gen");
    gen_ep.max_concurrency = width as usize;
    let mut judge = fake.endpoint("judge", "fake-judge");
    judge.max_concurrency = judge_width as usize;
    let cfg = LlmConfig {
        endpoints: vec![gen_ep, judge, fake.endpoint("emb", "fake-emb")],
        roles: Roles {
            judges: vec!["judge".into()],
            generator: vec!["gen".into()],
            embedder: vec!["emb".into()],
        },
        ..Default::default()
    };
    let tmp = std::env::temp_dir().join(format!("mtr-saturation-{}", std::process::id()));
    let llm = Llm::new(
        cfg,
        LlmOptions {
            no_cache: true,
            ..Default::default()
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpora/en");
    let mut config = SynthConfig {
        dialogues: dialogues as usize,
        turns: turns as usize,
        ..Default::default()
    };
    config.generation.concurrency = in_flight;
    let job = SynthJob::new(
        &corpus,
        tmp.join("bench"),
        config,
        SynthPrompts::builtin().unwrap_or_else(|e| panic!("{e}")),
    );
    // prepare once (not timed), then time generation alone
    mtr_pipeline::prepare(&job, Some(&llm), false, &mtr_core::progress::NoProgress)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    gen_calls.store(0, Ordering::Relaxed);
    judge_calls.store(0, Ordering::Relaxed);
    let t = Instant::now();
    let out = mtr_pipeline::synthesize(&job, &llm, &mtr_core::progress::NoProgress)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let secs = t.elapsed().as_secs_f64();
    let g = gen_calls.load(Ordering::Relaxed);
    let j = judge_calls.load(Ordering::Relaxed);
    let ceiling = width as f64 / (latency_ms as f64 / 1000.0);
    let judge_ceiling = judge_width as f64 / (latency_ms as f64 / 1000.0);
    println!(
        "{dialogues} dialogues x {turns} turns, {latency_ms} ms latency: {} turns in {secs:.2} s; generator ({width} in flight) {g} calls, {:.0} calls/s of a {ceiling:.0}/s ceiling ({:.0}% saturated); judge ({judge_width} in flight) {j} calls, {:.0}/s of {judge_ceiling:.0}/s ({:.0}%); {} chat calls in all",
        out.turns,
        g as f64 / secs,
        100.0 * g as f64 / secs / ceiling,
        j as f64 / secs,
        100.0 * j as f64 / secs / judge_ceiling,
        fake.chat_calls()
    );
    let _ = std::fs::remove_dir_all(&tmp);
}
