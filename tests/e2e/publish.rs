//! Publishing end to end: `mtr export --to hf` and back through `mtr import auto` with the same
//! data fingerprint (a fixture, and MTRAG's clapnq when ../shared is there), `--to triplets`
//! with a planted missing gold that the audit drops, and bad dataset folders named with exit 2.

use std::path::{Path, PathBuf};

use assert_cmd::Command;

fn mtr() -> Command {
    Command::cargo_bin("mtr").unwrap()
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The `fingerprint` line of `mtr import`'s summary.
fn imported(args: &[&str]) -> String {
    let out = mtr().arg("import").args(args).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
        .lines()
        .find_map(|l| l.strip_prefix("fingerprint "))
        .unwrap()
        .to_string()
}

/// `mtr export B --to hf -o HF`; it must succeed.
fn export_hf(b: &Path, hf: &Path) {
    let out = mtr()
        .arg("export")
        .arg(b)
        .args(["--to", "hf", "-o"])
        .arg(hf)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

fn round_trip(src_format: &str, src: &Path, extra: &[&str]) {
    let tmp = tempfile::tempdir().unwrap();
    let (b, hf, back) = (
        tmp.path().join("b"),
        tmp.path().join("hf"),
        tmp.path().join("back"),
    );
    let mut args = vec![src_format, src.to_str().unwrap(), "-o", b.to_str().unwrap()];
    args.extend_from_slice(extra);
    let fingerprint = imported(&args);
    export_hf(&b, &hf);
    for f in [
        "README.md",
        "benchmark.toml",
        "corpus/corpus-00000-of-00001.parquet",
        "queries/queries-00000-of-00001.parquet",
        "qrels/test-00000-of-00001.parquet",
        "dialogues/test-00000-of-00001.parquet",
    ] {
        assert!(hf.join(f).is_file(), "{f}");
    }
    let card = std::fs::read_to_string(hf.join("README.md")).unwrap();
    assert!(card.starts_with("---\npretty_name: "), "{card}");
    assert!(card.contains("task_categories:\n- \"text-retrieval\""));
    assert!(
        card.contains(&fingerprint),
        "the card names the data fingerprint"
    );
    let again = imported(&["auto", hf.to_str().unwrap(), "-o", back.to_str().unwrap()]);
    assert_eq!(again, fingerprint, "hf round trip of {}", src.display());
}

#[test]
fn a_benchmark_comes_back_from_its_dataset_folder_with_the_same_fingerprint() {
    round_trip("mtrag", &repo().join("tests/fixtures/formats/mtrag"), &[]);
    round_trip("beir", &repo().join("tests/fixtures/formats/beir"), &[]);
}

#[test]
fn mtrag_clapnq_comes_back_with_the_same_fingerprint() {
    let p = repo().join("../shared/data/mtrag");
    if !p.is_dir() {
        eprintln!("skipping: {} absent", p.display());
        return;
    }
    round_trip("mtrag", &p, &["--domain", "clapnq"]);
}

/// A native benchmark of two dialogues about leave; `planted` answers turn `d0::1` as well as
/// its gold does, but is not labelled.
fn leave_bench(root: &Path) {
    std::fs::create_dir_all(root).unwrap();
    std::fs::write(
        root.join("benchmark.toml"),
        "name = \"leave\"\nlanguage = \"en\"\n",
    )
    .unwrap();
    let mut corpus = String::new();
    let mut add = |id: &str, text: &str| {
        corpus.push_str(&serde_json::json!({"id": id, "title": "", "text": text}).to_string());
        corpus.push('\n');
    };
    add(
        "gold",
        "Annual leave for full time staff is fifteen working days each calendar year.",
    );
    add(
        "planted",
        "How many days of annual leave do staff get? Staff get fifteen days of annual leave.",
    );
    for i in 0..8 {
        add(
            &format!("f{i}"),
            &format!("Filler {i}: parking, canteen, leave requests and days off number {i}."),
        );
    }
    std::fs::write(root.join("corpus.jsonl"), corpus).unwrap();
    let mut dialogues = String::new();
    for d in 0..2 {
        let v = serde_json::json!({"id": format!("d{d}"), "turns": [
            {"id": format!("d{d}::1"), "user": "How many days of annual leave do staff get?",
             "gold": [{"passage_id": "gold", "grade": 1}]},
            {"id": format!("d{d}::2"), "user": "And who approves the leave requests?",
             "gold": [{"passage_id": "f1", "grade": 1}]}
        ]});
        dialogues.push_str(&v.to_string());
        dialogues.push('\n');
    }
    std::fs::write(root.join("dialogues.jsonl"), dialogues).unwrap();
}

fn lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn triplets_lose_a_planted_missing_gold_to_the_audit() {
    let tmp = tempfile::tempdir().unwrap();
    let b = tmp.path().join("leave");
    leave_bench(&b);
    let plain = tmp.path().join("plain.jsonl");
    let args = |out: &Path| {
        vec![
            "export".to_string(),
            b.display().to_string(),
            "--to".into(),
            "triplets".into(),
            "--query".into(),
            "last".into(),
            "--negatives".into(),
            "3".into(),
            "-o".into(),
            out.display().to_string(),
        ]
    };
    let out = mtr().args(args(&plain)).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("0 by the audit (no --audit given)"),
        "{}",
        stdout(&out)
    );
    let first = &lines(&plain)[0];
    assert_eq!(first["turn_id"], "d0::1");
    assert!(
        first["neg"][0]
            .as_str()
            .unwrap()
            .starts_with("How many days"),
        "plain BM25 mining makes the planted missing gold the first negative: {first}"
    );
    // the audit suggests it as a missing gold of d0::1 (the columns `mtr audit` writes)
    let audit = tmp.path().join("audit");
    std::fs::create_dir_all(&audit).unwrap();
    std::fs::write(
        audit.join("suggested_qrels.tsv"),
        "query-id\tcorpus-id\tscore\tvotes\tpicks\tinstead-of\tverdict\talignment-ratings\tsame-document\tshingle-overlap\n\
         d0::1\tplanted\t1\t5\t6\tgold\tprobable_missing_gold\ta=5,b=5\tfalse\t0.0400\n",
    )
    .unwrap();
    let cleaned = tmp.path().join("cleaned.jsonl");
    let mut a = args(&cleaned);
    a.extend([
        "--audit".into(),
        audit.display().to_string(),
        "--format".into(),
        "json".into(),
    ]);
    let out = mtr().args(a).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["removed"]["audit"], 1, "{report}");
    let first = &lines(&cleaned)[0];
    assert_eq!(first["neg"].as_array().unwrap().len(), 3);
    assert!(
        !first["neg"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().starts_with("How many days"))
    );
    // the other dialogue's turn keeps it: the audit spoke of d0::1 only
    assert!(
        lines(&cleaned)[2]["neg"][0]
            .as_str()
            .unwrap()
            .starts_with("How many days")
    );

    // --flat with splits: one file per split, whole dialogues, the trainers' three columns
    let flat = tmp.path().join("flat.jsonl");
    let mut a = args(&flat);
    a.extend([
        "--flat".into(),
        "--splits".into(),
        "train=0.5,dev=0.5".into(),
        "--seed".into(),
        "3".into(),
    ]);
    let out = mtr().args(a).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let train = lines(&tmp.path().join("flat.train.jsonl"));
    let dev = lines(&tmp.path().join("flat.dev.jsonl"));
    assert_eq!(
        (train.len(), dev.len()),
        (6, 6),
        "2 turns x 1 positive x 3 negatives a dialogue"
    );
    let keys: Vec<&String> = train[0].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["anchor", "positive", "negative"]);
}

