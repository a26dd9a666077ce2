//! `mtr bench` and `mtr leaderboard` end to end: a synthetic benchmark for the full report,
//! determinism and bad input; the real MTRAG clapnq benchmark and runs (from ../shared, skipped
//! when absent) against trec_eval's numbers; the leaderboard page in headless Chromium.

// Test helpers outside #[test] functions panic on failure by design.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command as StdCommand;

use assert_cmd::Command;
use mtr_core::benchmark::{Manifest, write_benchmark};
use mtr_core::{Dialogue, Gold, Passage, Tags, Turn};

fn mtr() -> Command {
    Command::cargo_bin("mtr").unwrap()
}

/// 36 dialogues x 6 turns, 4 passages per turn (2 relevant, one graded 2), tags.
fn synthetic_bench(dir: &Path) -> PathBuf {
    let root = dir.join("bench");
    let mut dialogues = Vec::new();
    let mut corpus = Vec::new();
    for d in 0..36 {
        let mut turns = Vec::new();
        for t in 0..6 {
            let id = format!("d{d:02}::{}", t + 1);
            for p in 0..4 {
                corpus.push(Passage {
                    id: format!("{id}-p{p}"),
                    title: format!("Topic {d}"),
                    text: format!("Passage {p} about turn {t} of topic {d}."),
                    doc_id: None,
                    meta: Default::default(),
                });
            }
            turns.push(Turn {
                id: id.clone(),
                user: format!("what about {t} in topic {d}?"),
                rewrite: Some(format!("what about {t} in topic {d}")),
                answer: Some("an answer".into()),
                gold: if t == 5 && d % 3 == 0 {
                    vec![]
                } else {
                    vec![
                        Gold {
                            passage_id: format!("{id}-p0"),
                            grade: 2,
                        },
                        Gold {
                            passage_id: format!("{id}-p1"),
                            grade: 1,
                        },
                    ]
                },
                tags: Tags {
                    question_type: Some(
                        ["Factoid", "Explanation", "Factoid,Summarization"][t % 3].into(),
                    ),
                    answerability: Some("answerable".into()),
                    topic_switch: Some(t == 3),
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
        name: "synthetic".into(),
        language: "en".into(),
        source: "test".into(),
        ..Default::default()
    };
    write_benchmark(&root, manifest, &dialogues, corpus.into_iter().map(Ok)).unwrap();
    root
}

/// A TREC run over the synthetic benchmark: `good` puts the gold first on most turns,
/// `strength` 0..=3 moves it down.
fn write_run(path: &Path, strength: usize, skip: usize) {
    let mut f = std::fs::File::create(path).unwrap();
    for d in 0..36 {
        for t in 0..6 {
            let id = format!("d{d:02}::{}", t + 1);
            let mut order = [2, 3, 0, 1];
            let shift = (strength + d + t) % 4;
            order.rotate_left(shift);
            if (d * 6 + t) % 7 < skip {
                continue;
            }
            for (rank, p) in order.iter().enumerate() {
                writeln!(
                    f,
                    "{id} Q0 {id}-p{p} {} {} tag",
                    rank + 1,
                    10.0 - rank as f64
                )
                .unwrap();
            }
        }
    }
}

fn runs(dir: &Path) -> Vec<PathBuf> {
    let names = [("good", 2, 0), ("medium", 1, 0), ("weak", 0, 1)];
    names
        .iter()
        .map(|(n, s, skip)| {
            let p = dir.join(format!("{n}.trec"));
            write_run(&p, *s, *skip);
            p
        })
        .collect()
}

fn bench_cmd(bench: &Path, runs: &[PathBuf], out: &Path, date: &str) -> Command {
    let mut c = mtr();
    c.arg("bench").arg(bench).arg("-o").arg(out).args([
        "--resamples",
        "300",
        "--permutations",
        "2000",
    ]);
    for r in runs {
        c.arg("--run").arg(r);
    }
    c.env("SOURCE_DATE_EPOCH", date);
    c
}

#[test]
fn bench_writes_the_full_report_reproducibly() {
    let tmp = tempfile::tempdir().unwrap();
    let bench = synthetic_bench(tmp.path());
    let runs = runs(tmp.path());
    let out1 = tmp.path().join("r1");
    let out2 = tmp.path().join("r2");
    let o = bench_cmd(&bench, &runs, &out1, "1767225600")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("good") && stdout.contains("discriminative power"),
        "{stdout}"
    );
    // the share of separated pairs names the systems it is over, in the summary and report
    assert!(
        stdout.contains("Over 3 systems: ") && stdout.contains("only under the same systems"),
        "{stdout}"
    );
    let report = std::fs::read_to_string(out1.join("report.md")).unwrap();
    assert!(report.contains("Over 3 systems: "), "{report}");
    assert!(
        bench_cmd(&bench, &runs, &out2, "1767225600")
            .output()
            .unwrap()
            .status
            .success()
    );
    for f in ["bench.json", "per_query.jsonl", "report.md"] {
        assert_eq!(
            std::fs::read(out1.join(f)).unwrap(),
            std::fs::read(out2.join(f)).unwrap(),
            "{f} differs between identical runs"
        );
    }
    let r: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out1.join("bench.json")).unwrap()).unwrap();
    assert_eq!(r["schema"], "mtr.bench/1");
    assert_eq!(r["date"], "2026-01-01");
    assert_eq!(r["benchmark"]["scored_queries"], 36 * 6 - 12);
    assert_eq!(r["benchmark"]["skipped_without_relevant"], 12);
    for key in ["data", "config", "prompts", "tool_version"] {
        assert!(
            r["fingerprint"][key]
                .as_str()
                .is_some_and(|s| !s.is_empty()),
            "fingerprint.{key}"
        );
    }
    let systems = r["systems"].as_array().unwrap();
    assert_eq!(systems.len(), 3);
    let good = systems.iter().find(|s| s["name"] == "good").unwrap();
    let e = &good["measures"]["ndcg_cut.10"];
    assert!(
        e["ci_low"].as_f64().unwrap() <= e["mean"].as_f64().unwrap()
            && e["mean"].as_f64().unwrap() <= e["ci_high"].as_f64().unwrap()
    );
    // Strata: turn position, topic switch, question type (multi-valued tags split).
    let families: Vec<&str> = r["strata"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        &families[..3],
        ["turn_position", "topic_switch", "question_type"]
    );
    assert!(good["strata"]["question_type"]["Summarization"]["ndcg_cut.10"]["mean"].is_number());
    assert_eq!(good["by_position"].as_array().unwrap().len(), 6);
    assert!(
        r["tests"]["comparisons"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["p_holm"].as_f64().unwrap() >= c["p"].as_f64().unwrap())
    );
    assert_eq!(r["discriminative_power"]["pairs"], 3);
    assert!(
        good["failures"]["examples"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| !e["question"].as_str().unwrap().is_empty())
    );
    let weak = systems.iter().find(|s| s["name"] == "weak").unwrap();
    assert!(weak["answered"].as_u64().unwrap() < 204);
    let warnings = r["warnings"].as_array().unwrap();
    assert!(
        warnings
            .iter()
            .any(|w| w.as_str().unwrap().contains("weak: answers")),
        "{warnings:?}"
    );
    let lines = std::fs::read_to_string(out1.join("per_query.jsonl")).unwrap();
    assert_eq!(lines.lines().count(), 3 * 204);
    let report = std::fs::read_to_string(out1.join("report.md")).unwrap();
    for section in [
        "## Leaderboard",
        "## Significance against the baseline",
        "## Discriminative power",
        "## Strata",
        "## By turn position",
        "## Diagnosis",
        "## Failure analysis",
        "## Reproducibility",
    ] {
        assert!(report.contains(section), "report lacks {section}");
    }
}

fn assert_user_error_and_nothing_written(o: &std::process::Output, out: &Path, needles: &[&str]) {
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    for n in needles {
        assert!(stderr.contains(n), "stderr lacks `{n}`: {stderr}");
    }
    let leftovers: Vec<_> = std::fs::read_dir(out)
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    assert!(leftovers.is_empty(), "partial output: {leftovers:?}");
}

#[test]
fn bench_refuses_bad_runs_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let bench = synthetic_bench(tmp.path());
    let good = runs(tmp.path()).remove(0);

    let foreign = tmp.path().join("foreign.trec");
    std::fs::write(&foreign, "other::1 Q0 x 1 3.0 t\nother::2 Q0 y 1 2.0 t\n").unwrap();
    let out = tmp.path().join("out-foreign");
    let o = bench_cmd(&bench, &[good.clone(), foreign], &out, "0")
        .output()
        .unwrap();
    assert_user_error_and_nothing_written(&o, &out, &["foreign.trec", "another benchmark"]);

    let unknown = tmp.path().join("unknown.trec");
    std::fs::write(
        &unknown,
        "d00::1 Q0 d00::1-p0 1 3.0 t\nd00::1 Q0 not-a-passage 2 2.0 t\n",
    )
    .unwrap();
    // Documents the corpus lacks are scored as non-relevant by default (trec_eval's policy);
    // --strict refuses the run.
    let out = tmp.path().join("out-unknown");
    let o = bench_cmd(&bench, &[good.clone(), unknown], &out, "0")
        .arg("--strict")
        .output()
        .unwrap();
    assert_user_error_and_nothing_written(
        &o,
        &out,
        &[
            "unknown.trec",
            "not-a-passage",
            "not in the benchmark's corpus",
        ],
    );

    let empty = tmp.path().join("empty.trec");
    std::fs::write(&empty, "\n").unwrap();
    let out = tmp.path().join("out-empty");
    let o = bench_cmd(&bench, &[good.clone(), empty], &out, "0")
        .output()
        .unwrap();
    assert_user_error_and_nothing_written(&o, &out, &["empty.trec", "empty"]);

    let out = tmp.path().join("out-baseline");
    let o = bench_cmd(&bench, &[good], &out, "0")
        .args(["--baseline", "nope"])
        .output()
        .unwrap();
    assert_user_error_and_nothing_written(&o, &out, &["--baseline", "nope"]);
}

