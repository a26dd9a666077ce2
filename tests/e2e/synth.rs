//! `mtr synth` end to end: on the fake OpenAI-compatible server (started in this test
//! process, with the pipeline's scripted agents) over the shipped English handbook, including
//! a SIGKILL part-way and a rerun that must finish the same benchmark without repeating
//! answered calls, `--dry-run` calling nothing, and `mtr validate` accepting the output; and on
//! the embedded local model for the English and the Chinese handbook (skipped with a note when
//! the local model is not installed, failing instead when `MTR_TEST_REQUIRE_LOCAL_MODEL=1`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use mtr_llm::fake::{FakeReply, FakeServer};
use mtr_pipeline::fake_agents::FakeAgents;

fn mtr() -> Command {
    Command::cargo_bin("mtr").unwrap()
}

fn corpus(lang: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("corpora")
        .join(lang)
}

/// Chat requests from this number on are held (answered after an hour) until [`release`]: a
/// run stopped at a call count cannot have finished, whatever the machine's speed.
static HOLD_FROM: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(u64::MAX);

/// Answers held requests again (before a rerun).
fn release() {
    HOLD_FROM.store(u64::MAX, std::sync::atomic::Ordering::SeqCst);
}

/// Starts `mtr synth` with `config` into `out` as a child process and returns once the fake
/// server has seen `calls` more chat calls (or the child ended), with the calls counted at the
/// start; the calls after those are held until [`release`]. stdout is dropped, stderr piped.
async fn synth_until(
    fake: &FakeServer,
    config: &Path,
    out: &Path,
    calls: u64,
) -> (std::process::Child, u64) {
    let start = fake.chat_calls();
    HOLD_FROM.store(start + calls, std::sync::atomic::Ordering::SeqCst);
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("mtr"))
        .arg("--config")
        .arg(config)
        .arg("--quiet")
        .args(synth_args(out))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while fake.chat_calls() - start < calls && t.elapsed() < Duration::from_secs(300) {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    (child, start)
}

