//! The planning throughput of `mtr judge` (issue 48: 24 runs x 200 turns at depth 10 plan in
//! under 2 s): pools the holes of 24 synthetic runs of 100 ranked passages per turn against
//! qrels of 200 turns with 5 judged passages each, and prints how long it took. Seeded: the
//! same numbers every run. `cargo run --release -p mtr-audit --example judge_planning`.

#![allow(clippy::print_stdout)] // an example prints its measurement

use std::path::{Path, PathBuf};
use std::time::Instant;

use mtr_audit::holes::{NamedRun, plan_holes};
use mtr_core::{Qrels, Run};
use rand::RngExt;

const RUNS: usize = 24;
const TURNS: usize = 200;
const RANKED: usize = 100;
const CORPUS: usize = 5_000;

fn main() -> Result<(), mtr_audit::AuditError> {
    let mut rng = mtr_core::rng::stream(7, 0);
    let mut qrels = Qrels::new();
    for t in 0..TURNS {
        let judged = qrels.entry(format!("t{t}")).or_default();
        for _ in 0..5 {
            judged.insert(format!("p{}", rng.random_range(0..CORPUS)), 1);
        }
    }
    let runs: Vec<NamedRun> = (0..RUNS)
        .map(|r| {
            let mut run = Run::new();
            for t in 0..TURNS {
                let docs = (0..RANKED)
                    .map(|_| {
                        (
                            format!("p{}", rng.random_range(0..CORPUS)),
                            rng.random_range(0.0..1.0),
                        )
                    })
                    .collect();
                run.insert(format!("t{t}"), docs);
            }
            NamedRun {
                name: format!("run{r}"),
                path: PathBuf::from(format!("run{r}.trec")),
                run,
            }
        })
        .collect();
    let started = Instant::now();
    let plan = plan_holes(&qrels, Path::new("qrels.tsv"), &runs, 10)?;
    let took = started.elapsed();
    println!(
        "{RUNS} runs x {TURNS} turns at depth 10: {} holes pooled in {:.3} s",
        plan.holes.len(),
        took.as_secs_f64()
    );
    Ok(())
}
