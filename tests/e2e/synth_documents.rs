//! `mtr synth --corpus` on a RAG team's documents as they are (issue 49), on the fake LLM
//! server: a folder mixing PDF, DOCX, ODT, HTML, Markdown and reStructuredText made by the
//! real tools (tests/fixtures/corpus-docs) gives golds that name the file and the page or
//! section; `--chunks as-is` keeps a team's LangChain and LlamaIndex ids into the qrels and
//! `mtr bench --run` scores a run of them; unreadable files are named, counted and listed in
//! synth_report.md, fatal with `--strict`, and a folder of nothing readable exits 2.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use mtr_llm::fake::FakeServer;
use mtr_pipeline::fake_agents::FakeAgents;

use crate::audit::{mtr, read};
use crate::synth::fake_config;

fn fixtures(dir: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/corpus-docs")
        .join(dir)
}

/// The fake server answering as the pipeline's scripted agents.
async fn fake_agents() -> FakeServer {
    let agents = FakeAgents::default();
    FakeServer::builder()
        .respond(move |r| agents.reply(r))
        .start()
        .await
        .unwrap()
}

/// Runs `mtr synth --corpus CORPUS -o OUT EXTRA..`; returns (exit code, stderr).
fn synth(cfg: &Path, corpus: &Path, out: &Path, extra: &[&str]) -> (Option<i32>, String) {
    let o = mtr()
        .arg("--config")
        .arg(cfg)
        .arg("--quiet")
        .arg("synth")
        .arg("--corpus")
        .arg(corpus)
        .arg("-o")
        .arg(out)
        .args(["--dialogues", "3", "--turns", "2", "--seed", "1"])
        .args(["--vectors", "lexical", "--no-uniqueness"])
        .args(extra)
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn jsonl(p: &Path) -> Vec<serde_json::Value> {
    String::from_utf8(read(p))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The passage ids the qrels judge relevant.
fn gold_ids(out: &Path) -> BTreeSet<String> {
    String::from_utf8(read(&out.join("qrels.tsv")))
        .unwrap()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 3 && f[f.len() - 1] != "0" && f[f.len() - 1] != "score")
                .then(|| f[f.len() - 2].to_string())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mixed_documents_give_golds_that_name_file_and_page_or_section() {
    let tmp = tempfile::tempdir().unwrap();
    let fake = fake_agents().await;
    let cfg = fake_config(tmp.path(), "cfg", fake.base_url());
    let out = tmp.path().join("bench");
    let (code, stderr) = synth(
        &cfg,
        &fixtures("mixed"),
        &out,
        &["--chunk-tokens", "64-160"],
    );
    assert_eq!(code, Some(0), "{stderr}");
    mtr()
        .args(["--quiet", "validate"])
        .arg(&out)
        .assert()
        .success();
    // every passage names its file (with its extension) and its page or section, in its id
    // (`<file>#page=N#k`, `<file>#<anchor>#k`) and its title (`..., page N`, a heading path)
    let corpus = jsonl(&out.join("corpus.jsonl"));
    let mut kinds = BTreeSet::new();
    for p in &corpus {
        let id = p["_id"].as_str().or(p["id"].as_str()).unwrap();
        let title = p["title"].as_str().unwrap();
        let (file, place) = id.split_once('#').unwrap();
        let ext = file.rsplit_once('.').unwrap().1;
        kinds.insert(ext.to_string());
        if ext == "pdf" {
            let page = place
                .strip_prefix("page=")
                .unwrap()
                .split('#')
                .next()
                .unwrap();
            assert!(title.ends_with(&format!(", page {page}")), "{id}: {title}");
        } else {
            assert!(place.contains('#'), "{id}: an anchor and a chunk index");
            assert!(!title.is_empty(), "{id}");
        }
    }
    assert_eq!(
        kinds.into_iter().collect::<Vec<_>>(),
        ["docx", "htm", "html", "md", "odt", "pdf", "rst"]
    );
    let titles = |id: &str| {
        corpus
            .iter()
            .find(|p| p["_id"] == id || p["id"] == id)
            .map(|p| p["title"].as_str().unwrap().to_string())
    };
    // Markdown by section, with its heading path
    assert_eq!(
        titles("10-onboarding.md#your-first-day#0").as_deref(),
        Some("Onboarding: Your First Weeks › Your first day")
    );
    // the golds are such passages: each names a file and a page or section
    let golds = gold_ids(&out);
    assert!(!golds.is_empty());
    for g in &golds {
        let (file, place) = g.split_once('#').unwrap();
        assert!(file.contains('.') && !place.is_empty(), "{g}");
        assert!(titles(g).is_some(), "gold {g} is in the corpus");
    }
    let report = String::from_utf8(read(&out.join("synth_report.md"))).unwrap();
    assert!(report.contains("| PDF pages read | 5 |"), "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chunks_as_is_keep_the_teams_ids_into_the_qrels_and_bench_scores_their_run() {
    let tmp = tempfile::tempdir().unwrap();
    let fake = fake_agents().await;
    let cfg = fake_config(tmp.path(), "cfg", fake.base_url());
    let chunks = fixtures("chunks");
    let mut team_ids = BTreeSet::new();
    for l in jsonl(&chunks.join("langchain.jsonl")) {
        team_ids.insert(l["id"].as_str().unwrap().to_string());
    }
    let nodes: Vec<serde_json::Value> =
        serde_json::from_slice(&read(&chunks.join("llamaindex.json"))).unwrap();
    for n in &nodes {
        team_ids.insert(n["id_"].as_str().unwrap().to_string());
    }
    let out = tmp.path().join("as-is");
    let (code, stderr) = synth(&cfg, &chunks, &out, &["--chunks", "as-is"]);
    assert_eq!(code, Some(0), "{stderr}");
    // every chunk of the team's index is a passage, with its own id; no other passage
    let corpus: BTreeSet<String> = jsonl(&out.join("corpus.jsonl"))
        .iter()
        .map(|p| p["_id"].as_str().or(p["id"].as_str()).unwrap().to_string())
        .collect();
    assert_eq!(corpus, team_ids);
    let golds = gold_ids(&out);
    assert!(!golds.is_empty() && golds.is_subset(&team_ids), "{golds:?}");
    let report = String::from_utf8(read(&out.join("synth_report.md"))).unwrap();
    assert!(
        report.contains("kept as read with their own ids"),
        "{report}"
    );

    // the team's retriever's run, in its own ids (here: each turn's golds first, then a
    // chunk that is not), scores through mtr bench without any mapping
    let qrels = String::from_utf8(read(&out.join("qrels.tsv"))).unwrap();
    let other = team_ids.iter().find(|id| !golds.contains(*id)).unwrap();
    let mut run = String::new();
    let mut queries = BTreeSet::new();
    for l in qrels.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() < 3 || f[f.len() - 1] == "0" || f[f.len() - 1] == "score" {
            continue;
        }
        let q = f[0];
        if queries.insert(q.to_string()) {
            run.push_str(&format!(
                "{q} Q0 {} 1 2.0 team\n{q} Q0 {other} 2 1.0 team\n",
                f[f.len() - 2]
            ));
        }
    }
    let run_path = tmp.path().join("team.trec");
    std::fs::write(&run_path, run).unwrap();
    let results = tmp.path().join("results");
    let o = mtr()
        .arg("--quiet")
        .arg("bench")
        .arg(&out)
        .arg("--run")
        .arg(format!("team={}", run_path.display()))
        .arg("-o")
        .arg(&results)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let bench: serde_json::Value =
        serde_json::from_slice(&read(&results.join("bench.json"))).unwrap();
    let text = bench.to_string();
    assert!(text.contains("\"team\""), "{text}");

    // the default still chunks: ids `<team id>#<k>`
    let out = tmp.path().join("chunked");
    let (code, stderr) = synth(&cfg, &chunks, &out, &[]);
    assert_eq!(code, Some(0), "{stderr}");
    let ids: Vec<String> = jsonl(&out.join("corpus.jsonl"))
        .iter()
        .map(|p| p["_id"].as_str().or(p["id"].as_str()).unwrap().to_string())
        .collect();
    assert!(ids.iter().all(|id| id.contains('#')), "{ids:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreadable_files_are_named_counted_and_listed_or_fatal_with_strict() {
    let tmp = tempfile::tempdir().unwrap();
    let fake = fake_agents().await;
    let cfg = fake_config(tmp.path(), "cfg", fake.base_url());
    let corpus = tmp.path().join("docs");
    std::fs::create_dir_all(&corpus).unwrap();
    for (from, name) in [
        ("mixed", "03-parental-leave.pdf"),
        ("mixed", "06-expenses-per-diem.docx"),
        ("mixed", "10-onboarding.md"),
        ("bad", "encrypted.pdf"),
        ("bad", "scanned.pdf"),
        ("bad", "truncated.docx"),
        ("bad", "mislabelled.html"),
    ] {
        std::fs::copy(fixtures(from).join(name), corpus.join(name)).unwrap();
    }
    let out = tmp.path().join("bench");
    let (code, stderr) = synth(&cfg, &corpus, &out, &["--chunk-tokens", "64-160"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("4 unreadable files skipped"), "{stderr}");
    for (file, reason) in [
        ("encrypted.pdf", "password"),
        ("scanned.pdf", "no text layer"),
        ("truncated.docx", "zip"),
        ("mislabelled.html", "not valid UTF-8"),
    ] {
        let said = stderr
            .lines()
            .find(|l| l.starts_with(&format!("skipped {file}: ")))
            .unwrap_or_else(|| panic!("{file} not named: {stderr}"));
        assert!(said.contains(reason), "{said}");
    }
    let report = String::from_utf8(read(&out.join("synth_report.md"))).unwrap();
    assert!(
        report.contains("| unreadable files skipped | 4 (listed below) |"),
        "{report}"
    );
    assert!(report.contains("- `scanned.pdf`: "), "{report}");

    // --strict: exit 2 on the first, named with its reason, nothing written; and on a rerun
    // of the same work dir, which would otherwise reuse the read
    let strict = tmp.path().join("strict");
    let (code, stderr) = synth(&cfg, &corpus, &strict, &["--strict"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("encrypted.pdf") && stderr.contains("password"),
        "{stderr}"
    );
    assert!(!strict.join("corpus.jsonl").exists());
    let (code, stderr) = synth(
        &cfg,
        &corpus,
        &out,
        &["--chunk-tokens", "64-160", "--strict"],
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("encrypted.pdf"), "{stderr}");

    // nothing readable: exit 2 naming the files and their reasons
    let (code, stderr) = synth(&cfg, &fixtures("bad"), &tmp.path().join("none"), &[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("no file of the corpus could be read")
            && stderr.contains("scanned.pdf")
            && stderr.contains("no text layer"),
        "{stderr}"
    );
}

#[test]
fn chunks_is_a_closed_choice_checked_when_settings_load() {
    let tmp = tempfile::tempdir().unwrap();
    let o = mtr()
        .args(["synth", "--corpus", "x", "--chunks", "whole", "--dry-run"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("as-is") && stderr.contains("recursive"),
        "{stderr}"
    );
    let cfg = tmp.path().join("mtr.toml");
    std::fs::write(
        &cfg,
        "[synth]\nturns = 2\n\n[synth.chunking]\nkeep = \"yes\"\n",
    )
    .unwrap();
    let o = mtr()
        .arg("--config")
        .arg(&cfg)
        .args(["synth", "--corpus"])
        .arg(fixtures("chunks"))
        .arg("--dry-run")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("mtr.toml:5") && stderr.contains("keep"),
        "{stderr}"
    );
}
