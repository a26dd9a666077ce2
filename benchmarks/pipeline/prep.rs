//! Benchmark: loading, MinHash-LSH deduplication and chunking of a document corpus (default:
//! the 10,033-document English Wikipedia corpus in ../shared). Prints one timing line per
//! stage; the target is chunking + MinHash under 5 s on 2 cores.
//!
//! Run with benchmarks/pipeline/run.sh (it sets the build profile).

#![allow(clippy::print_stdout, clippy::panic)] // a benchmark program: prints results, stops on bad input

use std::path::PathBuf;
use std::time::Instant;

use mtr_pipeline::{ChunkOptions, chunk_corpus};
use mtr_pipeline::{CurationOptions, curate};
use mtr_pipeline::{MinHashOptions, MinHasher, dedup};

fn main() {
    let path = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../../shared/corpora/en_wiki_vital_summaries.jsonl")
        });
    if !path.exists() {
        eprintln!("skipped: {} is absent", path.display());
        return;
    }
    let threads = rayon::current_num_threads();
    let t = Instant::now();
    let docs = mtr_pipeline::input::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let bytes: usize = docs.iter().map(|d| d.text.len() + d.title.len()).sum();
    println!(
        "load      {:>8.3} s  {} documents, {:.1} MB, rayon threads {threads}",
        t.elapsed().as_secs_f64(),
        docs.len(),
        bytes as f64 / 1e6
    );

    // tokenizer construction is paid once per process; keep it out of the stage timings
    let t = Instant::now();
    let _ = mtr_pipeline::bpe("o200k_base").map(|b| b.encode_ordinary("warm up").len());
    println!(
        "tokenizer {:>8.3} s  (o200k_base singleton)",
        t.elapsed().as_secs_f64()
    );

    let opts = MinHashOptions::default();
    let t = Instant::now();
    let mh = MinHasher::new(opts.clone());
    let texts: Vec<String> = docs
        .iter()
        .map(|d| format!("{}\n{}", d.title, d.text))
        .collect();
    let sigs = mh.signatures(&texts);
    let t_sig = t.elapsed().as_secs_f64();
    let dups = dedup(&sigs, &opts);
    let t_mh = t.elapsed().as_secs_f64();
    println!(
        "minhash   {t_mh:>8.3} s  signatures {t_sig:.3} s, LSH {:.3} s, {} near-duplicates (5-gram, 128 perm, 32 bands, J>=0.5)",
        t_mh - t_sig,
        dups.len()
    );

    let copts = ChunkOptions::default();
    let t = Instant::now();
    let chunks = chunk_corpus(&docs, &copts).unwrap_or_else(|e| panic!("{e}"));
    let t_chunk = t.elapsed().as_secs_f64();
    let tokens: usize = chunks.iter().map(|c| c.tokens).sum();
    println!(
        "chunking  {t_chunk:>8.3} s  {} chunks, {tokens} tokens, {:.2} MB/s ({}-{} tokens)",
        chunks.len(),
        bytes as f64 / 1e6 / t_chunk,
        copts.min_tokens,
        copts.max_tokens
    );
    let small = ChunkOptions {
        min_tokens: 64,
        max_tokens: 128,
        ..Default::default()
    };
    let t = Instant::now();
    let chunks_small = chunk_corpus(&docs, &small).unwrap_or_else(|e| panic!("{e}"));
    println!(
        "chunking  {:>8.3} s  {} chunks at 64-128 tokens (more splitting)",
        t.elapsed().as_secs_f64(),
        chunks_small.len()
    );
    println!("TOTAL chunking + minhash: {:.3} s", t_chunk + t_mh);

    let t = Instant::now();
    let c = curate(docs, &CurationOptions::default());
    println!(
        "curation  {:>8.3} s  (strip, length, language, MinHash) kept {} of {}: {:?}",
        t.elapsed().as_secs_f64(),
        c.report.kept,
        c.report.input,
        c.report.removed
    );
}
