//! The data commands end to end: `mtr import`, `validate`, `stats`, `export` on the real MTRAG
//! data (skipped when ../shared is absent), on every format fixture, and on bad input.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns unwrap too

use std::path::{Path, PathBuf};

use assert_cmd::Command;

fn mtr() -> Command {
    Command::cargo_bin("mtr").unwrap()
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn mtrag() -> Option<PathBuf> {
    let p = repo().join("../shared/data/mtrag");
    if p.is_dir() {
        Some(p)
    } else {
        eprintln!("skipping: {} absent", p.display());
        None
    }
}

fn fixture(name: &str) -> PathBuf {
    repo().join("tests/fixtures/formats").join(name)
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Qrels as a sorted set of `(qid, docid, grade)` from TREC 4-column or BEIR 3-column files.
fn qrels(path: &Path) -> Vec<(String, String, i32)> {
    let mut v: Vec<(String, String, i32)> = std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with("query-id"))
        .map(|l| {
            let c: Vec<&str> = l.split_whitespace().collect();
            let (q, d, g) = if c.len() == 4 {
                (c[0], c[2], c[3])
            } else {
                (c[0], c[1], c[2])
            };
            (q.to_string(), d.to_string(), g.parse().unwrap())
        })
        .collect();
    v.sort();
    v
}

fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        let to = dst.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to);
        } else {
            std::fs::copy(e.path(), to).unwrap();
        }
    }
}

#[test]
fn mtrag_clapnq_import_validate_stats() {
    let Some(src) = mtrag() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let b = tmp.path().join("b");
    let out = mtr()
        .arg("import")
        .arg("mtrag")
        .arg(&src)
        .args(["--domain", "clapnq", "-o"])
        .arg(&b)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains(
            "29 dialogues, 224 turns (208 with gold), 6315 passages, 578 qrels judgements"
        ),
        "{text}"
    );
    // The qrels match the source exactly: 208 tasks, 578 judgements.
    let got = qrels(&b.join("qrels.tsv"));
    assert_eq!(got, qrels(&src.join("tasks_clapnq/qrels/dev.tsv")));
    assert_eq!(
        got.iter()
            .map(|x| &x.0)
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        208
    );

    let out = mtr().arg("validate").arg(&b).output().unwrap();
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).contains("valid (0 warning(s))"),
        "{}",
        stdout(&out)
    );

    let out = mtr().arg("stats").arg(&b).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for want in [
        "dialogues     29",
        "turns         224 (208 with gold",
        "languages     en 29",
        "unanswerable 16",
        "[o200k_base]",
    ] {
        assert!(text.contains(want), "`{want}` missing from:\n{text}");
    }
    let out = mtr()
        .arg("stats")
        .arg(&b)
        .args(["--format", "json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["turns"], 224);
    assert_eq!(v["judged_turns"], 208);
    assert_eq!(v["tags"]["domain"]["clapnq"], 224);
}

#[test]
fn mtrag_govt_and_beir_roundtrip() {
    let Some(src) = mtrag() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let b = tmp.path().join("govt");
    let out = mtr()
        .arg("import")
        .arg("mtrag")
        .arg(&src)
        .args(["--domain", "govt", "--format", "json", "-o"])
        .arg(&b)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (
            v["dialogues"].as_u64(),
            v["turns"].as_u64(),
            v["judged_turns"].as_u64()
        ),
        (Some(28), Some(214), Some(201))
    );

    let beir = tmp.path().join("beir");
    let out = mtr()
        .arg("export")
        .arg(&b)
        .args(["--to", "beir", "-o"])
        .arg(&beir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        qrels(&beir.join("qrels/test.tsv")),
        qrels(&src.join("tasks_govt/qrels/dev.tsv"))
    );
    // Re-import the export: same judgements, same turns.
    let back = tmp.path().join("back");
    let out = mtr()
        .arg("import")
        .arg("auto")
        .arg(&beir)
        .arg("-o")
        .arg(&back)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("28 dialogues, 214 turns (201 with gold)"),
        "{}",
        stdout(&out)
    );
    assert_eq!(
        qrels(&back.join("qrels.tsv")),
        qrels(&src.join("tasks_govt/qrels/dev.tsv"))
    );

    let trec = tmp.path().join("trec");
    let out = mtr()
        .arg("export")
        .arg(&b)
        .args(["--to", "trec", "--query", "rewrite", "-o"])
        .arg(&trec)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        qrels(&trec.join("qrels.txt")),
        qrels(&src.join("tasks_govt/qrels/dev.tsv"))
    );
    assert_eq!(
        std::fs::read_to_string(trec.join("topics.tsv"))
            .unwrap()
            .lines()
            .count(),
        214
    );
}

