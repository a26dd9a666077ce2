//! From audit to leaderboard (issue 14) on real data: defects are planted in the MTRAG clapnq
//! labels (golds dropped, golds swapped for irrelevant passages), the planted benchmark is
//! audited by an oracle judge on the fake server, and `mtr bench --audit` must rank the 12 real
//! clapnq runs under the `corrected` variant exactly as the clean labels do (tau = 1), while the
//! planted labels do not. Also `mtr qrels apply` (the corrected qrels equal the clean ones, and
//! never in place), `mtr leaderboard` (label-robust marks, tau header, slope chart) and the
//! fingerprint check. Skips when ../shared is absent.
//!
//! The defects are planted where the audit can see them, since an audit cannot find a missing
//! gold its BM25 pool never shows (its recall is measured in docs/audit.md): every dropped or
//! swapped-out gold is in mtr's BM25 top 5 for the turn's rewrite, and a dropped gold is the
//! one the oracle prefers among the turn's true golds. The oracle knows the clean labels: it
//! rates a passage 5 when it is a true gold of the question and 1 otherwise, and picks, among
//! the relevant candidates of a pool, the one with the smallest text hash (a preference that
//! ignores position), never abstaining when one is relevant.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use assert_cmd::Command;
use mtr_core::{BenchmarkDir, Passage};
use mtr_llm::fake::{FakeReply, FakeRequest, FakeServer};

fn mtr() -> Command {
    Command::cargo_bin("mtr").unwrap()
}

fn shared() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data/mtrag");
    if p.is_dir() {
        Some(p)
    } else {
        eprintln!("skipping: {} absent", p.display());
        None
    }
}

fn pref(text: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}

/// `## Title` sections of a rendered prompt.
fn sections(prompt: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let mut cur: Option<(String, Vec<&str>)> = None;
    for line in prompt.lines() {
        if let Some(t) = line.strip_prefix("## ") {
            if let Some((k, v)) = cur.take() {
                out.insert(k, v.join("\n").trim().to_string());
            }
            cur = Some((t.trim().to_string(), Vec::new()));
        } else if let Some((_, v)) = cur.as_mut() {
            v.push(line);
        }
    }
    if let Some((k, v)) = cur {
        out.insert(k, v.join("\n").trim().to_string());
    }
    out
}

/// `[n] text` entries of the candidate list.
fn numbered(section: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in section.lines() {
        let t = line.trim_start();
        if let Some(rest) = t.strip_prefix('[')
            && let Some((n, body)) = rest.split_once("] ")
            && n.parse::<usize>().is_ok_and(|n| n == out.len() + 1)
        {
            out.push(body.to_string());
            continue;
        }
        if let Some(last) = out.last_mut() {
            last.push('\n');
            last.push_str(line);
        }
    }
    out.into_iter().map(|s| s.trim().to_string()).collect()
}

type Truth = HashMap<String, HashSet<String>>;

fn oracle(truth: Arc<Truth>) -> impl Fn(&FakeRequest) -> FakeReply + Send + Sync + 'static {
    move |r: &FakeRequest| {
        let sec = sections(&r.last_user);
        let q = sec
            .get("Current question")
            .map(|s| s.trim_start_matches("User: ").trim().to_string())
            .unwrap_or_default();
        let rel = truth.get(&q);
        let is_rel = |t: &str| rel.is_some_and(|s| s.contains(t.trim()));
        if let Some(pool) = sec.get("Candidate passages") {
            let ps = numbered(pool);
            let best = ps
                .iter()
                .enumerate()
                .filter(|(_, t)| is_rel(t))
                .min_by_key(|(_, t)| pref(t.trim()))
                .map(|(i, _)| i + 1);
            return match best {
                Some(b) => {
                    FakeReply::json(serde_json::json!({"justification": "oracle", "choice": b}))
                }
                None => FakeReply::json(
                    serde_json::json!({"justification": "oracle", "choice": "none"}),
                ),
            };
        }
        let rating = match sec.get("Passage") {
            Some(p) if is_rel(p) => 5,
            Some(_) => 1,
            None => 5,
        };
        FakeReply::json(serde_json::json!({"justification": "oracle", "rating": rating}))
    }
}

