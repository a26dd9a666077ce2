//! The command line itself: help, unknown commands, config.

use assert_cmd::Command;

fn mtr() -> Command {
    Command::cargo_bin("mtr").unwrap()
}

#[test]
fn help_lists_every_command() {
    let out = mtr().arg("--help").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for c in [
        "import", "export", "validate", "stats", "eval", "index", "retrieve", "audit", "synth",
        "bench", "report",
    ] {
        assert!(text.contains(c), "help lacks {c}: {text}");
    }
}

#[test]
fn config_show_masks_secrets() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("mtr.toml"),
        "[llm]\napi_key = \"sk-very-secret\"\n",
    )
    .unwrap();
    let out = mtr()
        .current_dir(dir.path())
        .args(["config", "show"])
        .env("MTR_AUDIT__SAMPLE", "5")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.contains("sk-very-secret"), "{text}");
    assert!(text.contains("sample = 5"), "{text}");
}

// ---- issue 16: one vocabulary, one exit-code table, quiet logs, dry runs that write nothing ----

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/formats")
        .join(name)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The MTRAG mini fixture as a native benchmark (its turns have rewrites).
fn mtrag_bench(dir: &Path) -> PathBuf {
    let out = dir.join("mini");
    let o = mtr()
        .args(["import", "mtrag"])
        .arg(fixture("mtrag"))
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    out
}

/// The BEIR fixture as a native benchmark (no rewrites).
fn beir_bench(dir: &Path) -> PathBuf {
    let out = dir.join("beir");
    let o = mtr()
        .args(["import", "beir"])
        .arg(fixture("beir"))
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    out
}

/// A qrels file and a run over two queries (q3 in the run has no qrels).
fn qrels_and_run(dir: &Path) -> (PathBuf, PathBuf) {
    let q = dir.join("qrels.txt");
    let r = dir.join("run.trec");
    std::fs::write(&q, "q1 0 d1 1\nq1 0 d3 2\nq2 0 d2 1\n").unwrap();
    std::fs::write(
        &r,
        "q1 Q0 d2 1 3.0 sys\nq1 Q0 d1 2 2.0 sys\nq1 Q0 d3 3 1.0 sys\nq2 Q0 d2 1 1.0 sys\nq3 Q0 d9 1 1.0 sys\n",
    )
    .unwrap();
    (q, r)
}

