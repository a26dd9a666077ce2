#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let p = mtr_fuzz::file("qrels.txt", data);
    let _ = mtr_core::trec::read_qrels(&p);
});
