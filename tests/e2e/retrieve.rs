//! `mtr index` and `mtr retrieve` end to end: a small benchmark through BM25, dense (fake
//! embedding server) and fusion runs that `mtr eval` reads; bad input (empty corpus, duplicate
//! ids, mismatched analyzer or corpus) exits 2 with a clear message; and, when
//! ../shared is present, BM25 on the MTRAG clapnq rewrites against MTRAG's own BM25 run.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns unwrap too

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use mtr_llm::fake::FakeServer;

fn mtr() -> Command {
    Command::cargo_bin("mtr").unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Writes a native benchmark folder with the given corpus lines.
fn bench(dir: &Path, corpus: &str) -> PathBuf {
    let b = dir.join("bench");
    std::fs::create_dir_all(&b).unwrap();
    std::fs::write(
        b.join("benchmark.toml"),
        "name = \"t\"\nlanguage = \"en\"\n",
    )
    .unwrap();
    std::fs::write(b.join("corpus.jsonl"), corpus).unwrap();
    let d = r#"{"id":"d","turns":[{"id":"d::1","user":"How do guinea pigs sleep?","answer":"In short naps.","gold":[{"passage_id":"gp","grade":1}]},{"id":"d::2","user":"And what do they eat?","rewrite":"What do guinea pigs eat?","gold":[{"passage_id":"food","grade":2}]}]}"#;
    std::fs::write(b.join("dialogues.jsonl"), format!("{d}\n")).unwrap();
    std::fs::write(b.join("qrels.tsv"), "d::1\t0\tgp\t1\nd::2\t0\tfood\t2\n").unwrap();
    b
}

const CORPUS: &str = r#"{"id":"gp","title":"Guinea pig","text":"Guinea pigs sleep in short naps with their eyes open."}
{"id":"food","title":"Guinea pig diet","text":"Guinea pigs eat hay, fresh vegetables and pellets."}
{"id":"cat","title":"Cat","text":"Cats eat meat and sleep sixteen hours a day."}
"#;

#[test]
fn index_retrieve_eval_bm25() {
    let tmp = tempfile::tempdir().unwrap();
    let b = bench(tmp.path(), CORPUS);
    let idx = tmp.path().join("idx");
    let out = mtr()
        .args(["index"])
        .arg(&b)
        .arg("-o")
        .arg(&idx)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["passages"], 3);
    assert_eq!(summary["analyzer"], "english");

    let run = tmp.path().join("run.trec");
    let out = mtr()
        .args(["retrieve"])
        .arg(&b)
        .arg("--index")
        .arg(&idx)
        .args([
            "--retriever",
            "bm25",
            "--query",
            "rewrite",
            "--k",
            "2",
            "-o",
        ])
        .arg(&run)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("bm25.rewrite"),
        "{}",
        text(&out.stdout)
    );
    let trec = std::fs::read_to_string(&run).unwrap();
    let lines: Vec<&str> = trec.lines().collect();
    assert_eq!(lines.len(), 4, "{trec}");
    assert!(
        lines.iter().any(|l| l.starts_with("d::2 Q0 food 1 ")),
        "{trec}"
    );
    assert!(lines.iter().all(|l| l.ends_with(" bm25.rewrite")));
    let jsonl = std::fs::read_to_string(tmp.path().join("run.trec.jsonl")).unwrap();
    assert!(
        jsonl.contains("\"query\":\"What do guinea pigs eat?\""),
        "{jsonl}"
    );

    let out = mtr()
        .arg("eval")
        .arg(b.join("qrels.tsv"))
        .arg(&run)
        .args(["-m", "recip_rank"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s = text(&out.stdout);
    assert!(
        s.lines()
            .any(|l| l.starts_with("recip_rank") && l.ends_with("1.0000")),
        "{s}"
    );
}

#[test]
fn dense_and_fusion_through_a_fake_embedding_server() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let fake = rt.block_on(FakeServer::builder().dims(64).start()).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let b = bench(tmp.path(), CORPUS);
    let toml = format!(
        "[llm]\ncache = \"{}\"\n[[llm.endpoints]]\nname = \"e\"\nbase_url = \"{}\"\nmodel = \"fake-e5\"\n[llm.roles]\nembedder = [\"e\"]\n",
        tmp.path().join("cache.sqlite").display(),
        fake.base_url()
    );
    std::fs::write(tmp.path().join("mtr.toml"), toml).unwrap();
    let idx = tmp.path().join("idx");
    let out = mtr()
        .current_dir(tmp.path())
        .arg("index")
        .arg(&b)
        .arg("-o")
        .arg(&idx)
        .arg("--dense")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("dense: 3 vectors of fake-e5 (64-d)"),
        "{}",
        text(&out.stdout)
    );
    let calls = fake.embedding_calls();
    assert!(calls >= 1);

    for (spec, name) in [
        ("dense", "dense:fake-e5.last"),
        ("rrf(bm25,dense)", "rrf(bm25,dense:fake-e5).last"),
    ] {
        let run = tmp.path().join("run.trec");
        let out = mtr()
            .current_dir(tmp.path())
            .arg("retrieve")
            .arg(&b)
            .arg("--index")
            .arg(&idx)
            .args(["--retriever", spec, "--query", "last", "--k", "3", "-o"])
            .arg(&run)
            .output()
            .unwrap();
        assert!(out.status.success(), "{spec}: {}", text(&out.stderr));
        let trec = std::fs::read_to_string(&run).unwrap();
        assert_eq!(trec.lines().count(), 6, "{trec}");
        assert!(trec.lines().all(|l| l.ends_with(name)), "{trec}");
        assert!(
            trec.contains("d::1 Q0 gp 1 "),
            "e5-style prefixes dropped by the fake; words match: {trec}"
        );
    }
    // Rebuilding the index reuses the cached passage embeddings: no new embedding request
    // for passages (queries of the runs above are cached as well).
    let before = fake.embedding_calls();
    let out = mtr()
        .current_dir(tmp.path())
        .arg("index")
        .arg(&b)
        .arg("-o")
        .arg(&idx)
        .arg("--dense")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        fake.embedding_calls(),
        before,
        "cached embeddings were paid again"
    );
}

