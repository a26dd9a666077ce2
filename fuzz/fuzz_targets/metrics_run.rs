#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let p = mtr_fuzz::file("run.txt", data);
    let _ = mtr_metrics::RunFile::open(&p);
});