#[test]
fn every_fixture_imports_and_validates() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, turns) in [
        ("mtrag", 5),
        ("beir", 5),
        ("trec", 4),
        ("topiocqa", 5),
        ("qrecc", 3),
        ("inscit", 4),
        ("cast", 4),
        ("ikat", 2),
        ("chatrag", 9),
        ("coral", 3),
        ("doc2dial", 2),
        ("quac", 4),
    ] {
        let out_dir = tmp.path().join(name);
        let out = mtr()
            .arg("import")
            .arg("auto")
            .arg(fixture(name))
            .arg("-o")
            .arg(&out_dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        assert!(
            stdout(&out).contains(&format!("{turns} turns")),
            "{name}: {}",
            stdout(&out)
        );
        // the iKAT fixture has no collection: a benchmark without passages is an error
        // unless --lenient (issue 17)
        let lenient: &[&str] = if name == "ikat" { &["--lenient"] } else { &[] };
        let out = mtr()
            .arg("validate")
            .args(lenient)
            .arg(&out_dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}: {}", stdout(&out));
    }
}

#[test]
fn commands_take_a_foreign_folder_directly() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("beir");
    copy_dir(&fixture("beir"), &src);
    let out = mtr().arg("stats").arg(&src).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("turns         5"), "{}", stdout(&out));
    assert!(
        src.join(".mtr/imports").is_dir(),
        "imported into the source's cache"
    );
    let out = mtr().arg("validate").arg(&src).output().unwrap();
    assert!(out.status.success(), "{}", stdout(&out));
}

