//! `mtr review` in a real browser: Debian's headless Chromium driven over WebDriver
//! (chromedriver, from `chromium-driver`; scripts/install-test-deps.sh installs both) labels
//! cards of a fake-judged fixture audit by keyboard, reloads the page, goes on, undoes one, sees
//! a label another process added in the Summary tab at once, and the labels file holds exactly
//! what was typed. Every wait is on the page's state (the shown
//! card, requests in flight), polled with a generous cap, never a fixed sleep.
//!
//! Outside CI the test is skipped where Chromium or chromedriver is missing; under CI (`CI`
//! set) or with `MTR_TEST_REQUIRE_CHROMIUM=1` it fails instead. With
//! `MTR_REVIEW_SCREENSHOTS=DIR` it also saves `sample.png`, `flagged.png` and `summary.png`
//! of the session into DIR (docs/review/ holds the ones docs/review.md shows).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use fantoccini::actions::{InputSource, KeyAction, KeyActions};
use fantoccini::{Client, ClientBuilder};
use serde_json::{Value, json};

use crate::review::{Server, fixture_audit, start_server_with};

/// How long any one wait on the page may take before the test fails (generous: the wait
/// ends as soon as the page is ready, so a loaded machine only makes it slower).
const WAIT_CAP: Duration = Duration::from_secs(90);

fn on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Chromium and chromedriver, or None (skip) where they are missing outside CI.
fn browser() -> Option<(PathBuf, PathBuf)> {
    let chromium = ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|n| on_path(n));
    let driver = on_path("chromedriver");
    if let (Some(c), Some(d)) = (&chromium, &driver) {
        return Some((c.clone(), d.clone()));
    }
    let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false");
    let required = ci || std::env::var("MTR_TEST_REQUIRE_CHROMIUM").as_deref() == Ok("1");
    assert!(
        !required,
        "chromium ({chromium:?}) and chromedriver ({driver:?}) are required here (CI or MTR_TEST_REQUIRE_CHROMIUM=1): scripts/install-test-deps.sh installs them"
    );
    eprintln!(
        "note: chromium or chromedriver is not installed; skipping the review browser test (scripts/install-test-deps.sh installs them)"
    );
    None
}

/// A running chromedriver, killed when dropped.
struct Driver(Child);

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts chromedriver on a free port and opens a headless Chromium session (a 1200x900
/// viewport).
async fn open_browser(chromium: &Path, driver: &Path, profile: &Path) -> (Driver, Client) {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = StdCommand::new(driver)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let driver = Driver(child);
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        json!({
            "binary": chromium,
            "args": [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--no-first-run", "--disable-background-networking", "--disable-sync",
                "--disable-component-update", "--hide-scrollbars", "--window-size=1200,900",
                format!("--user-data-dir={}", profile.display()),
            ],
        }),
    );
    let url = format!("http://127.0.0.1:{port}");
    let start = Instant::now();
    // chromedriver answers once it listens: retried until then
    let client = loop {
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        match ClientBuilder::new(connector)
            .capabilities(caps.clone())
            .connect(&url)
            .await
        {
            Ok(c) => break c,
            Err(_) if start.elapsed() < WAIT_CAP => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("no WebDriver session from chromedriver: {e}"),
        }
    };
    // a 1200x900 viewport (the window's frame is added to the window size)
    let frame = client
        .execute(
            "return [window.outerWidth - window.innerWidth, window.outerHeight - window.innerHeight];",
            vec![],
        )
        .await
        .unwrap();
    let extra = |i: usize| u32::try_from(frame[i].as_u64().unwrap_or(0)).unwrap_or(0);
    client
        .set_window_size(1200 + extra(0), 900 + extra(1))
        .await
        .unwrap();
    (driver, client)
}

/// Starts `mtr review AUDIT --no-browser --port 0` and reads the URL it prints.
fn start_review(audit: &Path, reviewer: &str) -> (Server, String) {
    let srv = start_server_with(audit, None, reviewer, &["--port", "0"]);
    assert_ne!(srv.port, 0, "--port 0 is a free port");
    let url = srv.url();
    (srv, url)
}

