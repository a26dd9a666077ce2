#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    mtr_fuzz::import(
        mtr_fuzz::Format::Cast,
        "cast",
        "2020_manual_evaluation_topics_v1.0.json",
        data,
    );
});
