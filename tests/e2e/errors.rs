//! A user's error raised in a lower crate (mtr-llm under mtr-audit or mtr-pipeline) keeps its
//! kind up to the binary: every command that can meet it exits 2, and the message names what
//! the user must fix (an environment variable, not a config file that does not hold it).

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
