//! `mtr synth --corpus DIR` as a researcher types it: no `-o` (the output goes to
//! `synth-<corpus name>` and the command says so), on the corpus files researchers have
//! (WikiExtractor output in both forms, Parquet, folders of JSON lines, compressed files), each
//! run on the fake LLM server and ending in a benchmark `mtr validate` accepts; and a malformed
//! record of each format named by file, line (or row group and row) and field, exit 2.

use std::path::{Path, PathBuf};

use mtr_llm::fake::FakeServer;
use mtr_pipeline::fake_agents::FakeAgents;

use crate::audit::{mtr, read};
use crate::synth::fake_config;

/// The fake server answering as the pipeline's scripted agents.
async fn fake_agents() -> FakeServer {
    let agents = FakeAgents::default();
    FakeServer::builder()
        .respond(move |r| agents.reply(r))
        .start()
        .await
        .unwrap()
}

/// Runs `mtr synth --corpus CORPUS EXTRA..` without `-o` in `cwd`; returns its stderr.
fn synth_without_output(cfg: &Path, cwd: &Path, corpus: &Path, extra: &[&str]) -> String {
    let o = mtr()
        .current_dir(cwd)
        .arg("--config")
        .arg(cfg)
        .arg("--quiet")
        .arg("synth")
        .arg("--corpus")
        .arg(corpus)
        .args(["--dialogues", "2", "--turns", "2", "--seed", "1"])
        .args(["--vectors", "lexical", "--no-uniqueness"])
        .args(extra)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{stderr}");
    stderr
}

/// `out` is a benchmark `mtr validate` accepts, with `dialogues` dialogues.
fn assert_valid(out: &Path, dialogues: usize) {
    mtr()
        .args(["--quiet", "validate"])
        .arg(out)
        .assert()
        .success();
    let lines = String::from_utf8_lossy(&read(&out.join("dialogues.jsonl")))
        .lines()
        .count();
    assert_eq!(lines, dialogues, "{}", out.display());
}

fn shipped(lang: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("corpora")
        .join(lang)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_output_synth_writes_synth_and_the_corpus_name_and_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let fake = fake_agents().await;
    let cfg = fake_config(tmp.path(), "cfg", fake.base_url());
    let stderr = synth_without_output(&cfg, tmp.path(), &shipped("en"), &[]);
    assert!(stderr.contains("writing to synth-en"), "{stderr}");
    assert_valid(&tmp.path().join("synth-en"), 2);
}
