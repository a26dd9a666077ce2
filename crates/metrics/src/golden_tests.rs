//! Conformance against real reference outputs in `../shared/golden` and `../shared/data`:
//! trec_eval 10.0's own test suite byte for byte (filtered to the measures mtr computes), the
//! full-precision values to 1e-12, the edge cases against trec_eval 10.0 and 9.0.8, and the 12
//! real MTRAG runs against `trec_eval -q -c`. Each test skips (with a note) when `../shared` is
//! absent.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use crate::eval::evaluate_files;
use crate::measure::{Family, MeasureSet};
use crate::output::trec_eval_text;
use crate::{Compat, Dedup, EvalOptions, MissingQueries};

fn shared() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared");
    if p.is_dir() {
        Some(p)
    } else {
        eprintln!("note: ../shared is absent; skipping golden test");
        None
    }
}

/// Every trec_eval family mtr computes, default parameters (its part of `-m all_trec`).
fn all_trec_ours() -> MeasureSet {
    let names: Vec<&str> = crate::measure::Family::ALL
        .iter()
        .filter(|f| !f.is_extension())
        .map(|f| f.name())
        .collect();
    MeasureSet::parse(names).unwrap()
}

fn filter_expected(text: &str, ours: &BTreeSet<String>) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let name = line.split('\t').next().unwrap_or("").trim_end();
        if ours.contains(name) {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// One trec_eval invocation of its test suite: the expected output file, the inputs, and the
/// options it ran with.
struct TrecEvalCase<'a> {
    expected: &'a str,
    qrels: &'a str,
    run: &'a str,
    /// `-q`
    per_query: bool,
    opts: EvalOptions,
}

impl<'a> TrecEvalCase<'a> {
    /// `trec_eval -m all_trec` (mtr's part of it) without `-q`, `-c`, `-l` or `-M`.
    fn new(expected: &'a str, qrels: &'a str, run: &'a str) -> Self {
        TrecEvalCase {
            expected,
            qrels,
            run,
            per_query: false,
            opts: EvalOptions {
                measures: all_trec_ours(),
                relevance_level: 1,
                missing: MissingQueries::Error,
                max_docs: None,
                compat: Compat::TrecEval10,
                dedup: Dedup::Error,
            },
        }
    }
    fn per_query(mut self) -> Self {
        self.per_query = true;
        self
    }
    fn complete(mut self) -> Self {
        self.opts.missing = MissingQueries::Complete;
        self
    }
}

fn check_trec_eval_case(case: TrecEvalCase<'_>) {
    let TrecEvalCase {
        expected,
        qrels,
        run,
        per_query,
        opts,
    } = case;
    let Some(sh) = shared() else { return };
    let dir = sh.join("golden/trec_eval_test");
    let ev = evaluate_files(dir.join(qrels), dir.join(run), &opts).unwrap();
    let ours: BTreeSet<String> = ev.columns.iter().map(|c| c.name.clone()).collect();
    let want = filter_expected(&std::fs::read_to_string(dir.join(expected)).unwrap(), &ours);
    let got = trec_eval_text(&ev, per_query);
    assert!(!want.is_empty());
    if got != want {
        for (a, b) in got.lines().zip(want.lines()) {
            if a != b {
                panic!("{expected}: first difference\n  got:  {a:?}\n  want: {b:?}");
            }
        }
        panic!(
            "{expected}: line counts differ: got {} want {}",
            got.lines().count(),
            want.lines().count()
        );
    }
}

#[test]
fn trec_eval_out_test_default_measures_whole_file() {
    // `trec_eval qrels.test results.test`: the official measures, every line of the file.
    let Some(sh) = shared() else { return };
    let dir = sh.join("golden/trec_eval_test");
    for qrels in ["qrels.test", "qrels.test.with-comments"] {
        let ev = evaluate_files(
            dir.join(qrels),
            dir.join("results.test"),
            &EvalOptions::default(),
        )
        .unwrap();
        let want = std::fs::read_to_string(dir.join("out.test")).unwrap();
        assert_eq!(trec_eval_text(&ev, false), want, "{qrels}");
    }
    let ev = evaluate_files(
        dir.join("qrels.comment.test"),
        dir.join("results.comment.test"),
        &EvalOptions::default(),
    )
    .unwrap();
    assert_eq!(
        trec_eval_text(&ev, false),
        std::fs::read_to_string(dir.join("out.comment.test")).unwrap()
    );
}

