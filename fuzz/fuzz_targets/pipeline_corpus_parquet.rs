#![no_main]

// A Parquet corpus file (a Hugging Face dump's layout).
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    mtr_fuzz::quiet_caught_panics(&["parquet"]);
    mtr_fuzz::seeds::write_if_asked(mtr_fuzz::pipeline::parquet_seeds);
    mtr_fuzz::pipeline::corpus("corpus.parquet", data);
});
