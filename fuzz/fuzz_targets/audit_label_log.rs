#![no_main]

// The review label log (`review/labels.jsonl`), as every reader of it reads it.
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    mtr_fuzz::seeds::write_if_asked(mtr_fuzz::audit::label_log_seeds);
    mtr_fuzz::audit::label_log(data);
});
