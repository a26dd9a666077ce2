#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let p = mtr_fuzz::file("qrels.txt", data);
    let _ = mtr_metrics::read_qrels_file(&p, mtr_metrics::Dedup::default());
});
