//! `mtr stats --realism`: the realism tables of a benchmark, a second one beside it, JSON.

use std::path::PathBuf;

use assert_cmd::Command;

fn mtr() -> Command {
    Command::cargo_bin("mtr").unwrap()
}

fn mini_mtrag(dir: &std::path::Path) -> PathBuf {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/formats/mtrag");
    let out = dir.join("mini");
    let o = mtr()
        .args(["import", "mtrag"])
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out
}

#[test]
fn realism_tables_compare_and_json() {
    let tmp = tempfile::tempdir().unwrap();
    let b = mini_mtrag(tmp.path());
    let o = mtr()
        .args(["stats", "--realism"])
        .arg(&b)
        .arg("--compare")
        .arg(&b)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    for want in [
        "### Language `en`",
        "| measure | mtrag | mtrag |",
        "| dialogues / turns | 2 / 5 | 2 / 5 |",
        "history gap (recall@10 whole - alone)",
        "follow-ups referring back",
        "turns switching topic",
        "| 0-5 |",
        "cluster bootstrap over dialogues",
    ] {
        assert!(text.contains(want), "`{want}` missing from:\n{text}");
    }
    let o = mtr()
        .args(["stats", "--realism", "--format", "json"])
        .arg(&b)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let en = &v[0]["languages"][0];
    assert_eq!(en["language"], "en");
    assert_eq!(en["turns"], 5);
    assert_eq!(en["length"]["unit"], "words");
    assert!(en["history_gap"]["gap"]["estimate"].is_number(), "{en}");
    // --compare needs --realism
    let o = mtr()
        .arg("stats")
        .arg(&b)
        .arg("--compare")
        .arg(&b)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}
