#![no_main]

use std::sync::OnceLock;

// The run readers of mtr-metrics (TREC streamed or grouped, MTRAG JSONL) through the public
// `evaluate_file`, against the TREC fixture's qrels read once.
fn qrels() -> &'static mtr_metrics::EvalQrels {
    static Q: OnceLock<mtr_metrics::EvalQrels> = OnceLock::new();
    Q.get_or_init(|| {
        let p = mtr_fuzz::fixtures().join("trec/qrels.txt");
        mtr_metrics::read_qrels_file(&p, mtr_metrics::Dedup::default()).expect("fixture qrels")
    })
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let p = mtr_fuzz::file("run.txt", data);
    let _ = mtr_metrics::evaluate_file(qrels(), &p, &mtr_metrics::EvalOptions::default());
});