fn expect_user_error(out: std::process::Output, needle: &str) {
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "exit code; stderr: {err}");
    assert!(err.contains(needle), "expected `{needle}` in: {err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn bad_input_is_a_clear_user_error() {
    let tmp = tempfile::tempdir().unwrap();
    let idx = tmp.path().join("idx");
    let corpus = |name: &str, body: &str| {
        let p = tmp.path().join(name);
        std::fs::write(&p, body).unwrap();
        p
    };
    let empty = corpus("empty.jsonl", "");
    expect_user_error(
        mtr()
            .arg("index")
            .arg(&empty)
            .arg("-o")
            .arg(&idx)
            .output()
            .unwrap(),
        "no passages",
    );
    let dup = corpus(
        "dup.jsonl",
        "{\"id\":\"a\",\"text\":\"x\"}\n{\"id\":\"a\",\"text\":\"y\"}\n",
    );
    expect_user_error(
        mtr()
            .arg("index")
            .arg(&dup)
            .arg("-o")
            .arg(&idx)
            .output()
            .unwrap(),
        "dup.jsonl:2: field `id`: duplicate passage id `a`",
    );
    let blank = corpus(
        "blank.jsonl",
        "{\"id\":\"a\",\"text\":\"x\"}\n{\"id\":\"b\",\"text\":\"  \"}\n",
    );
    // A whitespace-only text is real data (an official MTRAG corpus has such passages and its
    // runs rank them): indexed with a warning, not refused.
    let o = mtr()
        .arg("index")
        .arg(&blank)
        .arg("-o")
        .arg(tmp.path().join("idx-blank"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("empty text") && err.contains("`b`"), "{err}");
    let broken = corpus(
        "broken.jsonl",
        "{\"id\":\"a\",\"text\":\"x\"}\n{\"id\":\"b\"\n",
    );
    expect_user_error(
        mtr()
            .arg("index")
            .arg(&broken)
            .arg("-o")
            .arg(&idx)
            .output()
            .unwrap(),
        "broken.jsonl:2",
    );
    assert!(!idx.exists(), "failed builds leave no index");

    // An English index queried with the Chinese analyzer; then a corpus that changed.
    let b = bench(tmp.path(), CORPUS);
    assert!(
        mtr()
            .arg("index")
            .arg(&b)
            .arg("-o")
            .arg(&idx)
            .output()
            .unwrap()
            .status
            .success()
    );
    let retrieve = |lang: &str| {
        mtr()
            .arg("retrieve")
            .arg(&b)
            .arg("--index")
            .arg(&idx)
            .args(["--language", lang, "--query", "last", "-o"])
            .arg(tmp.path().join("r.trec"))
            .output()
            .unwrap()
    };
    expect_user_error(retrieve("zh"), "built with the `en` analyzer");
    std::fs::write(
        b.join("corpus.jsonl"),
        CORPUS.replace("short naps", "long naps"),
    )
    .unwrap();
    expect_user_error(retrieve("auto"), "differs from the one indexed");
    // Something that is not an index is never overwritten.
    let precious = tmp.path().join("precious");
    std::fs::create_dir_all(&precious).unwrap();
    std::fs::write(precious.join("notes.txt"), "keep me").unwrap();
    expect_user_error(
        mtr()
            .arg("index")
            .arg(&b)
            .arg("-o")
            .arg(&precious)
            .output()
            .unwrap(),
        "not an mtr index",
    );
    assert!(precious.join("notes.txt").exists());
}

#[test]
fn mtrag_clapnq_bm25_rewrite_matches_mtrag_bm25() {
    let shared = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data/mtrag");
    if !shared.is_dir() {
        eprintln!("skipping: {} absent", shared.display());
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let b = tmp.path().join("clapnq");
    let out = mtr()
        .args(["import", "mtrag"])
        .arg(&shared)
        .args(["--domain", "clapnq", "-o"])
        .arg(&b)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let run = tmp.path().join("bm25.rewrite.trec");
    let out = mtr()
        .arg("retrieve")
        .arg(&b)
        .arg("--index")
        .arg(tmp.path().join("idx"))
        .args([
            "--retriever",
            "bm25",
            "--query",
            "rewrite",
            "--k",
            "100",
            "-o",
        ])
        .arg(&run)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let eval = |run: &Path| {
        let out = mtr()
            .args(["eval", "-c", "-m", "ndcg_cut.10"])
            .arg(b.join("qrels.tsv"))
            .arg(run)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        let s = text(&out.stdout);
        let line = s
            .lines()
            .find(|l| l.starts_with("ndcg_cut_10"))
            .unwrap()
            .to_string();
        line.split_whitespace()
            .last()
            .unwrap()
            .parse::<f64>()
            .unwrap()
    };
    let ours = eval(&run);
    let theirs = eval(&shared.join("runs_clapnq/bm25__bm25_clapnq_rewrite.jsonl"));
    eprintln!("clapnq BM25 rewrite nDCG@10: mtr {ours:.4} vs MTRAG {theirs:.4}");
    assert!((theirs - 0.2937).abs() < 1e-4);
    assert!((ours - theirs).abs() < 0.03, "mtr {ours} vs MTRAG {theirs}");
}
