//! Scale benchmark of `mtr bench`'s scoring: 20 systems x 10,000 turns (1,250 dialogues of 8
//! turns, runs of depth 100), every default measure, 1,000 cluster-bootstrap resamples (overall,
//! per stratum and per turn position), paired randomization tests over all 190 system pairs
//! (10,000 permutations) with Holm, discriminative power, diagnosis and failure analysis.
//! Target: under 10 s on 2 cores. Prints the time of each phase and the peak memory.
//!
//! Run: `cargo bench -p mtr-bench --no-default-features --bench scale` (see README.md here).
//! Options (env): SYSTEMS, TURNS, TURNS_PER_DIALOGUE, DEPTH, RESAMPLES, PERMUTATIONS.

#![allow(clippy::print_stdout)]

#[path = "synthetic.rs"]
mod synthetic;

use std::time::Instant;

use synthetic::cpu_seconds;

use mtr_bench::Scorer;
use mtr_bench::Strata;
use mtr_bench::job::compute;
use mtr_bench::stats::bootstrap::ClusterBootstrap;
use mtr_bench::stats::randomization::all_pairs;

fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let synthetic::Synthetic {
        systems,
        resamples,
        permutations,
        set,
        inputs,
        settings,
        ..
    } = synthetic::from_env("mtr bench scale benchmark");

    // Phase timings (each on its own), then the whole computation as bench runs it.
    let t = Instant::now();
    let scorer = Scorer::new(&set, &settings.measures)?;
    let scores = inputs
        .iter()
        .map(|s| scorer.score(&set, &s.run))
        .collect::<Result<Vec<_>, _>>()?;
    let t_score = t.elapsed().as_secs_f64();

    let t = Instant::now();
    let clusters = set.clusters();
    let boot = ClusterBootstrap::new(set.dialogues.len(), resamples, 0.95, 42);
    let series: Vec<&[f64]> = scores
        .iter()
        .flat_map(|s| s.values.iter().map(Vec::as_slice))
        .collect();
    let strata = Strata::build(&set);
    let mut groups = 1;
    let _overall = boot.estimate(&clusters, None, &series);
    for f in &strata.families {
        for g in &f.groups {
            let _ = boot.estimate(&clusters, Some(&g.members), &series);
            groups += 1;
        }
    }
    let t_boot = t.elapsed().as_secs_f64();

    let t = Instant::now();
    let main: Vec<&[f64]> = scores.iter().map(|s| s.values[1].as_slice()).collect();
    let p = all_pairs(&main, permutations, 43);
    let t_tests = t.elapsed().as_secs_f64();
    let separated = (0..systems)
        .flat_map(|a| ((a + 1)..systems).map(move |b| (a, b)))
        .filter(|&(a, b)| p.p[a][b] < 0.05)
        .count();

    let t = Instant::now();
    let c0 = cpu_seconds();
    let computed = compute(&set, &inputs, &[], &settings)?;
    let t_all = t.elapsed().as_secs_f64();
    let cpu_all = cpu_seconds() - c0;

    println!();
    println!("phase                                         seconds");
    println!(
        "score {systems} runs ({} measures, mtr-metrics)        {t_score:>8.3}",
        settings.measures.len()
    );
    println!(
        "cluster bootstrap ({groups} groups x {} series)      {t_boot:>8.3}",
        series.len()
    );
    println!(
        "randomization tests ({} pairs)                {t_tests:>8.3}",
        systems * (systems - 1) / 2
    );
    println!(
        "whole bench computation (engine::compute)     {t_all:>8.3}   target < 10 s: {}",
        if t_all < 10.0 { "MET" } else { "NOT MET" }
    );
    println!(
        "  its CPU time (user + system, all threads)   {cpu_all:>8.3}   (load average: {})",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    println!();
    println!(
        "{} systems scored; {separated} of {} pairs separated at p < 0.05; discriminative power {:.3}; peak RSS {:.0} MB",
        computed.systems.len(),
        systems * (systems - 1) / 2,
        computed
            .discriminative_power
            .as_ref()
            .map_or(f64::NAN, |d| d.share),
        peak_rss_mb()
    );
    Ok(())
}
