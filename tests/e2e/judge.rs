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
}
