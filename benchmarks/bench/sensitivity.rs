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

#[path = "synthetic.rs"]
mod synthetic;

use std::time::Instant;

use synthetic::cpu_seconds;

use mtr_bench::job::compute;
use mtr_bench::sensitivity::{self, LabelEdits, SystemRun};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let synthetic::Synthetic {
        dialogues,
        qrels,
        set,
        inputs,
        settings,
        ..
    } = synthetic::from_env("mtr bench --audit cost benchmark");

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
