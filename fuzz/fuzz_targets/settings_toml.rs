#![no_main]

// `mtr.toml`: the TOML table and the sections every command reads.
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    mtr_fuzz::settings::read(data);
});
