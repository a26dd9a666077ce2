#![no_main]

// The XML of a DOCX or ODT document (the first byte picks which) inside the fixture's zip.
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    mtr_fuzz::seeds::write_if_asked(mtr_fuzz::pipeline::office_xml_seeds);
    mtr_fuzz::pipeline::office_xml(data);
});
