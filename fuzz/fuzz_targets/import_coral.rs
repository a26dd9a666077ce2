#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    mtr_fuzz::import(
        mtr_fuzz::Format::Coral,
        "coral",
        "test/new_test_conversation.json",
        data,
    );
});
