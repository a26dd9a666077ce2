#![no_main]

// `mtr cache import`: a Batch output file into a cache that exported the calls it answers.
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    mtr_fuzz::seeds::write_if_asked(mtr_fuzz::llm::seeds);
    mtr_fuzz::llm::import(data);
});
