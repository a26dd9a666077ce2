//! Times the phases of an evaluation (qrels read, run evaluation) on real files; a run whose
//! queries' lines are not contiguous (e.g. shuffled with `shuf`) takes the grouping reader
//! instead of the one-pass one:
//! `cargo run --release -p mtr-metrics --example eval_phases -- QRELS RUN [measure...]`.
//! A profiling aid for benchmarks/metrics; the benchmark itself times the `mtr` binary.

use std::time::Instant;

use mtr_metrics::{Dedup, EvalOptions, MeasureSet, MissingQueries};

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
    let ev = mtr_metrics::evaluate_file(&q, &args[1], &opts)?;
    let t2 = t.elapsed();
    eprintln!(
        "qrels {:.3}s  run {:.3}s  ({} queries)",
        t1.as_secs_f64(),
        (t2 - t1).as_secs_f64(),
        ev.num_q,
    );
    mtr_metrics::output::write_trec_eval(&mut std::io::stderr(), &ev, false)?;
    Ok(())
}
