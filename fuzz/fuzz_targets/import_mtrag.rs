#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    mtr_fuzz::import(
        mtr_fuzz::Format::Mtrag,
        "mtrag",
        "conversations_mini.jsonl",
        data,
    );
});
