//! `mtr eval` against trec_eval's own expected outputs and the real MTRAG runs: the binary's
//! stdout must equal the expected files byte for byte (filtered to the measures mtr computes).
//! Skips when ../shared is absent.

use std::collections::BTreeSet;
use std::path::PathBuf;

use assert_cmd::Command;

fn mtr() -> Command {
    Command::cargo_bin("mtr").unwrap()
}

fn shared() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared");
    if p.is_dir() {
        Some(p)
    } else {
        eprintln!("note: ../shared is absent; skipping");
        None
    }
}

/// The lines of trec_eval's output whose measure is among `names`.
fn filter(text: &str, names: &BTreeSet<&str>) -> String {
    text.lines()
        .filter(|l| names.contains(l.split('\t').next().unwrap_or("").trim_end()))
        .map(|l| format!("{l}\n"))
        .collect()
}

fn stdout(args: &[&str]) -> String {
    let out = mtr().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "mtr {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn default_output_equals_trec_eval_out_test() {
    let Some(sh) = shared() else { return };
    let d = sh.join("golden/trec_eval_test");
    let got = stdout(&[
        "eval",
        d.join("qrels.test").to_str().unwrap(),
        d.join("results.test").to_str().unwrap(),
    ]);
    assert_eq!(got, std::fs::read_to_string(d.join("out.test")).unwrap());
}

#[test]
fn trec_eval_flags_reproduce_out_test_aqcm() {
    // trec_eval -m all_trec -q -c -M100 qrels.test results.trunc, with trec_eval's attached
    // short-option syntax.
    let Some(sh) = shared() else { return };
    let d = sh.join("golden/trec_eval_test");
    let got = stdout(&[
        "eval",
        "-q",
        "-c",
        "-M100",
        "-mofficial",
        "-m",
        "recall",
        "-m",
        "ndcg",
        "-m",
        "ndcg_cut",
        "-m",
        "map_cut",
        "-m",
        "success",
        d.join("qrels.test").to_str().unwrap(),
        d.join("results.trunc").to_str().unwrap(),
    ]);
    let names: BTreeSet<&str> = got
        .lines()
        .map(|l| l.split('\t').next().unwrap().trim_end())
        .collect();
    assert!(names.contains("ndcg_cut_1000") && names.contains("iprec_at_recall_0.50"));
    let want = filter(
        &std::fs::read_to_string(d.join("out.test.aqcM")).unwrap(),
        &names,
    );
    assert_eq!(got, want);
}

#[test]
fn relevance_level_reproduces_out_test_aql() {
    let Some(sh) = shared() else { return };
    let d = sh.join("golden/trec_eval_test");
    let got = stdout(&[
        "eval",
        "--per-query",
        "-l2",
        "-m",
        "all",
        d.join("qrels.rel_level").to_str().unwrap(),
        d.join("results.test").to_str().unwrap(),
    ]);
    // `all` includes mtr's extensions, which trec_eval does not print.
    let names: BTreeSet<&str> = got
        .lines()
        .map(|l| l.split('\t').next().unwrap().trim_end())
        .collect();
    let want = filter(
        &std::fs::read_to_string(d.join("out.test.aql")).unwrap(),
        &names,
    );
    let ours = filter(
        &got,
        &want
            .lines()
            .map(|l| l.split('\t').next().unwrap().trim_end())
            .collect(),
    );
    assert!(want.lines().count() > 200, "{}", want.lines().count());
    assert_eq!(ours, want);
}

#[test]
fn mtrag_jsonl_runs_equal_trec_eval_expected() {
    let Some(sh) = shared() else { return };
    let data = sh.join("data/mtrag");
    let qrels = data.join("tasks_clapnq/qrels/dev.tsv");
    for stem in [
        "bm25__bm25_clapnq_lastturn",
        "elser__elser_clapnq_rewrite",
        "bge__bge_clapnq_questions",
    ] {
        let got = stdout(&[
            "eval",
            "-q",
            "-c",
            "-m",
            "map",
            "-m",
            "recip_rank",
            "-m",
            "ndcg_cut.5,10,20",
            "-m",
            "recall.5,10,20",
            "-m",
            "P.5,10",
            "-m",
            "Rprec",
            "-m",
            "success.1,5,10",
            "-m",
            "map_cut.10",
            "-m",
            "ndcg",
            "-m",
            "num_q",
            "-m",
            "num_rel",
            "-m",
            "num_rel_ret",
            qrels.to_str().unwrap(),
            data.join(format!("runs_clapnq/{stem}.jsonl"))
                .to_str()
                .unwrap(),
        ]);
        let want =
            std::fs::read_to_string(data.join(format!("expected/{stem}.trec_eval.txt"))).unwrap();
        assert_eq!(got, want, "{stem}");
    }
}

