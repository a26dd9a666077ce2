#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    mtr_fuzz::lines(data);
});
