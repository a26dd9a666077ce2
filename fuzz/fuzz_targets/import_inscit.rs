#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    mtr_fuzz::import(mtr_fuzz::Format::Inscit, "inscit", "dev.json", data);
});
