#![no_main]

// A PDF, page by page (pdf-extract's panics are caught per page by design).
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    mtr_fuzz::quiet_caught_panics(&["pdf_extract"]);
    mtr_fuzz::pipeline::corpus("doc.pdf", data);
});
