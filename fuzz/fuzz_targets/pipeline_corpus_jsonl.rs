#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let p = mtr_fuzz::file("corpus.jsonl", data);
    let _ = mtr_pipeline::input::read(&p, &Default::default());
});
