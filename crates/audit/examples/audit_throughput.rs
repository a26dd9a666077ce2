//! Throughput benchmark of `mtr audit` on the fake OpenAI-compatible server.
//!
//! A seeded synthetic benchmark (default 1,000 turns in 200 dialogues, one gold passage and
//! one answer per turn, a 5,000-passage corpus) is audited on all four dimensions by three
//! judges, each an endpoint of the in-process fake server with 50 ms latency and 64 requests
//! in flight. It prints the achieved request rate of the judging stage against the ideal
//! (judges x concurrency / latency), the share of wall time spent outside the judging stage
//! (planning, loading gold passages, statistics, writing the folder; hard-negative retrieval
//! runs during judging), the process CPU per judgement, and, for comparison on the same
//! machine at the same moment, the rate of the LLM client alone (`chat_many`, same number of
//! calls per judge, prompts of the audit's mean size).
//!
//! `cargo run --release -p mtr-audit --example audit_throughput -- [turns] [concurrency] [latency_ms] [rewrites 1|0]`
//! (see `benchmarks/audit/README.md`).

#![allow(clippy::print_stdout)]

/// The allocator of the `mtr` binary, so that the benchmark measures what `mtr audit` runs.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::error::Error;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mtr_audit::{AuditJob, AuditPrompts, AuditSettings, Outcome};
use mtr_core::model::{Dialogue, Gold, Passage, Tags, Turn};
use mtr_core::progress::Progress;
use mtr_core::rng::{self, SeededRng};
use mtr_llm::fake::{FakeReply, FakeRequest, FakeServer};
use mtr_llm::{Llm, LlmConfig, LlmOptions, Roles};
use rand::RngExt;

/// A stage: name, start, end, items.
type Stage = (String, Instant, Option<Instant>, u64);

/// Records when each stage starts and ends.
#[derive(Default)]
struct Timeline {
    stages: Mutex<Vec<Stage>>,
}

impl Progress for Timeline {
    fn stage(&self, name: &str, total: u64) {
        if let Ok(mut s) = self.stages.lock() {
            s.push((name.to_string(), Instant::now(), None, total));
        }
    }
    fn advance(&self, _n: u64) {}
    fn finish_stage(&self) {
        if let Ok(mut s) = self.stages.lock()
            && let Some(last) = s.last_mut()
        {
            last.2 = Some(Instant::now());
        }
    }
}

/// CPU seconds (user + system) of this process so far, from /proc/self/stat (Linux; clock
/// ticks of 1/100 s).
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return f64::NAN;
    };
    let Some(rest) = stat.rsplit(')').next() else {
        return f64::NAN;
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        f.get(i)
            .and_then(|x| x.parse::<f64>().ok())
            .unwrap_or(f64::NAN)
    };
    (ticks(11) + ticks(12)) / 100.0
}

/// The client alone: `n` calls per judge through `chat_many`, prompts of `prompt_chars`
/// characters, all judges at once. Returns requests per second.
async fn raw_client_rate(llm: &Llm, judges: &[&str], n: usize, prompt_chars: usize) -> f64 {
    use futures::StreamExt;
    let text: String = "lorem ipsum dolor sit amet ".repeat(prompt_chars / 27 + 1);
    let schema = mtr_llm::JsonSchema::new("audit_rating", mtr_audit::judges::rating_schema());
    let t = Instant::now();
    let runs = judges.iter().map(|j| {
        let reqs: Vec<mtr_llm::ChatRequest> = (0..n)
            .map(|i| {
                mtr_llm::ChatRequest::new(vec![mtr_llm::ChatMessage::user(format!("{i} {text}"))])
                    .with_schema(schema.clone())
            })
            .collect();
        llm.chat_many(mtr_llm::client::Target::Endpoint(j.to_string()), reqs)
            .count()
    });
    let done: usize = futures::future::join_all(runs).await.into_iter().sum();
    done as f64 / t.elapsed().as_secs_f64()
}

