#![no_main]

// A JSON-lines corpus compressed with bzip2, zstd or xz (the first byte picks the codec).
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    mtr_fuzz::seeds::write_if_asked(mtr_fuzz::pipeline::codecs_seeds);
    mtr_fuzz::pipeline::codecs(data);
});
