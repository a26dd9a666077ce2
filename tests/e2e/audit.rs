//! `mtr audit` and `mtr report` end to end: on the fake OpenAI-compatible server (started in
//! this test process) over the whole imported MTRAG clapnq benchmark, and on the embedded local
//! model with a small `--sample` (skipped with a note when the local model is not installed,
//! failing instead when `MTR_TEST_REQUIRE_LOCAL_MODEL=1`). Tests skip when ../shared is absent.

use std::path::{Path, PathBuf};
use std::time::Instant;

use assert_cmd::Command;
use mtr_llm::fake::{FakeReply, FakeRequest, FakeServer};

pub(crate) fn mtr() -> Command {
    Command::cargo_bin("mtr").unwrap()
}

fn mtrag() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data/mtrag");
    if p.is_dir() {
        Some(p)
    } else {
        eprintln!("skipping: {} absent", p.display());
        None
    }
}

pub(crate) fn import_clapnq(dir: &Path) -> Option<PathBuf> {
    let src = mtrag()?;
    let out = dir.join("clapnq");
    mtr()
        .args(["--quiet", "import", "mtrag"])
        .arg(&src)
        .args(["--domain", "clapnq", "-o"])
        .arg(&out)
        .assert()
        .success();
    Some(out)
}

pub(crate) fn hashed(req: &FakeRequest) -> FakeReply {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (&req.model, &req.last_user).hash(&mut h);
    let x = h.finish();
    match req.schema.as_ref().and_then(mtr_audit::judges::pick_max) {
        Some(max) => {
            FakeReply::json(serde_json::json!({"justification": "pick", "choice": 1 + x % max}))
        }
        None => FakeReply::json(serde_json::json!({"justification": "rate", "rating": 1 + x % 5})),
    }
}

pub(crate) fn config(dir: &Path, base_url: &str, price: f64) -> PathBuf {
    let p = dir.join(format!("mtr-{price}.toml"));
    let mut t = format!(
        "[llm]\ncache = \"{}\"\n",
        dir.join("cache.sqlite").display()
    );
    for n in ["judge-a", "judge-b"] {
        t.push_str(&format!(
            "[[llm.endpoints]]\nname = \"{n}\"\nbase_url = \"{base_url}\"\nmodel = \"{n}-model\"\nmax_concurrency = 16\ntimeout_s = 30\nprice_in_per_mtok = {price}\nprice_out_per_mtok = {price}\n"
        ));
    }
    t.push_str("[llm.roles]\njudges = [\"judge-a\", \"judge-b\"]\n[audit]\nresamples = 200\n");
    std::fs::write(&p, t).unwrap();
    p
}