#[test]
fn bench_split_scores_one_part() {
    let tmp = tempfile::tempdir().unwrap();
    let bench = synthetic_bench(tmp.path());
    let runs = runs(tmp.path());
    let dev = tmp.path().join("dev");
    let test = tmp.path().join("test");
    assert!(
        bench_cmd(&bench, &runs, &dev, "0")
            .args(["--split", "0.7"])
            .output()
            .unwrap()
            .status
            .success()
    );
    assert!(
        bench_cmd(&bench, &runs, &test, "0")
            .args(["--split", "0.7", "--part", "test"])
            .output()
            .unwrap()
            .status
            .success()
    );
    let read = |p: &Path| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(p.join("bench.json")).unwrap()).unwrap()
    };
    let (d, t) = (read(&dev), read(&test));
    assert_eq!(d["split"]["part"], "dev");
    assert_eq!(d["split"]["dev_dialogues"], 25);
    assert_eq!(d["benchmark"]["scored_dialogues"], 25);
    assert_eq!(t["benchmark"]["scored_dialogues"], 11);
    let split: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dev.join("split.json")).unwrap()).unwrap();
    assert_eq!(
        split["dev"].as_array().unwrap().len() + split["test"].as_array().unwrap().len(),
        36
    );
}

/// The done-when check on real data: bm25 over two formulations plus the 12 real MTRAG runs;
/// the external runs' numbers equal trec_eval 10.0's (`-q -c`) in `expected/`.
#[test]
fn bench_mtrag_clapnq_external_runs_equal_trec_eval() {
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/mtrag");
    if !shared.join("runs_clapnq").is_dir() {
        eprintln!(
            "note: {} is absent; skipping the MTRAG bench test",
            shared.display()
        );
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let b = tmp.path().join("clapnq");
    let o = mtr()
        .args(["import", "mtrag"])
        .arg(&shared)
        .args(["--domain", "clapnq", "-o"])
        .arg(&b)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut files: Vec<PathBuf> = std::fs::read_dir(shared.join("runs_clapnq"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert_eq!(files.len(), 12);
    let out = tmp.path().join("results");
    let mut c = mtr();
    c.arg("bench")
        .arg(&b)
        .args([
            "--retriever",
            "bm25",
            "--query",
            "last,rewrite",
            "--resamples",
            "200",
            "--permutations",
            "1000",
            "-o",
        ])
        .arg(&out);
    for f in &files {
        c.arg("--run").arg(f);
    }
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("bench.json")).unwrap()).unwrap();
    assert_eq!(r["benchmark"]["scored_queries"], 208);
    let systems = r["systems"].as_array().unwrap();
    assert_eq!(systems.len(), 14);
    let pairs = [
        ("ndcg_cut_5", "ndcg_cut.5"),
        ("ndcg_cut_10", "ndcg_cut.10"),
        ("ndcg_cut_20", "ndcg_cut.20"),
        ("recall_5", "recall.5"),
        ("recall_10", "recall.10"),
        ("recall_20", "recall.20"),
        ("recip_rank", "mrr.10"),
        ("map", "map_cut.100"),
        ("success_1", "success_lenient.1"),
        ("success_5", "success_lenient.5"),
        ("success_10", "success_lenient.10"),
    ];
    let mut compared = 0;
    for f in &files {
        let name = f.file_stem().unwrap().to_string_lossy().to_string();
        let expected = std::fs::read_to_string(
            shared
                .join("expected")
                .join(format!("{name}.trec_eval.txt")),
        )
        .unwrap();
        let sys = systems.iter().find(|s| s["name"] == name.as_str()).unwrap();
        for (te, ours) in pairs {
            let line = expected
                .lines()
                .find(|l| {
                    l.split_whitespace().next() == Some(te)
                        && l.split_whitespace().nth(1) == Some("all")
                })
                .unwrap();
            let want = line.split_whitespace().nth(2).unwrap();
            // depth-10 runs: measures deeper than 10 are kept aside (n/a in reports), with
            // the values trec_eval prints
            let got = sys["measures"][ours]["mean"]
                .as_f64()
                .or_else(|| sys["beyond_depth"][ours]["mean"].as_f64())
                .unwrap();
            assert_eq!(format!("{got:.4}"), want, "{name} {te}");
            compared += 1;
        }
    }
    assert_eq!(compared, 12 * 11);
    assert_eq!(
        std::fs::read_to_string(out.join("per_query.jsonl"))
            .unwrap()
            .lines()
            .count(),
        14 * 208
    );
    assert!(out.join("runs").join("bm25.rewrite.trec").is_file());
}

fn chromium() -> Option<PathBuf> {
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
        eprintln!(
            "note: chromium is not installed; skipping the leaderboard browser test (scripts/install-test-deps.sh installs it)"
        );
    }
    found
}

