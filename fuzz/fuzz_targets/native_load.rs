#![no_main]

// A native benchmark folder (what every command but import reads) with one of its files (the
// first byte picks which) replaced, opened, loaded and validated.
const FILES: [&str; 3] = ["dialogues.jsonl", "corpus.jsonl", "qrels.tsv"];

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    mtr_fuzz::seeds::write_if_asked(|| mtr_fuzz::picked_seeds(&FILES));
    if let Some((&pick, rest)) = data.split_first() {
        mtr_fuzz::native(FILES[usize::from(pick) % FILES.len()], rest);
    }
});
