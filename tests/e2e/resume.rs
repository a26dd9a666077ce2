//! Interrupted and failing runs end to end (issue 17): `audit --batch` SIGKILLed at each stage
//! of the Batch API life cycle resumes and creates exactly one batch per endpoint; a judge
//! that fails every call (or too many) makes the command exit 1 naming it; a read-only output
//! folder is refused (exit 2) before any call; a killed and resumed audit writes the same bytes
//! as an uninterrupted one and `spend.json` tells what every attempt spent.

use std::path::{Path, PathBuf};
use std::time::Duration;

use mtr_llm::fake::{BatchStage, FakeReply, FakeRequest, FakeServer};

use super::audit::{config, hashed, import_clapnq, mtr, read};

/// The result files an audit promises byte-identical whatever the interruptions.
const RESULT_FILES: [&str; 5] = [
    "items.jsonl",
    "summary.json",
    "report.md",
    "report.html",
    "suggested_qrels.tsv",
];

fn results(out: &Path) -> Vec<Vec<u8>> {
    RESULT_FILES.iter().map(|f| read(&out.join(f))).collect()
}

fn assert_same_results(a: &[Vec<u8>], out: &Path, what: &str) {
    for (f, (x, y)) in RESULT_FILES.iter().zip(a.iter().zip(results(out))) {
        assert!(*x == y, "{f} differs: {what}");
    }
}

/// Paid calls booked in the spend ledger of the LLM cache at `path` (0 before it exists).
fn booked(path: &Path) -> u64 {
    let flags =
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
    rusqlite::Connection::open_with_flags(path, flags)
        .and_then(|c| c.query_row("SELECT COUNT(*) FROM spend", [], |r| r.get::<_, i64>(0)))
        .map(|n| n as u64)
        .unwrap_or(0)
}

fn json(p: &Path) -> serde_json::Value {
    serde_json::from_slice(&read(p)).unwrap()
}

/// A priced two-judge config for batch runs (poll every 50 ms).
fn batch_config(dir: &Path, base_url: &str) -> PathBuf {
    let cfg = config(dir, base_url, 2.0);
    let text = std::fs::read_to_string(&cfg).unwrap().replacen(
        "[llm]\n",
        "[llm]\nbatch_poll_s = 0.05\n",
        1,
    );
    std::fs::write(&cfg, text).unwrap();
    cfg
}

fn audit_cmd(cfg: &Path, bench: &Path, out: &Path, cache: &Path) -> std::process::Command {
    audit_sample(cfg, bench, out, cache, "2")
}

fn audit_sample(
    cfg: &Path,
    bench: &Path,
    out: &Path,
    cache: &Path,
    sample: &str,
) -> std::process::Command {
    let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("mtr"));
    c.arg("--config")
        .arg(cfg)
        .args(["--quiet", "audit"])
        .arg(bench)
        .arg("-o")
        .arg(out)
        .args(["--sample", sample, "--dimensions", "alignment,faithfulness"])
        .arg("--llm-cache")
        .arg(cache);
    c
}

