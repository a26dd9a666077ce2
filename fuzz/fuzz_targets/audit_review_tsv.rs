#![no_main]

// `mtr review --import FILE.tsv`: the labels a reviewer brings back.
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    mtr_fuzz::seeds::write_if_asked(mtr_fuzz::audit::review_tsv_seeds);
    mtr_fuzz::audit::review_tsv(data);
});
