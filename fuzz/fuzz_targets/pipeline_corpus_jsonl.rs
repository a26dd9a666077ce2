#![no_main]

// A JSON-lines corpus (BEIR's, mtr's, LangChain's `Document.model_dump()` lines).
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    mtr_fuzz::pipeline::corpus("corpus.jsonl", data);
});