#[test]
fn trec_eval_out_test_a() {
    check_trec_eval_case(TrecEvalCase::new(
        "out.test.a",
        "qrels.test",
        "results.test",
    ));
}

#[test]
fn trec_eval_out_test_aq() {
    check_trec_eval_case(
        TrecEvalCase::new("out.test.aq", "qrels.test", "results.test").per_query(),
    );
}

#[test]
fn trec_eval_out_test_aqc() {
    check_trec_eval_case(
        TrecEvalCase::new("out.test.aqc", "qrels.test", "results.trunc")
            .per_query()
            .complete(),
    );
}

#[test]
fn trec_eval_out_test_aqcm() {
    let mut case = TrecEvalCase::new("out.test.aqcM", "qrels.test", "results.trunc")
        .per_query()
        .complete();
    case.opts.max_docs = Some(100);
    check_trec_eval_case(case);
}

#[test]
fn trec_eval_out_test_aql() {
    let mut case = TrecEvalCase::new("out.test.aql", "qrels.rel_level", "results.test").per_query();
    case.opts.relevance_level = 2;
    check_trec_eval_case(case);
}

#[test]
fn trec_eval_out_test_meas_params() {
    let m = MeasureSet::parse([
        "iprec_at_recall..10,.20,.25,.75,.50",
        "P.5,7,3",
        "recall.20,2000",
        "ndcg.1=3,2=9,4=4.5",
        "ndcg_cut.10,20,23.4",
        "success.2,5,20",
    ])
    .unwrap();
    let mut case =
        TrecEvalCase::new("out.test.meas_params", "qrels.test", "results.test").per_query();
    case.opts.measures = m;
    check_trec_eval_case(case);
}

/// Splits a printed column name (`ndcg_cut_10`) into the `-m` spec that produces it.
fn spec_of(name: &str) -> String {
    if Family::from_name(name).is_some() {
        return name.to_string();
    }
    if let Some((fam, k)) = name.rsplit_once('_')
        && Family::from_name(fam).is_some()
    {
        return format!("{fam}.{k}");
    }
    panic!("no measure for column {name}")
}

fn measures_for(names: &BTreeSet<String>) -> MeasureSet {
    // Group cutoffs per family.
    let mut fams: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for n in names {
        let s = spec_of(n);
        match s.split_once('.') {
            Some((f, k)) => fams.entry(f.to_string()).or_default().push(k.to_string()),
            None => {
                fams.entry(s).or_default();
            }
        }
    }
    let specs: Vec<String> = fams
        .into_iter()
        .map(|(f, ks)| {
            if ks.is_empty() {
                f
            } else {
                format!("{f}.{}", ks.join(","))
            }
        })
        .collect();
    MeasureSet::parse(specs).unwrap()
}

