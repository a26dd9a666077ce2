//! Speed of `mtr review` on a 100,000-item audit: the first card served, and a label saved.
//!
//! The first run generates the work folder (then reuses it): a seeded synthetic benchmark
//! (25,000 turns in 5,000 dialogues of 5, one gold passage and one answer a turn, a
//! 30,000-passage corpus), a real audit of one of its dialogues by one judge of the
//! in-process fake LLM server (all four dimensions, 3 completeness trials), and from that
//! audit's lines the same judgements for every turn of the benchmark with seeded random ratings:
//! 100,000 audited units (alignment, completeness, faithfulness and quality of 25,000 turns),
//! 150,000 judgement lines, a flagged queue of thousands of golds. Then each run starts the
//! `mtr` binary given (a release build) as `mtr review AUDIT --no-browser --port 0` and
//! measures over plain HTTP, one connection a request as a browser's first load makes them:
//! - the start: from launching the process to the URL printed (the audit and benchmark read);
//! - the first card: the page, `/api/state` and `/api/card` of the first unlabelled card, one
//!   after the other, as the page loads them;
//! - labels: `LABELS` labels (default 1,000) by a new reviewer, alternately on the random sample and the flagged
//!   queue, each a `POST /api/label` answered once the line is synced to disk; p50, p99, max;
//! - `/api/summary` the first time (the estimates computed) and again (cached).
//!
//! `benchmarks/review/run.sh` builds and runs it (see README.md there). Arguments: the work
//! folder, the `mtr` binary, runs (default 5). Env: `LABELS`, `TURNS` (default 25,000).

#![allow(clippy::print_stdout)]

use std::collections::hash_map::DefaultHasher;
use std::error::Error;
use std::hash::{Hash, Hasher};
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mtr_audit::{AuditJob, AuditPrompts, AuditSettings, Dimension, Outcome};
use mtr_core::model::{Dialogue, Gold, Passage, Tags, Turn};
use mtr_core::rng::{self, SeededRng};
use mtr_llm::fake::{FakeReply, FakeRequest, FakeServer};
use mtr_llm::{Llm, LlmConfig, LlmOptions, Roles};
use rand::RngExt;
use serde_json::{Value, json};

type Res<T> = Result<T, Box<dyn Error>>;

const TURNS_PER_DIALOGUE: usize = 5;

