//! The command line itself: help, unknown commands, config.

use assert_cmd::Command;

fn mtr() -> Command {
    Command::cargo_bin("mtr").unwrap()
}

#[test]
fn help_lists_every_command() {
    let out = mtr().arg("--help").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for c in [
        "import", "export", "validate", "stats", "eval", "index", "retrieve", "audit", "synth",
        "bench", "report",
    ] {
        assert!(text.contains(c), "help lacks {c}: {text}");
    }
}

#[test]
fn config_show_masks_secrets() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("mtr.toml"),
        "[llm]\napi_key = \"sk-very-secret\"\n",
    )
    .unwrap();
    let out = mtr()
        .current_dir(dir.path())
        .args(["config", "show"])
        .env("MTR_AUDIT__SAMPLE", "5")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.contains("sk-very-secret"), "{text}");
    assert!(text.contains("sample = 5"), "{text}");
}