/// A MTRAG-shaped source with one broken record of each kind, strict and lenient.
#[test]
fn bad_input_is_named_and_lenient_skips_it() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("mtrag");
    copy_dir(&fixture("mtrag"), &src);
    // A conversation message without `text`, on line 3 of the conversations file.
    let mut conv = std::fs::read_to_string(src.join("conversations_mini.jsonl")).unwrap();
    conv.push_str("{\"conversation_id\": \"ccc333\", \"messages\": [{\"speaker\": \"user\", \"enrichments\": null}]}\n");
    std::fs::write(src.join("conversations_mini.jsonl"), conv).unwrap();
    let out = mtr()
        .arg("import")
        .arg("mtrag")
        .arg(&src)
        .arg("-o")
        .arg(tmp.path().join("x"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "a user error exits 2");
    let err = stderr(&out);
    assert!(
        err.contains("conversations_mini.jsonl:3") && err.contains("field `text`"),
        "{err}"
    );
    assert!(!tmp.path().join("x").exists(), "nothing is half-written");

    // A gold passage absent from the corpus, named by its qrels line.
    let mut q = std::fs::read_to_string(src.join("tasks_mini/qrels/dev.tsv")).unwrap();
    q.push_str("aaa111<::>3\tnot-in-corpus\t1\n");
    std::fs::write(src.join("tasks_mini/qrels/dev.tsv"), q).unwrap();
    let out = mtr()
        .arg("import")
        .arg("mtrag")
        .arg(&src)
        .arg("--lenient")
        .arg("-o")
        .arg(tmp.path().join("y"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("skipped records (--lenient): malformed-record 1, missing-gold-passage 1"),
        "{text}"
    );
    assert!(text.contains("dev.tsv:6: field `corpus-id`"), "{text}");
}

#[test]
fn validate_reports_every_problem_with_file_line_field() {
    let tmp = tempfile::tempdir().unwrap();
    let b = tmp.path().join("b");
    let out = mtr()
        .arg("import")
        .arg("beir")
        .arg(fixture("beir"))
        .arg("-o")
        .arg(&b)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    // Break it: a duplicate passage (CRLF line), an empty question, a gold id not in the corpus.
    let mut corpus = std::fs::read_to_string(b.join("corpus.jsonl")).unwrap();
    corpus.push_str("{\"id\":\"d1\",\"text\":\"again\"}\r\n");
    std::fs::write(b.join("corpus.jsonl"), corpus).unwrap();
    let dialogues = std::fs::read_to_string(b.join("dialogues.jsonl")).unwrap();
    let dialogues = dialogues
        .replacen("where do the arizona cardinals play", "", 1)
        .replacen("\"passage_id\":\"d4\"", "\"passage_id\":\"d404\"", 1);
    std::fs::write(b.join("dialogues.jsonl"), dialogues).unwrap();
    let out = mtr().arg("validate").arg(&b).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let text = stdout(&out);
    for want in [
        "error[duplicate-passage]: ",
        "corpus.jsonl:6: field `id`: duplicate passage id `d1`",
        "error[empty-query]: ",
        "dialogues.jsonl:1: field `turns[0].user`",
        "error[missing-gold-passage]: ",
        "dialogues.jsonl:2: field `turns[0].gold[0].passage_id`",
        "error[qrels-mismatch]: ",
        "INVALID",
    ] {
        assert!(text.contains(want), "`{want}` missing from:\n{text}");
    }
    let out = mtr()
        .arg("validate")
        .arg(&b)
        .arg("--lenient")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(stdout(&out).contains("skipped records (--lenient): duplicate-passage 1, empty-query 1, missing-gold-passage 1"), "{}", stdout(&out));
}

/// The benchmarks the MTR-Eval paper audited, as their releases ship them: each is detected by
/// `mtr import auto` and by `mtr audit DIR`, imports and validates, and a malformed record of
/// each names its file, line and field and exits 2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paper_benchmarks_import_audit_and_name_bad_records() {
    use mtr_llm::fake::FakeServer;
    let tmp = tempfile::tempdir().unwrap();
    let fake = FakeServer::builder()
        .respond(crate::audit::hashed)
        .start()
        .await
        .unwrap();
    let cfg = crate::audit::config(tmp.path(), fake.base_url(), 0.0);
    // the paper's scale is opt-in: on for ChatRAG-Bench, off (and absent) for the others
    let paper_cfg = tmp.path().join("mtr-paper.toml");
    let mut text = std::fs::read_to_string(&cfg).unwrap();
    text.push_str("paper_scale = true\n");
    std::fs::write(&paper_cfg, text).unwrap();
    for (name, format) in [
        ("chatrag", "chatrag"),
        ("coral", "coral"),
        ("doc2dial", "doc2dial"),
        ("quac", "quac"),
    ] {
        let src = tmp.path().join(name);
        copy_dir(&fixture(name), &src);
        let out = mtr()
            .args(["import", "auto"])
            .arg(&src)
            .args(["--format", "json", "-o"])
            .arg(tmp.path().join(format!("{name}-native")))
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(report["format"], format, "{name}");
        // the audit takes the release's folder as it is: detected, imported, judged
        let audit_out = tmp.path().join(format!("audit-{name}"));
        let config = if name == "chatrag" { &paper_cfg } else { &cfg };
        let out = mtr()
            .arg("--config")
            .arg(config)
            .args(["--quiet", "audit"])
            .arg(&src)
            .arg("-o")
            .arg(&audit_out)
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        assert!(
            stdout(&out).contains("completeness"),
            "{name}: {}",
            stdout(&out)
        );
        let summary: serde_json::Value =
            serde_json::from_slice(&std::fs::read(audit_out.join("summary.json")).unwrap())
                .unwrap();
        let paper = &summary["paper_scale"];
        if name == "chatrag" {
            let c = paper["completeness"].as_f64().unwrap();
            assert!((0.0..=1.0).contains(&c), "{paper}");
            assert_eq!(paper["per_judge"].as_object().unwrap().len(), 2, "{paper}");
        } else {
            assert!(paper.is_null(), "{name}: {paper}");
        }
    }

    // one malformed record of each format: file, line (and JSON path) and field, exit 2
    let bad = tmp.path().join("bad");
    for (name, file, text, want) in [
        (
            "chatrag",
            "data/coqa/dev.json",
            "[\n{\"messages\": [{\"role\": \"user\", \"content\": \"q\"}], \"ctxs\": []},\n{\"messages\": [{\"role\": \"user\"}], \"ctxs\": []}\n]\n",
            vec!["dev.json:3", "content"],
        ),
        (
            "coral",
            "test/new_test_conversation.json",
            "[\n{\"conv_id\": \"a\", \"turns\": [\n {\"turn_id\": 1, \"response\": \"r\", \"golden_docs_pids\": [1]}]}\n]\n",
            vec!["new_test_conversation.json:3", "question"],
        ),
        (
            "doc2dial",
            "doc2dial_dial_validation.json",
            "{\"dial_data\": {\"ssa\": {\"d\": [\n {\"dial_id\": \"x\", \"turns\": [\n  {\"turn_id\": 1, \"role\": \"user\", \"references\": []}]}]}}}\n",
            vec![
                "doc2dial_dial_validation.json:3",
                "dial_data.ssa.d[0].turns[0]",
                "utterance",
            ],
        ),
        (
            "quac",
            "val_v0.2.json",
            "{\"data\": [{\"paragraphs\": [{\"id\": \"C_1\", \"context\": \"c\",\n \"qas\": [{\"id\": \"C_1_q#0\", \"followup\": \"y\", \"question\": 7}]}]}]}\n",
            vec!["val_v0.2.json:2", "data[0].paragraphs[0].qas[0].question"],
        ),
    ] {
        let src = bad.join(name);
        copy_dir(&fixture(name), &src);
        std::fs::write(src.join(file), text).unwrap();
        let out = mtr()
            .args(["import", name])
            .arg(&src)
            .arg("-o")
            .arg(bad.join(format!("{name}-out")))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{name}: {}", stderr(&out));
        let err = stderr(&out);
        for w in want {
            assert!(err.contains(w), "{name}: `{w}` not in {err}");
        }
    }
}
