#![no_main]

// A DOCX or ODT file as raw bytes (the first byte picks the format).
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    mtr_fuzz::seeds::write_if_asked(mtr_fuzz::pipeline::office_seeds);
    mtr_fuzz::pipeline::office(data);
});