/// Kills `mtr audit --batch` while the fake server holds a request at each stage of the batch
/// life cycle (the fake tells when it holds one: no timing involved), then reruns it: the
/// rerun finds and polls what the killed run left (or submits what it never created), ends
/// complete with the same bytes as an uninterrupted batch run, and the fake created exactly
/// one batch per endpoint over both runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_audit_killed_at_every_stage_resumes_paying_once() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(bench) = import_clapnq(tmp.path()) else {
        return;
    };
    let out = tmp.path().join("audit");

    // reference: uninterrupted
    let fake = FakeServer::builder().respond(hashed).start().await.unwrap();
    let cfg = batch_config(tmp.path(), fake.base_url());
    let o = audit_cmd(&cfg, &bench, &out, &tmp.path().join("ref.sqlite"))
        .arg("--batch")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(fake.batches_created(), 2, "one batch per judge");
    let reference = results(&out);
    let ref_summary = json(&out.join("summary.json"));
    assert_eq!(ref_summary["complete"], true);
    assert!(
        ref_summary["cost"]["total"]["cost_usd"].as_f64().unwrap() > 0.0,
        "the batch answers' cost is the cost of the result: {}",
        ref_summary["cost"]
    );
    drop(fake);

    for stage in [
        BatchStage::Upload,
        BatchStage::BeforeCreate,
        BatchStage::AfterCreate,
        BatchStage::Poll,
        BatchStage::Download,
    ] {
        std::fs::remove_dir_all(&out).unwrap();
        let fake = FakeServer::builder().respond(hashed).start().await.unwrap();
        // the same config text (its hash is in the summary), another server address
        let cfg = batch_config(tmp.path(), fake.base_url());
        let cache = tmp.path().join(format!("{stage:?}.sqlite"));
        fake.hold_batch(stage);
        let mut child = audit_cmd(&cfg, &bench, &out, &cache)
            .arg("--batch")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // a safety net only: the fake says when the request is held
        tokio::time::timeout(Duration::from_secs(300), fake.wait_held())
            .await
            .unwrap_or_else(|_| panic!("{stage:?}: nothing held"));
        child.kill().unwrap(); // SIGKILL
        assert!(!child.wait().unwrap().success());
        fake.release_batch();

        let o = audit_cmd(&cfg, &bench, &out, &cache)
            .arg("--batch")
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{stage:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(
            fake.batches_created(),
            2,
            "{stage:?}: exactly one batch per endpoint across kill and rerun"
        );
        let summary = json(&out.join("summary.json"));
        assert_eq!(
            summary["complete"], true,
            "{stage:?}: {}",
            summary["stopped"]
        );
        // the batch-config files differ only by the server address: compare the items
        assert!(
            read(&out.join("items.jsonl")) == reference[0],
            "{stage:?}: items.jsonl differs from the uninterrupted run"
        );
        // a rerun without --batch pays nothing more
        let calls = fake.chat_calls();
        let o = audit_cmd(&cfg, &bench, &out, &cache).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(fake.chat_calls(), calls, "{stage:?}");
        assert_eq!(fake.batches_created(), 2, "{stage:?}");
    }
}

/// Answers judge-b's calls with 401 (a bad key) every time, or for the requests whose hash
/// falls under `share`.
fn judge_b_fails(share: f64) -> impl Fn(&FakeRequest) -> FakeReply + Send + Sync + 'static {
    move |req| {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        req.last_user.hash(&mut h);
        let x = (h.finish() % 1000) as f64 / 1000.0;
        if req.model == "judge-b-model" && x < share {
            FakeReply::Status {
                status: 401,
                retry_after_s: None,
                message: "Incorrect API key provided (fake)".into(),
            }
        } else {
            hashed(req)
        }
    }
}

/// A judge that fails every call makes the audit incomplete and the command exit 1 with a
/// message naming the judge and its first error; so does one failing more than
/// `[audit] max_failed_share` (default 20%), and a higher threshold lets it pass.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_audit_whose_judge_fails_exits_1_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(bench) = import_clapnq(tmp.path()) else {
        return;
    };
    for (share, threshold, expect_ok) in [
        (1.0, None, false),
        (0.5, None, false),
        (0.5, Some(0.9), true),
    ] {
        let fake = FakeServer::builder()
            .respond(judge_b_fails(share))
            .start()
            .await
            .unwrap();
        let cfg = config(tmp.path(), fake.base_url(), 0.0);
        if let Some(t) = threshold {
            let text = std::fs::read_to_string(&cfg).unwrap().replacen(
                "[audit]\n",
                &format!("[audit]\nmax_failed_share = {t}\n"),
                1,
            );
            std::fs::write(&cfg, text).unwrap();
        }
        let out = tmp.path().join(format!("audit-{share}-{threshold:?}"));
        let o = audit_cmd(
            &cfg,
            &bench,
            &out,
            &tmp.path().join(format!("{share}-{threshold:?}.sqlite")),
        )
        .output()
        .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        let summary = json(&out.join("summary.json"));
        if expect_ok {
            assert!(o.status.success(), "{stderr}");
            assert_eq!(summary["complete"], true);
        } else {
            assert_eq!(o.status.code(), Some(1), "share {share}: {stderr}");
            assert!(
                stderr.contains("judge-b") && stderr.contains("Incorrect API key"),
                "{stderr}"
            );
            if share == 1.0 {
                assert!(stderr.contains("failed every judgement"), "{stderr}");
            }
            assert!(!stderr.contains("judge `judge-a`"), "{stderr}");
            assert_eq!(summary["complete"], false, "complete means complete");
        }
    }
}