#[test]
fn fullprec_values_match_to_1e12() {
    let Some(sh) = shared() else { return };
    let dir = sh.join("golden/fullprec");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert_eq!(files.len(), 6);
    for f in files {
        let g: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        let rel = |k: &str| {
            let p = g[k].as_str().unwrap().replace("trec_eval/test/", "");
            sh.join("golden/trec_eval_test").join(p)
        };
        let per_query = g["per_query"].as_object().unwrap();
        let names: BTreeSet<String> = per_query
            .values()
            .next()
            .unwrap()
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        for complete in [false, true] {
            let opts = EvalOptions {
                measures: measures_for(&names),
                relevance_level: g["relevance_level"].as_i64().unwrap(),
                missing: if complete {
                    MissingQueries::Complete
                } else {
                    MissingQueries::Error
                },
                ..EvalOptions::default()
            };
            let ev = evaluate_files(rel("qrels"), rel("run"), &opts).unwrap();
            let mut checked = 0;
            for (qid, vals) in per_query {
                for (name, want) in vals.as_object().unwrap() {
                    let want: f64 = want.as_str().unwrap().parse().unwrap();
                    let got = ev.per_query_map(name).unwrap()[qid];
                    assert!(
                        (got - want).abs() <= 1e-12,
                        "{f:?} {qid} {name}: got {got} want {want}"
                    );
                    checked += 1;
                }
            }
            let key = if complete {
                "mean_over_qrels_queries(-c)"
            } else {
                "mean_over_evaluated"
            };
            for (name, want) in g[key].as_object().unwrap() {
                let want: f64 = want.as_str().unwrap().parse().unwrap();
                let mut got = ev.mean(name).unwrap();
                if complete && name == "num_rel" {
                    // This file averages per-query num_rel; trec_eval -c sums grade > 0
                    // judgements over all queries (checked in the edge-case test).
                    continue;
                }
                if name.starts_with("num_") {
                    // trec_eval prints sums for num_*; this file averages them.
                    got /= ev.num_q as f64;
                }
                assert!(
                    (got - want).abs() <= 1e-12,
                    "{f:?} {key} {name}: got {got} want {want}"
                );
            }
            assert!(checked > 20);
        }
    }
}

fn fmt_value(name: &str, v: f64) -> String {
    if matches!(name, "num_q" | "num_ret" | "num_rel" | "num_rel_ret") {
        format!("{}", v as i64)
    } else {
        format!("{v:6.4}")
    }
}

/// The options of one trec_eval invocation of the edge cases, from its results key
/// (`9.0.8_l1_c`: version, relevance level, `-c`; `M10_recip_rank`: `-c -M10 -m recip_rank`).
fn edge_case_options(key: &str, names: &BTreeSet<String>) -> EvalOptions {
    let (version, variant) = key.split_once('_').unwrap();
    let compat = if version == "9.0.8" {
        Compat::TrecEval9
    } else {
        Compat::TrecEval10
    };
    let (level, complete, max_docs) = match variant {
        "l1" => (1, false, None),
        "l1_c" => (1, true, None),
        "l2" => (2, false, None),
        "l2_c" => (2, true, None),
        "M10_recip_rank" => (1, true, Some(10)),
        other => panic!("unknown variant {other}"),
    };
    // trec_eval 9 averaged over qrels ∩ run without -c; 10 stops with an error.
    let missing = match (complete, compat) {
        (true, _) => MissingQueries::Complete,
        (false, Compat::TrecEval9) => MissingQueries::Intersect,
        (false, Compat::TrecEval10) => MissingQueries::Error,
    };
    EvalOptions {
        measures: measures_for(names),
        relevance_level: level,
        missing,
        max_docs,
        compat,
        dedup: Dedup::Error,
    }
}

