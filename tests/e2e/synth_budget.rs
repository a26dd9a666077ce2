//! `mtr synth --time-budget` on the fake server: the endpoints are configured slow (about an
//! hour a dialogue at their stated speed), so the plan, not the clock, decides which
//! dialogues start, and the run-time deadline never comes near. A budget that fits half the
//! planned dialogues starts only those and says so on stderr; `--dry-run` answers with the
//! same plan; a rerun with more time finishes the plan with exactly the calls left.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use mtr_llm::fake::FakeServer;
use mtr_pipeline::fake_agents::FakeAgents;

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpora/en")
}

/// An mtr.toml with a slow generator and judge (and an embedder) on the fake server.
fn slow_config(dir: &Path, name: &str, base_url: &str) -> PathBuf {
    let p = dir.join(format!("{name}.toml"));
    let mut t = format!(
        "[llm]\ncache = \"{}\"\n",
        dir.join(format!("{name}.sqlite")).display()
    );
    for n in ["gen", "judge", "emb"] {
        t.push_str(&format!(
            "[[llm.endpoints]]\nname = \"{n}\"\nbase_url = \"{base_url}\"\nmodel = \"fake-{n}\"\nmax_concurrency = 8\ntimeout_s = 30\nprompt_tokens_per_s = 5.0\noutput_tokens_per_s = 0.05\n"
        ));
    }
    t.push_str("[llm.roles]\njudges = [\"judge\"]\ngenerator = [\"gen\"]\nembedder = [\"emb\"]\n");
    std::fs::write(&p, t).unwrap();
    p
}

/// Runs `mtr synth` (6 dialogues x 2 turns, lexical vectors: the dry run's topic paths) with
/// the extra flags; it must succeed. Returns stdout and stderr.
fn synth(config: &Path, out: &Path, extra: &[&str]) -> (String, String) {
    let o = Command::cargo_bin("mtr")
        .unwrap()
        .arg("--config")
        .arg(config)
        .arg("--quiet")
        .args(["synth", "--corpus"])
        .arg(corpus())
        .arg("-o")
        .arg(out)
        .args(["--dialogues", "6", "--turns", "2", "--seed", "5"])
        .args(["--vectors", "lexical"])
        .args(extra)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(o.status.success(), "{stderr}");
    (String::from_utf8_lossy(&o.stdout).to_string(), stderr)
}

/// The seconds of `expected 6h 33m at the measured speed` in a budget line.
fn expected_seconds(text: &str) -> f64 {
    let line = text
        .lines()
        .find(|l| l.starts_with("time budget"))
        .unwrap_or_else(|| panic!("no time budget line in {text}"));
    let (_, rest) = line.split_once("expected ").unwrap();
    let (d, _) = rest.split_once(" at the measured speed").unwrap();
    mtr_llm::budget::parse_duration(d).unwrap().as_secs_f64()
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn synth_time_budget_starts_what_fits_and_a_rerun_finishes() {
    let tmp = tempfile::tempdir().unwrap();
    let agents = FakeAgents::default();
    let fake = FakeServer::builder()
        .respond(move |r| agents.reply(r))
        .start()
        .await
        .unwrap();
    let cfg = slow_config(tmp.path(), "a", fake.base_url());
    let out = tmp.path().join("a");

    // the dry run's plan: all six fit in 1000 hours, about an hour each
    let (plan, _) = synth(
        &cfg,
        &tmp.path().join("dry"),
        &["--dry-run", "--time-budget", "1000h"],
    );
    assert!(
        plan.contains("would start 6 of 6 planned dialogues"),
        "{plan}"
    );
    let per_dialogue = expected_seconds(&plan) / 6.0;
    assert!(per_dialogue > 1800.0, "{plan}");
    assert_eq!(fake.chat_calls(), 0, "a dry run calls nothing");
    // three and a half dialogues' time: three fit
    let half = format!("{}s", (3.5 * per_dialogue).round());
    let (plan, _) = synth(
        &cfg,
        &tmp.path().join("dry"),
        &["--dry-run", "--time-budget", &half],
    );
    assert!(
        plan.contains("would start 3 of 6 planned dialogues"),
        "{plan}"
    );

    // the run starts those three, says so, and its benchmark holds them as done (to the
    // plan only: the fake server's instant answers run far ahead of it, which would start
    // the others too)
    let (stdout, stderr) = synth(&cfg, &out, &["--time-budget", &half, "--plan-only"]);
    let first = fake.chat_calls();
    assert!(
        stderr.contains("starting 3 of 6 planned dialogues")
            && stderr.contains("rerun with more time to continue"),
        "{stderr}"
    );
    assert!(stdout.contains("3 dialogues, 6 turns"), "{stdout}");
    let report = read(&out.join("synth_report.md"));
    assert!(
        report.contains("start 3 of 6 planned dialogues"),
        "{report}"
    );
    Command::cargo_bin("mtr")
        .unwrap()
        .args(["--quiet", "validate"])
        .arg(&out)
        .assert()
        .success();

    // a rerun with more time does the other three, with no call repeated
    let (stdout, stderr) = synth(&cfg, &out, &["--time-budget", "1000h"]);
    let second = fake.chat_calls() - first;
    assert!(
        stderr.contains("starting 3 of 6 planned dialogues, 3 done before")
            && !stderr.contains("rerun"),
        "{stderr}"
    );
    assert!(stdout.contains("6 dialogues, 12 turns"), "{stdout}");

    // one run without a budget (another cache) writes the same and makes as many calls
    let whole = tmp.path().join("whole");
    let before = fake.chat_calls();
    let (_, stderr) = synth(&slow_config(tmp.path(), "b", fake.base_url()), &whole, &[]);
    assert!(!stderr.contains("time budget"), "{stderr}");
    assert_eq!(
        fake.chat_calls() - before,
        first + second,
        "no call repeated"
    );
    assert_eq!(
        read(&whole.join("dialogues.jsonl")),
        read(&out.join("dialogues.jsonl"))
    );
}
