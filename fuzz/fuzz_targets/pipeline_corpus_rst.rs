#![no_main]

// A reStructuredText document, by section.
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    mtr_fuzz::pipeline::corpus("doc.rst", data);
});
