//! What the embedded judges are worth as hole fillers (issue 48, docs/judge.md): the two ends
//! of `benchmarks/judge/run.sh`, around `mtr judge` and `mtr qrels apply --variant filled`.
//!
//! - `prepare BENCH N OUT`: the first `N` dialogues of an imported MTRAG domain, written twice
//!   as native benchmarks: `OUT/full` with every gold and `OUT/sparse` with half of each turn's
//!   extra relevant golds removed (every other one after its first, as the oracle test in
//!   `tests/e2e/judge.rs` removes them); prints what was removed.
//! - `table FULL SPARSE FILLED.qrels RUNS_DIR K [RESAMPLES SEED]`: every run's P@K and nDCG@K
//!   under the full, the sparse and the filled qrels on the turns the full qrels judge relevant
//!   (a turn a run lacks scores 0, as `trec_eval -c`), and Kendall's tau-b of the runs' order
//!   under the full qrels against the sparse and against the filled, each with a seeded
//!   bootstrap interval over turns (`mtr_metrics::agreement::tau_b_interval`); and how many
//!   removed golds the judges found. Prints Markdown.
//!
//! Run through `benchmarks/judge/run.sh` (README.md beside it).

#![allow(clippy::print_stdout)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use mtr_core::{BenchmarkDir, Qrels};
use mtr_metrics::agreement::{PairedScores, tau_b_interval};
use mtr_metrics::stats::ClusterBootstrap;
use mtr_metrics::{EvalOptions, EvalQrels, MeasureSet, MissingQueries};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("prepare") if args.len() == 4 => prepare(
            Path::new(&args[1]),
            args[2].parse()?,
            Path::new(&args[3]),
        ),
        Some("table") if args.len() >= 6 => table(&TableArgs {
            full: PathBuf::from(&args[1]),
            sparse: PathBuf::from(&args[2]),
            filled: PathBuf::from(&args[3]),
            runs: PathBuf::from(&args[4]),
            depth: args[5].parse()?,
            resamples: args.get(6).map_or(Ok(1000), |s| s.parse())?,
            seed: args.get(7).map_or(Ok(1), |s| s.parse())?,
        }),
        _ => Err("usage: judge_tau prepare BENCH N OUT | table FULL SPARSE FILLED.qrels RUNS_DIR K [RESAMPLES SEED]".into()),
    }
}

/// Writes `out/full` and `out/sparse` from the first `n` dialogues of `bench`.
fn prepare(bench: &Path, n: usize, out: &Path) -> Res<()> {
    let b = BenchmarkDir::open(bench)?.load()?;
    let full: Vec<_> = b.dialogues.iter().take(n).cloned().collect();
    let mut sparse = full.clone();
    let (mut turns, mut golds, mut removed) = (0, 0, 0);
    for d in &mut sparse {
        for t in &mut d.turns {
            let relevant: Vec<String> = t.relevant().map(|g| g.passage_id.clone()).collect();
            if !relevant.is_empty() {
                turns += 1;
            }
            golds += relevant.len();
            let extra = &relevant[relevant.len().min(1)..];
            let gone: BTreeSet<&String> = extra.iter().step_by(2).collect();
            removed += gone.len();
            t.gold.retain(|g| !gone.contains(&g.passage_id));
        }
    }
    for (name, dialogues) in [("full", &full), ("sparse", &sparse)] {
        let mut m = b.manifest.clone();
        m.name = format!("{}-{name}", b.manifest.name);
        m.fingerprint = String::new();
        let mut corpus = Vec::new();
        b.dir.for_each_passage(|_, p| {
            corpus.push(Ok(p));
            Ok(())
        })?;
        mtr_core::benchmark::write_benchmark(out.join(name), m, dialogues, corpus)?;
    }
    println!(
        "{} dialogues, {turns} turns with a relevant gold, {golds} relevant golds, {removed} removed in sparse/",
        full.len()
    );
    Ok(())
}

struct TableArgs {
    full: PathBuf,
    sparse: PathBuf,
    filled: PathBuf,
    runs: PathBuf,
    depth: usize,
    resamples: usize,
    seed: u64,
}

/// Per run, per measure, the values on `turns` (in order) under `qrels`.
fn per_turn(
    qrels: &Qrels,
    turns: &[String],
    runs: &[(String, mtr_core::Run)],
    columns: &[String],
    opts: &EvalOptions,
) -> Res<Vec<Vec<Vec<f64>>>> {
    let keep: BTreeSet<&str> = turns.iter().map(String::as_str).collect();
    let q: Qrels = qrels
        .iter()
        .filter(|(t, _)| keep.contains(t.as_str()))
        .map(|(t, j)| (t.clone(), j.clone()))
        .collect();
    let q = EvalQrels::from_qrels(&q);
    let mut out = Vec::new();
    for (_, run) in runs {
        let e = mtr_metrics::evaluate_run(&q, run, opts)?;
        let mut by_measure = Vec::new();
        for c in columns {
            let values: BTreeMap<&str, f64> =
                e.per_query(c).unwrap_or_default().into_iter().collect();
            by_measure.push(
                turns
                    .iter()
                    .map(|t| values.get(t.as_str()).copied().unwrap_or(0.0))
                    .collect(),
            );
        }
        out.push(by_measure);
    }
    Ok(out)
}

