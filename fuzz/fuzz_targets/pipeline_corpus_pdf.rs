#![no_main]

// A PDF, page by page (pdf-extract's panics are caught per page by design).
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    mtr_fuzz::pipeline::quiet_pdf_panics();
    mtr_fuzz::pipeline::corpus("doc.pdf", data);
});
