//! `mtr review` end to end, on a small generated benchmark audited by fake judges (the fake
//! OpenAI-compatible server started in this test process): the TSV modes (`--print-sample`,
//! `--import`, `--export`), and the server over raw HTTP: the token (403), the body limit
//! (413), a malformed request writing nothing, two servers writing 500 labels each to one
//! file, and a server killed with SIGKILL mid-stream leaving a file that parses.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command as StdCommand, Stdio};

use mtr_core::{Dialogue, Gold, Manifest, Passage, Tags, Turn};
use mtr_llm::fake::FakeServer;

use crate::audit::{config, hashed, mtr};

/// A native benchmark of 6 dialogues x 3 turns over 40 passages.
pub(crate) fn write_bench(dir: &Path) -> PathBuf {
    let root = dir.join("bench");
    let topics = ["river", "volcano", "glacier", "desert", "forest", "coral"];
    let mut passages = Vec::new();
    for (t, topic) in topics.iter().enumerate() {
        for k in 0..6 {
            passages.push(Passage {
                id: format!("p{t}-{k}"),
                title: format!("The {topic}, part {k}"),
                text: format!(
                    "The {topic} is described here in part {k}. A {topic} has features number {k} and {}, studied by many {topic} researchers over the years.",
                    k + 10
                ),
                doc_id: Some(format!("doc-{topic}")),
                meta: Default::default(),
            });
        }
    }
    for k in 0..4 {
        passages.push(Passage {
            id: format!("x{k}"),
            title: format!("Unrelated {k}"),
            text: format!("Something unrelated number {k} about cooking pasta and bread."),
            doc_id: None,
            meta: Default::default(),
        });
    }
    let dialogues: Vec<Dialogue> = topics
        .iter()
        .enumerate()
        .map(|(t, topic)| Dialogue {
            id: format!("d{t}"),
            turns: (0..3)
                .map(|k| Turn {
                    id: format!("d{t}::{}", k + 1),
                    user: format!("What are the features of the {topic} in part {k}?"),
                    rewrite: Some(format!("{topic} features part {k}")),
                    answer: Some(format!("The {topic} has features {k} and {}.", k + 10)),
                    gold: vec![Gold {
                        passage_id: format!("p{t}-{k}"),
                        grade: 1,
                    }],
                    tags: Tags::default(),
                })
                .collect(),
            meta: Default::default(),
        })
        .collect();
    let manifest = Manifest {
        name: "review-fixture".into(),
        language: "en".into(),
        source: "test".into(),
        ..Manifest::default()
    };
    mtr_core::benchmark::write_benchmark(&root, manifest, &dialogues, passages.into_iter().map(Ok))
        .unwrap();
    root
}

