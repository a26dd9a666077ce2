//! `mtr judge` and `mtr qrels apply --variant filled` end to end, on the fake server: the
//! oracle test of issue 48 (MTRAG clapnq with half of each turn's extra golds removed, a judge
//! that knows the removed golds: every run's filled P@10 equals its P@10 under the full qrels
//! and its Judged@10 is 1), resume without judging twice, and bad inputs (exit 2 naming the
//! file). Tests skip when ../shared is absent.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use mtr_llm::fake::{FakeReply, FakeRequest, FakeServer};

use crate::audit::{config, mtr};

fn mtrag() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/mtrag");
    p.is_dir().then_some(p)
}

/// The clapnq runs the oracle test pools (one sparse, one dense, one learned sparse).
const RUNS: [&str; 3] = [
    "bm25__bm25_clapnq_rewrite.jsonl",
    "bge__bge_clapnq_rewrite.jsonl",
    "elser__elser_clapnq_rewrite.jsonl",
];

/// The fixture: the first `n` dialogues of clapnq, written twice, with their full golds and
/// with half of each turn's extra relevant golds (all but its first) removed; each removed
/// gold as its turn's question and its passage's text, for the oracle judge.
struct Fixture {
    full: PathBuf,
    sparse: PathBuf,
    removed: Vec<(String, String)>,
}

fn fixture(tmp: &Path, n: usize) -> Option<Fixture> {
    let src = mtrag()?;
    let imported = tmp.join("clapnq");
    mtr()
        .args(["--quiet", "import", "mtrag"])
        .arg(&src)
        .args(["--domain", "clapnq", "-o"])
        .arg(&imported)
        .assert()
        .success();
    let b = mtr_core::BenchmarkDir::open(&imported)
        .unwrap()
        .load()
        .unwrap();
    let mut corpus = Vec::new();
    b.dir
        .for_each_passage(|_, p| {
            corpus.push(p);
            Ok(())
        })
        .unwrap();
    let full: Vec<_> = b.dialogues.iter().take(n).cloned().collect();
    let mut sparse = full.clone();
    let mut removed = Vec::new();
    for d in &mut sparse {
        for t in &mut d.turns {
            let relevant: Vec<String> = t.relevant().map(|g| g.passage_id.clone()).collect();
            let extra = &relevant[relevant.len().min(1)..];
            let gone: BTreeSet<&String> = extra.iter().step_by(2).collect();
            t.gold.retain(|g| !gone.contains(&g.passage_id));
            removed.extend(gone.into_iter().map(|p| (t.user.clone(), p.clone())));
        }
    }
    assert!(!removed.is_empty(), "the fixture removes no gold");
    let texts: BTreeMap<&str, &str> = corpus
        .iter()
        .map(|p| (p.id.as_str(), p.text.as_str()))
        .collect();
    let write = |name: &str, dialogues: &[mtr_core::Dialogue]| {
        let out = tmp.join(name);
        let mut m = b.manifest.clone();
        m.name = name.to_string();
        let passages = corpus.iter().cloned().map(Ok);
        mtr_core::benchmark::write_benchmark(&out, m, dialogues, passages).unwrap();
        out
    };
    Some(Fixture {
        full: write("full", &full),
        sparse: write("sparse", &sparse),
        removed: removed
            .into_iter()
            .filter_map(|(q, id)| Some((q, texts.get(id.as_str())?.to_string())))
            .collect(),
    })
}

/// The text of the alignment prompt between two of its headings.
fn between<'a>(text: &'a str, from: &str, to: &str) -> &'a str {
    let start = text.find(from).map_or(text.len(), |i| i + from.len());
    let end = text[start..].find(to).map_or(text.len(), |i| start + i);
    &text[start..end]
}

/// The oracle: 5 to a passage it knows was removed from the current question's golds, 1 to
/// any other.
fn oracle(
    removed: Vec<(String, String)>,
) -> impl Fn(&FakeRequest) -> FakeReply + Send + Sync + 'static {
    move |req: &FakeRequest| {
        let question = between(
            &req.last_user,
            "## Current question\nUser: ",
            "\n\n## Passage",
        );
        let passage = between(&req.last_user, "## Passage\n", "\n\n## Task");
        let known = removed.iter().any(|(q, t)| {
            q.trim() == question.trim() && !t.trim().is_empty() && passage.contains(t.trim())
        });
        FakeReply::json(serde_json::json!({
            "justification": if known { "a removed gold" } else { "not relevant" },
            "rating": if known { 5 } else { 1 },
        }))
    }
}

