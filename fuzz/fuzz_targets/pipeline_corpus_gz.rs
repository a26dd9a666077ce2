#![no_main]

// A JSON-lines corpus compressed with gzip (a cut-short download is the user's error).
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    mtr_fuzz::pipeline::corpus("corpus.jsonl.gz", data);
});
