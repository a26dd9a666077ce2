//! Scale benchmark of `mtr bench`'s scoring: 20 systems x 10,000 turns (1,250 dialogues of 8
//! turns, runs of depth 100), every default measure, 1,000 cluster-bootstrap resamples (overall,
//! per stratum and per turn position), paired randomization tests over all 190 system pairs
//! (10,000 permutations) with Holm, discriminative power, diagnosis and failure analysis.
//! Target: under 10 s on 2 cores. Prints the time of each phase and the peak memory.
//!
//! Run: `cargo bench -p mtr-bench --no-default-features --bench scale` (see README.md here).
//! Options (env): SYSTEMS, TURNS, TURNS_PER_DIALOGUE, DEPTH, RESAMPLES, PERMUTATIONS.

#![allow(clippy::print_stdout)]

use std::time::Instant;

use mtr_bench::engine::{Settings, SystemInput, compute};
use mtr_bench::query_set::QuerySet;
use mtr_bench::result::SystemKind;
use mtr_bench::score::Scorer;
use mtr_bench::stats::bootstrap::ClusterBootstrap;
use mtr_bench::stats::randomization::all_pairs;
use mtr_bench::strata::Strata;
use mtr_core::{Dialogue, Gold, Qrels, Run, Tags, Turn};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

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

/// CPU seconds (user + system, all threads) of this process so far, from /proc/self/stat
/// (clock ticks of 1/100 s). On a machine shared with other jobs, wall time overstates what
/// the work costs; CPU time / 2 is what 2 idle cores would take for the parallel parts.
fn cpu_seconds() -> f64 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            let rest = s.rsplit_once(')')?.1;
            let f: Vec<&str> = rest.split_whitespace().collect();
            Some((f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?) / 100.0)
        })
        .unwrap_or(f64::NAN)
}

const QUESTION_TYPES: [&str; 4] = ["Factoid", "Explanation", "Summarization", "Opinion"];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let systems = env("SYSTEMS", 20);
    let turns = env("TURNS", 10_000);
    let per_dialogue = env("TURNS_PER_DIALOGUE", 8);
    let depth = env("DEPTH", 100);
    let resamples = env("RESAMPLES", 1000);
    let permutations = env("PERMUTATIONS", 10_000);
    let threads = rayon::current_num_threads();
    println!(
        "mtr bench scale benchmark: {systems} systems x {turns} turns ({per_dialogue} per dialogue), depth {depth}, {resamples} bootstrap resamples, {permutations} permutations, {threads} threads"
    );

    // Seeded synthetic benchmark: graded qrels (1-4 relevant per turn, grades 1-2), tags.
    let t0 = Instant::now();
    let mut rng = StdRng::seed_from_u64(7);
    let mut dialogues = Vec::new();
    let mut qrels = Qrels::new();
    let n_dialogues = turns.div_ceil(per_dialogue);
    let mut made = 0;
    for d in 0..n_dialogues {
        let mut ts = Vec::new();
        for t in 0..per_dialogue {
            if made == turns {
                break;
            }
            made += 1;
            let qid = format!("conv{d:05}<::>{}", t + 1);
            let n_rel = rng.random_range(1..=4);
            let gold: Vec<Gold> = (0..n_rel)
                .map(|g| Gold {
                    passage_id: format!("p{d}-{t}-{g}"),
                    grade: rng.random_range(1..=2),
                })
                .collect();
            let e = qrels.entry(qid.clone()).or_default();
            for g in &gold {
                e.insert(g.passage_id.clone(), g.grade);
            }
            ts.push(Turn {
                id: qid,
                user: format!("question {t} of dialogue {d}"),
                rewrite: None,
                answer: None,
                gold,
                tags: Tags {
                    question_type: Some(
                        QUESTION_TYPES[rng.random_range(0..QUESTION_TYPES.len())].into(),
                    ),
                    answerability: Some(
                        if rng.random_bool(0.9) {
                            "answerable"
                        } else {
                            "partial"
                        }
                        .into(),
                    ),
                    topic_switch: Some(t > 0 && rng.random_bool(0.2)),
                    ..Tags::default()
                },
            });
        }
        dialogues.push(Dialogue {
            id: format!("conv{d:05}"),
            turns: ts,
            meta: Default::default(),
        });
    }
    let set = QuerySet::build(&dialogues, &qrels);

    // Runs: system s finds each relevant passage with probability q_s, at a rank that is
    // better the stronger the system; the rest of the ranking is unjudged passages.
    let mut inputs = Vec::with_capacity(systems);
    for s in 0..systems {
        let quality = 0.35 + 0.5 * s as f64 / systems.max(2) as f64;
        let mut run = Run::new();
        for q in &set.queries {
            let mut docs: Vec<String> = (0..depth).map(|j| format!("n{}-{j}", q.qid)).collect();
            for d in qrels[&q.qid].keys() {
                if rng.random_bool(quality) {
                    let max_rank = ((1.0 - quality) * depth as f64).max(2.0) as usize;
                    let r = rng.random_range(0..max_rank.min(depth));
                    docs[r] = d.clone();
                }
            }
            docs.sort();
            docs.dedup();
            docs.shuffle(&mut rng);
            let n = docs.len();
            run.insert(
                q.qid.clone(),
                docs.into_iter()
                    .enumerate()
                    .map(|(i, d)| (d, (n - i) as f64))
                    .collect(),
            );
        }
        inputs.push(SystemInput {
            name: format!("system-{s:02}"),
            kind: SystemKind::External,
            retriever: None,
            formulation: None,
            source: None,
            config_hash: String::new(),
            prompt_hash: None,
            run,
            queries: Default::default(),
        });
    }
    println!(
        "generated in {:.2} s ({} dialogues, {} scored turns)",
        t0.elapsed().as_secs_f64(),
        set.dialogues.len(),
        set.len()
    );

    let settings = Settings {
        resamples,
        permutations,
        ..Settings::default()
    };

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
