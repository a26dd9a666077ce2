//! Cost of `mtr bench --audit`: the label-sensitivity analysis (original qrels on the audited
//! turns plus the noise-removed, sparsity-filled and corrected variants, each with
//! cluster-bootstrap intervals, paired change intervals, tau and tau_AP with bootstrap
//! intervals, flipped pairs with randomization tests) against the bench computation alone, on
//! the scale benchmark's synthetic data: 20 systems x 10,000 turns, 1,000 resamples, 10,000
//! permutations. The audit is synthetic too: a seeded 5% of the gold passages rejected and, on
//! 5% of the turns, a passage some system ranks high made a missing gold. Target: the whole
//! bench with the audit under 4x the bench alone. Prints the ratio.
//!
//! Run: `cargo bench -p mtr-bench --no-default-features --bench sensitivity` (see README.md).
//! Options (env): SYSTEMS, TURNS, TURNS_PER_DIALOGUE, DEPTH, RESAMPLES, PERMUTATIONS.

#![allow(clippy::print_stdout)]

use std::time::Instant;

use mtr_bench::engine::{Settings, SystemInput, compute};
use mtr_bench::query_set::QuerySet;
use mtr_bench::result::SystemKind;
use mtr_bench::sensitivity::{self, LabelEdits, SystemRun};
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
        "mtr bench --audit cost benchmark: {systems} systems x {turns} turns ({per_dialogue} per dialogue), depth {depth}, {resamples} bootstrap resamples, {permutations} permutations, {threads} threads"
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

    // The synthetic audit: every turn audited, 5% of the golds rejected, a missing gold (a
    // passage ranked in some system's top 5) found on 5% of the turns.
    let mut arng = StdRng::seed_from_u64(11);
    let mut edits = LabelEdits {
        fingerprint: "synthetic".into(),
        flag_rating_below: 3.0,
        dialogues_audited: set.dialogues.len(),
        dialogues_total: set.dialogues.len(),
        audited_turns: set.queries.iter().map(|q| q.qid.clone()).collect(),
        complete: true,
        ..LabelEdits::default()
    };
    for q in &set.queries {
        for d in qrels[&q.qid].keys() {
            if arng.random_bool(0.05) {
                edits
                    .removed
                    .entry(q.qid.clone())
                    .or_default()
                    .insert(d.clone());
            }
        }
        if arng.random_bool(0.05) {
            let sys = &inputs[arng.random_range(0..inputs.len())];
            if let Some(docs) = sys.run.get(&q.qid) {
                let mut top: Vec<&(String, f64)> = docs.iter().collect();
                top.sort_by(|a, b| b.1.total_cmp(&a.1));
                let pick = &top[arng.random_range(0..top.len().min(5))].0;
                edits
                    .added
                    .entry(q.qid.clone())
                    .or_default()
                    .insert(pick.clone(), 1);
            }
        }
    }
    let removed: usize = edits.removed.values().map(|s| s.len()).sum();

    let t = Instant::now();
    let c0 = cpu_seconds();
    let computed = compute(&set, &inputs, &[], &settings)?;
    let t_bench = t.elapsed().as_secs_f64();
    let cpu_bench = cpu_seconds() - c0;

    let t = Instant::now();
    let c0 = cpu_seconds();
    // what `mtr bench` hands over: its own per-turn values of the main measure
    let main_values: Option<Vec<&[f64]>> = settings
        .measures
        .iter()
        .position(|m| *m == settings.main)
        .map(|mi| {
            computed
                .scores
                .iter()
                .filter_map(|sc| sc.values.get(mi).map(Vec::as_slice))
                .collect()
        });
    let runs: Vec<SystemRun> = inputs
        .iter()
        .map(|s| SystemRun {
            name: &s.name,
            run: &s.run,
        })
        .collect();
    let ls = sensitivity::compute(&sensitivity::Input {
        dialogues: &dialogues,
        set: &set,
        systems: &runs,
        edits: &edits,
        settings: &settings,
        moved_turns: 20,
        original_values: main_values.as_deref(),
    })?;
    let t_sens = t.elapsed().as_secs_f64();
    let cpu_sens = cpu_seconds() - c0;

    println!();
    println!(
        "synthetic audit: {removed} golds rejected, missing golds on {} turns",
        edits.added.len()
    );
    for v in &ls.variants {
        println!(
            "  {:<16} -{} +{} golds, tau {:.3}, tau_AP {:.3}, {} flipped pairs",
            v.variant.name(),
            v.applied.golds_removed,
            v.applied.golds_added,
            v.kendall_tau.map_or(f64::NAN, |e| e.mean),
            v.tau_ap.map_or(f64::NAN, |e| e.mean),
            v.flips.len()
        );
    }
    println!();
    println!("                                              wall s    CPU s");
    println!(
        "bench alone (engine::compute, {} systems)      {t_bench:>7.3}  {cpu_bench:>7.3}",
        computed.systems.len()
    );
    println!("label sensitivity (original + 3 variants)     {t_sens:>7.3}  {cpu_sens:>7.3}");
    let ratio = (t_bench + t_sens) / t_bench;
    let cpu_ratio = (cpu_bench + cpu_sens) / cpu_bench;
    println!(
        "bench with --audit / bench alone: {ratio:.2}x wall, {cpu_ratio:.2}x CPU   target < 4x: {}",
        if ratio < 4.0 { "MET" } else { "NOT MET" }
    );
    println!(
        "(load average: {})",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    Ok(())
}