fn config(dir: &Path, base_url: &str) -> PathBuf {
    let p = dir.join("mtr.toml");
    let mut t = format!(
        "[llm]\ncache = \"{}\"\n",
        dir.join("cache.sqlite").display()
    );
    for n in ["oracle-a", "oracle-b"] {
        t.push_str(&format!(
            "[[llm.endpoints]]\nname = \"{n}\"\nbase_url = \"{base_url}\"\nmodel = \"{n}-model\"\nmax_concurrency = 16\ntimeout_s = 30\n"
        ));
    }
    t.push_str("[llm.roles]\njudges = [\"oracle-a\", \"oracle-b\"]\n[audit]\nresamples = 200\ndimensions = [\"alignment\", \"completeness\"]\n");
    std::fs::write(&p, t).unwrap();
    p
}

/// Relevant (turn, passage) pairs of a qrels file.
fn relevant(path: &Path) -> BTreeSet<(String, String)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let c: Vec<&str> = l.split_whitespace().collect();
            (c.len() == 4 && c[3].parse::<i32>().is_ok_and(|g| g > 0))
                .then(|| (c[0].to_string(), c[2].to_string()))
        })
        .collect()
}

/// System -> main-measure mean of a bench.json.
fn means(result: &serde_json::Value) -> BTreeMap<String, f64> {
    let main = result["main_measure"].as_str().unwrap();
    result["systems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_string(),
                s["measures"][main]["mean"].as_f64().unwrap(),
            )
        })
        .collect()
}

/// Systems best first (ties by name).
fn ranking(m: &BTreeMap<String, f64>) -> Vec<String> {
    let mut v: Vec<(&String, f64)> = m.iter().map(|(k, v)| (k, *v)).collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
    v.into_iter().map(|(k, _)| k.clone()).collect()
}

