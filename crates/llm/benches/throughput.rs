//! LLM client benchmark against the in-process fake server (same 2 cores as the client):
//! 1. sustained throughput with 50 ms latency and max_concurrency 64 (ideal 64/0.05 = 1,280
//!    requests/s), every answer written to the SQLite cache, with resident memory sampled while
//!    100,000 requests are queued through `Llm::chat_many`;
//! 2. the cost of a cache hit (sequential, one at a time), and cache hits per second with
//!    concurrency.
//!
//! Run: `cargo bench -p mtr-llm --bench throughput` (or benchmarks/llm/run.sh).
//! Env: MTR_BENCH_N (default 100000), MTR_BENCH_HITS (default 20000), MTR_BENCH_NO_CACHE=1,
//! MTR_BENCH_ENDPOINTS (default 1: endpoints of the fake server used at once, as an audit's
//! judges are; the requests are split evenly among them), MTR_BENCH_WIDTH (default 64: each
//! endpoint's max_concurrency).

// A benchmark is a program whose output is its result; failing loudly is what it should do.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::time::{Duration, Instant};

/// The allocator of the `mtr` binary, so that the benchmark measures what `mtr` runs.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use futures::StreamExt;
use mtr_llm::fake::FakeServer;
use mtr_llm::{ChatMessage, ChatRequest, JsonSchema, Llm, LlmConfig, LlmOptions, Target};
use serde_json::json;

fn rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<f64>().ok())
        })
        .map(|kb| kb / 1024.0)
        .unwrap_or(0.0)
}

fn req(i: usize) -> ChatRequest {
    ChatRequest::new(vec![
        ChatMessage::system("Grade the relevance of the passage to the question from 0 to 3."),
        ChatMessage::user(format!("Question {i}: how long do cats sleep?\nPassage: Cats sleep 12 to 16 hours a day ({i}).")),
    ])
    .with_schema(JsonSchema::new("grade", json!({"type": "object", "properties": {"grade": {"type": "integer", "minimum": 0, "maximum": 3}}, "required": ["grade"], "additionalProperties": false})))
}

fn env_usize(k: &str, d: usize) -> usize {
    std::env::var(k)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(d)
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(run());
}