fn run_args(runs: &Path) -> Vec<std::ffi::OsString> {
    RUNS.iter()
        .flat_map(|r| ["--run".into(), runs.join(r).into_os_string()])
        .collect()
}

/// P@10 of every run against a qrels file, by run file stem.
fn p_at_10(qrels: &mtr_core::Qrels, runs: &Path) -> BTreeMap<String, f64> {
    let q = mtr_metrics::EvalQrels::from_qrels(qrels);
    let opts = mtr_metrics::EvalOptions {
        measures: mtr_metrics::MeasureSet::parse(["P.10"]).unwrap(),
        missing: mtr_metrics::MissingQueries::Intersect,
        ..Default::default()
    };
    RUNS.iter()
        .map(|r| {
            let run = mtr_core::read_run_any(&runs.join(r)).unwrap();
            let e = mtr_metrics::evaluate_run(&q, &run, &opts).unwrap();
            (
                r.trim_end_matches(".jsonl").to_string(),
                e.mean("P_10").unwrap(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oracle_judge_fills_the_holes_to_the_full_qrels() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(f) = fixture(tmp.path(), 3) else {
        return;
    };
    let runs = mtrag().unwrap().join("runs_clapnq");
    let fake = FakeServer::builder()
        .respond(oracle(f.removed.clone()))
        .start()
        .await
        .unwrap();
    let cfg = config(tmp.path(), fake.base_url(), 0.0);
    let out = tmp.path().join("judged");
    let judge = || {
        let mut c = mtr();
        c.arg("--config")
            .arg(&cfg)
            .args(["--quiet", "judge"])
            .arg(&f.sparse)
            .args(run_args(&runs))
            .args(["--depth", "10", "-o"])
            .arg(&out);
        c
    };
    let o = judge().output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let calls = fake.chat_calls();
    assert!(calls > 0);
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    for r in summary["runs"].as_array().unwrap() {
        assert_eq!(r["judged_after"].as_f64(), Some(1.0), "{r}");
    }
    assert!(summary["relevant"].as_u64().unwrap() > 0, "{summary}");
    assert!(summary["relevant"].as_u64().unwrap() <= f.removed.len() as u64);
    // tau-b of the order by P@10, original against filled, inside its bootstrap interval
    let tau = summary["kendall_tau"]["P_10"].as_f64().unwrap();
    let ci = &summary["kendall_tau_interval"]["P_10"];
    assert!(
        ci["lower"].as_f64().unwrap() <= tau && tau <= ci["upper"].as_f64().unwrap(),
        "{summary}"
    );
    assert_eq!(ci["resamples"], 200, "{summary}");
    assert!(out.join("pool.json").is_file());

    let filled = tmp.path().join("filled.tsv");
    let o = mtr()
        .args(["--quiet", "qrels", "apply"])
        .arg(&f.sparse)
        .arg(&out)
        .args(["--variant", "filled", "-o"])
        .arg(&filled)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let full = mtr_core::BenchmarkDir::open(&f.full)
        .unwrap()
        .qrels()
        .unwrap();
    let filled = mtr_core::trec::read_qrels(&filled).unwrap();
    assert_eq!(p_at_10(&filled, &runs), p_at_10(&full, &runs));
    let sparse = mtr_core::BenchmarkDir::open(&f.sparse)
        .unwrap()
        .qrels()
        .unwrap();
    assert_ne!(
        p_at_10(&sparse, &runs),
        p_at_10(&full, &runs),
        "the fixture changes nothing"
    );

    // a rerun judges nothing twice
    let o = judge().output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(fake.chat_calls(), calls);
}

#[test]
fn bad_inputs_exit_2_naming_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(f) = fixture(tmp.path(), 1) else {
        return;
    };
    let runs = mtrag().unwrap().join("runs_clapnq");
    let cfg = config(tmp.path(), "http://127.0.0.1:9", 0.0);
    let judge = |extra: &[&std::ffi::OsStr]| {
        mtr()
            .arg("--config")
            .arg(&cfg)
            .args(["--quiet", "judge"])
            .arg(&f.sparse)
            .args(extra)
            .args(["--dry-run", "-o"])
            .arg(tmp.path().join("out"))
            .output()
            .unwrap()
    };
    let run = runs.join(RUNS[0]);
    // K of 0
    let o = judge(&[
        "--run".as_ref(),
        run.as_os_str(),
        "--depth".as_ref(),
        "0".as_ref(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("--depth"));
    // a run that is not TREC
    let bad = tmp.path().join("bad.trec");
    std::fs::write(&bad, "q1 Q0 d1\n").unwrap();
    let o = judge(&["--run".as_ref(), bad.as_os_str()]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("bad.trec"));
    // a run whose query ids match no turn
    let other = tmp.path().join("other.trec");
    std::fs::write(&other, "nope Q0 d1 1 1.0 x\n").unwrap();
    let o = judge(&["--run".as_ref(), other.as_os_str()]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("other.trec") && err.contains(":1"), "{err}");
    // mtr bench --fill-holes 0
    let o = mtr()
        .arg("--config")
        .arg(&cfg)
        .args(["--quiet", "bench"])
        .arg(&f.sparse)
        .arg("--run")
        .arg(&run)
        .args(["--fill-holes", "0", "-o"])
        .arg(tmp.path().join("b"))
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("--fill-holes"));
}

/// The clapnq runs as `mtr bench` externals, named by their short names.
fn bench_runs(runs: &Path) -> Vec<std::ffi::OsString> {
    RUNS.iter()
        .flat_map(|r| {
            let name = r.split("__").next().unwrap_or(r);
            [
                "--run".into(),
                format!("{name}={}", runs.join(r).display()).into(),
            ]
        })
        .collect()
}

fn json(p: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .unwrap()
}

/// `mtr bench --fill-holes 10` with the oracle judge: every system's P@10 with the holes filled
/// is its P@10 under the full qrels, its Judged@10 after filling is 1, and the report and the
/// leaderboard show both beside the measure; `mtr judge --runs-dir` takes the bench's folder
/// (its systems by name, nothing judged again); `mtr review` of the judge folder imports labels
/// on its random sample and its flagged holes and writes the Reviewed section.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bench_fill_holes_then_judge_and_review_the_bench_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(f) = fixture(tmp.path(), 3) else {
        return;
    };
    let runs = mtrag().unwrap().join("runs_clapnq");
    let fake = FakeServer::builder()
        .respond(oracle(f.removed.clone()))
        .start()
        .await
        .unwrap();
    let cfg = config(tmp.path(), fake.base_url(), 0.0);
    let bench = |src: &Path, out: &Path, fill: bool| {
        let mut c = mtr();
        c.arg("--config")
            .arg(&cfg)
            .args(["--quiet", "bench"])
            .arg(src)
            .args(bench_runs(&runs))
            .args(["--measure", "P@10,nDCG@10", "--resamples", "200", "-o"])
            .arg(out);
        if fill {
            c.args(["--fill-holes", "10"]);
        }
        let o = c.output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        json(&out.join("bench.json"))
    };
    let full = bench(&f.full, &tmp.path().join("b-full"), false);
    let out = tmp.path().join("b-sparse");
    let sparse = bench(&f.sparse, &out, true);
    assert!(fake.chat_calls() > 0);
    let calls = fake.chat_calls();
    assert_eq!(sparse["holes"]["depth"], 10);
    assert!(sparse["holes"]["relevant"].as_u64().unwrap() > 0);
    let mut moved = false;
    for s in sparse["systems"].as_array().unwrap() {
        let name = s["name"].as_str().unwrap();
        let h = &s["holes"];
        assert_eq!(
            h["judged_filled"]["mean"].as_f64(),
            Some(1.0),
            "{name}: {h}"
        );
        let full_p = full["systems"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["name"] == name)
            .unwrap()["measures"]["P.10"]["mean"]
            .as_f64()
            .unwrap();
        let filled_p = h["filled"]["P.10"]["mean"].as_f64().unwrap();
        assert!(
            (filled_p - full_p).abs() < 1e-12,
            "{name}: {filled_p} vs {full_p}"
        );
        moved |= s["measures"]["P.10"]["mean"].as_f64().unwrap() < full_p;
    }
    assert!(moved, "the fixture moves no system");
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        report.contains("Judged@10") && report.contains("P@10 filled"),
        "{report}"
    );
    assert!(out.join("holes/judgements.jsonl").is_file());

    // the leaderboard shows Judged@10 and the filled measures beside every measure
    let site = tmp.path().join("site");
    mtr()
        .args(["--quiet", "leaderboard"])
        .arg(&out)
        .arg("-o")
        .arg(&site)
        .assert()
        .success();
    let md = std::fs::read_to_string(site.join("leaderboard.md")).unwrap();
    assert!(
        md.contains("| Judged@10 |") && md.contains("P@10 filled") && md.contains("nDCG@10 filled"),
        "{md}"
    );
    assert!(md.contains(" → 1.000 |"), "{md}");
    let csv = std::fs::read_to_string(site.join("leaderboard.csv")).unwrap();
    let header = csv.lines().next().unwrap();
    assert!(
        header.contains(",judged,judged_filled,") && header.contains("P.10_filled"),
        "{header}"
    );
    let page = std::fs::read_to_string(site.join("index.html")).unwrap();
    assert!(page.contains("\"judged_filled\""));
    page_shows_the_holes(&site, tmp.path());

    // mtr judge takes the bench's folder: its systems by name, nothing judged twice
    let judged = tmp.path().join("judged");
    let o = mtr()
        .arg("--config")
        .arg(&cfg)
        .args(["--quiet", "judge"])
        .arg(&f.sparse)
        .arg("--runs-dir")
        .arg(&out)
        .args(["--depth", "10", "-o"])
        .arg(&judged)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        fake.chat_calls(),
        calls,
        "the bench's judgements are reused"
    );
    let s = json(&judged.join("summary.json"));
    let names: Vec<&str> = s["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["bm25", "bge", "elser"]);

    review_the_holes(&judged, &f.sparse);
}

/// The leaderboard page draws Judged@10 (original → filled) and the filled measures for every
/// row, without a script error (headless Chromium; skipped where it is not installed).
fn page_shows_the_holes(site: &Path, tmp: &Path) {
    let Some(chromium) = crate::board::chromium() else {
        return;
    };
    let url = format!("file://{}#selftest", site.join("index.html").display());
    let o = crate::board::headless(&chromium, &tmp.join("profile"))
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
    assert_eq!(report["errors"], serde_json::json!([]), "{report}");
    assert_eq!(report["holes"]["judged"], 3, "{report}");
    assert_eq!(report["holes"]["filled"], 6, "{report}");
    assert!(
        report["holes"]["line"]
            .as_str()
            .unwrap()
            .contains("Judged@10"),
        "{report}"
    );
}

/// `mtr review` of a judge folder: the sample is of its holes; labels imported on the sample
/// and on a flagged hole give the Reviewed section of its summary and report.
fn review_the_holes(judged: &Path, bench: &Path) {
    let o = mtr()
        .args(["--quiet", "review"])
        .arg(judged)
        .args(["--print-sample", "--sample", "8", "--seed", "3"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let sample = String::from_utf8(o.stdout).unwrap();
    let units: Vec<&str> = sample.lines().skip(1).collect();
    assert_eq!(units.len(), 8, "{sample}");
    assert!(
        units.iter().all(|u| u.starts_with("alignment|")),
        "{sample}"
    );
    // every sampled hole labelled relevant, and one hole the judges found relevant rejected
    let mut tsv = String::from("item\tlabel\n");
    for u in &units {
        tsv.push_str(&format!("{}\t5\n", u.split('\t').next().unwrap()));
    }
    let relevant = std::fs::read_to_string(judged.join("judgements.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["grade"] == 1)
        .unwrap();
    tsv.push_str(&format!(
        "missing|{}|{}\tno\n",
        relevant["turn_id"].as_str().unwrap(),
        relevant["passage_id"].as_str().unwrap()
    ));
    let file = judged.join("labels.tsv");
    std::fs::write(&file, tsv).unwrap();
    let o = mtr()
        .args(["--quiet", "review"])
        .arg(judged)
        .args(["--reviewer", "ann", "--import"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = json(&judged.join("summary.json"));
    let r = &s["review"];
    assert_eq!(
        (r["sampled"].as_u64(), r["flagged"].as_u64()),
        (Some(8), Some(1)),
        "{r}"
    );
    for run in r["runs"].as_array().unwrap() {
        let share = &run["relevant_share"];
        assert!(share["judges"]["estimate"].is_number(), "{run}");
        assert!(share["ppi"]["n"].as_u64().is_some(), "{run}");
        assert!(run["reviewed"]["P_10"].is_number() && run["filled"]["P_10"].is_number());
    }
    let report = std::fs::read_to_string(judged.join("report.md")).unwrap();
    assert!(
        report.contains("## Reviewed") && report.contains("prediction-powered"),
        "{report}"
    );

    // the page: sample cards show the hole as a candidate, not a gold; the flagged queue holds
    // the relevant holes; the Summary tab's figures are per run
    let srv = crate::review::start_server(judged, Some(bench), "bob");
    let get = |path: &str| {
        let (status, body) = crate::review::http(srv.port, "GET", path, Some(&srv.token), None);
        assert_eq!(status, 200, "{path}: {body}");
        serde_json::from_str::<serde_json::Value>(&body).unwrap()
    };
    let card = get("/api/card?queue=sample&index=0");
    assert_eq!(card["card"]["passages"][0]["role"], "candidate", "{card}");
    let card = get("/api/card?queue=flagged&index=0");
    assert_eq!(card["card"]["kind"], "hole", "{card}");
    assert!(
        card["card"]["why"].as_str().unwrap().contains("moves most"),
        "{card}"
    );
    let summary = get("/api/summary");
    assert_eq!(
        summary["estimates"]["runs"].as_array().unwrap().len(),
        3,
        "{summary}"
    );
    assert_eq!(summary["estimates"]["depth"], 10, "{summary}");
}

/// `mtr judge` on the embedded local model (SmolLM2, the fastest; skips when it is not
/// installed, fails then under `MTR_TEST_REQUIRE_LOCAL_MODEL=1`): the first clapnq turn with a
/// gold, one run ranking the gold and two unjudged passages, depth 3: two holes, each judged
/// by the real model through the audit, and a second run calls nothing.
#[test]
fn judge_on_the_local_model_with_two_holes() {
    let tmp = tempfile::tempdir().unwrap();
    if !crate::audit::local_model_installed("smollm2") {
        return;
    }
    let Some(f) = fixture(tmp.path(), 1) else {
        return;
    };
    let b = mtr_core::BenchmarkDir::open(&f.sparse)
        .unwrap()
        .load()
        .unwrap();
    let mut d = b.dialogues[0].clone();
    let first = d
        .turns
        .iter()
        .position(|t| t.relevant().next().is_some())
        .unwrap();
    d.turns.truncate(first + 1);
    let turn = d.turns[first].clone();
    let gold = turn.relevant().next().unwrap().passage_id.clone();
    let mut corpus = Vec::new();
    b.dir
        .for_each_passage(|_, p| {
            corpus.push(p);
            Ok(())
        })
        .unwrap();
    let judged: BTreeSet<&str> = turn.gold.iter().map(|g| g.passage_id.as_str()).collect();
    let others: Vec<&str> = corpus
        .iter()
        .map(|p| p.id.as_str())
        .filter(|id| !judged.contains(id))
        .take(2)
        .collect();
    let mini = tmp.path().join("mini");
    let mut m = b.manifest.clone();
    m.name = "one-turn".into();
    mtr_core::benchmark::write_benchmark(
        &mini,
        m,
        std::slice::from_ref(&d),
        corpus.iter().cloned().map(Ok),
    )
    .unwrap();
    let run = tmp.path().join("run.trec");
    std::fs::write(
        &run,
        format!(
            "{t} Q0 {gold} 1 3.0 r\n{t} Q0 {} 2 2.0 r\n{t} Q0 {} 3 1.0 r\n",
            others[0],
            others[1],
            t = turn.id
        ),
    )
    .unwrap();
    let cfg = tmp.path().join("mtr.toml");
    std::fs::write(
        &cfg,
        format!(
            "[audit]\nmax_failed_share = 1.0\n[llm]\ncache = \"{}\"\n[llm.local]\njudges = [\"smollm2\"]\ngenerator = \"smollm2\"\nrelevance_judge = false\n[llm.sampling.judges]\nmax_tokens = 160\n[llm.retry]\nparse_retries = 0\n",
            tmp.path().join("cache.sqlite").display()
        ),
    )
    .unwrap();
    let out = tmp.path().join("judged");
    let judge = || {
        let o = mtr()
            .arg("--config")
            .arg(&cfg)
            .args(["--quiet", "judge"])
            .arg(&mini)
            .arg("--run")
            .arg(&run)
            .args(["--depth", "3", "-o"])
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    judge();
    let s = json(&out.join("summary.json"));
    assert_eq!(s["holes"], 2, "{s}");
    let lines = std::fs::read_to_string(out.join("judgements.jsonl")).unwrap();
    let verdicts: Vec<serde_json::Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(verdicts.len(), 2);
    for v in &verdicts {
        assert!(others.contains(&v["passage_id"].as_str().unwrap()), "{v}");
        // a judge that answered gave a rating 1-5 and a grade; one whose answer did not parse
        // leaves the hole unjudged
        let judges = v["judges"].as_array().unwrap();
        assert!(
            judges
                .iter()
                .all(|j| j["judge"].as_str().unwrap().contains("smollm")),
            "{v}"
        );
        match v["grade"].as_i64() {
            Some(g) => assert!(g == 0 || g == 1, "{v}"),
            None => assert!(v["rating"].is_null(), "{v}"),
        }
    }
    let spend = json(&out.join("spend.json"));
    assert!(
        spend["this_run"]["paid_calls"].as_u64().unwrap() > 0,
        "{spend}"
    );
    judge();
    let again = json(&out.join("spend.json"));
    assert_eq!(again["this_run"]["paid_calls"], 0, "{again}");
    assert_eq!(
        std::fs::read_to_string(out.join("judgements.jsonl")).unwrap(),
        lines
    );
}