/// A synthesis whose generator fails every call exits 1 naming the endpoint.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_synthesis_whose_endpoint_fails_exits_1_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let fake = FakeServer::builder()
        .respond(|req| {
            if req.model == "fake-gen" {
                FakeReply::Content("no JSON here, sorry".into())
            } else {
                mtr_llm::fake::default_reply(req)
            }
        })
        .start()
        .await
        .unwrap();
    let cfg = synth_config(tmp.path(), fake.base_url());
    let o = mtr()
        .arg("--config")
        .arg(&cfg)
        .args(["--quiet", "synth", "--corpus"])
        .arg(corpus())
        .arg("-o")
        .arg(tmp.path().join("synth"))
        .args(["--dialogues", "2", "--turns", "2", "--seed", "1"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("`gen`"), "{stderr}");
}

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpora/en")
}

fn synth_config(dir: &Path, base_url: &str) -> PathBuf {
    let p = dir.join("synth.toml");
    let mut t = format!(
        "[llm]\ncache = \"{}\"\n",
        dir.join("synth.sqlite").display()
    );
    for n in ["gen", "judge", "emb"] {
        t.push_str(&format!(
            "[[llm.endpoints]]\nname = \"{n}\"\nbase_url = \"{base_url}\"\nmodel = \"fake-{n}\"\nmax_concurrency = 8\ntimeout_s = 30\n"
        ));
    }
    t.push_str(
        "[llm.roles]\njudges = [\"judge\"]\ngenerator = [\"gen\"]\nembedder = [\"emb\"]\n[llm.retry]\nparse_retries = 0\n",
    );
    std::fs::write(&p, t).unwrap();
    p
}

/// A folder nothing can be written to, whoever runs the test: read-only permissions, or (as
/// root, who ignores them) a path below a regular file.
fn unwritable(dir: &Path) -> PathBuf {
    let ro = dir.join("read-only");
    std::fs::create_dir_all(&ro).unwrap();
    let mut perm = std::fs::metadata(&ro).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o555);
    std::fs::set_permissions(&ro, perm).unwrap();
    if std::fs::write(ro.join("probe"), b"").is_err() {
        return ro.join("out");
    }
    std::fs::remove_file(ro.join("probe")).unwrap();
    let file = dir.join("a-file");
    std::fs::write(&file, b"").unwrap();
    file.join("out")
}

/// A read-only `-o` is refused with exit 2 before any call (audit and synth).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_output_is_refused_before_any_call() {
    let tmp = tempfile::tempdir().unwrap();
    let fake = FakeServer::builder().respond(hashed).start().await.unwrap();
    let out = unwritable(tmp.path());
    if let Some(bench) = import_clapnq(tmp.path()) {
        let cfg = config(tmp.path(), fake.base_url(), 1.0);
        let o = audit_cmd(&cfg, &bench, &out, &tmp.path().join("c.sqlite"))
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(2),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(String::from_utf8_lossy(&o.stderr).contains("-o"));
        assert_eq!(fake.chat_calls() + fake.batch_calls(), 0, "nothing called");
    }
    let cfg = synth_config(tmp.path(), fake.base_url());
    let o = mtr()
        .arg("--config")
        .arg(&cfg)
        .args(["--quiet", "synth", "--corpus"])
        .arg(corpus())
        .arg("-o")
        .arg(&out)
        .args(["--dialogues", "2", "--turns", "2"])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        fake.chat_calls() + fake.embedding_calls(),
        0,
        "nothing called"
    );
}