/// A fake-judged audit of [`write_bench`]'s benchmark: `(bench, audit_dir)`.
pub(crate) async fn fixture_audit(dir: &Path) -> (PathBuf, PathBuf) {
    let bench = write_bench(dir);
    let fake = FakeServer::builder().respond(hashed).start().await.unwrap();
    let cfg = config(dir, fake.base_url(), 0.0);
    let out = dir.join("audit");
    let o = mtr()
        .arg("--config")
        .arg(&cfg)
        .args(["--quiet", "audit"])
        .arg(&bench)
        .arg("-o")
        .arg(&out)
        .args(["--trials", "2", "--resamples", "50"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    (bench, out)
}

fn lines(p: &Path) -> Vec<String> {
    std::fs::read_to_string(p)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn print_sample_import_and_export() {
    let tmp = tempfile::tempdir().unwrap();
    let (_bench, audit) = fixture_audit(tmp.path()).await;
    let review = |args: &[&str]| {
        mtr()
            .arg("--quiet")
            .arg("review")
            .arg(&audit)
            .args(args)
            .output()
            .unwrap()
    };

    let o = review(&["--print-sample", "--sample", "4"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let sample = String::from_utf8(o.stdout).unwrap();
    let rows: Vec<Vec<&str>> = sample.lines().map(|l| l.split('\t').collect()).collect();
    assert_eq!(rows[0], ["item", "dimension", "turn_id", "passage_id"]);
    assert_eq!(rows.len(), 1 + 16, "4 per dimension: {sample}");
    for r in &rows[1..] {
        assert_eq!(r[0], format!("{}|{}|{}", r[1], r[2], r[3]));
    }
    // drawn once: another size or seed later prints the same sample
    let again = review(&["--print-sample", "--sample", "9", "--seed", "3"]);
    assert_eq!(String::from_utf8(again.stdout).unwrap(), sample);
    assert!(audit.join("review/sample.jsonl").is_file());

    // a TSV with one bad line imports nothing, and names file, line and field
    let labels_file = audit.join("review/labels.jsonl");
    let item_of = |dim: &str| rows[1..].iter().find(|r| r[1] == dim).unwrap()[0].to_string();
    let (a, q) = (item_of("alignment"), item_of("quality"));
    let bad = tmp.path().join("bad.tsv");
    std::fs::write(&bad, format!("{a}\t4\n{q}\t9\n")).unwrap();
    let o = review(&["--import", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("{}:2: field `label`", bad.display())),
        "{err}"
    );
    assert!(lines(&labels_file).is_empty(), "nothing written");

    let good = tmp.path().join("good.tsv");
    std::fs::write(
        &good,
        format!("item\tlabel\treviewer\n{a}\t4\n{q}\t2\tbob\n"),
    )
    .unwrap();
    let o = review(&["--import", good.to_str().unwrap(), "--reviewer", "ann"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(lines(&labels_file).len(), 2);
    let eff = mtr_audit::review_queue::effective_labels(&audit).unwrap();
    assert_eq!(eff[&a]["ann"], "4");
    assert_eq!(eff[&q]["bob"], "2");

    let out = tmp.path().join("out.tsv");
    let o = review(&["--export", out.to_str().unwrap()]);
    assert!(o.status.success());
    let mut want = vec![format!("{a}\t4\tann"), format!("{q}\t2\tbob")];
    want.sort();
    assert_eq!(
        lines(&out),
        [vec!["item\tlabel\treviewer".to_string()], want].concat()
    );

    // another audit's labels file is refused (exit 2) by every mode
    let text = std::fs::read_to_string(&labels_file).unwrap();
    std::fs::write(
        &labels_file,
        text.replacen("\"fingerprint\":\"", "\"fingerprint\":\"0", 1),
    )
    .unwrap();
    let o = review(&["--export", "-"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("another audit"));
}

/// A running `mtr review` server.
pub(crate) struct Server {
    pub child: Child,
    pub port: u16,
    pub token: String,
}

impl Server {
    /// The page's URL, as the server printed it.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/?token={}", self.port, self.token)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn start_server(audit: &Path, bench: Option<&Path>, reviewer: &str) -> Server {
    start_server_with(audit, bench, reviewer, &[])
}

/// [`start_server`] with more arguments for `mtr review`.
pub(crate) fn start_server_with(
    audit: &Path,
    bench: Option<&Path>,
    reviewer: &str,
    more: &[&str],
) -> Server {
    let child = StdCommand::new(assert_cmd::cargo::cargo_bin("mtr"))
        .arg("--quiet")
        .arg("review")
        .arg(audit)
        .args(
            bench
                .map(|b| ["--bench".as_ref(), b.as_os_str()])
                .into_iter()
                .flatten(),
        )
        .args(["--no-browser", "--reviewer", reviewer, "--sample", "10"])
        .args(more)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    // held by a Server at once, so that it is killed and waited for however the test ends
    let mut srv = Server {
        child,
        port: 0,
        token: String::new(),
    };
    let mut out = BufReader::new(srv.child.stdout.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "mtr review ended before printing its URL"
        );
        if let Some(url) = line.trim().strip_prefix("open ") {
            let rest = url.strip_prefix("http://127.0.0.1:").unwrap();
            let (port, token) = rest.split_once("/?token=").unwrap();
            srv.port = port.parse().unwrap();
            srv.token = token.to_string();
            return srv;
        }
    }
}

/// One HTTP/1.1 request: `(status, body)`.
pub(crate) fn http(
    port: u16,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&str>,
) -> (u16, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let body = body.unwrap_or("");
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(t) = token {
        req.push_str(&format!("x-mtr-token: {t}\r\n"));
    }
    if method == "POST" {
        req.push_str("Content-Type: application/json\r\n");
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).unwrap();
    s.write_all(body.as_bytes()).unwrap();
    let mut resp = Vec::new();
    let _ = s.read_to_end(&mut resp);
    let text = String::from_utf8_lossy(&resp).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

fn get_json(srv: &Server, path: &str) -> serde_json::Value {
    let (status, body) = http(srv.port, "GET", path, Some(&srv.token), None);
    assert_eq!(status, 200, "{path}: {body}");
    serde_json::from_str(&body).unwrap()
}

/// A valid label for the card at `index` of the sample.
fn label_body(srv: &Server, index: usize, label_no: usize) -> String {
    let card = get_json(srv, &format!("/api/card?queue=sample&index={index}"));
    let choices = card["card"]["choices"].as_array().unwrap();
    let choice = &choices[label_no % choices.len()];
    serde_json::json!({
        "queue": "sample", "index": index, "item": card["card"]["item"],
        "label": choice["label"], "seconds": 1.25, "note": ""
    })
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_checks_token_and_body_and_loses_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let (bench, audit) = fixture_audit(tmp.path()).await;
    let labels_file = audit.join("review/labels.jsonl");

    // the benchmark is found beside the audit folder (summary.json records its folder's name);
    // where it is not, the cards cannot be shown: a user error that names --bench
    let moved = tmp.path().join("elsewhere");
    std::fs::rename(&bench, &moved).unwrap();
    let o = mtr()
        .args(["--quiet", "review"])
        .arg(&audit)
        .arg("--no-browser")
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("--bench"));
    std::fs::rename(&moved, &bench).unwrap();

    let a = start_server(&audit, None, "ann");
    // the token, on every request
    for token in [None, Some("bad"), Some(&a.token[..a.token.len() - 1])] {
        for path in [
            "/",
            "/api/state",
            "/api/summary",
            "/api/card?queue=sample&index=0",
        ] {
            assert_eq!(
                http(a.port, "GET", path, token, None).0,
                403,
                "{path} {token:?}"
            );
        }
        let body = label_body(&a, 0, 0);
        assert_eq!(
            http(a.port, "POST", "/api/label", token, Some(&body)).0,
            403
        );
    }
    let (status, page) = http(a.port, "GET", &format!("/?token={}", a.token), None, None);
    assert_eq!(status, 200);
    assert!(
        page.contains("Random sample") && !page.contains("http://") && !page.contains("https://"),
        "no CDN"
    );
    let state = get_json(&a, "/api/state");
    let total = state["queues"]["sample"]["total"].as_u64().unwrap() as usize;
    assert!(total >= 10, "{state}");

    // an oversized body: 413; malformed or mismatched requests: refused, nothing written
    let big = format!(
        "{{\"queue\":\"sample\",\"index\":0,\"item\":\"x\",\"label\":\"1\",\"note\":\"{}\"}}",
        "a".repeat(64 * 1024)
    );
    assert_eq!(
        http(a.port, "POST", "/api/label", Some(&a.token), Some(&big)).0,
        413
    );
    let card0 = get_json(&a, "/api/card?queue=sample&index=0");
    let item0 = card0["card"]["item"].as_str().unwrap().to_string();
    for body in [
        "{not json".to_string(),
        serde_json::json!({"queue": "sample", "index": 1, "item": item0, "label": "1"}).to_string(),
        serde_json::json!({"queue": "sample", "index": 0, "item": item0, "label": "bogus"}).to_string(),
        serde_json::json!({"queue": "nope", "index": 0, "item": item0, "label": "1"}).to_string(),
        serde_json::json!({"queue": "sample", "index": 0, "item": item0, "label": "1", "file": "/etc/passwd"}).to_string(),
    ] {
        let (status, _) = http(a.port, "POST", "/api/label", Some(&a.token), Some(&body));
        assert!((400..500).contains(&status), "{status} for {body}");
    }
    assert!(
        lines(&labels_file).is_empty(),
        "a malformed request never writes a label"
    );

    // two writers (two processes) x 500 labels: 1,000 lines
    let b = start_server(&audit, Some(&bench), "bob");
    let bodies =
        |srv: &Server| -> Vec<String> { (0..total).map(|i| label_body(srv, i, i)).collect() };
    let (ba, bb) = (bodies(&a), bodies(&b));
    let post_all = |port: u16, token: String, bodies: Vec<String>| {
        std::thread::spawn(move || {
            for i in 0..500 {
                let (status, body) = http(
                    port,
                    "POST",
                    "/api/label",
                    Some(&token),
                    Some(&bodies[i % bodies.len()]),
                );
                assert_eq!(status, 200, "{body}");
            }
        })
    };
    let ta = post_all(a.port, a.token.clone(), ba);
    let tb = post_all(b.port, b.token.clone(), bb);
    ta.join().unwrap();
    tb.join().unwrap();
    assert_eq!(lines(&labels_file).len(), 1000);
    let eff = mtr_audit::review_queue::effective_labels(&audit).unwrap();
    assert_eq!(eff.len(), total.min(500));
    assert!(
        eff.values()
            .all(|r| r.len() == 2 && r.contains_key("ann") && r.contains_key("bob"))
    );
    let state = get_json(&a, "/api/state");
    assert_eq!(
        state["queues"]["sample"]["labelled"].as_u64().unwrap() as usize,
        total
    );
    // the Summary tab shows the Reviewed figures of `mtr report` once labels exist
    let summary = get_json(&a, "/api/summary");
    let dims = summary["estimates"]["dimensions"].as_object().unwrap();
    assert!(!dims.is_empty(), "{summary}");
    assert!(dims.values().all(|d| d["ppi"]["n"].as_u64().unwrap() > 0));
    assert!(summary["estimates"]["publish"].as_str().unwrap().len() > 10);
    drop(b);

    // a writer killed with SIGKILL mid-stream: the file parses, every acknowledged label is in it
    let before = lines(&labels_file).len();
    let bodies: Vec<String> = (0..total).map(|i| label_body(&a, i, i + 1)).collect();
    let (port, token) = (a.port, a.token.clone());
    let acked = std::thread::spawn(move || {
        let mut acked = 0;
        for i in 0.. {
            let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
                break;
            };
            let body = &bodies[i % bodies.len()];
            let req = format!(
                "POST /api/label HTTP/1.1\r\nHost: x\r\nConnection: close\r\nx-mtr-token: {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            if s.write_all(req.as_bytes()).is_err() {
                break;
            }
            let mut resp = String::new();
            let _ = s.read_to_string(&mut resp);
            if !resp.starts_with("HTTP/1.1 200") {
                break;
            }
            acked += 1;
        }
        acked
    });
    let mut a = a;
    while lines(&labels_file).len() < before + 100 {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    a.child.kill().unwrap(); // SIGKILL
    a.child.wait().unwrap();
    let acked = acked.join().unwrap();
    let written = mtr_audit::review_queue::label_log::read_lines(
        &labels_file,
        &mtr_audit::review_queue::audit_fingerprint(
            &mtr_audit::review_queue::read_audit_summary(&audit).unwrap(),
        ),
    )
    .unwrap();
    assert!(
        written.len() >= before + acked,
        "{} lines, {acked} acknowledged after {before}",
        written.len()
    );
    // and the next writer goes on from a clean end
    let c = start_server(&audit, Some(&bench), "cy");
    let body = label_body(&c, 0, 0);
    assert_eq!(
        http(c.port, "POST", "/api/label", Some(&c.token), Some(&body)).0,
        200
    );
    assert!(
        mtr_audit::review_queue::effective_labels(&audit)
            .unwrap()
            .values()
            .any(|r| r.contains_key("cy"))
    );
}