fn words(rng: &mut SeededRng, vocab: &[String], n: usize) -> String {
    (0..n)
        .map(|_| vocab[rng.random_range(0..vocab.len())].as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The synthetic benchmark: `turns` turns, the gold of turn `i` is passage `g{i}`.
fn write_bench(dir: &Path, turns: usize) -> Res<mtr_core::benchmark::BenchmarkDir> {
    let mut rng = rng::stream(11, rng::purpose::AS_GIVEN);
    let vocab: Vec<String> = (0..3000).map(|i| format!("w{i:x}")).collect();
    let mut corpus: Vec<Passage> = Vec::with_capacity(turns + 5000);
    let mut dialogues = Vec::new();
    for d in 0..turns.div_ceil(TURNS_PER_DIALOGUE) {
        let mut ts = Vec::new();
        for t in 0..TURNS_PER_DIALOGUE.min(turns - d * TURNS_PER_DIALOGUE) {
            let i = d * TURNS_PER_DIALOGUE + t;
            let text = words(&mut rng, &vocab, 60);
            let q: Vec<&str> = text.split(' ').take(6).collect();
            ts.push(Turn {
                id: format!("d{d}::{}", t + 1),
                user: format!("what about {}?", q.join(" ")),
                rewrite: Some(format!("what about {} in topic {d}", q.join(" "))),
                answer: Some(words(&mut rng, &vocab, 30)),
                gold: vec![Gold {
                    passage_id: format!("g{i}"),
                    grade: 1,
                }],
                tags: Tags::default(),
            });
            corpus.push(Passage {
                id: format!("g{i}"),
                title: format!("Topic {d}, part {t}"),
                text,
                doc_id: Some(format!("doc{d}")),
                meta: Default::default(),
            });
        }
        dialogues.push(Dialogue {
            id: format!("d{d}"),
            turns: ts,
            meta: Default::default(),
        });
    }
    for i in 0..5000 {
        corpus.push(Passage {
            id: format!("x{i}"),
            title: format!("Other {i}"),
            text: words(&mut rng, &vocab, 60),
            doc_id: None,
            meta: Default::default(),
        });
    }
    let manifest = mtr_core::Manifest {
        name: "review-scale".into(),
        language: "en".into(),
        ..Default::default()
    };
    Ok(mtr_core::benchmark::write_benchmark(
        dir,
        manifest,
        &dialogues,
        corpus.into_iter().map(Ok),
    )?)
}

fn seeded_hash(parts: &[&str]) -> u64 {
    let mut h = DefaultHasher::new();
    parts.hash(&mut h);
    h.finish()
}

fn judge(req: &FakeRequest) -> FakeReply {
    let x = seeded_hash(&[&req.last_user]);
    match req.schema.as_ref().and_then(mtr_audit::judges::pick_max) {
        Some(max) => FakeReply::json(
            json!({"justification": "this passage answers it best", "choice": 1 + x % max}),
        ),
        None => FakeReply::json(
            json!({"justification": "the passage covers part of the question", "rating": 1 + x % 5}),
        ),
    }
}

/// A real audit of one dialogue of the benchmark by one fake judge: the template whose lines
/// are copied to every turn.
async fn template_audit(bench_dir: &Path, out: &Path, work: &Path) -> Res<()> {
    let bench = mtr_core::benchmark::BenchmarkDir::open(bench_dir)?.load()?;
    let bm25 =
        mtr_audit::items::bm25_index(&bench, &work.join("index"), &mtr_core::progress::NoProgress)?;
    let fake = FakeServer::builder().respond(judge).start().await?;
    let config = LlmConfig {
        endpoints: vec![fake.endpoint("judge-a", "judge-a-model")],
        roles: Roles {
            judges: vec!["judge-a".into()],
            ..Default::default()
        },
        ..Default::default()
    };
    let llm = Llm::new(
        config,
        LlmOptions {
            cache_path: Some(work.join("cache.sqlite")),
            ..Default::default()
        },
    )
    .await?;
    let settings = AuditSettings {
        sample: Some(1),
        resamples: 200,
        ..AuditSettings::default()
    };
    let job = AuditJob {
        settings,
        out_dir: out.to_path_buf(),
        prompts: AuditPrompts::builtin()?,
        retrievers: vec![Arc::new(bm25)],
        config_hash: "review-scale".into(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        git_commit: None,
        human_labels: None,
        human_sample: None,
        progress: Arc::new(mtr_core::progress::NoProgress),
    };
    match mtr_audit::run(&bench, job, &llm).await? {
        Outcome::Audited(_) => Ok(()),
        _ => Err("the template audit did not run".into()),
    }
}

fn read_jsonl(path: &Path) -> Res<Vec<Value>> {
    if !path.is_file() {
        return Ok(Vec::new());
    }
    let text = std::fs::read_to_string(path)?;
    Ok(text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?)
}

/// Maps the template dialogue's ids to dialogue `d`'s: its turns and their golds.
struct IdMap {
    from_dialogue: String,
    to_dialogue: String,
    /// Template gold -> this dialogue's gold, by turn.
    golds: Vec<(String, String)>,
}

impl IdMap {
    fn new(template: &str, d: usize) -> Res<Self> {
        let t: usize = template.trim_start_matches('d').parse()?;
        let golds = (0..TURNS_PER_DIALOGUE)
            .map(|k| {
                (
                    format!("g{}", t * TURNS_PER_DIALOGUE + k),
                    format!("g{}", d * TURNS_PER_DIALOGUE + k),
                )
            })
            .collect();
        Ok(Self {
            from_dialogue: template.to_string(),
            to_dialogue: format!("d{d}"),
            golds,
        })
    }

    fn turn(&self, turn_id: &str) -> String {
        turn_id.replacen(&self.from_dialogue, &self.to_dialogue, 1)
    }

    fn passage(&self, id: &str) -> String {
        self.golds
            .iter()
            .find(|(from, _)| from == id)
            .map_or_else(|| id.to_string(), |(_, to)| to.clone())
    }

    /// One judgement line of the template, for this dialogue (ratings drawn again).
    fn judgement(&self, line: &Value, seed: u64) -> Res<Value> {
        let mut l = line.clone();
        let map_str = |v: &mut Value, f: &dyn Fn(&str) -> String| {
            if let Some(s) = v.as_str() {
                *v = Value::String(f(s));
            }
        };
        l["dialogue_id"] = json!(self.to_dialogue);
        map_str(&mut l["turn_id"], &|s| self.turn(s));
        map_str(&mut l["passage_id"], &|s| self.passage(s));
        map_str(&mut l["pick_passage_id"], &|s| self.passage(s));
        if let Some(pool) = l.get_mut("pool").and_then(Value::as_array_mut) {
            for p in pool {
                map_str(p, &|s| self.passage(s));
            }
        }
        let dim: Dimension = serde_json::from_value(l["dimension"].clone())?;
        if dim != Dimension::Completeness && l["score"].is_number() {
            let turn = l["turn_id"].as_str().unwrap_or("");
            let x = seeded_hash(&[&seed.to_string(), turn, dim.name()]);
            l["score"] = json!((1 + x % 5) as f64);
        }
        l["id"] = json!(mtr_audit::judges::judgement_id(
            dim,
            l["turn_id"].as_str().unwrap_or(""),
            l["passage_id"].as_str(),
            l["trial"].as_u64().map(|t| t as usize),
            l["judge"].as_str().unwrap_or(""),
            u32::try_from(l["sample"].as_u64().unwrap_or(0))?,
        ));
        Ok(l)
    }
}

fn write_lines(path: &Path, lines: impl Iterator<Item = Res<Value>>) -> Res<usize> {
    let tmp = path.with_extension("tmp");
    let mut w = BufWriter::new(std::fs::File::create(&tmp)?);
    let mut n = 0;
    for l in lines {
        serde_json::to_writer(&mut w, &l?)?;
        w.write_all(b"\n")?;
        n += 1;
    }
    w.flush()?;
    drop(w);
    std::fs::rename(&tmp, path)?;
    Ok(n)
}

/// Generates `work/bench` and `work/audit` (the audit of every turn).
async fn generate(work: &Path, turns: usize) -> Res<()> {
    let t = Instant::now();
    std::fs::create_dir_all(work)?;
    let bench_dir = work.join("bench");
    if bench_dir.exists() {
        std::fs::remove_dir_all(&bench_dir)?;
    }
    write_bench(&bench_dir, turns)?;
    let audit = work.join("audit");
    if audit.exists() {
        std::fs::remove_dir_all(&audit)?;
    }
    let scratch = work.join("scratch");
    template_audit(&bench_dir, &audit, &scratch).await?;
    std::fs::remove_dir_all(&scratch)?;

    let items = read_jsonl(&audit.join("items.jsonl"))?;
    let verify = read_jsonl(&audit.join("verify_items.jsonl"))?;
    let template = items
        .first()
        .and_then(|l| l["dialogue_id"].as_str())
        .ok_or("the template audit judged nothing")?
        .to_string();
    let dialogues = turns.div_ceil(TURNS_PER_DIALOGUE);
    let maps: Vec<IdMap> = (0..dialogues)
        .map(|d| IdMap::new(&template, d))
        .collect::<Res<_>>()?;
    let n_items = write_lines(
        &audit.join("items.jsonl"),
        maps.iter().enumerate().flat_map(|(d, m)| {
            items
                .iter()
                .map(move |l| m.judgement(l, d as u64))
                .collect::<Vec<_>>()
        }),
    )?;
    if !verify.is_empty() {
        write_lines(
            &audit.join("verify_items.jsonl"),
            maps.iter().flat_map(|m| {
                verify
                    .iter()
                    .map(move |l| m.judgement(l, 0))
                    .collect::<Vec<_>>()
            }),
        )?;
    }

    // the summary: every turn audited, the template's suggestions for every dialogue
    let path = audit.join("summary.json");
    let mut summary: Value = serde_json::from_str(&std::fs::read_to_string(&path)?)?;
    summary["settings"]["sample"] = Value::Null;
    let plan = &mut summary["plan"];
    plan["sampled"] = json!(false);
    plan["dialogues_audited"] = json!(dialogues);
    plan["turns_audited"] = json!(turns);
    plan["audited_turns"] = json!(
        (0..turns)
            .map(|i| format!(
                "d{}::{}",
                i / TURNS_PER_DIALOGUE,
                i % TURNS_PER_DIALOGUE + 1
            ))
            .collect::<Vec<_>>()
    );
    if let Some(items) = plan["items"].as_object_mut() {
        for v in items.values_mut() {
            *v = json!(turns);
        }
    }
    let suggestions: Vec<Value> = summary["suggested_qrels"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    summary["suggested_qrels"] = Value::Array(
        maps.iter()
            .flat_map(|m| {
                suggestions.iter().map(move |s| {
                    let mut s = s.clone();
                    s["turn_id"] = json!(m.turn(s["turn_id"].as_str().unwrap_or("")));
                    s["gold_passage_id"] =
                        json!(m.passage(s["gold_passage_id"].as_str().unwrap_or("")));
                    s
                })
            })
            .collect(),
    );
    std::fs::write(&path, serde_json::to_string_pretty(&summary)? + "\n")?;
    println!(
        "generated {} in {:.1} s: {turns} turns, {} judgement lines (template: dialogue {template}, {} lines)",
        work.display(),
        t.elapsed().as_secs_f64(),
        n_items,
        items.len()
    );
    Ok(())
}

/// One HTTP/1.1 request on a new connection: (status, body).
fn http(port: u16, method: &str, path: &str, token: &str, body: &str) -> Res<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_nodelay(true)?;
    // the page's own URL carries the token in its query; the API calls send the header
    let header = if token.is_empty() {
        String::new()
    } else {
        format!("x-mtr-token: {token}\r\n")
    };
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n{header}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes())?;
    let mut resp = Vec::new();
    s.read_to_end(&mut resp)?;
    let text = String::from_utf8_lossy(&resp);
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Ok((status, body))
}

fn get(port: u16, path: &str, token: &str) -> Res<Value> {
    let (status, body) = http(port, "GET", path, token, "")?;
    if status != 200 {
        return Err(format!("GET {path}: {status} {body}").into());
    }
    Ok(serde_json::from_str(&body)?)
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// One run: start the server, load the first card, save labels, read the summary.
fn measure(work: &Path, mtr: &Path, labels: usize, run: usize) -> Res<()> {
    // a reviewer of its own, who starts at the first card
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?;
    let reviewer = &format!("bench-{}-{run}", since.as_secs());
    let t0 = Instant::now();
    let mut child = Command::new(mtr)
        .args(["--quiet", "review"])
        .arg(work.join("audit"))
        .arg("--bench")
        .arg(work.join("bench"))
        .args(["--no-browser", "--port", "0", "--reviewer", reviewer])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let _server = Server(child);
    let mut out = BufReader::new(stdout);
    let mut line = String::new();
    let (port, token) = loop {
        line.clear();
        if out.read_line(&mut line)? == 0 {
            return Err("mtr review ended before printing its URL".into());
        }
        if let Some(rest) = line.trim().strip_prefix("open http://127.0.0.1:") {
            let (port, token) = rest.split_once("/?token=").ok_or("no token")?;
            break (port.parse::<u16>()?, token.to_string());
        }
    };
    let start = t0.elapsed();

    // the first card, as the page loads it
    let t = Instant::now();
    let (status, page) = http(port, "GET", &format!("/?token={token}"), "", "")?;
    if status != 200 || page.is_empty() {
        return Err(format!("the page: {status}").into());
    }
    let state = get(port, "/api/state", &token)?;
    let first = state["queues"]["sample"]["first_unlabelled"]
        .as_u64()
        .ok_or("no first_unlabelled")?;
    let card = get(
        port,
        &format!("/api/card?queue=sample&index={first}"),
        &token,
    )?;
    let first_card = t.elapsed();
    if card["card"]["item"].as_str().is_none() {
        return Err(format!("no card: {card}").into());
    }
    let totals = [
        state["queues"]["sample"]["total"].as_u64().unwrap_or(0),
        state["queues"]["flagged"]["total"].as_u64().unwrap_or(0),
    ];

    // labels, alternately on the two queues; the card of each fetched first (timed apart)
    let mut label_ms = Vec::with_capacity(labels);
    let mut card_ms = Vec::with_capacity(labels);
    for i in 0..labels {
        let (queue, total) = if i % 2 == 0 {
            ("sample", totals[0])
        } else {
            ("flagged", totals[1])
        };
        let index = (i / 2) as u64 % total.max(1);
        let t = Instant::now();
        let card = get(
            port,
            &format!("/api/card?queue={queue}&index={index}"),
            &token,
        )?;
        card_ms.push(ms(t.elapsed()));
        let choices = card["card"]["choices"]
            .as_array()
            .ok_or("no choices")?
            .clone();
        let choice = &choices[(i / 2 + run) % choices.len()];
        let body = json!({
            "queue": queue, "index": index, "item": card["card"]["item"],
            "label": choice["label"], "seconds": 1.0, "note": ""
        })
        .to_string();
        let t = Instant::now();
        let (status, resp) = http(port, "POST", "/api/label", &token, &body)?;
        label_ms.push(ms(t.elapsed()));
        if status != 200 {
            return Err(format!("label {i}: {status} {resp}").into());
        }
    }
    let t = Instant::now();
    let summary = get(port, "/api/summary", &token)?;
    let summary_first = t.elapsed();
    let t = Instant::now();
    get(port, "/api/summary", &token)?;
    let summary_again = t.elapsed();

    label_ms.sort_by(f64::total_cmp);
    card_ms.sort_by(f64::total_cmp);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "run {run}: start {:.2} s | first card {:.1} ms | label p50 {:.2} p99 {:.2} max {:.2} ms | card p50 {:.2} p99 {:.2} ms | summary {:.0} ms, again {:.1} ms (estimates {}) | queues {} + {} cards | load {}",
        start.as_secs_f64(),
        ms(first_card),
        percentile(&label_ms, 50.0),
        percentile(&label_ms, 99.0),
        label_ms.last().copied().unwrap_or(f64::NAN),
        percentile(&card_ms, 50.0),
        percentile(&card_ms, 99.0),
        ms(summary_first),
        ms(summary_again),
        if summary["estimates"].is_null() {
            "none"
        } else {
            "shown"
        },
        totals[0],
        totals[1],
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" "),
    );
    Ok(())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().collect();
    let work = PathBuf::from(
        args.get(1)
            .ok_or("usage: review_scale WORK_DIR MTR [RUNS]")?,
    );
    let mtr = PathBuf::from(
        args.get(2)
            .ok_or("usage: review_scale WORK_DIR MTR [RUNS]")?,
    );
    let runs: usize = args.get(3).map(|s| s.parse()).transpose()?.unwrap_or(5);
    let env = |k: &str, d: usize| -> Res<usize> {
        Ok(std::env::var(k)
            .ok()
            .map(|v| v.parse())
            .transpose()?
            .unwrap_or(d))
    };
    let labels = env("LABELS", 1000)?;
    let turns = env("TURNS", 25_000)?;
    if !work.join("audit").join("summary.json").is_file() {
        generate(&work, turns).await?;
    }
    let units = read_jsonl(&work.join("audit").join("items.jsonl"))?
        .iter()
        .map(|l| {
            (
                l["dimension"].to_string(),
                l["turn_id"].to_string(),
                l["passage_id"].to_string(),
            )
        })
        .collect::<std::collections::HashSet<_>>()
        .len();
    println!("audit: {units} audited units (items)");
    for run in 0..runs {
        measure(&work, &mtr, labels, run)?;
    }
    Ok(())
}
