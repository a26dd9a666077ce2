#![no_main]

// An HTML page (its charset, its main content, its sections).
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    mtr_fuzz::pipeline::corpus("page.html", data);
});