fn table(a: &TableArgs) -> Res<()> {
    let full = BenchmarkDir::open(&a.full)?.qrels()?;
    let sparse = BenchmarkDir::open(&a.sparse)?.qrels()?;
    let filled = mtr_core::trec::read_qrels(&a.filled)?;
    let turns: Vec<String> = full
        .iter()
        .filter(|(_, j)| j.values().any(|g| *g > 0))
        .map(|(t, _)| t.clone())
        .collect();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&a.runs)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    paths.sort();
    let runs: Vec<(String, mtr_core::Run)> = paths
        .iter()
        .map(|p| {
            let name = p
                .file_stem()
                .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
            Ok((name, mtr_core::read_run_any(p)?))
        })
        .collect::<Res<_>>()?;
    let k = a.depth;
    let (specs, columns) = (
        vec![format!("P.{k}"), format!("ndcg_cut.{k}")],
        vec![format!("P_{k}"), format!("ndcg_cut_{k}")],
    );
    let opts = EvalOptions {
        measures: MeasureSet::parse(&specs)?,
        missing: MissingQueries::Complete,
        ..EvalOptions::default()
    };
    let scored = [&full, &sparse, &filled].map(|q| per_turn(q, &turns, &runs, &columns, &opts));
    let [f, s, fi] = scored;
    let (f, s, fi) = (f?, s?, fi?);
    let boot = ClusterBootstrap::new(turns.len(), a.resamples, 0.95, a.seed);
    let clusters: Vec<usize> = (0..turns.len()).collect();
    println!(
        "{} runs, {} turns, depth {k}; tau-b of the runs' order under the full qrels against the other, 95% percentile bootstrap over turns ({} resamples, seed {})\n",
        runs.len(),
        turns.len(),
        a.resamples,
        a.seed
    );
    print_taus(&columns, [&f, &s, &fi], &boot, &clusters);
    println!(
        "\n| run | P@{k} full | sparse | filled | nDCG@{k} full | sparse | filled |\n|---|---|---|---|---|---|---|"
    );
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    for (i, (name, _)) in runs.iter().enumerate() {
        println!(
            "| {name} | {:.4} | {:.4} | {:.4} | {:.4} | {:.4} | {:.4} |",
            mean(&f[i][0]),
            mean(&s[i][0]),
            mean(&fi[i][0]),
            mean(&f[i][1]),
            mean(&s[i][1]),
            mean(&fi[i][1])
        );
    }
    print_recovery(&full, &sparse, &filled, &turns);
    Ok(())
}

/// The tau table: per measure, tau-b of the runs' order under the full qrels against the
/// sparse and against the filled, with the bootstrap's interval.
fn print_taus(
    columns: &[String],
    [f, s, fi]: [&Vec<Vec<Vec<f64>>>; 3],
    boot: &ClusterBootstrap,
    clusters: &[usize],
) {
    println!("| measure | sparse vs full | filled vs full |\n|---|---|---|");
    for (m, c) in columns.iter().enumerate() {
        let of =
            |v: &Vec<Vec<Vec<f64>>>| -> Vec<Vec<f64>> { v.iter().map(|r| r[m].clone()).collect() };
        let (fv, sv, fiv) = (of(f), of(s), of(fi));
        let (fr, sr, fir) = (refs(&fv), refs(&sv), refs(&fiv));
        let cell = |other: &[&[f64]]| {
            tau_b_interval(
                &PairedScores {
                    first: &fr,
                    second: other,
                    clusters,
                },
                boot,
            )
            .map_or("undefined".to_string(), |ci| {
                format!("{:.3} [{:.3}, {:.3}]", ci.estimate, ci.lower, ci.upper)
            })
        };
        println!("| {c} | {} | {} |", cell(&sr), cell(&fir));
    }
}

fn refs(v: &[Vec<f64>]) -> Vec<&[f64]> {
    v.iter().map(Vec::as_slice).collect()
}

/// How many removed golds the filled qrels hold as relevant, and what else they add.
fn print_recovery(full: &Qrels, sparse: &Qrels, filled: &Qrels, turns: &[String]) {
    let (mut removed, mut recovered, mut judged_not, mut added_other, mut added_zero) =
        (0, 0, 0, 0, 0);
    for t in turns {
        let empty = BTreeMap::new();
        let (fu, sp, fi) = (
            full.get(t).unwrap_or(&empty),
            sparse.get(t).unwrap_or(&empty),
            filled.get(t).unwrap_or(&empty),
        );
        for d in fu.iter().filter(|(_, g)| **g > 0).map(|(d, _)| d) {
            if sp.get(d).is_none_or(|x| *x <= 0) {
                removed += 1;
                match fi.get(d) {
                    Some(x) if *x > 0 => recovered += 1,
                    Some(_) => judged_not += 1,
                    None => {}
                }
            }
        }
        for (d, g) in fi.iter().filter(|(d, _)| !sp.contains_key(*d)) {
            if fu.get(d).is_some_and(|x| *x > 0) {
                continue;
            }
            if *g > 0 {
                added_other += 1;
            } else {
                added_zero += 1;
            }
        }
    }
    println!(
        "\nremoved golds: {removed}; judged relevant when filled: {recovered}; judged not relevant: {judged_not}; not in any run's top K (never a hole): {}; other holes judged relevant: {added_other}; judged not relevant: {added_zero}",
        removed - recovered - judged_not
    );
}