fn headless(chromium: &Path, profile: &Path) -> StdCommand {
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
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    c
}

/// Loose screenshot check with Python's standard library (zlib): the page is mostly light,
/// has ink, and shows the chart palette's first colours.
const PNG_STATS: &str = r#"
import sys, zlib, struct, json
data = open(sys.argv[1], 'rb').read()
assert data[:8] == b'\x89PNG\r\n\x1a\n'
pos, idat, w, h, ctype = 8, b'', 0, 0, 0
while pos < len(data):
    n, kind = struct.unpack('>I4s', data[pos:pos + 8]); body = data[pos + 8:pos + 8 + n]; pos += 12 + n
    if kind == b'IHDR': w, h, depth, ctype = struct.unpack('>IIBB', body[:10])
    elif kind == b'IDAT': idat += body
bpp = {2: 3, 6: 4}[ctype]
raw = zlib.decompress(idat); stride = w * bpp; prev = bytearray(stride); rows = []; i = 0
for _ in range(h):
    f = raw[i]; line = bytearray(raw[i + 1:i + 1 + stride]); i += 1 + stride
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0; b = prev[x]; c = prev[x - bpp] if x >= bpp else 0
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    rows.append(line); prev = line
ink = blue = orange = 0
for line in rows:
    for x in range(0, stride, bpp):
        r, g, b = line[x], line[x + 1], line[x + 2]
        if r + g + b < 600: ink += 1
        if abs(r - 0x1f) < 30 and abs(g - 0x77) < 30 and abs(b - 0xb4) < 30: blue += 1
        if abs(r - 0xff) < 30 and abs(g - 0x7f) < 30 and abs(b - 0x0e) < 30: orange += 1