#[test]
fn json_output_carries_full_precision_conventions_and_hashes() {
    let Some(sh) = shared() else { return };
    let d = sh.join("golden/trec_eval_test");
    let got = stdout(&[
        "eval",
        "--format",
        "json",
        "-m",
        "map",
        "-m",
        "ndcg_cut.10",
        d.join("qrels.test").to_str().unwrap(),
        d.join("results.test").to_str().unwrap(),
    ]);
    let v: serde_json::Value = serde_json::from_str(&got).unwrap();
    let fp: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(sh.join("golden/fullprec/test_binary.json")).unwrap(),
    )
    .unwrap();
    for m in ["map", "ndcg_cut_10"] {
        let want: f64 = fp["mean_over_evaluated"][m]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!(
            (v["summary"][m].as_f64().unwrap() - want).abs() < 1e-12,
            "{m}"
        );
        let want: f64 = fp["per_query"]["302"][m].as_str().unwrap().parse().unwrap();
        assert!(
            (v["per_query"]["302"][m].as_f64().unwrap() - want).abs() < 1e-12,
            "{m}"
        );
    }
    assert_eq!(v["conventions"]["compat"], "trec_eval_10");
    assert_eq!(v["inputs"][0]["role"], "qrels");
    assert_eq!(v["inputs"][1]["blake3"].as_str().unwrap().len(), 64);

    let lines = stdout(&[
        "eval",
        "--format",
        "jsonl",
        "-m",
        "map",
        d.join("qrels.test").to_str().unwrap(),
        d.join("results.test").to_str().unwrap(),
    ]);
    let rows: Vec<serde_json::Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 5);
    assert_eq!(rows[0]["type"], "header");
    assert_eq!(rows[1]["qid"], "301");
    assert_eq!(rows[4]["qid"], "all");
}

#[test]
fn compat_trec_eval_9_uses_float32_scores() {
    let Some(sh) = shared() else { return };
    let d = sh.join("golden/edge_cases/case09_float32_score_collapse");
    let args = |compat: &str| {
        stdout(&[
            "eval",
            "-m",
            "recip_rank",
            "--compat",
            compat,
            d.join("qrels.txt").to_str().unwrap(),
            d.join("run.txt").to_str().unwrap(),
        ])
    };
    assert_eq!(
        args("trec_eval_10"),
        "recip_rank            \tall\t1.0000\n"
    );
    assert_eq!(args("trec_eval_9"), "recip_rank            \tall\t0.5000\n");
}

#[test]
fn bad_input_is_a_user_error_naming_the_line() {
    let Some(sh) = shared() else { return };
    let d = sh.join("golden/edge_cases/case07_duplicate_doc");
    let (q, r) = (d.join("qrels.txt"), d.join("run.txt"));
    let out = mtr()
        .args(["eval", q.to_str().unwrap(), r.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("run.txt:3") && err.contains("duplicate") && err.contains("--dedup first"),
        "{err}"
    );
    let out = mtr()
        .args([
            "eval",
            "--dedup",
            "first",
            "-m",
            "num_ret",
            q.to_str().unwrap(),
            r.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "num_ret               \tall\t3\n"
    );

    let d = sh.join("golden/edge_cases/case02_missing_extra");
    let (q, r) = (d.join("qrels.txt"), d.join("run.txt"));
    let out = mtr()
        .args(["eval", q.to_str().unwrap(), r.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("q3"));
    let ok = mtr()
        .args([
            "eval",
            "--intersect",
            q.to_str().unwrap(),
            r.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(ok.status.success());

    let out = mtr()
        .args([
            "eval",
            "-m",
            "utility",
            q.to_str().unwrap(),
            r.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not computed by mtr"));
}

/// Runs and qrels given as pipes (`<(zcat run.gz)`), which cannot be memory-mapped or read twice,
/// give the same output as the files.
#[cfg(unix)]
#[test]
fn pipes_give_the_same_output_as_files() {
    let Some(sh) = shared() else { return };
    let d = sh.join("golden/trec_eval_test");
    let bin = assert_cmd::cargo::cargo_bin("mtr");
    let script = format!(
        "'{}' eval <(cat '{}') <(cat '{}')",
        bin.display(),
        d.join("qrels.test").display(),
        d.join("results.test").display()
    );
    let out = std::process::Command::new("bash")
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        std::fs::read_to_string(d.join("out.test")).unwrap()
    );
}

/// Judged@k (ir_measures' name; `judged.k` as trec_eval would spell it) in the text output
/// (per query and `all`) and the JSON: the share of the top k the qrels judge, any grade.
#[test]
fn judged_at_k_per_query_all_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let qrels = dir.path().join("q.qrels");
    let run = dir.path().join("r.run");
    std::fs::write(&qrels, "1 0 a 2\n1 0 b 0\n1 0 c -1\n2 0 x 1\n").unwrap();
    std::fs::write(
        &run,
        "1 Q0 a 1 9 t\n1 Q0 u 2 8 t\n1 Q0 b 3 7 t\n1 Q0 c 4 6 t\n2 Q0 y 1 5 t\n2 Q0 x 2 4 t\n",
    )
    .unwrap();
    let (q, r) = (qrels.to_str().unwrap(), run.to_str().unwrap());
    let text = stdout(&["eval", "-q", "-m", "Judged@2", "-m", "P.2", q, r]);
    let want: String = ["1", "2", "all"]
        .iter()
        .flat_map(|q| ["P_2", "judged_2"].map(|m| format!("{m:<22}\t{q}\t0.5000\n")))
        .collect();
    assert_eq!(text, want);
    // top 4 of query 1: a, b and c judged (grades 2, 0, -1), u not: 3/4; query 2 retrieved 2
    let json = stdout(&["eval", "--format", "json", "-m", "judged.4", q, r]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["per_query"]["1"]["judged_4"], 0.75);
    assert_eq!(v["per_query"]["2"]["judged_4"], 0.5);
    assert_eq!(v["summary"]["judged_4"], 0.625);
    let out = mtr()
        .args(["eval", "-m", "Judged@0", q, r])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