/// Runs `mtr synth` with `config` into `out` to the end; it must succeed.
fn synth_to_the_end(config: &Path, out: &Path) {
    let o = mtr()
        .arg("--config")
        .arg(config)
        .args(["--quiet"])
        .args(synth_args(out))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// Calls in flight at most when a run stops: 2 x (max_concurrency 8 x 2 endpoints).
const IN_FLIGHT: u64 = 2 * 8 * 2;

/// An mtr.toml with a generator, a judge and an embedder on the fake server.
pub(crate) fn fake_config(dir: &Path, name: &str, base_url: &str) -> PathBuf {
    let p = dir.join(format!("{name}.toml"));
    let mut t = format!(
        "[llm]\ncache = \"{}\"\n",
        dir.join(format!("{name}.sqlite")).display()
    );
    for (n, price) in [("gen", 1.0), ("judge", 0.5), ("emb", 0.02)] {
        t.push_str(&format!(
            "[[llm.endpoints]]\nname = \"{n}\"\nbase_url = \"{base_url}\"\nmodel = \"fake-{n}\"\nmax_concurrency = 8\ntimeout_s = 30\nprice_in_per_mtok = {price}\nprice_out_per_mtok = {price}\n"
        ));
    }
    t.push_str("[llm.roles]\njudges = [\"judge\"]\ngenerator = [\"gen\"]\nembedder = [\"emb\"]\n");
    std::fs::write(&p, t).unwrap();
    p
}

fn synth_args(out: &Path) -> Vec<String> {
    let c = corpus("en");
    vec![
        "synth".into(),
        "--corpus".into(),
        c.display().to_string(),
        "-o".into(),
        out.display().to_string(),
        "--dialogues".into(),
        "12".into(),
        "--turns".into(),
        "4".into(),
        "--seed".into(),
        "3".into(),
    ]
}

fn read(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn synth_on_the_fake_server_survives_a_kill() {
    let tmp = tempfile::tempdir().unwrap();
    let agents = FakeAgents::default();
    let fake = FakeServer::builder()
        .respond(move |r| {
            let reply = agents.reply(r);
            if r.n >= HOLD_FROM.load(std::sync::atomic::Ordering::SeqCst) {
                FakeReply::Delay(Duration::from_secs(3600), Box::new(reply))
            } else {
                reply
            }
        })
        .latency_ms(3)
        .start()
        .await
        .unwrap();

    // --dry-run plans and calls nothing
    let cfg_a = fake_config(tmp.path(), "a", fake.base_url());
    let dry = tmp.path().join("dry");
    let o = mtr()
        .arg("--config")
        .arg(&cfg_a)
        .args(["--quiet"])
        .args(synth_args(&dry))
        .arg("--dry-run")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        text.contains("nothing was called")
            && text.contains("uniqueness")
            && text.contains("12 dialogues x 4 turns"),
        "{text}"
    );
    assert_eq!(
        (fake.chat_calls(), fake.embedding_calls()),
        (0, 0),
        "a dry run calls nothing"
    );
    assert!(!dry.join("dialogues.jsonl").exists());

    // A: uninterrupted
    let a = tmp.path().join("a");
    let o = mtr()
        .arg("--config")
        .arg(&cfg_a)
        .args(["--quiet"])
        .args(synth_args(&a))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let calls_a = fake.chat_calls();
    let summary = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(summary.contains("12 dialogues, 48 turns"), "{summary}");
    mtr()
        .args(["--quiet", "validate"])
        .arg(&a)
        .assert()
        .success();
    // the other commands take the synthesized benchmark as it is
    let o = mtr()
        .args(["--quiet", "bench"])
        .arg(&a)
        .arg("--output")
        .arg(tmp.path().join("bench-out"))
        .args([
            "--retriever",
            "bm25",
            "--query",
            "last,full",
            "--resamples",
            "200",
            "--permutations",
            "200",
        ])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "mtr bench: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = mtr()
        .arg("--config")
        .arg(&cfg_a)
        .args(["--quiet", "audit"])
        .arg(&a)
        .arg("-o")
        .arg(tmp.path().join("audit-out"))
        .args(["--sample", "4", "--resamples", "200"])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "mtr audit: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let report = String::from_utf8_lossy(&read(&a.join("synth_report.md"))).to_string();
    assert!(
        report.contains("## Verification and rejections")
            && report.contains("| uniqueness | unique |"),
        "{report}"
    );

    // B: another cache, SIGKILLed once the fake has seen 40% of A's calls, then run again
    let cfg_b = fake_config(tmp.path(), "b", fake.base_url());
    let b = tmp.path().join("b");
    let (mut child, start) = synth_until(&fake, &cfg_b, &b, calls_a * 2 / 5).await;
    child.kill().unwrap();
    let status = child.wait().unwrap();
    release();
    assert!(!status.success(), "the run was killed before it finished");
    let before = fake.chat_calls() - start;
    assert!(
        !b.join("dialogues.jsonl").exists(),
        "no output from a killed run"
    );
    synth_to_the_end(&cfg_b, &b);
    let after = fake.chat_calls() - start - before;
    eprintln!("uninterrupted {calls_a} calls; killed after {before}, resumed with {after} more");
    assert!(
        before + after <= calls_a + IN_FLIGHT,
        "{before} + {after} calls vs {calls_a} (+ {IN_FLIGHT} in flight)"
    );
    // synth_report.md too: the cost of the result is the same whatever the interruptions; what
    // the attempts spent is in spend.json, the one file allowed to differ
    for f in [
        "corpus.jsonl",
        "dialogues.jsonl",
        "qrels.tsv",
        "benchmark.toml",
        "synth_report.md",
    ] {
        if f == "benchmark.toml" {
            // same data fingerprint; the manifest differs only in nothing run-specific
            let ma: toml::Table =
                toml::from_str(&String::from_utf8_lossy(&read(&a.join(f)))).unwrap();
            let mb: toml::Table =
                toml::from_str(&String::from_utf8_lossy(&read(&b.join(f)))).unwrap();
            assert_eq!(ma["fingerprint"], mb["fingerprint"]);
        } else {
            assert_eq!(
                read(&a.join(f)),
                read(&b.join(f)),
                "{f} differs after kill + resume"
            );
        }
    }
    mtr()
        .args(["--quiet", "validate"])
        .arg(&b)
        .assert()
        .success();

    // C: another cache, interrupted with SIGINT (Ctrl-C) at 40%: mtr stops cleanly (exit 130),
    // the cache keeps every answer received, and the rerun repeats at most the calls in flight
    let cfg_c = fake_config(tmp.path(), "c", fake.base_url());
    let c = tmp.path().join("c");
    let (child, start) = synth_until(&fake, &cfg_c, &c, calls_a * 2 / 5).await;
    let killed = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = child.wait_with_output().unwrap();
    release();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    let before = fake.chat_calls() - start;
    // every answer received before the interrupt is in the file (chat rows, not embeddings)
    let o = mtr()
        .args([
            "--quiet",
            "cache",
            "stats",
            "--format",
            "json",
            "--llm-cache",
        ])
        .arg(tmp.path().join("c.sqlite"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stats: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = stats["chat_rows"].as_u64().unwrap();
    assert!(
        rows + IN_FLIGHT >= before,
        "{rows} cached answers after {before} calls"
    );
    synth_to_the_end(&cfg_c, &c);
    let after = fake.chat_calls() - start - before;
    eprintln!("interrupted after {before} calls, resumed with {after} more");
    assert!(
        before + after <= calls_a + IN_FLIGHT,
        "{before} + {after} calls vs {calls_a} (+ {IN_FLIGHT} in flight)"
    );
    assert_eq!(
        read(&a.join("dialogues.jsonl")),
        read(&c.join("dialogues.jsonl"))
    );
}

/// The embedded local model (Qwen2.5-Coder-0.5B generates and judges: it writes Chinese, the
/// smaller SmolLM2 does not) on both handbooks, with small chunks and few candidates so that a
/// CPU model finishes in minutes. The model is weak, so how many turns survive verification
/// varies; the test checks that the run completes, that `mtr validate` accepts the output, and
/// that every surviving Chinese question is Chinese. Its budget (120 tokens, no parse retries)
/// makes answers cut at `max_tokens` common and their share varies from run to run (llama.cpp
/// batches parallel slots), so the failed-call gate is off here (`max_failed_share = 1.0`: only
/// an endpoint failing every call stops the run); the gate itself is tested on the fake server
/// (`resume::a_synthesis_whose_endpoint_fails_exits_1_naming_it`).
#[test]
fn synth_on_the_local_model_en_and_zh() {
    if !crate::audit::local_model_installed("qwen0.5b") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("mtr.toml");
    std::fs::write(
        &cfg,
        format!(
            "[llm]\ncache = \"{}\"\n[llm.local]\njudges = [\"qwen0.5b\"]\ngenerator = \"qwen0.5b\"\n[llm.sampling.judges]\nmax_tokens = 120\n[llm.retry]\nparse_retries = 0\n\
             [synth]\nmax_failed_share = 1.0\n[synth.generation]\noffer = 2\nmax_attempts = 1\nanswer_attempts = 1\nmax_tokens = 120\n[synth.generation.uniqueness]\njudge_candidates = 2\n",
            tmp.path().join("cache.sqlite").display()
        ),
    )
    .unwrap();
    for lang in ["en", "zh"] {
        let out = tmp.path().join(lang);
        let t = Instant::now();
        let o = mtr()
            .arg("--config")
            .arg(&cfg)
            .args(["--quiet", "synth", "--corpus"])
            .arg(corpus(lang))
            .arg("-o")
            .arg(&out)
            .args([
                "--dialogues",
                "2",
                "--turns",
                "2",
                "--chunk-tokens",
                "48-120",
            ])
            .output()
            .unwrap();
        eprintln!(
            "{lang}: {:.0} s\n{}",
            t.elapsed().as_secs_f64(),
            String::from_utf8_lossy(&o.stdout)
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let b = mtr_core::BenchmarkDir::open(&out).unwrap().load().unwrap();
        assert_eq!(b.manifest.language, lang);
        // a benchmark without judgements is invalid unless --lenient: when the weak verifier
        // kept no turn, validate must say so, and accept it only with --lenient
        let turns: usize = b.dialogues.iter().map(|d| d.turns.len()).sum();
        if turns > 0 {
            mtr()
                .args(["--quiet", "validate"])
                .arg(&out)
                .assert()
                .success();
        } else {
            let v = mtr()
                .args(["--quiet", "validate"])
                .arg(&out)
                .output()
                .unwrap();
            assert_eq!(v.status.code(), Some(2));
            assert!(String::from_utf8_lossy(&v.stdout).contains("empty-qrels"));
            mtr()
                .args(["--quiet", "validate", "--lenient"])
                .arg(&out)
                .assert()
                .success();
        }
        for t in b.dialogues.iter().flat_map(|d| d.turns.iter()) {
            assert!(
                mtr_pipeline::in_language(&t.user, &mtr_pipeline::Language::from_code(lang)),
                "{}",
                t.user
            );
            // the mix's unanswerable and conversational turns have no gold; every other has
            let kind = t.tags.answerability.as_deref().unwrap_or("");
            eprintln!("{lang}: {} turn: {}", kind, t.user);
            assert_eq!(
                t.gold.is_empty(),
                matches!(kind, "unanswerable" | "conversational"),
                "{kind}: {}",
                t.user
            );
        }
        assert!(out.join("synth_report.md").is_file());
        // whether or not a turn survived the (weak) verifier, the user agent must have asked
        // in the corpus language: the checkpoint counts every proposal and every rejection
        let state: serde_json::Value =
            serde_json::from_slice(&read(&out.join(".mtr-synth/state.json"))).unwrap();
        let (mut proposals, mut wrong_language) = (0, 0);
        for d in state["dialogues"].as_array().unwrap() {
            let user = &d["log"]["roles"]["user"];
            proposals +=
                user["calls"].as_u64().unwrap_or(0) - user["parse_failed"].as_u64().unwrap_or(0);
            wrong_language += d["events"]["user/wrong_language"].as_u64().unwrap_or(0);
        }
        eprintln!("{lang}: {proposals} questions proposed, {wrong_language} in the wrong language");
        assert!(
            proposals > 0,
            "{lang}: the user agent never produced a question"
        );
        assert!(
            wrong_language < proposals,
            "{lang}: every question was in the wrong language"
        );
    }
}

/// A dry run with `config` plus `extra` (TOML appended to it): its exit code and stderr.
fn dry_run_with(config: &Path, extra: &str, out: &Path) -> (Option<i32>, String) {
    let mut text = std::fs::read_to_string(config).unwrap();
    text.push_str(extra);
    std::fs::write(config, text).unwrap();
    let o = mtr()
        .arg("--config")
        .arg(config)
        .args(["--quiet"])
        .args(synth_args(out))
        .arg("--dry-run")
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).to_string(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_uniqueness_query_outside_its_vocabulary_fails_the_dry_run_naming_the_key() {
    let tmp = tempfile::tempdir().unwrap();
    let fake = FakeServer::builder().start().await.unwrap();
    let cfg = fake_config(tmp.path(), "q", fake.base_url());
    let extra = "[synth.generation.uniqueness]\nquery = \"rewrit\"\n";
    let (code, err) = dry_run_with(&cfg, extra, &tmp.path().join("out"));
    assert_eq!(code, Some(2), "{err}");
    for part in [
        "synth.generation.uniqueness.query",
        "q.toml",
        "rewrit",
        "last, all, full, full:N or window:N",
    ] {
        assert!(err.contains(part), "`{part}` missing: {err}");
    }
    assert_eq!(fake.chat_calls() + fake.embedding_calls(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relevance_judge_that_names_no_endpoint_fails_the_dry_run_naming_the_key() {
    let tmp = tempfile::tempdir().unwrap();
    let fake = FakeServer::builder().start().await.unwrap();
    let cfg = fake_config(tmp.path(), "j", fake.base_url());
    let extra = "[synth.generation.relevance]\njudge = \"autoo\"\n";
    let out = tmp.path().join("out");
    let (code, err) = dry_run_with(&cfg, extra, &out);
    assert_eq!(code, Some(2), "{err}");
    for part in [
        "synth.generation.relevance.judge",
        "j.toml",
        "autoo",
        "expected auto, none or a relevance endpoint",
    ] {
        assert!(err.contains(part), "`{part}` missing: {err}");
    }
    // refused before any work: no corpus was read into a work dir, nothing was called
    assert!(!out.exists());
    assert_eq!(fake.chat_calls() + fake.embedding_calls(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mix_typo_or_a_share_out_of_range_fails_the_dry_run_naming_the_key() {
    let tmp = tempfile::tempdir().unwrap();
    let fake = FakeServer::builder().start().await.unwrap();
    for (name, extra, parts) in [
        (
            "typo",
            "[synth.mix]\nunanswerabel = 0.1\n",
            &["unanswerabel", "typo.toml"][..],
        ),
        (
            "range",
            "[synth.mix]\nunanswerable = 1.5\n",
            &["field `mix.unanswerable`", "1.5 is not in [0, 1]"][..],
        ),
        (
            "sum",
            "[synth.mix]\npartial = 0.6\nunanswerable = 0.5\n",
            &["field `mix`", "above 1"][..],
        ),
    ] {
        let cfg = fake_config(tmp.path(), name, fake.base_url());
        let out = tmp.path().join(format!("out-{name}"));
        let (code, err) = dry_run_with(&cfg, extra, &out);
        assert_eq!(code, Some(2), "{name}: {err}");
        for part in parts {
            assert!(err.contains(part), "{name}: `{part}` missing: {err}");
        }
        assert!(!out.exists(), "{name}");
    }
    assert_eq!(fake.chat_calls() + fake.embedding_calls(), 0);
}
