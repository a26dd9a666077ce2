#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    mtr_fuzz::import(
        mtr_fuzz::Format::Doc2dial,
        "doc2dial",
        "doc2dial_dial_validation.json",
        data,
    );
});
