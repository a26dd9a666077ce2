//! The leaderboard page tells no misleading number (issue 16), checked in headless Chromium
//! at 1280 px: significance marks sit next to the score and are on screen; a depth-10 run
//! shows "n/a (depth 10)", never a Recall@100; the pairwise matrix is drawn; strata with too
//! few turns are greyed out, not plotted; axis labels do not overlap; twelve systems get twelve
//! distinguishable series; the heading names the benchmark version. Set
//! `MTR_TEST_SCREENSHOT=PATH` to keep the screenshot for a look.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command as StdCommand;

use assert_cmd::Command;
use mtr_core::benchmark::{Manifest, write_benchmark};
use mtr_core::{Dialogue, Gold, Passage, Tags, Turn};

fn mtr() -> Command {
    Command::cargo_bin("mtr").unwrap()
}

const DIALOGUES: usize = 40;
const TURNS: usize = 4;
const SYSTEMS: usize = 12;
const MULTI_TURN: [&str; 5] = [
    "Clarification request",
    "Follow-up on the same topic",
    "Topic shift to a related subject",
    "Comparison with an earlier answer",
    "Summary of the conversation so far",
];

/// 40 dialogues x 4 turns, 2 relevant passages per turn, 900 passages in all (deeper than
/// any run), a rare question type (6 turns: a small stratum), long multi-turn tag values.
fn benchmark(dir: &Path) -> PathBuf {
    let root = dir.join("bench");
    let mut dialogues = Vec::new();
    let mut corpus = Vec::new();
    for i in 0..100 {
        corpus.push(passage(format!("filler-{i:03}"), "filler"));
    }
    for d in 0..DIALOGUES {
        let mut turns = Vec::new();
        for t in 0..TURNS {
            let id = format!("d{d:02}::{}", t + 1);
            for p in 0..5 {
                corpus.push(passage(format!("{id}-p{p}"), &id));
            }
            let n = d * TURNS + t;
            turns.push(Turn {
                id: id.clone(),
                user: format!("question {t} of dialogue {d}"),
                rewrite: None,
                answer: Some("an answer".into()),
                gold: vec![
                    Gold {
                        passage_id: format!("{id}-p0"),
                        grade: 2,
                    },
                    Gold {
                        passage_id: format!("{id}-p1"),
                        grade: 1,
                    },
                ],
                tags: Tags {
                    question_type: Some(
                        if n % 27 == 5 {
                            "Comparative"
                        } else if n % 2 == 0 {
                            "Factoid"
                        } else {
                            "Explanation"
                        }
                        .into(),
                    ),
                    multi_turn_type: Some(MULTI_TURN[n % MULTI_TURN.len()].into()),
                    ..Tags::default()
                },
            });
        }
        dialogues.push(Dialogue {
            id: format!("d{d:02}"),
            turns,
            meta: Default::default(),
        });
    }
    let manifest = Manifest {
        name: "board-check".into(),
        version: "1".into(),
        language: "en".into(),
        source: "test".into(),
        ..Default::default()
    };
    write_benchmark(&root, manifest, &dialogues, corpus.into_iter().map(Ok)).unwrap();
    root
}

fn passage(id: String, topic: &str) -> Passage {
    Passage {
        id,
        title: format!("About {topic}"),
        text: format!("Some text about {topic}."),
        doc_id: None,
        meta: Default::default(),
    }
}

/// System `i` finds the gold first on about `i` of 12 turns; every third system (`shallow-*`)
/// ranks 10 documents per turn, the others 100.
fn write_runs(dir: &Path) -> Vec<PathBuf> {
    (0..SYSTEMS)
        .map(|i| {
            let depth = if i % 3 == 0 { 10 } else { 100 };
            let name = if depth == 10 {
                format!("shallow-{i:02}")
            } else {
                format!("deep-{i:02}")
            };
            let path = dir.join(format!("{name}.trec"));
            let mut f = std::fs::File::create(&path).unwrap();
            for d in 0..DIALOGUES {
                for t in 0..TURNS {
                    let id = format!("d{d:02}::{}", t + 1);
                    let hit = (d * 7 + t * 3) % 12 < i;
                    let mut ranked: Vec<String> = (2..5).map(|p| format!("{id}-p{p}")).collect();
                    ranked.extend((0..100).map(|k| format!("filler-{:03}", (k + d + t) % 100)));
                    if hit {
                        ranked.insert(0, format!("{id}-p0"));
                        ranked.insert(1, format!("{id}-p1"));
                    } else {
                        ranked.insert(6 + i % 3, format!("{id}-p1"));
                        ranked.insert(40, format!("{id}-p0"));
                    }
                    for (rank, doc) in ranked.iter().take(depth).enumerate() {
                        writeln!(f, "{id} Q0 {doc} {} {} run", rank + 1, 200 - rank).unwrap();
                    }
                }
            }
            path
        })
        .collect()
}

pub(crate) fn chromium() -> Option<PathBuf> {
    let found = ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| {
            std::env::var_os("PATH")?
                .to_str()?
                .split(':')
                .map(|d| Path::new(d).join(name))
                .find(|p| p.is_file())
        });
    if found.is_none() {
        assert!(
            std::env::var("MTR_TEST_REQUIRE_CHROMIUM").as_deref() != Ok("1"),
            "MTR_TEST_REQUIRE_CHROMIUM=1 but chromium is not installed (scripts/install-test-deps.sh installs it)"
        );
        eprintln!("note: chromium is not installed; skipping the leaderboard page check");
    }
    found
}

