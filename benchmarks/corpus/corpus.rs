//! Benchmark: reading and sampling a Wikipedia-sized corpus with `mtr synth --corpus`'s
//! readers (crates/pipeline/src/input), without any LLM. Three commands:
//!
//! - `gen-wiki DIR N`: N synthetic articles as WikiExtractor output (`DIR/AA/wiki_00`, ...,
//!   about 1 MB a file as WikiExtractor writes them; about 3 KB of text an article);
//! - `gen-parquet DIR N`: the same articles as a Hugging Face dump
//!   (`DIR/data/train-0000k-of-0000K.parquet`, `id, url, title, text`, snappy);
//! - `read PATH N SEED`: reads PATH and draws a seeded uniform sample of N documents, printing
//!   the documents read and kept and the time taken.
//!
//! Run with benchmarks/corpus/run.sh (it generates, measures with /usr/bin/time and cleans up).

#![allow(clippy::print_stdout, clippy::panic)] // a benchmark program: prints results, stops on bad input

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use mtr_pipeline::input::fixtures::{Row, write_parquet};
use mtr_pipeline::input::{Document, ReadOptions, read};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| -> &str {
        args.get(i).map(String::as_str).unwrap_or_else(|| {
            panic!("usage: gen-wiki DIR N | gen-parquet DIR N | read PATH N SEED")
        })
    };
    let num = |i: usize| -> usize { arg(i).parse().unwrap_or_else(|e| panic!("{}: {e}", arg(i))) };
    match arg(0) {
        "gen-wiki" => gen_wiki(Path::new(arg(1)), num(2)),
        "gen-parquet" => gen_parquet(Path::new(arg(1)), num(2)),
        "read" => bench_read(PathBuf::from(arg(1)), num(2), num(3) as u64),
        other => panic!("unknown command {other}"),
    }
}

/// A small deterministic generator (splitmix64).
struct Mix(u64);

impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// 4,096 pseudo-words of two to four syllables.
fn vocabulary() -> Vec<String> {
    const SYL: [&str; 24] = [
        "ka", "lo", "mer", "tin", "sa", "ve", "ron", "di", "pal", "gu", "ne", "thor", "li", "qua",
        "bes", "ul", "fen", "zo", "ari", "mon", "tel", "vi", "os", "han",
    ];
    let mut m = Mix(42);
    (0..4096)
        .map(|_| {
            let n = 2 + m.below(3);
            (0..n).map(|_| SYL[m.below(24) as usize]).collect()
        })
        .collect()
}

/// Article `i`: 500 to 5,500 bytes of text (3 KB on average) in paragraphs.
fn article(i: usize, vocab: &[String]) -> Document {
    let mut m = Mix(i as u64 ^ 0x5EED);
    let title = format!(
        "{} {}",
        capital(&vocab[m.below(4096) as usize]),
        vocab[m.below(4096) as usize]
    );
    let target = 500 + m.below(5000) as usize;
    let mut text = String::with_capacity(target + 200);
    while text.len() < target {
        let words = 8 + m.below(20);
        for w in 0..words {
            let word = &vocab[m.below(4096) as usize];
            if w == 0 {
                text.push_str(&capital(word));
            } else {
                text.push(' ');
                text.push_str(word);
            }
        }
        text.push_str(if m.below(5) == 0 { ".\n\n" } else { ". " });
    }
    Document {
        id: (i + 1).to_string(),
        title,
        text: text.trim_end().to_string(),
    }
}

fn capital(w: &str) -> String {
    let mut c = w.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// WikiExtractor's layout: folders AA, AB, ... of 100 files wiki_00..wiki_99 of about 1 MB.
fn gen_wiki(dir: &Path, n: usize) {
    let vocab = vocabulary();
    let (mut file_no, mut written, mut bytes) = (0usize, 0usize, 0u64);
    let mut out: Option<std::io::BufWriter<std::fs::File>> = None;
    for i in 0..n {
        if out.is_none() || written >= 1 << 20 {
            let folder = format!(
                "{}{}",
                (b'A' + (file_no / 100 / 26) as u8) as char,
                (b'A' + (file_no / 100 % 26) as u8) as char
            );
            let d = dir.join(folder);
            std::fs::create_dir_all(&d).unwrap_or_else(|e| panic!("{e}"));
            let f = std::fs::File::create(d.join(format!("wiki_{:02}", file_no % 100)))
                .unwrap_or_else(|e| panic!("{e}"));
            if let Some(mut o) = out.replace(std::io::BufWriter::new(f)) {
                o.flush().unwrap_or_else(|e| panic!("{e}"));
            }
            file_no += 1;
            written = 0;
        }
        let a = article(i, &vocab);
        let block = format!(
            "<doc id=\"{}\" url=\"https://en.wikipedia.org/wiki?curid={}\" title=\"{}\">\n{}\n\n{}\n</doc>\n",
            a.id, a.id, a.title, a.title, a.text
        );
        if let Some(o) = out.as_mut() {
            o.write_all(block.as_bytes())
                .unwrap_or_else(|e| panic!("{e}"));
        }
        written += block.len();
        bytes += block.len() as u64;
    }
    if let Some(mut o) = out {
        o.flush().unwrap_or_else(|e| panic!("{e}"));
    }
    println!(
        "wrote {n} articles, {file_no} files, {:.2} GB",
        bytes as f64 / 1e9
    );
}

/// A Hugging Face dump's layout: `data/train-0000k-of-0000K.parquet`, 100,000 rows a file,
/// 10,000 rows a row group.
fn gen_parquet(dir: &Path, n: usize) {
    let vocab = vocabulary();
    let per_file = 100_000;
    let files = n.div_ceil(per_file);
    std::fs::create_dir_all(dir.join("data")).unwrap_or_else(|e| panic!("{e}"));
    for f in 0..files {
        let docs: Vec<Document> = (f * per_file..((f + 1) * per_file).min(n))
            .map(|i| article(i, &vocab))
            .collect();
        let rows: Vec<Row<'_>> = docs
            .iter()
            .map(|d| (Some(d.id.as_str()), d.title.as_str(), Some(d.text.as_str())))
            .collect();
        let p = dir.join(format!("data/train-{f:05}-of-{files:05}.parquet"));
        write_parquet(&p, &rows, 10_000).unwrap_or_else(|e| panic!("{e}"));
    }
    println!("wrote {n} articles in {files} Parquet files");
}

fn bench_read(path: PathBuf, n: usize, seed: u64) {
    let t = Instant::now();
    let opts = ReadOptions {
        max_documents: n,
        seed,
        ..Default::default()
    };
    let loaded = read(&path, &opts).unwrap_or_else(|e| panic!("{e}"));
    let bytes: usize = loaded.documents.iter().map(|d| d.text.len()).sum();
    println!(
        "read {} documents from {} files, kept {} ({:.1} MB of text) in {:.2} s; first kept id {}",
        loaded.report.documents,
        loaded.report.files,
        loaded.documents.len(),
        bytes as f64 / 1e6,
        t.elapsed().as_secs_f64(),
        loaded
            .documents
            .first()
            .map(|d| d.id.as_str())
            .unwrap_or("-")
    );
}
