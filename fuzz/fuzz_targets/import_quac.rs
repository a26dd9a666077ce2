#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    mtr_fuzz::import(mtr_fuzz::Format::Quac, "quac", "val_v0.2.json", data);
});