#[test]
fn edge_cases_match_trec_eval_10_and_9() {
    let Some(sh) = shared() else { return };
    let dir = sh.join("golden/edge_cases");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    cases.sort();
    assert_eq!(cases.len(), 9);
    let mut compared = 0;
    for case in cases {
        let r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(case.join("results.json")).unwrap())
                .unwrap();
        for (key, res) in r.as_object().unwrap() {
            let Some(rest) = key.strip_prefix("trec_eval_") else {
                continue;
            };
            let values = res["values"].as_object().unwrap();
            let failed = res["rc"].as_i64().unwrap() != 0;
            let names: BTreeSet<String> = if failed {
                // (stdout may hold per-query lines printed before trec_eval stopped)
                ["map".to_string()].into()
            } else {
                values["all"].as_object().unwrap().keys().cloned().collect()
            };
            let opts = edge_case_options(rest, &names);
            let compat = opts.compat;
            let got = evaluate_files(case.join("qrels.txt"), case.join("run.txt"), &opts);
            if failed {
                let e = got
                    .err()
                    .unwrap_or_else(|| panic!("{case:?} {key}: expected an error"));
                assert!(e.is_user_error(), "{case:?} {key}: {e}");
                compared += 1;
                continue;
            }
            let ev = got.unwrap_or_else(|e| panic!("{case:?} {key}: {e}"));
            for (qid, vals) in values {
                for (name, want) in vals.as_object().unwrap() {
                    let got = if qid == "all" {
                        ev.mean(name).unwrap()
                    } else {
                        *ev.per_query_map(name)
                            .unwrap()
                            .get(qid.as_str())
                            .unwrap_or_else(|| {
                                panic!("{case:?} {key}: no query {qid} in {:?}", ev.qids())
                            })
                    };
                    assert_eq!(
                        fmt_value(name, got),
                        want.as_str().unwrap(),
                        "{case:?} {key} {qid} {name}"
                    );
                    compared += 1;
                }
            }
            // trec_eval 9 does not print -c's missing queries per query; 10 does.
            let printed: BTreeSet<&str> = values
                .keys()
                .filter(|k| *k != "all")
                .map(String::as_str)
                .collect();
            let ours: BTreeSet<&str> = ev
                .queries
                .iter()
                .filter(|q| !(q.missing && compat == Compat::TrecEval9))
                .map(|q| q.qid.as_str())
                .collect();
            assert_eq!(printed, ours, "{case:?} {key}");
        }
    }
    assert!(compared > 1000, "{compared}");
}

