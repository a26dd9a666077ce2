#![no_main]

// `mtr import hf`: a dataset folder with one Parquet file (the first byte picks which) replaced.
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    mtr_fuzz::quiet_caught_panics(&["parquet"]);
    mtr_fuzz::seeds::write_if_asked(mtr_fuzz::hf::seeds);
    mtr_fuzz::hf::import(data);
});