#[test]
fn a_folder_that_is_not_a_dataset_and_wrong_columns_exit_2_naming_file_and_column() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("empty");
    std::fs::create_dir_all(empty.join("corpus")).unwrap();
    let out = mtr()
        .args(["import", "hf", empty.to_str().unwrap(), "-o"])
        .arg(tmp.path().join("x"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("not a Hugging Face dataset folder"),
        "{}",
        stderr(&out)
    );

    let b = tmp.path().join("leave");
    leave_bench(&b);
    let hf = tmp.path().join("hf");
    export_hf(&b, &hf);
    // a corpus config holding the qrels' columns
    let corpus = hf.join("corpus/corpus-00000-of-00001.parquet");
    std::fs::copy(hf.join("qrels/test-00000-of-00001.parquet"), &corpus).unwrap();
    let out = mtr()
        .args(["import", "auto", hf.to_str().unwrap(), "-o"])
        .arg(tmp.path().join("y"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let e = stderr(&out);
    assert!(
        e.contains("corpus-00000-of-00001.parquet") && e.contains("field `_id`"),
        "{e}"
    );
}

/// The path: a benchmark `mtr synth` made (on the fake server with the scripted
/// agents, as the main job makes one on the local model), audited (fake judges), published
/// with the audit's verdict on its card and read back with the same fingerprint, and its
/// triplets mined with BM25 and the configured (fake) embedder, cleaned by that audit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_synthesized_and_audited_benchmark_publishes_and_trains() {
    use mtr_llm::fake::FakeServer;
    let tmp = tempfile::tempdir().unwrap();
    let agents = mtr_pipeline::fake_agents::FakeAgents::default();
    let writer = FakeServer::builder()
        .respond(move |r| agents.reply(r))
        .start()
        .await
        .unwrap();
    let synth_cfg = super::synth::fake_config(tmp.path(), "s", writer.base_url());
    let bench = tmp.path().join("bench");
    let corpus = repo().join("corpora/en");
    let o = mtr()
        .arg("--config")
        .arg(&synth_cfg)
        .args(["--quiet", "synth", "--corpus"])
        .arg(&corpus)
        .arg("-o")
        .arg(&bench)
        .args(["--dialogues", "4", "--turns", "3", "--seed", "3"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let manifest = std::fs::read_to_string(bench.join("benchmark.toml")).unwrap();
    let fingerprint = manifest
        .lines()
        .find_map(|l| l.strip_prefix("fingerprint = "))
        .unwrap()
        .trim_matches('"')
        .to_string();

    let judges = FakeServer::builder()
        .respond(super::audit::hashed)
        .start()
        .await
        .unwrap();
    let audit_cfg = super::audit::config(tmp.path(), judges.base_url(), 0.0);
    let audit = tmp.path().join("audit");
    let o = mtr()
        .arg("--config")
        .arg(&audit_cfg)
        .args(["--quiet", "audit"])
        .arg(&bench)
        .arg("-o")
        .arg(&audit)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));

    let hf = tmp.path().join("hf");
    let o = mtr()
        .arg("export")
        .arg(&bench)
        .args(["--to", "hf", "--audit"])
        .arg(&audit)
        .arg("-o")
        .arg(&hf)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let card = std::fs::read_to_string(hf.join("README.md")).unwrap();
    for part in [
        "## Audit",
        "LLM-judge audit",
        "## Realism",
        "Synthesized from a corpus by `mtr synth`",
    ] {
        assert!(card.contains(part), "{part}: {card}");
    }
    let back = tmp.path().join("back");
    let again = imported(&["auto", hf.to_str().unwrap(), "-o", back.to_str().unwrap()]);
    assert_eq!(again, fingerprint);

    let triplets = tmp.path().join("t.jsonl");
    let o = mtr()
        .arg("--config")
        .arg(&synth_cfg)
        .arg("export")
        .arg(&bench)
        .args([
            "--to",
            "triplets",
            "--negatives",
            "3",
            "--format",
            "json",
            "--audit",
        ])
        .arg(&audit)
        .arg("-o")
        .arg(&triplets)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let retrievers = report["retrievers"].to_string();
    assert!(
        retrievers.contains("bm25") && retrievers.contains("dense"),
        "{report}"
    );
    assert!(report["turns"].as_u64().unwrap() > 0, "{report}");
    for l in lines(&triplets) {
        let pos = l["pos"].as_array().unwrap();
        assert!(
            l["neg"]
                .as_array()
                .unwrap()
                .iter()
                .all(|n| !pos.contains(n)),
            "{l}"
        );
    }
}

/// `--dense` mines with the embedded local embedder (multilingual-e5-small) when no embedder is
/// configured, on the benchmark the main job synthesized (tests/fixtures/main-job); without it
/// the negatives are BM25's alone.
#[test]
fn dense_negatives_on_the_embedded_embedder() {
    if !super::audit::local_model_installed("qwen0.5b") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let b = tmp.path().join("bench");
    std::fs::create_dir_all(&b).unwrap();
    for f in [
        "benchmark.toml",
        "corpus.jsonl",
        "dialogues.jsonl",
        "qrels.tsv",
    ] {
        std::fs::copy(
            repo().join("tests/fixtures/main-job/bench-en").join(f),
            b.join(f),
        )
        .unwrap();
    }
    let cfg = tmp.path().join("mtr.toml");
    std::fs::write(
        &cfg,
        format!(
            "[llm]\ncache = \"{}\"\n",
            tmp.path().join("cache.sqlite").display()
        ),
    )
    .unwrap();
    let export = |extra: &[&str], out: &str| {
        let o = mtr()
            .arg("--config")
            .arg(&cfg)
            .args(["--quiet", "export"])
            .arg(&b)
            .args([
                "--to",
                "triplets",
                "--negatives",
                "3",
                "--format",
                "json",
                "-o",
            ])
            .arg(tmp.path().join(out))
            .args(extra)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    let plain = export(&[], "bm25.jsonl");
    assert_eq!(plain["retrievers"], serde_json::json!(["bm25"]), "{plain}");
    let dense = export(&["--dense"], "dense.jsonl");
    assert_eq!(
        dense["retrievers"],
        serde_json::json!(["bm25", "dense:multilingual-e5-small"]),
        "{dense}"
    );
    assert!(dense["turns"].as_u64().unwrap() > 0, "{dense}");
    for l in lines(&tmp.path().join("dense.jsonl")) {
        let (pos, neg) = (l["pos"].as_array().unwrap(), l["neg"].as_array().unwrap());
        assert!(
            !neg.is_empty() && neg.iter().all(|n| !pos.contains(n)),
            "{l}"
        );
    }
}
