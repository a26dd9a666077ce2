#![no_main]

// WikiExtractor output, either form (`<doc>` blocks or `--json` lines), told by its first bytes.
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    mtr_fuzz::seeds::write_if_asked(mtr_fuzz::pipeline::wikiextractor_seeds);
    mtr_fuzz::pipeline::corpus("wiki_00", data);
});
