//! A user's error raised in a lower crate keeps its kind up to the binary: every command that
//! can meet it exits 2, and the message names what the user must fix (the file, line and
//! field; an environment variable, not a config file that does not hold it). One test per
//! boundary: mtr-llm under mtr-audit and mtr-pipeline (a bad setting, a local model that is
//! not installed), mtr-core under mtr-audit, mtr-retrieve and mtr-bench (a bad corpus record),
//! mtr-metrics and mtr-core under eval and bench (a bad run line).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use assert_cmd::cargo::CommandCargoExt;

/// `mtr` in `dir`, with no config file to find and an empty model home.
fn mtr(dir: &Path) -> Command {
    let mut c = Command::cargo_bin("mtr").unwrap();
    c.current_dir(dir)
        .env("MTR_HOME", dir.join("home"))
        .env("XDG_CONFIG_HOME", dir.join("xdg"))
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .env_remove("MTR_LOCAL_USE_SERVER")
        .arg("--quiet");
    c
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A native benchmark imported from the small MTRAG fixture.
fn bench(dir: &Path) -> PathBuf {
    let b = dir.join("bench");
    let o = mtr(dir)
        .args(["import", "mtrag"])
        .arg(root().join("tests/fixtures/mtrag-empty-passages"))
        .arg("-o")
        .arg(&b)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    b
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The commands that open the LLM client, each as its arguments after `mtr`.
fn commands(dir: &Path) -> Vec<Vec<String>> {
    let s = |p: &Path| p.display().to_string();
    let b = bench(dir);
    vec![
        vec![
            "audit".into(),
            s(&b),
            "-o".into(),
            s(&dir.join("audit")),
            "--dry-run".into(),
        ],
        vec![
            "synth".into(),
            "--corpus".into(),
            s(&root().join("corpora/en")),
            "-o".into(),
            s(&dir.join("synth")),
            "--dialogues".into(),
            "2".into(),
            "--dry-run".into(),
        ],
        vec!["local".into(), "ask".into(), "--dry-run".into(), "q".into()],
    ]
}

fn exits_2(o: &Output, args: &[String]) -> String {
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "mtr {}: {err}", args.join(" "));
    err
}

#[test]
fn a_bad_local_use_server_names_the_variable_in_every_command() {
    let tmp = tempfile::tempdir().unwrap();
    for args in commands(tmp.path()) {
        let o = mtr(tmp.path())
            .env("MTR_LOCAL_USE_SERVER", "gen")
            .args(&args)
            .output()
            .unwrap();
        let err = exits_2(&o, &args);
        assert!(err.contains("MTR_LOCAL_USE_SERVER"), "{err}");
        assert!(!err.contains("mtr.toml"), "{err}");
    }
}

#[test]
fn an_llm_config_error_exits_2_in_every_command() {
    // (a synthesis dry run plans without prices where the client does not open)
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("bad.toml");
    std::fs::write(
        &cfg,
        concat!(
            "[[llm.endpoints]]\nname = \"here\"\nbase_url = \"http://127.0.0.1:9/v1\"\n",
            "model = \"m\"\n[llm.roles]\njudges = [\"nowhere\"]\ngenerator = [\"nowhere\"]\n",
        ),
    )
    .unwrap();
    let commands = commands(tmp.path());
    for args in commands.iter().filter(|a| a[0] != "synth") {
        let o = mtr(tmp.path())
            .arg("--config")
            .arg(&cfg)
            .args(args)
            .output()
            .unwrap();
        let err = exits_2(&o, args);
        assert!(err.contains("nowhere") && err.contains("bad.toml"), "{err}");
    }
}

/// Runs `mtr ARGS` in `dir` and returns its stderr, asserting exit 2.
fn fails_2(dir: &Path, args: &[String]) -> String {
    let o = mtr(dir).args(args).output().unwrap();
    exits_2(&o, args)
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

#[test]
fn a_bad_corpus_record_names_its_line_and_field_in_every_command() {
    let tmp = tempfile::tempdir().unwrap();
    let b = bench(tmp.path());
    let corpus = b.join("corpus.jsonl");
    let text = std::fs::read_to_string(&corpus).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut record: serde_json::Value = serde_json::from_str(&lines[1]).unwrap();
    record.as_object_mut().unwrap().remove("text");
    lines[1] = record.to_string();
    std::fs::write(&corpus, lines.join("\n") + "\n").unwrap();
    // an endpoint the dry run never calls, so that the audit opens its client
    let cfg = tmp.path().join("mtr-endpoint.toml");
    std::fs::write(
        &cfg,
        concat!(
            "[[llm.endpoints]]\nname = \"here\"\nbase_url = \"http://127.0.0.1:9/v1\"\n",
            "model = \"m\"\n[llm.roles]\njudges = [\"here\"]\ngenerator = [\"here\"]\n",
        ),
    )
    .unwrap();
    let s = |p: &Path| p.display().to_string();
    let commands = [
        // mtr-core under mtr-audit (the dry run reads the passages it would show)
        strings(&[
            "--config",
            &s(&cfg),
            "audit",
            &s(&b),
            "-o",
            &s(&tmp.path().join("a")),
            "--dry-run",
        ]),
        // under mtr-retrieve
        vec!["index".into(), s(&b), "-o".into(), s(&tmp.path().join("i"))],
        // under mtr-retrieve and mtr-bench
        strings(&[
            "bench",
            &s(&b),
            "-o",
            &s(&tmp.path().join("b")),
            "--retriever",
            "bm25",
        ]),
    ];
    for args in commands {
        let err = fails_2(tmp.path(), &args);
        assert!(
            err.contains("corpus.jsonl:2") && err.contains("field `text`"),
            "mtr {}: {err}",
            args.join(" ")
        );
    }
}

#[test]
fn a_bad_run_line_names_its_line_in_eval_and_bench() {
    let tmp = tempfile::tempdir().unwrap();
    let b = bench(tmp.path());
    let qid = std::fs::read_to_string(b.join("qrels.tsv"))
        .unwrap()
        .lines()
        .find_map(|l| l.split_whitespace().next().map(str::to_string))
        .unwrap();
    let run = tmp.path().join("bad.run");
    std::fs::write(
        &run,
        format!("{qid} Q0 d1 1 2.5 sys\n{qid} Q0 d2 2 not-a-score sys\n"),
    )
    .unwrap();
    let s = |p: &Path| p.display().to_string();
    let commands = [
        // mtr-metrics under eval
        strings(&["eval", &s(&b.join("qrels.tsv")), &s(&run)]),
        // the external runs of bench
        strings(&[
            "bench",
            &s(&b),
            "-o",
            &s(&tmp.path().join("b")),
            "--run",
            &s(&run),
        ]),
    ];
    for args in commands {
        let err = fails_2(tmp.path(), &args);
        assert!(err.contains("bad.run:2"), "mtr {}: {err}", args.join(" "));
    }
}

#[test]
fn a_local_model_that_is_not_installed_exits_2_in_audit_and_synth() {
    // no config file and an empty model home: the embedded default is what the commands
    // open, and its set-up (in mtr-llm) is missing
    let tmp = tempfile::tempdir().unwrap();
    let s = |p: &Path| p.display().to_string();
    let b = bench(tmp.path());
    let commands = [
        strings(&["audit", &s(&b), "-o", &s(&tmp.path().join("a"))]),
        strings(&[
            "synth",
            "--corpus",
            &s(&root().join("corpora/en")),
            "-o",
            &s(&tmp.path().join("s")),
            "--dialogues",
            "2",
        ]),
    ];
    for args in commands {
        let err = fails_2(tmp.path(), &args);
        assert!(
            err.contains("not installed") && err.contains("mtr local install"),
            "mtr {}: {err}",
            args.join(" ")
        );
    }
}
