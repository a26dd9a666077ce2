//! Real data as published (issue 16): an MTRAG-format fixture whose corpus holds passages with
//! only whitespace text, ranked by its official-style runs, which also rank documents the
//! pooled corpus left out. The fixture imports (with a warning), validates (with warnings),
//! and benches: out-of-corpus documents are scored as non-relevant and counted, `--strict`
//! refuses them; measures deeper than the runs are n/a; a benchmark that `mtr validate`
//! rejects is refused by `mtr bench` with validate's message.

use std::path::{Path, PathBuf};

use assert_cmd::Command;

fn mtr() -> Command {
    Command::cargo_bin("mtr").unwrap()
}

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mtrag-empty-passages")
}

fn runs() -> [PathBuf; 2] {
    let d = fixture().join("runs_fix");
    [
        d.join("elser_fix_rewrite.jsonl"),
        d.join("bm25_fix_lastturn.jsonl"),
    ]
}

fn import(dir: &Path) -> PathBuf {
    let b = dir.join("fix");
    let o = mtr()
        .args(["import", "mtrag"])
        .arg(fixture())
        .args(["--domain", "fix", "-o"])
        .arg(&b)
        .output()
        .unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.status.success(), "{all}");
    assert!(
        all.contains("2 passage(s) have no text") && all.contains("corpus_fix.jsonl:5"),
        "import names the whitespace passages: {all}"
    );
    b
}

fn bench(b: &Path, out: &Path) -> Command {
    let mut c = mtr();
    c.arg("bench")
        .arg(b)
        .arg("-o")
        .arg(out)
        .args(["--resamples", "200", "--permutations", "500"]);
    for r in runs() {
        c.arg("--run").arg(r);
    }
    c.env("SOURCE_DATE_EPOCH", "1767225600");
    c
}

#[test]
fn mtrag_whitespace_passages_import_validate_and_bench() {
    let tmp = tempfile::tempdir().unwrap();
    let b = import(tmp.path());
    let corpus = std::fs::read_to_string(b.join("corpus.jsonl")).unwrap();
    assert_eq!(corpus.lines().count(), 14, "whitespace passages are kept");

    let o = mtr().arg("validate").arg(&b).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "validate accepts it: {text}");
    assert!(
        text.contains("warning[empty-passage]") && text.contains("`blank-2`"),
        "{text}"
    );

    let out = tmp.path().join("results");
    let o = bench(&b, &out).output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success(),
        "the official-style runs are scored: {stderr}"
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("16 ranked documents (9 distinct) not in the corpus"),
        "{stdout}"
    );
    let r: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("bench.json")).unwrap()).unwrap();
    let sys = |name: &str| {
        r["systems"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .unwrap()
            .clone()
    };
    let (elser, bm25) = (sys("elser_fix_rewrite"), sys("bm25_fix_lastturn"));
    assert_eq!(
        (
            elser["out_of_corpus"].as_u64(),
            elser["out_of_corpus_distinct"].as_u64()
        ),
        (Some(8), Some(8))
    );
    assert_eq!(
        (
            bm25["out_of_corpus"].as_u64(),
            bm25["out_of_corpus_distinct"].as_u64()
        ),
        (Some(16), Some(9))
    );
    // Out-of-corpus and whitespace passages are non-relevant: the elser run, gold first on
    // every turn, is perfect; bm25 finds the gold first on half the turns.
    assert_eq!(elser["measures"]["ndcg_cut.10"]["mean"], 1.0);
    assert_eq!(bm25["measures"]["success_lenient.1"]["mean"], 0.5);
    let warnings: Vec<&str> = r["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert!(
        warnings.iter().any(|w| w.contains(
            "bm25_fix_lastturn: 16 ranked documents (9 distinct ids) are not in the benchmark's corpus; scored as non-relevant"
        )),
        "{warnings:?}"
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("2 passage(s) whose text is only whitespace")),
        "{warnings:?}"
    );
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        report.contains("not in corpus |") && report.contains("| 16 (9 ids) |"),
        "{report}"
    );
}

#[test]
fn bench_strict_refuses_documents_outside_the_corpus() {
    let tmp = tempfile::tempdir().unwrap();
    let b = import(tmp.path());
    let out = tmp.path().join("strict");
    let o = bench(&b, &out).arg("--strict").output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("elser_fix_rewrite.jsonl")
            && stderr.contains("`gone-0`")
            && stderr.contains("not in the benchmark's corpus"),
        "{stderr}"
    );
    assert!(!out.join("bench.json").exists(), "nothing written");
}

#[test]
fn measures_deeper_than_a_run_are_not_available() {
    let tmp = tempfile::tempdir().unwrap();
    let b = import(tmp.path());
    let out = tmp.path().join("results");
    assert!(bench(&b, &out).output().unwrap().status.success());
    let r: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("bench.json")).unwrap()).unwrap();
    for s in r["systems"].as_array().unwrap() {
        assert_eq!(s["depth"], 10, "{}", s["name"]);
        for deep in ["recall.100", "map_cut.100", "recall.20", "ndcg_cut.20"] {
            assert!(s["measures"].get(deep).is_none(), "{} {deep}", s["name"]);
            assert!(
                s["beyond_depth"][deep]["mean"].is_number(),
                "{} {deep}",
                s["name"]
            );
        }
        assert!(s["measures"]["recall.10"]["mean"].is_number());
    }
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    let row = report
        .lines()
        .find(|l| l.starts_with("| 2 | bm25_fix_lastturn |"))
        .unwrap();
    assert_eq!(row.matches("n/a (depth 10)").count(), 4, "{row}");
}

#[test]
fn bench_refuses_what_validate_rejects() {
    let tmp = tempfile::tempdir().unwrap();
    let b = import(tmp.path());
    // a qrels query that matches no turn: validate rejects it, so bench must too
    let mut qrels = std::fs::read_to_string(b.join("qrels.tsv")).unwrap();
    qrels.push_str("ghost::1\t0\tvm-0\t1\n");
    std::fs::write(b.join("qrels.tsv"), qrels).unwrap();
    let o = mtr().arg("validate").arg(&b).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let msg = "query `ghost::1` is not a turn of dialogues.jsonl";
    let validate_out =
        String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    assert!(validate_out.contains(msg), "{validate_out}");
    let out = tmp.path().join("results");
    let o = bench(&b, &out).output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(msg) && stderr.contains("does not validate"),
        "{stderr}"
    );
    assert!(!out.join("bench.json").exists());
}