fn eval(q: &Path, r: &Path, extra: &[&str]) -> std::process::Output {
    mtr()
        .arg("eval")
        .arg(q)
        .arg(r)
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn eval_accepts_trec_eval_and_ir_measures_names_alike() {
    let tmp = tempfile::tempdir().unwrap();
    let (q, r) = qrels_and_run(tmp.path());
    for (trec, ir) in [
        ("ndcg_cut.10", "nDCG@10"),
        ("recip_rank_cut.10", "RR@10"),
        ("recip_rank", "RR"),
        ("P.5", "P@5"),
        ("recall.100", "R@100"),
        ("map_cut.100", "AP@100"),
        ("success.10", "Success@10"),
    ] {
        let a = eval(&q, &r, &["-m", trec]);
        let b = eval(&q, &r, &["-m", ir]);
        assert!(
            a.status.success() && b.status.success(),
            "{}",
            text(&b.stderr)
        );
        assert_eq!(text(&a.stdout), text(&b.stdout), "{trec} vs {ir}");
        assert!(!a.stdout.is_empty());
    }
}

#[test]
fn a_misspelt_measure_is_a_user_error_with_a_suggestion() {
    let tmp = tempfile::tempdir().unwrap();
    let (q, r) = qrels_and_run(tmp.path());
    for (typo, want) in [
        ("ndcg@10", "nDCG@10"),
        ("ndgc_cut.10", "ndcg_cut.10"),
        ("mrr@10", "RR@10"),
    ] {
        let o = eval(&q, &r, &["-m", typo]);
        assert_eq!(o.status.code(), Some(2), "{typo}");
        let e = text(&o.stderr);
        assert!(
            e.contains(&format!("did you mean `{want}`?")),
            "{typo}: {e}"
        );
        assert!(!e.contains("<arguments>"), "{e}");
    }
}

#[test]
fn bench_takes_ir_measures_names_and_reports_precision() {
    let tmp = tempfile::tempdir().unwrap();
    let b = mtrag_bench(tmp.path());
    let out = tmp.path().join("res");
    let o = mtr()
        .arg("bench")
        .arg(&b)
        .args(["--retriever", "bm25", "--query", "last"])
        .args(["--measure", "P@5,nDCG@10,RR@10,R@100,AP@100,Success@10"])
        .args([
            "--main",
            "nDCG@10",
            "--resamples",
            "50",
            "--permutations",
            "50",
        ])
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let json = std::fs::read_to_string(out.join("bench.json")).unwrap();
    for id in [
        "P.5",
        "ndcg_cut.10",
        "mrr.10",
        "recall.100",
        "map_cut.100",
        "success_lenient.10",
    ] {
        assert!(json.contains(&format!("\"{id}\"")), "{id} missing");
    }
    // the ranking measure is reported even when --measure leaves it out
    let o = mtr()
        .arg("bench")
        .arg(&b)
        .args([
            "--retriever",
            "bm25",
            "--query",
            "last",
            "--measure",
            "RR@10",
        ])
        .args(["--resamples", "50", "--permutations", "50", "-o"])
        .arg(tmp.path().join("res-main"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let r: serde_json::Value = serde_json::from_slice(
        &std::fs::read(tmp.path().join("res-main").join("bench.json")).unwrap(),
    )
    .unwrap();
    let main = r["main_measure"].as_str().unwrap();
    assert!(
        r["systems"][0]["measures"][main]["mean"].is_number(),
        "{main} not reported: {}",
        r["systems"][0]["measures"]
    );
    assert!(!text(&o.stdout).contains('\u{2013}'), "{}", text(&o.stdout));
    let o = mtr()
        .arg("bench")
        .arg(&b)
        .args(["--retriever", "bm25", "--measure", "ndcg@10", "-o"])
        .arg(tmp.path().join("res2"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("did you mean `nDCG@10`?"));
}

/// The run name is `<retriever>.<formulation>`.
fn retrieve_run_name(
    b: &Path,
    idx: &Path,
    out: &Path,
    query: Option<&str>,
) -> std::process::Output {
    let mut c = mtr();
    c.arg("retrieve").arg(b).arg("--index").arg(idx);
    if let Some(q) = query {
        c.args(["--query", q]);
    }
    c.args(["--k", "5", "--format", "json", "-o"])
        .arg(out)
        .output()
        .unwrap()
}

#[test]
fn query_formulations_share_one_vocabulary_and_default_to_rewrite_or_last() {
    let tmp = tempfile::tempdir().unwrap();
    let mini = mtrag_bench(tmp.path());
    let beir = beir_bench(tmp.path());
    // default: rewrite where the benchmark has rewrites, last otherwise
    for (b, want) in [(&mini, "rewrite"), (&beir, "last")] {
        let o = retrieve_run_name(
            b,
            &tmp.path().join(format!("idx-{want}")),
            &tmp.path().join(format!("{want}.trec")),
            None,
        );
        assert!(o.status.success(), "{}", text(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["query"], want, "{v}");
        assert_eq!(v["run"], format!("bm25.{want}"));
    }
    // an unknown name is an error everywhere, never silently `last`
    let o = retrieve_run_name(
        &mini,
        &tmp.path().join("idx-rewrite"),
        &tmp.path().join("x.trec"),
        Some("lastt"),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("unknown query formulation"),
        "{}",
        text(&o.stderr)
    );
    let o = mtr()
        .arg("export")
        .arg(&mini)
        .args(["--to", "trec", "--query", "lastt", "-o"])
        .arg(tmp.path().join("e0"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let o = mtr()
        .arg("bench")
        .arg(&mini)
        .args(["--retriever", "bm25", "--query", "lastt", "-o"])
        .arg(tmp.path().join("b0"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let o = mtr()
        .arg("audit")
        .arg(&mini)
        .args(["--negatives-query", "lastt", "-o"])
        .arg(tmp.path().join("a0"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("unknown query formulation"));
    // export's `all` is retrieve's `all` (every user question); `full` is refused, not
    // silently written as something else
    let o = mtr()
        .arg("export")
        .arg(&mini)
        .args(["--to", "trec", "--query", "all", "-o"])
        .arg(tmp.path().join("e1"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let topics = std::fs::read_to_string(tmp.path().join("e1/topics.tsv")).unwrap();
    let retrieved = std::fs::read_to_string(tmp.path().join("x.trec")).ok();
    assert!(retrieved.is_none());
    assert!(topics.lines().count() > 1);
    let o = mtr()
        .arg("export")
        .arg(&mini)
        .args(["--to", "trec", "--query", "full", "-o"])
        .arg(tmp.path().join("e2"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("mtr retrieve"),
        "{}",
        text(&o.stderr)
    );
}

fn help(args: &[&str]) -> String {
    let o = mtr().args(args).arg("--help").output().unwrap();
    assert!(o.status.success(), "{args:?}");
    text(&o.stdout)
}

#[test]
fn flags_mean_the_same_in_every_command() {
    // -o/--output everywhere a folder or file is written
    for c in [
        "import",
        "export",
        "index",
        "retrieve",
        "audit",
        "synth",
        "bench",
        "leaderboard",
    ] {
        assert!(help(&[c]).contains("-o, --output"), "{c}");
    }
    // one JSON switch
    for c in [
        &["import"][..],
        &["index"],
        &["validate"],
        &["stats"],
        &["retrieve"],
        &["eval"],
        &["cache", "stats"],
        &["export"],
        &["leaderboard"],
    ] {
        let h = help(c);
        assert!(
            h.contains("--format <FORMAT>") && !h.contains("--json"),
            "{c:?}: {h}"
        );
    }
    // -q is eval's per-query flag (trec_eval), quiet is --quiet only
    assert!(help(&["eval"]).contains("-q, --per-query"));
    assert!(!help(&["stats"]).contains("-q, --quiet"));
    let o = mtr().args(["-q", "config", "show"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    // relevance level and confidence level have distinct names
    let e = help(&["eval"]);
    assert!(
        e.contains("-l, --relevance-level <N>") && e.contains("[default: 1]"),
        "{e}"
    );
    let b = help(&["bench"]);
    assert!(
        b.contains("--confidence-level <LEVEL>") && !b.contains("--level"),
        "{b}"
    );
    // LLM flags only where an LLM is called; --dry-run and --batch only where they work
    for c in [
        "eval",
        "import",
        "export",
        "validate",
        "stats",
        "leaderboard",
        "report",
    ] {
        let h = help(&[c]);
        assert!(
            !h.contains("--llm-cache") && !h.contains("--dry-run"),
            "{c}"
        );
    }
    for c in ["index", "retrieve", "bench"] {
        let h = help(&[c]);
        assert!(
            h.contains("--llm-cache") && !h.contains("--batch ") && !h.contains("--dry-run"),
            "{c}"
        );
    }
    assert!(help(&["synth"]).contains("--dry-run") && !help(&["synth"]).contains("--batch "));
    let a = help(&["audit"]);
    assert!(a.contains("--dry-run") && a.contains("--batch"));
    // defaults are shown, and always the same way
    for c in [
        "import",
        "export",
        "validate",
        "stats",
        "eval",
        "index",
        "retrieve",
        "audit",
        "synth",
        "bench",
        "leaderboard",
        "report",
        "cache",
        "config",
    ] {
        let h = help(&[c]);
        assert!(
            !h.contains("(default"),
            "{c}: defaults written as [default: ...]: {h}"
        );
    }
    // defaults are shown
    for (c, opt) in [
        (&["audit"][..], "--negatives <NEGATIVES>"),
        (&["audit"], "--trials <TRIALS>"),
        (&["audit"], "--negatives-query"),
        (&["audit"], "--resamples"),
        (&["retrieve"], "--query <FORMULATION>"),
        (&["export"], "--query <FORMULATION>"),
        (&["synth"], "--turns"),
        (&["bench"], "--measure <MEASURE>"),
        (&["eval"], "--measure <MEASURE>"),
        (&["import"], "--split"),
    ] {
        let h = help(c);
        let at = h.find(opt).unwrap_or_else(|| panic!("{c:?} lacks {opt}"));
        // the option's line and its help lines, up to the next option
        let block: Vec<&str> = h[at..]
            .lines()
            .enumerate()
            .take_while(|(i, l)| {
                *i == 0 || !(l.trim_start().starts_with('-') && l.len() - l.trim_start().len() < 8)
            })
            .map(|(_, l)| l)
            .collect();
        assert!(
            block.join(" ").contains("[default"),
            "{c:?} {opt}: {block:?}"
        );
    }
}

#[test]
fn report_rerenders_a_bench_folder_too() {
    let tmp = tempfile::tempdir().unwrap();
    let b = mtrag_bench(tmp.path());
    let out = tmp.path().join("res");
    let o = mtr()
        .arg("bench")
        .arg(&b)
        .args([
            "--retriever",
            "bm25",
            "--query",
            "last",
            "--resamples",
            "20",
            "--permutations",
            "20",
            "-o",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let report = std::fs::read(out.join("report.md")).unwrap();
    std::fs::remove_file(out.join("report.md")).unwrap();
    let o = mtr().arg("report").arg(&out).output().unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(std::fs::read(out.join("report.md")).unwrap(), report);
    // a folder that is neither says so
    let o = mtr().arg("report").arg(&b).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("not an audit or bench output folder"));
}

#[test]
fn commands_print_their_result_and_log_nothing_by_default() {
    let tmp = tempfile::tempdir().unwrap();
    let b = mtrag_bench(tmp.path());
    let (q, r) = qrels_and_run(tmp.path());
    // eval is as silent as trec_eval, even with run queries that have no qrels
    let o = eval(&q, &r, &["-m", "map"]);
    assert!(o.status.success());
    assert_eq!(text(&o.stderr), "");
    let o = mtr().arg("stats").arg(&b).output().unwrap();
    assert!(o.status.success());
    assert_eq!(text(&o.stderr), "");
    let idx = tmp.path().join("idx");
    let o = mtr()
        .arg("index")
        .arg(&b)
        .arg("-o")
        .arg(&idx)
        .output()
        .unwrap();
    assert!(o.status.success());
    assert_eq!(text(&o.stderr), "", "index logs by default");
    let o = retrieve_run_name(&b, &idx, &tmp.path().join("r.trec"), Some("last"));
    assert!(o.status.success());
    assert_eq!(text(&o.stderr), "", "retrieve logs by default");
    // -v shows the INFO lines
    let o = mtr()
        .arg("-v")
        .arg("index")
        .arg(&b)
        .arg("-o")
        .arg(tmp.path().join("idx2"))
        .output()
        .unwrap();
    assert!(o.status.success());
    assert!(text(&o.stderr).contains("INFO"), "{}", text(&o.stderr));
}

#[test]
fn exit_codes_follow_one_table() {
    let tmp = tempfile::tempdir().unwrap();
    let (q, r) = qrels_and_run(tmp.path());
    // 0: done
    assert_eq!(eval(&q, &r, &[]).status.code(), Some(0));
    // 2: user input, whatever the command
    let bad_flag = mtr()
        .args(["stats", "--no-such-flag", "x"])
        .output()
        .unwrap();
    assert_eq!(bad_flag.status.code(), Some(2));
    let missing = mtr()
        .arg("stats")
        .arg(tmp.path().join("nope"))
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2), "{}", text(&missing.stderr));
    assert_eq!(eval(&q, &r, &["-m", "bogus"]).status.code(), Some(2));
    assert_eq!(
        eval(&q, &tmp.path().join("nope.trec"), &[]).status.code(),
        Some(2)
    );
    let bad = tmp.path().join("bad");
    std::fs::create_dir(&bad).unwrap();
    let o = mtr().args(["report"]).arg(&bad).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let o = mtr()
        .args(["leaderboard", "-o"])
        .arg(tmp.path().join("site"))
        .arg(&q)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
}

/// Every file under `root` with its size and modification time.
fn tree(root: &Path) -> BTreeMap<PathBuf, (u64, std::time::SystemTime)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let m = e.metadata().unwrap();
            let p = e.path();
            out.insert(
                p.strip_prefix(root).unwrap().to_path_buf(),
                (m.len(), m.modified().unwrap()),
            );
            if m.is_dir() {
                stack.push(p);
            }
        }
    }
    out
}

/// A configuration whose endpoints nobody listens on (a dry run calls nothing), its cache
/// outside `work`, with a configured speed (for the wall-time estimate).
fn dry_config(cfg_dir: &Path) -> PathBuf {
    let p = cfg_dir.join("mtr.toml");
    let mut t = format!(
        "[llm]\ncache = \"{}\"\n",
        cfg_dir.join("cache.sqlite").display()
    );
    for n in ["judge", "gen"] {
        t.push_str(&format!(
            "[[llm.endpoints]]\nname = \"{n}\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"{n}-model\"\nprice_in_per_mtok = 1.0\nprice_out_per_mtok = 2.0\noutput_tokens_per_s = 40.0\nprompt_tokens_per_s = 400.0\n"
        ));
    }
    t.push_str("[llm.roles]\njudges = [\"judge\"]\ngenerator = [\"gen\"]\n");
    std::fs::write(&p, t).unwrap();
    p
}

#[test]
fn dry_runs_write_nothing() {
    let work = tempfile::tempdir().unwrap();
    let side = tempfile::tempdir().unwrap();
    let cfg = dry_config(side.path());
    let b = mtrag_bench(work.path());
    let before = tree(work.path());
    // the LLM cache and the local servers' home live here: a dry run creates nothing there either
    let side_before = tree(side.path());
    let o = mtr()
        .env("MTR_HOME", side.path())
        .env("XDG_CACHE_HOME", side.path())
        .arg("--config")
        .arg(&cfg)
        .arg("audit")
        .arg(&b)
        .arg("-o")
        .arg(work.path().join("audit"))
        .arg("--dry-run")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("dry run"), "{}", text(&o.stdout));
    // the time it would take, from the endpoints' configured speed
    assert!(
        text(&o.stdout).contains("wall time: about"),
        "{}",
        text(&o.stdout)
    );
    assert_eq!(tree(work.path()), before, "audit --dry-run wrote files");

    let corpus = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpora/en");
    let o = mtr()
        .env("MTR_HOME", side.path())
        .env("XDG_CACHE_HOME", side.path())
        .arg("--config")
        .arg(&cfg)
        .args(["synth", "--corpus"])
        .arg(&corpus)
        .arg("-o")
        .arg(work.path().join("synth"))
        .args([
            "--dialogues",
            "3",
            "--turns",
            "2",
            "--vectors",
            "lexical",
            "--dry-run",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).contains("wall time: about"),
        "{}",
        text(&o.stdout)
    );
    assert!(
        text(&o.stdout).contains("nothing was called"),
        "{}",
        text(&o.stdout)
    );
    assert_eq!(tree(work.path()), before, "synth --dry-run wrote files");
    assert_eq!(
        tree(side.path()),
        side_before,
        "a dry run created the LLM cache or other files beside the output"
    );
}