fn read_json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corrected_labels_rank_the_clapnq_runs_as_the_clean_labels_do() {
    let Some(src) = shared() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let clean = tmp.path().join("clean");
    mtr()
        .args(["--quiet", "import", "mtrag"])
        .arg(&src)
        .args(["--domain", "clapnq", "-o"])
        .arg(&clean)
        .assert()
        .success();
    let bm25 = tmp.path().join("bm25.trec");
    mtr()
        .args(["--quiet", "retrieve"])
        .arg(&clean)
        .arg("--index")
        .arg(tmp.path().join("index"))
        .args(["--query", "rewrite", "--k", "5", "-o"])
        .arg(&bm25)
        .assert()
        .success();
    let top5: HashMap<String, HashSet<String>> = {
        let mut m: HashMap<String, HashSet<String>> = HashMap::new();
        for l in std::fs::read_to_string(&bm25).unwrap().lines() {
            let c: Vec<&str> = l.split_whitespace().collect();
            m.entry(c[0].to_string())
                .or_default()
                .insert(c[2].to_string());
        }
        m
    };

    // plant
    let dir = BenchmarkDir::open(&clean).unwrap();
    let bench = dir.load().unwrap();
    let mut corpus: Vec<Passage> = Vec::new();
    dir.for_each_passage(|_, p| {
        corpus.push(p);
        Ok(())
    })
    .unwrap();
    let display: HashMap<&str, String> = corpus
        .iter()
        .map(|p| (p.id.as_str(), mtr_audit::judges::passage_display(p)))
        .collect();
    let mut questions: HashMap<&str, usize> = HashMap::new();
    for t in bench.dialogues.iter().flat_map(|d| &d.turns) {
        *questions.entry(t.user.trim()).or_default() += 1;
    }
    let mut truth: Truth = HashMap::new();
    for t in bench.dialogues.iter().flat_map(|d| &d.turns) {
        for g in t.gold.iter().filter(|g| g.grade > 0) {
            truth
                .entry(t.user.trim().to_string())
                .or_default()
                .insert(display[g.passage_id.as_str()].trim().to_string());
        }
    }
    let mut dialogues = bench.dialogues.clone();
    let (mut swapped, mut dropped) = (Vec::new(), Vec::new());
    let mut k = 0usize;
    for d in dialogues.iter_mut() {
        for t in d.turns.iter_mut() {
            if questions[t.user.trim()] > 1 {
                continue;
            }
            let golds: Vec<String> = t
                .gold
                .iter()
                .filter(|g| g.grade > 0)
                .map(|g| g.passage_id.clone())
                .collect();
            let seen = |p: &str| top5.get(&t.id).is_some_and(|s| s.contains(p));
            k += 1;
            if golds.len() >= 2 && k % 2 == 0 {
                // drop the gold the oracle prefers, when BM25 shows it
                let Some(best) = golds
                    .iter()
                    .min_by_key(|g| pref(display[g.as_str()].trim()))
                    .cloned()
                else {
                    continue;
                };
                if seen(&best) {
                    t.gold.retain(|g| g.passage_id != best);
                    dropped.push((t.id.clone(), best));
                }
            } else if k % 2 == 1 {
                // swap a gold BM25 shows for a passage of another turn's topic
                let Some(g) = golds.iter().find(|g| seen(g)).cloned() else {
                    continue;
                };
                let x = &corpus[(pref(&t.id) as usize) % corpus.len()];
                if golds.contains(&x.id)
                    || truth[t.user.trim()].contains(display[x.id.as_str()].trim())
                {
                    continue;
                }
                for gg in t.gold.iter_mut().filter(|gg| gg.passage_id == g) {
                    gg.passage_id = x.id.clone();
                }
                swapped.push((t.id.clone(), g));
            }
        }
    }
    assert!(
        swapped.len() >= 10 && dropped.len() >= 5,
        "{} swapped, {} dropped",
        swapped.len(),
        dropped.len()
    );
    let planted = tmp.path().join("planted");
    let mut manifest = bench.manifest.clone();
    manifest.name = format!("{}-planted", manifest.name);
    mtr_core::benchmark::write_benchmark(
        &planted,
        manifest,
        &dialogues,
        corpus.into_iter().map(Ok),
    )
    .unwrap();

    // audit the planted benchmark with the oracle
    let fake = FakeServer::builder()
        .respond(oracle(Arc::new(truth)))
        .start()
        .await
        .unwrap();
    let cfg = config(tmp.path(), fake.base_url());
    let audit = tmp.path().join("audit");
    let o = mtr()
        .arg("--config")
        .arg(&cfg)
        .args(["--quiet", "audit"])
        .arg(&planted)
        .arg("-o")
        .arg(&audit)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    // bench the 12 runs on the clean labels, and on the planted ones with the audit
    let mut runs: Vec<PathBuf> = std::fs::read_dir(src.join("runs_clapnq"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    runs.sort();
    assert_eq!(runs.len(), 12);
    let bench_cmd = |b: &Path, out: &Path, audit: Option<&Path>| {
        let mut c = mtr();
        c.args(["--quiet", "bench"]).arg(b);
        for r in &runs {
            c.arg("--run").arg(r);
        }
        c.args(["--resamples", "200", "--permutations", "1000", "-o"])
            .arg(out);
        if let Some(a) = audit {
            c.arg("--audit").arg(a);
        }
        c.output().unwrap()
    };
    let clean_out = tmp.path().join("res-clean");
    let o = bench_cmd(&clean, &clean_out, None);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let planted_out = tmp.path().join("res-planted");
    let o = bench_cmd(&planted, &planted_out, Some(&audit));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("label sensitivity"), "{stdout}");

    let clean_r = read_json(&clean_out.join("bench.json"));
    let planted_r = read_json(&planted_out.join("bench.json"));
    let clean_m = means(&clean_r);
    let planted_m = means(&planted_r);
    let ls = &planted_r["label_sensitivity"];
    let corrected = ls["variants"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["variant"] == "corrected")
        .unwrap();
    let corrected_m: BTreeMap<String, f64> = corrected["systems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["system"].as_str().unwrap().to_string(),
                s["estimate"]["mean"].as_f64().unwrap(),
            )
        })
        .collect();
    let applied = &corrected["applied"];
    let largest_gap = clean_m
        .iter()
        .map(|(s, v)| (v - corrected_m[s]).abs())
        .fold(0.0, f64::max);
    eprintln!(
        "planted {} swapped, {} dropped golds; corrected removed {} and added {} golds; planted tau vs corrected {}; largest |clean - corrected| {largest_gap:.2e}",
        swapped.len(),
        dropped.len(),
        applied["golds_removed"],
        applied["golds_added"],
        corrected["kendall_tau"]["mean"]
    );
    assert_eq!(ls["scope"]["partial"], false);
    assert_ne!(
        ranking(&planted_m),
        ranking(&clean_m),
        "the planted labels must change the ranking"
    );
    assert_eq!(
        ranking(&corrected_m),
        ranking(&clean_m),
        "the corrected labels rank as the clean ones"
    );
    assert!(corrected["kendall_tau"]["mean"].as_f64().unwrap() < 1.0);
    let rob = ls["robustness"].as_array().unwrap();
    assert!(rob.iter().any(|r| r["robust"] == false));

    // a partial audit (a sample of dialogues, answered from the LLM cache): every figure on
    // the audited turns only, and the report says so
    let audit_part = tmp.path().join("audit-sample");
    let o = mtr()
        .arg("--config")
        .arg(&cfg)
        .args(["--quiet", "audit"])
        .arg(&planted)
        .args(["--sample", "8", "-o"])
        .arg(&audit_part)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let part_out = tmp.path().join("res-sample");
    let o = bench_cmd(&planted, &part_out, Some(&audit_part));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let part = read_json(&part_out.join("bench.json"));
    let scope = &part["label_sensitivity"]["scope"];
    let audited: BTreeSet<String> =
        read_json(&audit_part.join("summary.json"))["plan"]["audited_turns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap().to_string())
            .collect();
    let scored_audited = planted_r["benchmark"]["scored_queries"].as_u64().unwrap();
    assert_eq!(scope["partial"], true);
    assert_eq!(scope["sampled"], true);
    assert_eq!(scope["dialogues_audited"], 8);
    let n_audited = scope["scored_turns_audited"].as_u64().unwrap();
    assert!(
        n_audited > 0 && n_audited < scored_audited,
        "{n_audited} of {scored_audited}"
    );
    // the original column is the original labels on the audited turns only: its mean is the
    // mean of the bench's per-turn values over exactly those turns
    let main = part["main_measure"].as_str().unwrap().to_string();
    let mut sums: BTreeMap<String, (f64, usize)> = BTreeMap::new();
    for line in std::fs::read_to_string(part_out.join("per_query.jsonl"))
        .unwrap()
        .lines()
    {
        let row: serde_json::Value = serde_json::from_str(line).unwrap();
        if audited.contains(row["qid"].as_str().unwrap()) {
            let e = sums
                .entry(row["system"].as_str().unwrap().to_string())
                .or_default();
            e.0 += row["measures"][&main].as_f64().unwrap();
            e.1 += 1;
        }
    }
    for s in part["label_sensitivity"]["original"].as_array().unwrap() {
        let (sum, n) = sums[s["system"].as_str().unwrap()];
        assert_eq!(n as u64, n_audited);
        let mean = s["estimate"]["mean"].as_f64().unwrap();
        assert!((mean - sum / n as f64).abs() < 1e-12, "{s}");
    }
    let report = std::fs::read_to_string(part_out.join("report.md")).unwrap();
    assert!(
        report.contains("**Partial**")
            && report.contains(&format!("on the {n_audited} scored turns it audited")),
        "{report}"
    );
    // every moved turn is an audited one
    for v in part["label_sensitivity"]["variants"].as_array().unwrap() {
        for t in v["moved_turns"].as_array().unwrap() {
            assert!(audited.contains(t["qid"].as_str().unwrap()), "{t}");
        }
        assert!(v["turns"].as_u64().unwrap() <= n_audited);
    }

    // the corrected qrels as a file equal the clean qrels; never written in place
    let qrels_out = tmp.path().join("corrected.tsv");
    let o = mtr()
        .args(["--quiet", "qrels", "apply"])
        .arg(&planted)
        .arg(&audit)
        .args(["--variant", "corrected", "-o"])
        .arg(&qrels_out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(relevant(&qrels_out), relevant(&clean.join("qrels.tsv")));
    let before = std::fs::read(planted.join("qrels.tsv")).unwrap();
    let o = mtr()
        .args(["--quiet", "qrels", "apply"])
        .arg(&planted)
        .arg(&audit)
        .arg("-o")
        .arg(planted.join("qrels.tsv"))
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("in place"));
    assert_eq!(std::fs::read(planted.join("qrels.tsv")).unwrap(), before);

    // an audit of another benchmark is a user error
    let o = bench_cmd(&clean, &tmp.path().join("res-wrong"), Some(&audit));
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("another benchmark"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!tmp.path().join("res-wrong").join("bench.json").exists());

    // the leaderboard: a label-robust mark per row, tau in the header, the slope chart
    let site = tmp.path().join("site");
    let o = mtr()
        .args(["--quiet", "leaderboard"])
        .arg(planted_out.join("bench.json"))
        .arg("-o")
        .arg(&site)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let md = std::fs::read_to_string(site.join("leaderboard.md")).unwrap();
    assert!(
        md.contains("label-robust") && md.contains("Label sensitivity"),
        "{md}"
    );
    assert!(md.contains("corrected: tau"), "{md}");
    let html = std::fs::read_to_string(site.join("index.html")).unwrap();
    assert!(html.contains("slope-chart") && html.contains("\"corrected_rank\""));
}