/// What the page shows: the queue, card index and item (`#card-view`'s data attributes),
/// requests in flight, the status line and the card's choices (key, label).
async fn page(c: &Client) -> Value {
    c.execute(
        r##"const v = document.getElementById("card-view");
        return {
          queue: v.dataset.queue || null,
          index: v.dataset.index === undefined ? null : Number(v.dataset.index),
          item: v.dataset.item || null,
          pending: document.body.dataset.pending || "0",
          status: document.getElementById("status").textContent,
          summary: document.getElementById("summary-view").hidden ? null
            : document.getElementById("estimates").textContent,
          choices: [...document.querySelectorAll("#choices button")]
            .map((b) => [b.querySelector("kbd").textContent, b.dataset.label]),
        };"##,
        vec![],
    )
    .await
    .unwrap()
}

/// Polls the page until `ready` holds and no request is in flight (at most [`WAIT_CAP`]).
async fn wait_for(c: &Client, what: &str, ready: impl Fn(&Value) -> bool) -> Value {
    let start = Instant::now();
    loop {
        let p = page(c).await;
        if p["pending"] == "0" && ready(&p) {
            return p;
        }
        assert!(
            start.elapsed() < WAIT_CAP,
            "waited {WAIT_CAP:?} for {what}; the page: {p}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Presses one key (down and up) on the page.
async fn press(c: &Client, key: char) {
    let keys = KeyActions::new("keyboard".into())
        .then(KeyAction::Down { value: key })
        .then(KeyAction::Up { value: key });
    c.perform_actions(keys).await.unwrap();
}

/// One typed label: (item, queue, label; None = undo).
type Typed = (String, String, Option<String>);

/// Labels the card shown with its `n`-th choice (by its key) and waits for the next card.
async fn label_shown(c: &Client, n: usize, typed: &mut Vec<Typed>) -> Value {
    let p = page(c).await;
    let choices = p["choices"].as_array().unwrap();
    assert!(!choices.is_empty(), "a card with choices: {p}");
    let choice = &choices[n % choices.len()];
    let key = choice[0].as_str().unwrap();
    assert_eq!(key.chars().count(), 1, "one key per choice: {choice}");
    press(c, key.chars().next().unwrap()).await;
    typed.push((
        p["item"].as_str().unwrap().to_string(),
        p["queue"].as_str().unwrap().to_string(),
        Some(choice[1].as_str().unwrap().to_string()),
    ));
    let (queue, item) = (p["queue"].clone(), p["item"].clone());
    wait_for(c, &format!("the card after labelling {item}"), |q| {
        q["queue"] == queue && q["item"] != item
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reviewer_labels_by_keyboard_reloads_goes_on_and_undoes() {
    let Some((chromium, chromedriver)) = browser() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let (_bench, audit) = fixture_audit(tmp.path()).await;
    let (mut server, url) = start_review(&audit, "ann");
    let (_driver, c) = open_browser(&chromium, &chromedriver, &tmp.path().join("profile")).await;
    let mut typed: Vec<Typed> = Vec::new();

    c.goto(&url).await.unwrap();
    let mut p = wait_for(&c, "the first card", |p| p["index"] == 0).await;
    assert_eq!(p["queue"], "sample");
    // ten labels on the random sample, skipping the seventh card once (space)
    let mut skipped = Value::Null;
    for step in 0..11 {
        assert_eq!(p["index"], step, "{p}");
        if step == 6 {
            skipped = p["item"].clone();
            press(&c, ' ').await;
            p = wait_for(&c, "the card after a skip", |q| q["index"] == 7).await;
        } else {
            p = label_shown(&c, step, &mut typed).await;
        }
    }
    assert_eq!(typed.len(), 10);
    let kinds: Vec<&str> = typed
        .iter()
        .map(|t| t.0.split('|').next().unwrap())
        .collect();
    assert!(
        kinds.contains(&"completeness") && kinds.iter().any(|k| *k != "completeness"),
        "ratings and a completeness pool among the cards: {kinds:?}"
    );

    // a reload resumes at the first unlabelled card (the skipped one); labelling it goes on
    // to the first card not labelled yet
    c.refresh().await.unwrap();
    let p = wait_for(&c, "the card after the reload", |p| !p["index"].is_null()).await;
    assert_eq!((&p["index"], &p["item"]), (&json!(6), &skipped), "{p}");
    let p = label_shown(&c, 11, &mut typed).await;
    assert_eq!(p["index"], 11, "{p}");
    label_shown(&c, 12, &mut typed).await;

    // the flagged queue: relevant yes / partly / no
    press(&c, 't').await;
    let mut p = wait_for(&c, "the flagged queue", |p| p["queue"] == "flagged").await;
    assert_eq!(p["index"], 0, "{p}");
    let keys: Vec<&str> = p["choices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c[0].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["y", "p", "n"]);
    for n in 0..2 {
        p = label_shown(&c, n, &mut typed).await;
    }
    assert_eq!(p["index"], 2, "{p}");

    // u undoes the last label: back to that card, unlabelled again
    press(&c, 'u').await;
    let last = typed.last().unwrap().0.clone();
    let p = wait_for(&c, "the undo", |p| {
        p["status"].as_str().unwrap_or("").starts_with("undone:")
    })
    .await;
    assert_eq!(p["item"].as_str(), Some(last.as_str()), "{p}");
    typed.push((last, "flagged".into(), None));

    let shots = std::env::var_os("MTR_REVIEW_SCREENSHOTS").map(PathBuf::from);
    let shoot = async |name: &str| {
        if let Some(dir) = &shots {
            std::fs::create_dir_all(dir).unwrap();
            std::fs::write(dir.join(name), c.screenshot().await.unwrap()).unwrap();
        }
    };
    shoot("flagged.png").await;

    // another process's labels show at once: bob imports one while the page is open
    let (first_item, _, first_label) = typed[0].clone();
    let tsv = tmp.path().join("bob.tsv");
    std::fs::write(&tsv, format!("{first_item}\t{}\n", first_label.unwrap())).unwrap();
    let o = crate::audit::mtr()
        .args(["--quiet", "review"])
        .arg(&audit)
        .arg("--import")
        .arg(&tsv)
        .args(["--reviewer", "bob"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    press(&c, 't').await;
    wait_for(&c, "the summary tab", |p| {
        p["summary"].as_str().is_some_and(|s| !s.is_empty())
    })
    .await;
    let tables = c
        .execute(
            r#"return document.getElementById("summary-tables").textContent;"#,
            vec![],
        )
        .await
        .unwrap();
    assert!(
        tables
            .as_str()
            .unwrap()
            .contains("Reviewers: ann (13), bob (1)"),
        "{tables}"
    );
    shoot("summary.png").await;
    press(&c, 't').await;
    wait_for(&c, "the sample queue", |p| {
        p["queue"] == "sample" && !p["index"].is_null()
    })
    .await;
    shoot("sample.png").await;
    c.close().await.unwrap();

    // Ctrl-C stops the server (exit 130); the labels file holds exactly what was typed
    let pid = server.child.id() as libc::pid_t;
    // SAFETY: a signal to the child this test started and has not waited for yet
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    assert_eq!(server.child.wait().unwrap().code(), Some(130));
    let text = std::fs::read_to_string(audit.join("review/labels.jsonl")).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let (bob, lines) = lines.split_last().unwrap();
    assert_eq!(
        (&bob["item"], &bob["reviewer"]),
        (&json!(first_item), &json!("bob"))
    );
    let got: Vec<Typed> = lines
        .iter()
        .map(|l| {
            (
                l["item"].as_str().unwrap().to_string(),
                l["queue"].as_str().unwrap().to_string(),
                l["label"].as_str().map(str::to_string),
            )
        })
        .collect();
    assert_eq!(got, typed);
    assert_eq!(typed.len(), 15);
    for l in lines {
        assert_eq!(l["reviewer"], "ann", "{l}");
        assert_eq!(l["fingerprint"], lines[0]["fingerprint"], "{l}");
        assert!(l["seconds"].as_f64().unwrap() >= 0.0, "{l}");
    }
    let effective = mtr_audit::review_queue::effective_labels(&audit).unwrap();
    assert_eq!(effective.len(), 13, "14 labels, one undone");
    assert_eq!(effective[&first_item].len(), 2, "ann's and bob's");
}