#[test]
fn mtrag_runs_match_trec_eval_exactly() {
    let Some(sh) = shared() else { return };
    let data = sh.join("data/mtrag");
    let qrels = data.join("tasks_clapnq/qrels/dev.tsv");
    let measures = MeasureSet::parse([
        "map",
        "recip_rank",
        "ndcg_cut.5,10,20",
        "recall.5,10,20",
        "P.5,10",
        "Rprec",
        "success.1,5,10",
        "map_cut.10",
        "ndcg",
        "num_q",
        "num_rel",
        "num_rel_ret",
    ])
    .unwrap();
    let opts = EvalOptions {
        measures,
        missing: MissingQueries::Complete,
        ..EvalOptions::default()
    };
    let mut n = 0;
    let mut runs: Vec<PathBuf> = std::fs::read_dir(data.join("runs_clapnq"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    runs.sort();
    for run in runs {
        let stem = run.file_stem().unwrap().to_string_lossy().into_owned();
        let want =
            std::fs::read_to_string(data.join("expected").join(format!("{stem}.trec_eval.txt")))
                .unwrap();
        let ev = evaluate_files(&qrels, &run, &opts).unwrap();
        let got = trec_eval_text(&ev, true);
        if got != want {
            let d = got.lines().zip(want.lines()).find(|(a, b)| a != b);
            panic!(
                "{stem}: first difference {d:?} (lines {} vs {})",
                got.lines().count(),
                want.lines().count()
            );
        }
        n += 1;
    }
    assert_eq!(n, 12);
}

#[test]
fn mtrag_runs_via_mtr_core_readers_match_trec_eval() {
    // The in-memory API with runs read by mtr-core's own readers (what bench does).
    let Some(sh) = shared() else { return };
    let data = sh.join("data/mtrag");
    let qrels = mtr_core::trec::read_qrels(data.join("tasks_clapnq/qrels/dev.tsv")).unwrap();
    let opts = EvalOptions {
        measures: MeasureSet::parse([
            "map",
            "recip_rank",
            "ndcg_cut.5,10,20",
            "recall.5,10,20",
            "P.5,10",
            "Rprec",
            "success.1,5,10",
            "map_cut.10",
            "ndcg",
            "num_q",
            "num_rel",
            "num_rel_ret",
        ])
        .unwrap(),
        missing: MissingQueries::Complete,
        ..EvalOptions::default()
    };
    let q = crate::EvalQrels::from_qrels(&qrels);
    for stem in [
        "bm25__bm25_clapnq_lastturn",
        "bge__bge_clapnq_rewrite",
        "elser__elser_clapnq_questions",
    ] {
        let run = mtr_core::read_run_any(&data.join(format!("runs_clapnq/{stem}.jsonl"))).unwrap();
        let ev = crate::evaluate_run(&q, &run, &opts).unwrap();
        let want =
            std::fs::read_to_string(data.join("expected").join(format!("{stem}.trec_eval.txt")))
                .unwrap();
        assert_eq!(trec_eval_text(&ev, true), want, "{stem}");
    }
}

/// The MTRAG clapnq qrels widened as `benchmarks/metrics/judged_golden.py` widens them: per
/// query, the passages at (0-based) ranks 2 and 6 of the ELSER rewrite run judged 0 and the
/// one at rank 4 judged -1, unless already judged (ranked as ir_measures ranks: score
/// descending, then passage id ascending).
fn widened_mtrag_qrels(data: &std::path::Path) -> mtr_core::Qrels {
    let mut qrels = mtr_core::Qrels::new();
    let text = std::fs::read_to_string(data.join("tasks_clapnq/qrels/dev.tsv")).unwrap();
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split('\t').collect();
        qrels
            .entry(f[0].into())
            .or_default()
            .insert(f[1].into(), f[2].trim().parse().unwrap());
    }
    let path = data.join("runs_clapnq/elser__elser_clapnq_rewrite.jsonl");
    let run = crate::run_from_mtrag_jsonl(path).unwrap();
    for (qid, docs) in run.iter() {
        let Some(judged) = qrels.get_mut(qid) else {
            continue;
        };
        let mut ranked: Vec<(&str, f64)> = docs.iter().map(|(d, s)| (d.as_str(), *s)).collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
        for (rank, grade) in [(2, 0), (4, -1), (6, 0)] {
            if let Some((doc, _)) = ranked.get(rank) {
                judged.entry((*doc).into()).or_insert(grade);
            }
        }
    }
    qrels
}

/// Judged@k against ir_measures 0.4.3 on the 12 real MTRAG runs (values made by
/// `benchmarks/metrics/judged_golden.py`): every run's mean to 1e-12 (the two sum in different
/// orders) and two runs' per-query values exactly.
#[test]
fn judged_matches_ir_measures_on_mtrag_runs() {
    let Some(sh) = shared() else { return };
    let data = sh.join("data/mtrag");
    let want: serde_json::Value =
        serde_json::from_str(include_str!("testdata/judged_ir_measures.json")).unwrap();
    let qrels = crate::EvalQrels::from_qrels(&widened_mtrag_qrels(&data));
    let opts = EvalOptions {
        measures: MeasureSet::parse(["judged.1,3,5,10,20"]).unwrap(),
        // ir_measures gives a qrels query the run lacks its measure's default, 0: `-c`
        missing: MissingQueries::Complete,
        ..EvalOptions::default()
    };
    let runs = want["runs"].as_object().unwrap();
    assert_eq!(runs.len(), 12);
    let mut compared = 0;
    for (name, w) in runs {
        let path = data.join(format!("runs_clapnq/{name}.jsonl"));
        let ev = crate::evaluate_file(&qrels, &path, &opts).unwrap();
        for (k, mean) in w["mean"].as_object().unwrap() {
            let got = ev.mean(&format!("judged_{k}")).unwrap();
            let mean = mean.as_f64().unwrap();
            assert!(
                (got - mean).abs() < 1e-12,
                "{name} judged_{k}: {got} vs {mean}"
            );
            compared += 1;
        }
        let Some(per_query) = w.get("per_query").and_then(|p| p.as_object()) else {
            continue;
        };
        assert_eq!(ev.queries.len(), per_query.len(), "{name}");
        for (qid, values) in per_query {
            for (k, v) in values.as_object().unwrap() {
                let got = ev.per_query_map(&format!("judged_{k}")).unwrap()[qid];
                assert_eq!(got, v.as_f64().unwrap(), "{name} {qid} judged_{k}");
                compared += 1;
            }
        }
    }
    assert!(compared > 2000, "{compared}");
}
