#![no_main]

// A whole-file JSON corpus: a JSON array of records (LlamaIndex nodes, LangChain documents).
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    mtr_fuzz::pipeline::corpus("chunks.json", data);
});