print(json.dumps({"w": w, "h": h, "ink": ink / (w * h), "blue": blue, "orange": orange}))
"#;

#[test]
fn leaderboard_site_and_browser_check() {
    let tmp = tempfile::tempdir().unwrap();
    let bench = synthetic_bench(tmp.path());
    let runs = runs(tmp.path());
    let r1 = tmp.path().join("r1");
    let r2 = tmp.path().join("r2");
    assert!(
        bench_cmd(&bench, &runs, &r1, "1767225600")
            .output()
            .unwrap()
            .status
            .success()
    );
    // A later result where `medium` improved: a trend.
    write_run(&runs[1], 3, 0);
    assert!(
        bench_cmd(&bench, &runs, &r2, "1769904000")
            .output()
            .unwrap()
            .status
            .success()
    );
    let site = tmp.path().join("site");
    let o = mtr()
        .arg("leaderboard")
        .arg(&r1)
        .arg(r2.join("bench.json"))
        .arg("-o")
        .arg(&site)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let lb: serde_json::Value =
        serde_json::from_slice(&std::fs::read(site.join("leaderboard.json")).unwrap()).unwrap();
    let board = &lb["boards"][0];
    assert_eq!(board["rows"].as_array().unwrap().len(), 3);
    assert_eq!(board["rows"][0]["date"], "2026-02-01");
    assert_eq!(board["trends"].as_array().unwrap().len(), 3);
    let csv = std::fs::read_to_string(site.join("leaderboard.csv")).unwrap();
    assert!(csv.starts_with("benchmark,benchmark_version,benchmark_fingerprint,part,rank,system"));
    assert_eq!(csv.lines().count(), 4);
    let md = std::fs::read_to_string(site.join("leaderboard.md")).unwrap();
    assert!(
        md.contains("| # | system | nDCG@10 |") && md.contains("### Trends"),
        "{md}"
    );
    let html = std::fs::read_to_string(site.join("index.html")).unwrap();
    // Nothing is loaded: no src/href to other files, no fetch; the only URL is the SVG namespace.
    let without_ns = html.replace("http://www.w3.org/2000/svg", "");
    for needle in [
        "http://",
        "https://",
        "src=",
        "<link",
        "fetch(",
        "XMLHttpRequest",
        "@import",
    ] {
        assert!(
            !without_ns.contains(needle),
            "the page must not load anything ({needle})"
        );
    }

    let bad = tmp.path().join("not-a-result.json");
    std::fs::write(&bad, "{\"hello\": 1}").unwrap();
    let o = mtr()
        .arg("leaderboard")
        .arg(&bad)
        .arg("-o")
        .arg(tmp.path().join("site2"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a bench result"));

    let Some(chromium) = chromium() else { return };
    let url = format!("file://{}#selftest", site.join("index.html").display());
    let o = headless(&chromium, &tmp.path().join("profile1"))
        .arg("--dump-dom")
        .arg(&url)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let dom = String::from_utf8_lossy(&o.stdout);
    let start = dom
        .find("<pre id=\"mtr-selftest\">")
        .expect("self-test output in the DOM")
        + "<pre id=\"mtr-selftest\">".len();
    let end = start + dom[start..].find("</pre>").unwrap();
    let report: serde_json::Value = serde_json::from_str(
        &dom[start..end]
            .replace("&quot;", "\"")
            .replace("&amp;", "&"),
    )
    .unwrap();
    assert_eq!(report["ok"], true, "self-test failed: {report}");
    assert_eq!(report["errors"].as_array().unwrap().len(), 0, "{report}");
    assert_eq!(
        report["sorts"][0]["first"], board["rows"][0]["system"],
        "{report}"
    );
    assert!(
        report["charts"]["trend-chart"]["marks"].as_u64().unwrap() > 0,
        "{report}"
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    let console: Vec<&str> = stderr.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:?}");

    let shot = tmp.path().join("shot.png");
    let o = headless(&chromium, &tmp.path().join("profile2"))
        .arg("--window-size=1280,2000")
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", site.join("index.html").display()))
        .output()
        .unwrap();
    assert!(
        o.status.success() && shot.is_file(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let Ok(py) = StdCommand::new("python3")
        .arg("-c")
        .arg(PNG_STATS)
        .arg(&shot)
        .output()
    else {
        eprintln!("note: python3 is absent; skipping the screenshot check");
        return;
    };
    assert!(
        py.status.success(),
        "{}",
        String::from_utf8_lossy(&py.stderr)
    );
    let stats: serde_json::Value = serde_json::from_slice(&py.stdout).unwrap();
    assert_eq!(
        (stats["w"].as_u64(), stats["h"].as_u64()),
        (Some(1280), Some(2000)),
        "{stats}"
    );
    let ink = stats["ink"].as_f64().unwrap();
    assert!(
        (0.01..0.5).contains(&ink),
        "page ink share {ink} is implausible: {stats}"
    );
    assert!(
        stats["blue"].as_u64().unwrap() > 100 && stats["orange"].as_u64().unwrap() > 100,
        "chart colours missing: {stats}"
    );
}