/// `mtr bench` with an LLM query rewrite refuses a read-only `--output` (exit 2) before any call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bench_with_llm_rewrite_refuses_a_read_only_output_before_any_call() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(bench) = import_clapnq(tmp.path()) else {
        return;
    };
    let fake = FakeServer::builder().start().await.unwrap();
    let cfg = synth_config(tmp.path(), fake.base_url());
    let o = mtr()
        .arg("--config")
        .arg(&cfg)
        .args(["--quiet", "bench"])
        .arg(&bench)
        .arg("--output")
        .arg(unwritable(tmp.path()))
        .args(["--retriever", "bm25", "--query", "llm-rewrite"])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(fake.chat_calls(), 0, "nothing called");
}

/// An audit SIGKILLed part-way and run again writes the same bytes as an uninterrupted one
/// (no `cache_hit` or cost that depends on what an earlier attempt paid), and `spend.json`
/// tells the money spent over both attempts, every paid call counted once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_audit_resumes_to_the_same_bytes_and_counts_its_spending() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(bench) = import_clapnq(tmp.path()) else {
        return;
    };
    let fake = FakeServer::builder()
        .respond(hashed)
        .latency_ms(20)
        .start()
        .await
        .unwrap();
    let cfg = config(tmp.path(), fake.base_url(), 3.0);
    let out = tmp.path().join("audit");
    let run = |cache: &str| audit_sample(&cfg, &bench, &out, &tmp.path().join(cache), "6");

    // A: uninterrupted, on its own cache
    let o = run("a.sqlite").output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let calls_a = fake.chat_calls();
    let reference = results(&out);
    let spend_a = json(&out.join("spend.json"));
    let cost_a = json(&out.join("summary.json"))["cost"]["total"]["cost_usd"]
        .as_f64()
        .unwrap();
    assert!(cost_a > 0.0);
    assert_eq!(spend_a["paid_calls"].as_u64(), Some(calls_a));
    assert!(
        (spend_a["spent_usd"].as_f64().unwrap() - cost_a).abs() < 1e-5,
        "{spend_a}"
    );
    std::fs::remove_dir_all(&out).unwrap();

    // B: another cache, SIGKILLed once half of A's calls were answered and booked, then run
    // again. The fake holds every call from the half on, so the job cannot finish before the
    // kill, and the kill waits until the answered calls are booked in the ledger: whatever the
    // machine's speed, the calls paid but never booked are exactly those held in flight.
    let start = fake.chat_calls();
    let half = calls_a / 2;
    fake.hold_chat_from(start + half);
    let mut child = run("b.sqlite")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    fake.wait_held().await;
    let ledger = tmp.path().join("b.sqlite");
    while booked(&ledger) < half && child.try_wait().unwrap().is_none() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    child.kill().unwrap();
    child.wait().unwrap();
    fake.release_chat();
    let o = run("b.sqlite").output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let calls_b = fake.chat_calls() - start;
    assert_same_results(&reference, &out, "kill + rerun vs uninterrupted");
    let spend_b = json(&out.join("spend.json"));
    let spent = spend_b["spent_usd"].as_f64().unwrap();
    let paid = spend_b["paid_calls"].as_u64().unwrap();
    // calls answered while the process died are paid but never booked: at most those in flight
    assert!(
        paid <= calls_b && paid + 32 >= calls_b,
        "{paid} booked, {calls_b} made"
    );
    assert!(spent >= cost_a - 1e-5, "spent {spent} < result {cost_a}");
    assert_eq!(spend_b["result_cost_usd"], spend_a["result_cost_usd"]);
}
