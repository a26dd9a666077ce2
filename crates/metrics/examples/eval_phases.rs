//! Times the phases of an evaluation (qrels read, run grouping, evaluation) on real files:
//! `cargo run --release -p mtr-metrics --example eval_phases -- QRELS RUN [measure...]`.
//! A profiling aid for benchmarks/metrics; the benchmark itself times the `mtr` binary.

use std::time::Instant;

use mtr_metrics::{Dedup, EvalOptions, MeasureSet, MissingQueries, RunFile};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 2 {
        return Err("usage: eval_phases QRELS RUN [measure...]".into());
    }
    let measures: Vec<&str> = if args.len() > 2 {
        args[2..].iter().map(String::as_str).collect()
    } else {
        vec!["ndcg_cut.10", "map", "recall.100", "recip_rank"]
    };
    let opts = EvalOptions {
        measures: MeasureSet::parse(measures)?,
        missing: MissingQueries::Complete,
        ..EvalOptions::default()
    };
    let t = Instant::now();
    let q = mtr_metrics::read_qrels_file(&args[0], Dedup::Error)?;
    let t1 = t.elapsed();
    let r = RunFile::open(&args[1])?;
    let t2 = t.elapsed();
    let ev = mtr_metrics::evaluate_prepared(&q, &r, &opts)?;
    let t3 = t.elapsed();
    eprintln!(
        "qrels {:.3}s  group {:.3}s  eval {:.3}s  ({} queries, {} lines)",
        t1.as_secs_f64(),
        (t2 - t1).as_secs_f64(),
        (t3 - t2).as_secs_f64(),
        ev.num_q,
        r.num_lines()
    );
    eprint!("{}", mtr_metrics::output::trec_eval_text(&ev, false));
    Ok(())
}