pub(crate) fn headless(chromium: &Path, profile: &Path) -> StdCommand {
    let mut c = StdCommand::new(chromium);
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        "--enable-logging=stderr",
        "--v=0",
        "--virtual-time-budget=5000",
        "--window-size=1280,2400",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    c
}

#[test]
fn leaderboard_numbers_do_not_mislead() {
    let tmp = tempfile::tempdir().unwrap();
    let bench = benchmark(tmp.path());
    let runs = write_runs(tmp.path());
    let results = tmp.path().join("results");
    let mut c = mtr();
    c.arg("bench").arg(&bench).arg("-o").arg(&results).args([
        "--resamples",
        "200",
        "--permutations",
        "1000",
    ]);
    for r in &runs {
        c.arg("--run").arg(r);
    }
    let o = c.env("SOURCE_DATE_EPOCH", "1767225600").output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let site = tmp.path().join("site");
    let o = mtr()
        .arg("leaderboard")
        .arg(results.join("bench.json"))
        .arg("-o")
        .arg(&site)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    // The JSON: depth per row, deeper measures absent (listed in beyond_depth), a warning.
    let lb: serde_json::Value =
        serde_json::from_slice(&std::fs::read(site.join("leaderboard.json")).unwrap()).unwrap();
    let board = &lb["boards"][0];
    let row = |name: &str| {
        board["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["system"] == name)
            .unwrap()
            .clone()
    };
    let (shallow, deep) = (row("shallow-09"), row("deep-10"));
    assert_eq!(
        (shallow["depth"].as_u64(), deep["depth"].as_u64()),
        (Some(10), Some(100))
    );
    assert!(shallow["measures"].get("recall.100").is_none());
    assert!(
        shallow["beyond_depth"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m == "recall.100")
    );
    assert!(deep["measures"]["recall.100"]["mean"].is_number());
    assert!(
        board["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("runs of different depths")),
        "{}",
        board["warnings"]
    );
    assert_eq!(
        board["pairwise"]["pairs"].as_array().unwrap().len(),
        SYSTEMS * (SYSTEMS - 1) / 2
    );
    let md = std::fs::read_to_string(site.join("leaderboard.md")).unwrap();
    assert!(md.contains("## board-check (benchmark version 1)"), "{md}");
    let md_row = md.lines().find(|l| l.contains("| shallow-09 |")).unwrap();
    assert!(md_row.contains("n/a (depth 10)"), "{md_row}");
    // the significance mark is in the score's cell: `| 0.xxxx [lo, hi] ▲ |`
    assert!(
        md.lines().any(|l| l.contains("] ▲ |")),
        "no significance mark next to a score: {md}"
    );

    let Some(chromium) = chromium() else { return };
    let url = format!("file://{}#selftest", site.join("index.html").display());
    let o = headless(&chromium, &tmp.path().join("profile1"))
        .arg("--dump-dom")
        .arg(&url)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let dom = String::from_utf8_lossy(&o.stdout);
    let tag = "<pre id=\"mtr-selftest\">";
    let start = dom.find(tag).expect("self-test output") + tag.len();
    let end = start + dom[start..].find("</pre>").unwrap();
    let report: serde_json::Value = serde_json::from_str(
        &dom[start..end]
            .replace("&quot;", "\"")
            .replace("&amp;", "&"),
    )
    .unwrap();
    assert_eq!(report["ok"], true, "self-test failed: {report}");
    // significance marks drawn and visible in a 1280 px window
    assert_eq!(report["sig"]["viewport"], 1280, "{report}");
    let marks = report["sig"]["count"].as_u64().unwrap();
    assert!(marks >= 3, "{report}");
    assert_eq!(report["sig"]["visible"].as_u64(), Some(marks), "{report}");
    // a depth-10 run shows no Recall@100, a depth-100 run does
    let na = report["na"].as_array().unwrap();
    assert!(
        na.iter().any(|c| c["system"] == "shallow-09"
            && c["key"] == "recall.100"
            && c["text"] == "n/a (depth 10)"),
        "{report}"
    );
    assert!(!na.iter().any(|c| c["system"] == "deep-10"), "{report}");
    assert_eq!(
        report["pairwise"].as_u64(),
        Some((SYSTEMS * (SYSTEMS - 1)) as u64),
        "{report}"
    );
    assert!(
        report["heading"]
            .as_str()
            .unwrap()
            .contains("board-check (benchmark version 1)"),
        "{report}"
    );
    assert_eq!(report["overlaps"], 0, "{report}");
    assert_eq!(report["smallMarks"], 0, "{report}");
    assert!(report["smallGroups"].as_u64().unwrap() >= 1, "{report}");
    // every chart of this board has something to plot: none is replaced by its one-line note
    assert_eq!(report["emptyCharts"], 0, "{report}");
    assert_eq!(
        report["series"]["legend"].as_u64(),
        Some(SYSTEMS as u64),
        "{report}"
    );
    assert_eq!(
        report["series"]["distinct"].as_u64(),
        Some(SYSTEMS as u64),
        "{report}"
    );

    let shot = tmp.path().join("board.png");
    let o = headless(&chromium, &tmp.path().join("profile2"))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", site.join("index.html").display()))
        .output()
        .unwrap();
    assert!(
        o.status.success() && shot.is_file(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    if let Ok(keep) = std::env::var("MTR_TEST_SCREENSHOT") {
        std::fs::copy(&shot, keep).unwrap();
    }
}
