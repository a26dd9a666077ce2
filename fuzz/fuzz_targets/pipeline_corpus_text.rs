#![no_main]

// A Markdown document (one document, titled by its first level-1 heading).
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    mtr_fuzz::pipeline::corpus("doc.md", data);
});