pub(crate) fn read(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_on_the_fake_server_end_to_end() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(bench) = import_clapnq(tmp.path()) else {
        return;
    };
    let fake = FakeServer::builder().respond(hashed).start().await.unwrap();
    let cfg = config(tmp.path(), fake.base_url(), 0.0);
    let out = tmp.path().join("audit");

    // dry run: plans, calls nothing, writes nothing
    let o = mtr()
        .arg("--config")
        .arg(&cfg)
        .args(["--quiet", "audit"])
        .arg(&bench)
        .arg("-o")
        .arg(&out)
        .arg("--dry-run")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("dry run") && text.contains("judge-a") && text.contains("prompt tok"),
        "{text}"
    );
    assert_eq!(fake.chat_calls(), 0);
    assert!(!out.join("summary.json").exists());

    // the full audit
    let o = mtr()
        .arg("--config")
        .arg(&cfg)
        .args(["--quiet", "audit"])
        .arg(&bench)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    for d in ["alignment", "completeness", "faithfulness", "quality"] {
        assert!(text.contains(d), "{text}");
    }
    let summary: serde_json::Value =
        serde_json::from_slice(&read(&out.join("summary.json"))).unwrap();
    assert_eq!(summary["complete"], true);
    // the benchmark was given by its absolute path: no output names the local folders
    let local = tmp.path().to_string_lossy().into_owned();
    for f in std::fs::read_dir(&out).unwrap() {
        let f = f.unwrap().path();
        if f.is_file() {
            let text = String::from_utf8_lossy(&read(&f)).into_owned();
            assert!(!text.contains(&local), "{} names {local}", f.display());
        }
    }
    assert_eq!(summary["benchmark"]["path"], "clapnq");
    let planned = summary["plan"]["judgements_planned"].as_u64().unwrap();
    let hits = summary["cost"]["total"]["cache_hits"].as_u64().unwrap();
    // and one per judge and missing-gold candidate, rated pointwise (verify_items.jsonl)
    let verified = std::fs::read_to_string(out.join("verify_items.jsonl"))
        .unwrap()
        .lines()
        .count() as u64;
    assert_eq!(
        fake.chat_calls() + hits,
        planned + verified,
        "one call per distinct prompt"
    );
    let calls = fake.chat_calls();
    let items = String::from_utf8(read(&out.join("items.jsonl"))).unwrap();
    assert_eq!(items.lines().count() as u64, planned);
    assert!(summary["fingerprint"]["data"].as_str().unwrap().len() == 64);
    for f in ["report.md", "report.html", "suggested_qrels.tsv"] {
        assert!(out.join(f).is_file(), "{f}");
    }

    // rerun: resumes, calls nothing, changes nothing
    let before: Vec<Vec<u8>> = [
        "items.jsonl",
        "summary.json",
        "report.md",
        "report.html",
        "suggested_qrels.tsv",
    ]
    .iter()
    .map(|f| read(&out.join(f)))
    .collect();
    mtr()
        .arg("--config")
        .arg(&cfg)
        .args(["--quiet", "audit"])
        .arg(&bench)
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    assert_eq!(fake.chat_calls(), calls, "a rerun calls nothing");
    let after: Vec<Vec<u8>> = [
        "items.jsonl",
        "summary.json",
        "report.md",
        "report.html",
        "suggested_qrels.tsv",
    ]
    .iter()
    .map(|f| read(&out.join(f)))
    .collect();
    assert!(before == after, "a rerun changed the folder");

    // mtr report re-renders the same reports from summary.json alone
    std::fs::remove_file(out.join("report.html")).unwrap();
    mtr()
        .args(["--quiet", "report"])
        .arg(&out)
        .assert()
        .success();
    assert_eq!(read(&out.join("report.html")), before[3]);

    // user errors exit 2 and name the problem
    let o = mtr()
        .arg("--config")
        .arg(&cfg)
        .args(["--quiet", "audit"])
        .arg(&bench)
        .args(["--dimensions", "relevance"])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("relevance"));
    let o = mtr()
        .arg("--config")
        .arg(&cfg)
        .args(["--quiet", "audit"])
        .arg(tmp.path().join("missing"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let o = mtr()
        .args(["--quiet", "report"])
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));

    // --max-cost stops cleanly; the same command without it finishes
    let priced = config(tmp.path(), fake.base_url(), 20.0);
    let out2 = tmp.path().join("audit-budget");
    let o = mtr()
        .arg("--config")
        .arg(&priced)
        .args(["--quiet", "audit"])
        .arg(&bench)
        .arg("-o")
        .arg(&out2)
        .args([
            "--sample",
            "3",
            "--dimensions",
            "quality",
            "--max-cost",
            "0.02",
            "--llm-cache",
        ])
        .arg(tmp.path().join("priced.sqlite"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("incomplete"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let s: serde_json::Value = serde_json::from_slice(&read(&out2.join("summary.json"))).unwrap();
    assert_eq!(s["complete"], false);
    mtr()
        .arg("--config")
        .arg(&priced)
        .args(["--quiet", "audit"])
        .arg(&bench)
        .arg("-o")
        .arg(&out2)
        .args(["--sample", "3", "--dimensions", "quality", "--llm-cache"])
        .arg(tmp.path().join("priced.sqlite"))
        .assert()
        .success();
    let s: serde_json::Value = serde_json::from_slice(&read(&out2.join("summary.json"))).unwrap();
    assert_eq!(s["complete"], true);
}

/// Whether the embedded local default is installed with `model` (skips the calling test when
/// not, unless `MTR_TEST_REQUIRE_LOCAL_MODEL=1`).
pub(crate) fn local_model_installed(model: &str) -> bool {
    let paths = mtr_local::LocalPaths::default();
    let ok = paths.installed() && mtr_local::resolve_model(&paths, model).is_ok();
    if !ok {
        assert!(
            std::env::var("MTR_TEST_REQUIRE_LOCAL_MODEL").as_deref() != Ok("1"),
            "MTR_TEST_REQUIRE_LOCAL_MODEL=1 but the local model is not installed in {}",
            paths.data.display()
        );
        eprintln!("skipping: the embedded local model is not installed (run `mtr local install`)");
    }
    ok
}

/// The first `turns` turns of the first dialogue of `bench`, with the whole corpus: a real
/// MTRAG conversation small enough for a CPU model in CI.
fn truncated(bench: &Path, out: &Path, turns: usize) -> PathBuf {
    let b = mtr_core::BenchmarkDir::open(bench).unwrap().load().unwrap();
    let d = b
        .dialogues
        .iter()
        .find(|d| d.turns.iter().take(turns).any(|t| t.gold.len() >= 2))
        .unwrap();
    let mut d = d.clone();
    d.turns.truncate(turns);
    let mut corpus = Vec::new();
    b.dir
        .for_each_passage(|_, p| {
            corpus.push(Ok(p));
            Ok(())
        })
        .unwrap();
    let mut m = b.manifest.clone();
    m.name = format!("{}-{}-turns", m.name, turns);
    mtr_core::benchmark::write_benchmark(out, m, std::slice::from_ref(&d), corpus).unwrap();
    out.to_path_buf()
}

#[test]
fn audit_on_the_local_model_with_a_small_sample() {
    let tmp = tempfile::tempdir().unwrap();
    if !local_model_installed("smollm2") {
        return;
    }
    let Some(full) = import_clapnq(tmp.path()) else {
        return;
    };
    let bench = truncated(&full, &tmp.path().join("mini"), 2);
    let human = mtrag().unwrap().join("human_evaluations_clapnq_govt.json");
    let cfg = tmp.path().join("mtr.toml");
    // SmolLM2 (the fastest local model) as the only judge; short answers, no parse re-asks, so
    // the test makes a handful of calls. How many of a weak model's answers fail varies from run
    // to run, so the failed-judgement gate is off here (only a judge failing every judgement
    // stops the audit); the gate is tested on the fake server (resume.rs).
    std::fs::write(
        &cfg,
        format!(
            "[audit]\nmax_failed_share = 1.0\n[llm]\ncache = \"{}\"\n[llm.local]\njudges = [\"smollm2\"]\ngenerator = \"smollm2\"\n[llm.sampling.judges]\nmax_tokens = 160\n[llm.retry]\nparse_retries = 0\n",
            tmp.path().join("cache.sqlite").display()
        ),
    )
    .unwrap();
    let out = tmp.path().join("audit");
    let args = [
        "--sample",
        "1",
        "--trials",
        "1",
        "--negatives",
        "3",
        "--human-sample",
        "1",
        "--resamples",
        "200",
    ];
    let t = Instant::now();
    let o = mtr()
        .arg("--config")
        .arg(&cfg)
        .args(["--quiet", "audit"])
        .arg(&bench)
        .arg("-o")
        .arg(&out)
        .args(args)
        .arg("--human-labels")
        .arg(&human)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    eprintln!(
        "local-model audit: {:.1} s\n{}",
        t.elapsed().as_secs_f64(),
        String::from_utf8_lossy(&o.stdout)
    );
    let s: serde_json::Value = serde_json::from_slice(&read(&out.join("summary.json"))).unwrap();
    assert_eq!(s["complete"], true);
    assert_eq!(s["plan"]["dialogues_audited"], 1);
    assert!(
        s["judges"][0]["model"].as_str().unwrap().contains("smollm"),
        "{}",
        s["judges"]
    );
    // every planned judgement is recorded: scored, an explicit abstention (a discriminability
    // "none"/"several", valid but without a score), or failed/refused (never scored)
    let items = String::from_utf8(read(&out.join("items.jsonl"))).unwrap();
    let planned = s["plan"]["judgements_planned"].as_u64().unwrap();
    assert_eq!(items.lines().count() as u64, planned);
    for l in items.lines() {
        let j: serde_json::Value = serde_json::from_str(l).unwrap();
        let failed = j["parse_status"] == "failed" || j["parse_status"] == "refused";
        let abstained = !j["abstention"].is_null();
        assert_eq!(failed || abstained, j["score"].is_null(), "{l}");
        assert!(!(failed && abstained), "{l}");
    }
    for d in ["alignment", "completeness", "faithfulness", "quality"] {
        assert!(s["dimensions"][d]["items"].as_u64().unwrap() > 0, "{d}");
    }
    assert!(
        s["human"]["comparisons"]
            .as_array()
            .is_some_and(|c| !c.is_empty())
    );
    assert!(out.join("human_items.jsonl").is_file());
}

/// `--batch`: every judgement goes through the fake server's Batch API (files + batches), none
/// through chat completions, and the audit finishes complete from the batch answers; a rerun
/// pays nothing. Commands whose calls depend on earlier answers refuse `--batch` (exit 2).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_through_the_batch_api_on_the_fake_server() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(bench) = import_clapnq(tmp.path()) else {
        return;
    };
    let fake = FakeServer::builder().respond(hashed).start().await.unwrap();
    let cfg = config(tmp.path(), fake.base_url(), 2.0);
    let text = std::fs::read_to_string(&cfg).unwrap().replacen(
        "[llm]\n",
        "[llm]\nbatch_poll_s = 0.05\n",
        1,
    );
    std::fs::write(&cfg, text).unwrap();
    let out = tmp.path().join("audit");
    let audit = |extra: &[&str]| {
        mtr()
            .arg("--config")
            .arg(&cfg)
            .args(["--quiet", "audit"])
            .arg(&bench)
            .arg("-o")
            .arg(&out)
            .args(["--sample", "2", "--dimensions", "alignment,faithfulness"])
            .args(extra)
            .output()
            .unwrap()
    };
    let o = audit(&["--batch"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // (the fake server counts each batch line as a chat call)
    assert!(fake.batch_calls() >= 3, "upload, create, poll");
    let summary: serde_json::Value =
        serde_json::from_slice(&read(&out.join("summary.json"))).unwrap();
    assert_eq!(summary["complete"], true, "{summary}");
    let planned = summary["plan"]["judgements_planned"].as_u64().unwrap();
    assert!(planned > 0);
    let items = String::from_utf8(read(&out.join("items.jsonl"))).unwrap();
    assert_eq!(items.lines().count() as u64, planned);
    assert!(!items.contains("Batch API"), "no item recorded as failed");
    // one batch line per distinct prompt; the cost of the result is that of the batch answers
    // (the second pass reads them from the cache, which the result does not record)
    let hits = summary["cost"]["total"]["cache_hits"].as_u64().unwrap();
    let calls = fake.chat_calls();
    assert!(
        calls > 0 && calls + hits == planned,
        "{calls} + {hits} vs {planned}"
    );
    assert!(summary["cost"]["total"]["cost_usd"].as_f64().unwrap() > 0.0);
    let batch_calls = fake.batch_calls();
    let o = audit(&[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(fake.chat_calls(), calls, "a rerun pays nothing");
    assert_eq!(fake.batch_calls(), batch_calls);

    let o = mtr()
        .arg("--config")
        .arg(&cfg)
        .args(["--quiet", "synth", "--corpus"])
        .arg(tmp.path())
        .arg("-o")
        .arg(tmp.path().join("synth"))
        .arg("--batch")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--batch"));
}
