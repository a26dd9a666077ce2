//! `--export-batch` and `mtr cache import` end to end on MTRAG data (issue 26): an audit's
//! calls are exported, answered by a stand-in for `vllm run-batch`
//! (`vllm_run_batch_standin.py`, which posts each body to the fake OpenAI-compatible server and
//! writes vLLM's output lines), imported, and the audit is rerun with its endpoint unreachable:
//! it makes no call and writes the summary, items and suggestions a direct audit against the
//! same server writes. The audit judges in dependent rounds (suggested passages are verified
//! after completeness is judged), so a rerun after an import may export a second round.
//! Skips when ../shared is absent or python3 is missing.

use std::path::{Path, PathBuf};

use mtr_llm::fake::FakeServer;
use serde_json::Value;

use crate::audit::{config, hashed, import_clapnq, mtr, read};

fn standin(input: &Path, output: &Path, base_url: &str) {
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/vllm_run_batch_standin.py");
    let o = std::process::Command::new("python3")
        .arg(script)
        .arg("-i")
        .arg(input)
        .arg("-o")
        .arg(output)
        .args(["--base-url", base_url])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn python3() -> bool {
    let ok = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipping: python3 absent");
    }
    ok
}

/// The audit's outputs without what differs between a direct run and one from imported
/// answers (costs, cache hits, times).
fn comparable(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|k, _| {
                !(k.contains("cost")
                    || k.contains("cache")
                    || k.contains("elapsed")
                    || k.contains("seconds")
                    || k.contains("spent")
                    || k.contains("created")
                    || k.contains("started")
                    || k.contains("finished")
                    || k == "ledger"
                    || k == "calls")
            });
            m.values_mut().for_each(comparable);
        }
        Value::Array(a) => a.iter_mut().for_each(comparable),
        _ => {}
    }
}

fn outputs(out: &Path) -> (Value, Vec<Value>, Vec<u8>) {
    let mut summary: Value = serde_json::from_slice(&read(&out.join("summary.json"))).unwrap();
    comparable(&mut summary);
    let items = String::from_utf8(read(&out.join("items.jsonl")))
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            comparable(&mut v);
            v
        })
        .collect();
    let suggestions = std::fs::read(out.join("suggested_qrels.tsv")).unwrap_or_default();
    (summary, items, suggestions)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_audit_exported_answered_by_a_vllm_standin_and_imported_equals_a_direct_one() {
    let tmp = tempfile::tempdir().unwrap();
    if !python3() {
        return;
    }
    let Some(bench) = import_clapnq(tmp.path()) else {
        return;
    };
    let fake = FakeServer::builder().respond(hashed).start().await.unwrap();
    let dims = ["--sample", "2", "--dimensions", "alignment,completeness"];
    // the direct audit, with its own cache
    let direct_dir = tmp.path().join("direct");
    std::fs::create_dir_all(&direct_dir).unwrap();
    let direct_cfg = config(&direct_dir, fake.base_url(), 1.0);
    let direct = tmp.path().join("audit-direct");
    let o = mtr()
        .arg("--config")
        .arg(&direct_cfg)
        .args(["--quiet", "audit"])
        .arg(&bench)
        .arg("-o")
        .arg(&direct)
        .args(dims)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let direct_calls = fake.chat_calls();
    assert!(direct_calls > 0);

    // the same audit through batch files, with a fresh cache
    let cfg = config(tmp.path(), fake.base_url(), 1.0);
    let out = tmp.path().join("audit");
    let audit = |cfg: &Path, extra: &[&str]| {
        mtr()
            .arg("--config")
            .arg(cfg)
            .args(["--quiet", "audit"])
            .arg(&bench)
            .arg("-o")
            .arg(&out)
            .args(dims)
            .args(extra)
            .output()
            .unwrap()
    };
    let import = |file: &Path| {
        mtr()
            .arg("--config")
            .arg(&cfg)
            .args(["--quiet", "cache", "import"])
            .arg(file)
            .output()
            .unwrap()
    };
    let mut rounds = 0;
    let mut exported_total = 0u64;
    loop {
        let file = tmp.path().join(format!("requests-{rounds}.jsonl"));
        let before = fake.chat_calls();
        let o = audit(&cfg, &["--export-batch", file.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert_eq!(fake.chat_calls(), before, "an export calls nothing: {err}");
        if o.status.code() == Some(0) {
            assert!(err.contains("nothing to export"), "{err}");
            assert!(!file.exists());
            break;
        }
        assert_eq!(o.status.code(), Some(3), "{err}");
        let lines = std::fs::read_to_string(&file).unwrap();
        let n = lines.lines().count() as u64;
        assert!(
            err.contains(&format!("exported {n} requests")) && err.contains("judge-a-model"),
            "{err}"
        );
        assert!(
            err.contains("mtr cache import") && err.contains("second round"),
            "{err}"
        );
        let first: Value = serde_json::from_str(lines.lines().next().unwrap()).unwrap();
        assert_eq!(first["url"], "/v1/chat/completions");
        assert!(first["body"]["response_format"].is_object(), "{first}");
        exported_total += n;
        let answers = tmp.path().join(format!("answers-{rounds}.jsonl"));
        standin(&file, &answers, fake.base_url());
        let o = import(&answers);
        let text = String::from_utf8_lossy(&o.stdout).to_string();
        assert!(
            o.status.success(),
            "{text}{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(text.contains(&format!("{n} answers stored")), "{text}");
        // imported twice: nothing changes
        let o = import(&answers);
        let text = String::from_utf8_lossy(&o.stdout).to_string();
        assert!(o.status.success());
        assert!(
            text.contains(&format!("0 answers stored, {n} already in the cache")),
            "{text}"
        );
        rounds += 1;
        assert!(rounds < 5, "the export does not converge");
    }
    assert!(
        rounds >= 2,
        "verification after completeness is a second round ({rounds})"
    );
    assert_eq!(
        exported_total, direct_calls,
        "the same work as the direct calls"
    );
    // the endpoint unreachable: the audit still completes, from the cache alone
    let dead = tmp.path().join("dead");
    std::fs::create_dir_all(&dead).unwrap();
    let text = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace(fake.base_url(), "http://127.0.0.1:9/v1");
    let dead_cfg = dead.join("mtr.toml");
    std::fs::write(&dead_cfg, text).unwrap();
    let calls = fake.chat_calls();
    let o = audit(&dead_cfg, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(fake.chat_calls(), calls);
    let (s1, i1, q1) = outputs(&direct);
    let (s2, i2, q2) = outputs(&out);
    // (the configuration differs in its endpoint's URL, so its fingerprint does)
    let differ: Vec<&String> = s1
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, v)| s2.get(k.as_str()) != Some(v))
        .map(|(k, _)| k)
        .collect();
    assert_eq!(differ, ["fingerprint"], "summaries differ");
    assert_eq!(s1["fingerprint"]["data"], s2["fingerprint"]["data"]);
    assert_eq!(i1, i2);
    assert_eq!(q1, q2);
    assert!(!i1.is_empty());
}

/// Two exports of the same audit, each from a fresh cache, are the same bytes: the judges'
/// calls finish in another order every run, and the file does not show it (issue 44).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_export_is_the_same_file_every_run() {
    let tmp = tempfile::tempdir().unwrap();
    let bench = tmp.path().join("bench");
    let o = mtr()
        .args(["--quiet", "import", "mtrag"])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mtrag-empty-passages"))
        .arg("-o")
        .arg(&bench)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let fake = FakeServer::builder().respond(hashed).start().await.unwrap();
    let export = |run: &str| {
        let dir = tmp.path().join(run);
        std::fs::create_dir_all(&dir).unwrap();
        let cfg = config(&dir, fake.base_url(), 1.0);
        let file = dir.join("requests.jsonl");
        let o = mtr()
            .arg("--config")
            .arg(&cfg)
            .args(["--quiet", "audit"])
            .arg(&bench)
            .arg("-o")
            .arg(dir.join("audit"))
            .args(["--sample", "2", "--dimensions", "alignment,completeness"])
            .arg("--export-batch")
            .arg(&file)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(3), "{err}");
        std::fs::read(&file).unwrap()
    };
    let (one, two) = (export("one"), export("two"));
    assert!(one.iter().filter(|b| **b == b'\n').count() > 1);
    assert!(one == two, "two exports of one audit differ");
}