async fn run() {
    let n = env_usize("MTR_BENCH_N", 100_000);
    let hits = env_usize("MTR_BENCH_HITS", 20_000).min(n);
    let fake = FakeServer::builder()
        .latency(Duration::from_millis(50))
        .start()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let k = env_usize("MTR_BENCH_ENDPOINTS", 1).max(1);
    let width = env_usize("MTR_BENCH_WIDTH", 64).max(1);
    let names: Vec<String> = (0..k)
        .map(|i| {
            if i == 0 {
                "fake".into()
            } else {
                format!("fake{i}")
            }
        })
        .collect();
    let mut cfg = LlmConfig {
        endpoints: names
            .iter()
            .map(|name| {
                let mut e = fake.endpoint(name, &format!("{name}-model"));
                e.max_concurrency = width;
                e
            })
            .collect(),
        ..Default::default()
    };
    cfg.roles.judges = vec!["fake".into()];
    let opts = LlmOptions {
        cache_path: Some(dir.path().join("bench.sqlite")),
        ..Default::default()
    };
    let no_cache = std::env::var("MTR_BENCH_NO_CACHE").is_ok_and(|v| v == "1");
    let llm = Llm::new(
        cfg.clone(),
        LlmOptions {
            no_cache,
            ..opts.clone()
        },
    )
    .await
    .unwrap();

    println!(
        "== throughput: fake server 50 ms latency, {k} endpoint(s) x max_concurrency {width}, {n} requests, cache writes {} ==",
        if no_cache { "off" } else { "on" }
    );
    let rss0 = rss_mib();
    let t0 = Instant::now();
    let mut done = 0usize;
    let mut failed = 0usize;
    let mut samples = Vec::new();
    let mut next_sample = 0usize;
    let mut window_start = (Instant::now(), 0usize);
    let mut stream = futures::stream::select_all(names.iter().enumerate().map(|(e, name)| {
        llm.chat_many(
            Target::Endpoint(name.clone()),
            (0..n).filter(move |i| i % k == e).map(req),
        )
    }));
    let mut steady: Vec<f64> = Vec::new();
    while let Some((_, r)) = stream.next().await {
        if r.map(|r| !r.status.is_ok()).unwrap_or(true) {
            failed += 1;
        }
        done += 1;
        if done >= next_sample {
            samples.push((done, rss_mib()));
            next_sample += n / 10;
        }
        if window_start.0.elapsed() >= Duration::from_secs(2) {
            steady.push((done - window_start.1) as f64 / window_start.0.elapsed().as_secs_f64());
            window_start = (Instant::now(), done);
        }
    }
    drop(stream);
    let secs = t0.elapsed().as_secs_f64();
    let rps = n as f64 / secs;
    let ideal = k as f64 * width as f64 / 0.05;
    println!(
        "requests: {n}, failed: {failed}, wall: {secs:.2} s, throughput: {rps:.0} req/s, ideal: {ideal:.0} req/s, ratio to ideal: {:.3}",
        rps / ideal
    );
    if !steady.is_empty() {
        let min = steady.iter().cloned().fold(f64::INFINITY, f64::min);
        let max = steady.iter().cloned().fold(0.0, f64::max);
        println!(
            "2-second windows: min {min:.0} req/s ({:.3} of ideal), max {max:.0} req/s",
            min / ideal
        );
    }
    println!("resident memory (MiB) at start {rss0:.1}; by requests done:");
    for (d, m) in &samples {
        println!("  {d:>7}: {m:.1}");
    }
    let peak = samples.iter().map(|(_, m)| *m).fold(rss0, f64::max);
    println!(
        "peak {peak:.1} MiB, growth over the run {:.1} MiB",
        samples.last().map(|s| s.1).unwrap_or(rss0) - samples.first().map(|s| s.1).unwrap_or(rss0)
    );
    println!("fake server chat calls: {}", fake.chat_calls());
    if let Some(cache) = llm.cache() {
        let t = Instant::now();
        cache.flush().unwrap();
        println!(
            "cache writer behind by {:.1} ms at the end (time to flush)",
            t.elapsed().as_secs_f64() * 1e3
        );
    }

    if no_cache {
        return;
    }
    cache_hits(&fake, llm, cfg, opts, n, k, hits).await;
}

/// The cache-hit phase: `hits` of the requests answered above, asked again of a fresh client
/// on the same cache file, one by one and then concurrently.
async fn cache_hits(
    fake: &FakeServer,
    first: Llm,
    cfg: LlmConfig,
    opts: LlmOptions,
    n: usize,
    k: usize,
    hits: usize,
) {
    println!("== cache hits: {hits} requests already cached ==");
    // a fresh client on the same file: the first one's last answers reach the file when it
    // is dropped
    drop(first);
    let llm = Llm::new(cfg, opts).await.unwrap();
    let before = fake.chat_calls();
    // the requests the first endpoint answered (the cache key includes the model)
    let reqs: Vec<ChatRequest> = (0..n).step_by(k).take(hits).map(req).collect();
    let hits = reqs.len();
    let t = Instant::now();
    for r in &reqs {
        let res = llm.chat("fake", r).await.unwrap();
        assert!(res.cached);
    }
    let per = t.elapsed().as_secs_f64() / hits as f64;
    println!(
        "sequential: {:.1} us per cache hit (includes building the request body, hashing the key, tiktoken-free lookup, JSON decode)",
        per * 1e6
    );
    let t = Instant::now();
    let c: usize = llm
        .chat_many(Target::Endpoint("fake".into()), reqs)
        .filter(|(_, r)| futures::future::ready(r.as_ref().is_ok_and(|r| r.cached)))
        .count()
        .await;
    let s = t.elapsed().as_secs_f64();
    println!(
        "concurrent (chat_many): {c} hits in {s:.2} s = {:.0} hits/s, {:.1} us each",
        c as f64 / s,
        s / c as f64 * 1e6
    );
    println!(
        "server calls during cache phase: {}",
        fake.chat_calls() - before
    );
}