fn words(rng: &mut SeededRng, vocab: &[String], n: usize) -> String {
    (0..n)
        .map(|_| vocab[rng.random_range(0..vocab.len())].as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

fn synthetic(
    dir: &std::path::Path,
    turns: usize,
    rewrites: bool,
) -> Result<mtr_core::Benchmark, Box<dyn Error>> {
    let mut rng = rng::stream(7, rng::purpose::AS_GIVEN);
    let vocab: Vec<String> = (0..3000).map(|i| format!("w{i:x}")).collect();
    let n_passages = 5000.max(turns * 2);
    let corpus: Vec<Passage> = (0..n_passages)
        .map(|i| Passage {
            id: format!("p{i}"),
            title: format!("Title {i}"),
            text: words(&mut rng, &vocab, 90),
            doc_id: None,
            meta: Default::default(),
        })
        .collect();
    let per = 5;
    let mut dialogues = Vec::new();
    for d in 0..turns.div_ceil(per) {
        let mut ts = Vec::new();
        for t in 0..per.min(turns - d * per) {
            let gold = rng.random_range(0..n_passages);
            let g = &corpus[gold].text;
            let q: Vec<&str> = g.split(' ').take(8).collect();
            ts.push(Turn {
                id: format!("d{d}::{}", t + 1),
                user: format!("what about {}?", q.join(" ")),
                rewrite: rewrites
                    .then(|| format!("what about {} in {}", q.join(" "), corpus[gold].title)),
                answer: Some(words(&mut rng, &vocab, 40)),
                gold: vec![Gold {
                    passage_id: format!("p{gold}"),
                    grade: 1,
                }],
                tags: Tags::default(),
            });
        }
        dialogues.push(Dialogue {
            id: format!("d{d}"),
            turns: ts,
            meta: Default::default(),
        });
    }
    let manifest = mtr_core::Manifest {
        name: "synthetic".into(),
        language: "en".into(),
        ..Default::default()
    };
    let b = mtr_core::benchmark::write_benchmark(
        dir,
        manifest,
        &dialogues,
        corpus.into_iter().map(Ok),
    )?;
    Ok(b.load()?)
}

fn judge(req: &FakeRequest) -> FakeReply {
    let h = blake3::hash(req.last_user.as_bytes());
    let x = u64::from(h.as_bytes()[0]);
    match req.schema.as_ref().and_then(mtr_audit::judges::pick_max) {
        Some(max) => {
            FakeReply::json(serde_json::json!({"justification": "picked", "choice": 1 + x % max}))
        }
        None => FakeReply::json(serde_json::json!({"justification": "rated", "rating": 1 + x % 5})),
    }
}

/// The audit's own CPU work, measured alone: hard-negative retrieval, and rendering one
/// prompt per judgement (6 per turn: alignment, faithfulness, quality, 3 pools; x 3 judges).
async fn measure_alone(
    bench: &mtr_core::Benchmark,
    bm25: &mtr_retrieve::Bm25Index,
) -> Result<(), Box<dyn Error>> {
    let turns_idx: Vec<(usize, usize)> = bench
        .dialogues
        .iter()
        .enumerate()
        .flat_map(|(d, dl)| (0..dl.turns.len()).map(move |t| (d, t)))
        .collect();
    let (t, c) = (Instant::now(), cpu_seconds());
    let queries =
        mtr_audit::items::negative_queries(bench, &turns_idx, &mtr_audit::NegativesQuery::Auto)?;
    let handle = tokio::runtime::Handle::current();
    let retrievers: Vec<Arc<dyn mtr_retrieve::Retriever>> = vec![Arc::new(bm25.clone())];
    let dir = bench.dir.clone();
    let (cands, _) = tokio::task::spawn_blocking(move || {
        mtr_audit::items::candidates_blocking(
            &handle,
            &retrievers,
            &queries,
            mtr_audit::items::depth(7),
            &dir,
            &Default::default(),
        )
    })
    .await??;
    println!(
        "alone: hard-negative retrieval for {} turns {:.3} s wall, {:.3} s CPU",
        cands.len(),
        t.elapsed().as_secs_f64(),
        cpu_seconds() - c
    );
    let prompts = AuditPrompts::builtin()?;
    let (t, c) = (Instant::now(), cpu_seconds());
    let mut renders = 0usize;
    for _judge in 0..3 {
        for &(d, ti) in &turns_idx {
            let dl = &bench.dialogues[d];
            let view = mtr_audit::judges::TurnView::new(dl, ti);
            let answer = dl.turns[ti].answer.clone().unwrap_or_default();
            let pool: Vec<String> = (0..8)
                .map(|i| format!("passage {i} {}", dl.turns[ti].user.repeat(8)))
                .collect();
            prompts.alignment(&view, &pool[0])?;
            prompts.faithfulness(&view, &pool[..1], &answer)?;
            prompts.quality(&view, &answer)?;
            for _ in 0..3 {
                prompts.completeness(&view, &pool)?;
            }
            renders += 6;
        }
    }
    println!(
        "alone: rendering {renders} prompts {:.3} s wall, {:.3} s CPU",
        t.elapsed().as_secs_f64(),
        cpu_seconds() - c
    );
    Ok(())
}

#[tokio::main(flavor = "multi_thread")]
async fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().collect();
    let turns: usize = args.get(1).map(|s| s.parse()).transpose()?.unwrap_or(1000);
    let concurrency: usize = args.get(2).map(|s| s.parse()).transpose()?.unwrap_or(64);
    let latency_ms: u64 = args.get(3).map(|s| s.parse()).transpose()?.unwrap_or(50);
    // 1: every turn has a standalone rewrite (as in MTRAG, QReCC, TopiOCQA), so hard negatives
    // are retrieved with it; 0: none, so with the whole conversation (`full:512`)
    let rewrites = args.get(4).map(|s| s != "0").unwrap_or(true);
    let judges = ["judge-a", "judge-b", "judge-c"];

    let tmp = tempfile::tempdir()?;
    let bench = synthetic(&tmp.path().join("bench"), turns, rewrites)?;
    let t_index = Instant::now();
    let bm25 = mtr_audit::items::bm25_index(
        &bench,
        &tmp.path().join("index"),
        &mtr_core::progress::NoProgress,
    )?;
    let index_s = t_index.elapsed().as_secs_f64();

    let fake = FakeServer::builder()
        .respond(judge)
        .latency(Duration::from_millis(latency_ms))
        .start()
        .await?;
    let endpoints = judges
        .iter()
        .map(|n| {
            let mut e = fake.endpoint(n, &format!("{n}-model"));
            e.max_concurrency = concurrency;
            e.timeout_s = 60.0;
            e
        })
        .collect();
    let config = LlmConfig {
        endpoints,
        roles: Roles {
            judges: judges.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        },
        ..Default::default()
    };
    let llm = Llm::new(
        config,
        LlmOptions {
            cache_path: Some(tmp.path().join("cache.sqlite")),
            ..Default::default()
        },
    )
    .await?;

    measure_alone(&bench, &bm25).await?;

    let timeline = Arc::new(Timeline::default());
    let job = AuditJob {
        settings: AuditSettings::default(),
        out_dir: tmp.path().join("audit"),
        prompts: AuditPrompts::builtin()?,
        retrievers: vec![Arc::new(bm25)],
        config_hash: "bench".into(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        git_commit: None,
        human_labels: None,
        human_sample: None,
        progress: timeline.clone(),
    };
    let t0 = Instant::now();
    let cpu0 = cpu_seconds();
    let outcome = mtr_audit::run(&bench, job, &llm).await?;
    let wall = t0.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu0;
    let Outcome::Audited(summary) = outcome else {
        return Err("unexpected dry run".into());
    };

    let stages = timeline.stages.lock().map_err(|_| "poisoned")?.clone();
    let judging = stages
        .iter()
        .find(|s| s.0 == "judging")
        .ok_or("no judging stage")?;
    let judging_s = judging
        .2
        .ok_or("judging did not finish")?
        .duration_since(judging.1)
        .as_secs_f64();
    let calls = fake.chat_calls();
    let ideal = judges.len() as f64 * concurrency as f64 / (latency_ms as f64 / 1000.0);
    let rate = calls as f64 / judging_s;
    println!(
        "audit throughput on the fake server ({} judges x {concurrency} in flight, {latency_ms} ms latency)",
        judges.len()
    );
    println!(
        "turns {turns}, dimensions 4, judgements {} (planned {}), complete {}",
        summary.plan.judgements_done, summary.plan.judgements_planned, summary.complete
    );
    println!("index build (setup, not timed below) {index_s:.2} s");
    for (name, start, end, total) in &stages {
        let d = end
            .map(|e| e.duration_since(*start).as_secs_f64())
            .unwrap_or(f64::NAN);
        println!("  stage {name:<28} {total:>7} items {d:>8.3} s");
    }
    println!(
        "wall {wall:.3} s, judging {judging_s:.3} s, outside judging {:.3} s = {:.2}% of wall",
        wall - judging_s,
        100.0 * (wall - judging_s) / wall
    );
    println!(
        "request rate {rate:.0}/s, ideal {ideal:.0}/s, ratio {:.3}",
        rate / ideal
    );
    println!(
        "process CPU during the audit {cpu:.2} s ({:.2} cores), {:.0} us per judgement (client, fake server and audit together)",
        cpu / wall,
        1e6 * cpu / calls as f64
    );
    let avg_chars =
        4 * (summary.cost.total.prompt_tokens as usize / summary.cost.total.calls.max(1));
    let per_judge = (calls as usize / judges.len()).min(6000);
    let c = cpu_seconds();
    let raw = raw_client_rate(&llm, &judges, per_judge, avg_chars).await;
    let raw_cpu = cpu_seconds() - c;
    println!(
        "the LLM client alone, right after ({per_judge} calls per judge, {avg_chars}-char prompts): {raw:.0}/s = {:.3} of ideal, {:.0} us CPU per call; the audit's judging rate is {:.3} of the client's",
        raw / ideal,
        1e6 * raw_cpu / (per_judge * judges.len()) as f64,
        rate / raw
    );
    if let Ok(load) = std::fs::read_to_string("/proc/loadavg") {
        println!("load average: {}", load.trim());
    }
    println!(
        "prompt tokens per judgement: {}",
        summary
            .cost
            .prompt_tokens_per_judgement
            .iter()
            .map(|(d, t)| format!("{d} {t:.0}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(())
}