/// The Python of the Ray venv (`examples/ray/install.sh`), if Ray is installed.
fn ray_python() -> Option<PathBuf> {
    let venv = std::env::var_os("MTR_RAY_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| mtr_core::dirs::Dirs::from_env().data.join("ray-venv"));
    let py = venv.join("bin/python");
    if py.is_file() {
        Some(py)
    } else {
        eprintln!(
            "skipping: Ray is not installed in {} (examples/ray/install.sh)",
            venv.display()
        );
        None
    }
}

/// `examples/ray/run_batch.py` answers an export on a local Ray instance with two workers
/// against the fake server, and its output imports: every request answered, none failed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ray_example_answers_an_export_that_imports() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(py) = ray_python() else {
        return;
    };
    let Some(bench) = import_clapnq(tmp.path()) else {
        return;
    };
    let fake = FakeServer::builder().respond(hashed).start().await.unwrap();
    let cfg = config(tmp.path(), fake.base_url(), 0.0);
    let file = tmp.path().join("requests.jsonl");
    let o = mtr()
        .arg("--config")
        .arg(&cfg)
        .args(["--quiet", "audit"])
        .arg(&bench)
        .arg("-o")
        .arg(tmp.path().join("audit"))
        .args(["--sample", "1", "--dimensions", "alignment"])
        .arg("--export-batch")
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let n = std::fs::read_to_string(&file).unwrap().lines().count();
    let answers = tmp.path().join("answers.jsonl");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/ray/run_batch.py");
    let o = std::process::Command::new(py)
        .arg(script)
        .arg("-i")
        .arg(&file)
        .arg("-o")
        .arg(&answers)
        .args([
            "--base-url",
            fake.base_url(),
            "--num-cpus",
            "2",
            "--concurrency",
            "2",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(fake.chat_calls() as usize, n);
    let o = mtr()
        .arg("--config")
        .arg(&cfg)
        .args(["--quiet", "cache", "import"])
        .arg(&answers)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        text.contains(&format!("{n} lines, {n} answers stored")),
        "{text}"
    );
    assert!(text.contains("0 failed, 0 unparsable"), "{text}");
}
