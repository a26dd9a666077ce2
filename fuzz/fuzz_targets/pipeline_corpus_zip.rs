#![no_main]

// A zip of JSON-lines files (MTRAG's passage-level corpora).
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    mtr_fuzz::seeds::write_if_asked(mtr_fuzz::pipeline::zip_seeds);
    mtr_fuzz::pipeline::corpus("clapnq.jsonl.zip", data);
});
