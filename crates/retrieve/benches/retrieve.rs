//! Retrieval benchmark driver (run by `benchmarks/retrieve/run.sh`; not a unit test).
//!
//! Modes, each printing one JSON line so the script can tabulate them:
//! - `gen DIR N Q`: N generated passages (`DIR/corpus.jsonl`, Zipf-distributed pseudo-words,
//!   seeded) and Q queries (`DIR/queries.tsv`, words drawn from random passages).
//! - `index CORPUS INDEX`: BM25 indexing throughput (passages/s) and peak RSS.
//! - `query INDEX QUERIES K`: per-query latency p50/p99 (one thread, one query at a time),
//!   batch throughput (all threads), and peak RSS of a process that only opens and queries.
//! - `dense N DIM Q K`: exact dense search over N x DIM f32 vectors: scan throughput against
//!   the machine's measured read bandwidth over the same matrix (the brute-force bound).
//! - `knn VECTORS.f32 DIM K [N]`: kNN graph of stored vectors (for example an index's e5
//!   vectors), exact versus HNSW: build/search time and HNSW recall@10 against exact.

// A benchmark driver: it prints its results and stops on any failure.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::io::{BufRead, Write};
use std::path::Path;
use std::time::Instant;

use mtr_core::progress::NoProgress;
use mtr_retrieve::dense::{
    KnnOptions, VectorMatrix, dot, exact_top_k_batch, knn_graph, simd_level,
};
use mtr_retrieve::{CorpusSource, IndexBuilder, IndexDir, IndexOptions, Language, Query};

/// xorshift64*: deterministic, fast, good enough for synthetic text.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn pseudo_word(i: usize) -> String {
    const SYL: [&str; 24] = [
        "ka", "to", "ri", "ne", "mo", "sa", "lu", "pe", "di", "go", "ba", "ve", "shi", "ru", "an",
        "el", "or", "im", "ust", "ber", "qua", "zin", "tha", "lo",
    ];
    let mut n = i + 1;
    let mut w = String::new();
    while n > 0 {
        w.push_str(SYL[n % SYL.len()]);
        n /= SYL.len();
    }
    w
}

fn generate(dir: &Path, n: usize, q: usize) {
    std::fs::create_dir_all(dir).unwrap();
    let vocab: Vec<String> = (0..50_000).map(pseudo_word).collect();
    // Zipf(s = 1.07) by inverse CDF over the vocabulary.
    let weights: Vec<f64> = (1..=vocab.len())
        .map(|r| 1.0 / (r as f64).powf(1.07))
        .collect();
    let total: f64 = weights.iter().sum();
    let mut cdf = Vec::with_capacity(weights.len());
    let mut acc = 0.0;
    for w in &weights {
        acc += w / total;
        cdf.push(acc);
    }
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let draw = |rng: &mut Rng| {
        let u = rng.unit();
        cdf.partition_point(|&c| c < u).min(vocab.len() - 1)
    };
    let mut corpus =
        std::io::BufWriter::new(std::fs::File::create(dir.join("corpus.jsonl")).unwrap());
    let mut queries =
        std::io::BufWriter::new(std::fs::File::create(dir.join("queries.tsv")).unwrap());
    let every = (n / q.max(1)).max(1);
    let mut written_q = 0;
    for i in 0..n {
        let len = 40 + (rng.next() % 60) as usize;
        let words: Vec<usize> = (0..len).map(|_| draw(&mut rng)).collect();
        let text: Vec<&str> = words.iter().map(|&w| vocab[w].as_str()).collect();
        let title = format!("{} {}", vocab[words[0]], vocab[words[1]]);
        writeln!(
            corpus,
            "{{\"id\":\"p{i}\",\"title\":\"{title}\",\"text\":\"{}\"}}",
            text.join(" ")
        )
        .unwrap();
        if i % every == 0 && written_q < q {
            let k = 3 + (rng.next() % 6) as usize;
            let qw: Vec<&str> = (0..k)
                .map(|_| text[(rng.next() % text.len() as u64) as usize])
                .collect();
            writeln!(queries, "q{written_q}\t{}", qw.join(" ")).unwrap();
            written_q += 1;
        }
    }
    corpus.flush().unwrap();
    queries.flush().unwrap();
    println!("{{\"mode\":\"gen\",\"passages\":{n},\"queries\":{written_q}}}");
}

fn index(corpus: &Path, out: &Path) {
    let src = CorpusSource::detect(corpus).unwrap();
    let opts = IndexOptions {
        language: Language::En,
        store_text: false,
        ..Default::default()
    };
    let t = Instant::now();
    let idx = IndexBuilder::new(out, opts)
        .build(&src, &NoProgress)
        .unwrap();
    let secs = t.elapsed().as_secs_f64();
    let n = idx.meta().num_passages;
    let bytes = std::fs::metadata(corpus).map(|m| m.len()).unwrap_or(0);
    println!(
        "{{\"mode\":\"index\",\"passages\":{n},\"seconds\":{secs:.2},\"passages_per_s\":{:.0},\"corpus_mb\":{:.1},\"peak_rss_mb\":{:.0},\"threads\":{}}}",
        n as f64 / secs,
        bytes as f64 / 1e6,
        peak_rss_mb(),
        rayon::current_num_threads()
    );
}

fn read_queries(path: &Path) -> Vec<String> {
    let f = std::io::BufReader::new(std::fs::File::open(path).unwrap());
    f.lines()
        .map(|l| {
            l.unwrap()
                .split_once('\t')
                .map(|(_, q)| q.to_string())
                .unwrap_or_default()
        })
        .collect()
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn query(index: &Path, queries: &Path, k: usize) {
    let t_open = Instant::now();
    let idx = IndexDir::open(index).unwrap();
    let bm25 = idx.bm25().unwrap();
    let open_ms = t_open.elapsed().as_secs_f64() * 1e3;
    let qs = read_queries(queries);
    // Warm-up pass (page cache, lazily built structures), then the timed pass.
    for q in qs.iter().take(50) {
        bm25.search(q, k).unwrap();
    }
    let mut lat = Vec::with_capacity(qs.len());
    let mut returned = 0usize;
    for q in &qs {
        let t = Instant::now();
        returned += bm25.search(q, k).unwrap().len();
        lat.push(t.elapsed().as_secs_f64() * 1e3);
    }
    lat.sort_by(f64::total_cmp);
    let batch: Vec<Query> = qs.iter().map(|q| Query::new(q.clone())).collect();
    let t = Instant::now();
    bm25.search_batch(&batch, k).unwrap();
    let qps = qs.len() as f64 / t.elapsed().as_secs_f64();
    println!(
        "{{\"mode\":\"query\",\"queries\":{},\"k\":{k},\"open_ms\":{open_ms:.1},\"p50_ms\":{:.3},\"p99_ms\":{:.3},\"mean_ms\":{:.3},\"batch_qps\":{qps:.0},\"mean_hits\":{:.1},\"peak_rss_mb\":{:.0}}}",
        qs.len(),
        percentile(&lat, 0.5),
        percentile(&lat, 0.99),
        lat.iter().sum::<f64>() / lat.len() as f64,
        returned as f64 / qs.len() as f64,
        peak_rss_mb()
    );
}

fn dense(n: usize, dim: usize, q: usize, k: usize) {
    let mut rng = Rng(42);
    let data: Vec<f32> = (0..n * dim).map(|_| rng.unit() as f32 - 0.5).collect();
    let mut m = VectorMatrix::from_rows(dim, data).unwrap();
    m.normalize().unwrap();
    let queries: Vec<Vec<f32>> = (0..q).map(|i| m.row((i * 7919) % n).to_vec()).collect();
    let bytes = (n * dim * 4) as f64;
    // Bandwidth bound: the fastest plain read of the whole matrix (sum of all values, 8 lanes,
    // rayon), best of 3.
    let mut bw = 0f64;
    let mut sink = 0f32;
    for _ in 0..3 {
        let t = Instant::now();
        use rayon::prelude::*;
        sink += m
            .as_slice()
            .par_chunks(1 << 16)
            .map(|c| dot(c, &vec![1.0; c.len()][..]))
            .sum::<f32>();
        bw = bw.max(bytes / t.elapsed().as_secs_f64());
    }
    // Single-query scans (memory bound) and a batch (one scan per 16 queries).
    let single = q.min(20);
    let t = Instant::now();
    for qv in queries.iter().take(single) {
        sink += exact_top_k_batch(&m, std::slice::from_ref(qv), k)[0][0].1;
    }
    let single_s = t.elapsed().as_secs_f64() / single as f64;
    let t = Instant::now();
    let res = exact_top_k_batch(&m, &queries, k);
    let batch_s = t.elapsed().as_secs_f64();
    assert_eq!(res.len(), q);
    let single_bw = bytes / single_s;
    println!(
        "{{\"mode\":\"dense\",\"vectors\":{n},\"dim\":{dim},\"simd\":\"{}\",\"matrix_mb\":{:.0},\"read_bandwidth_gbs\":{:.2},\"single_query_ms\":{:.2},\"single_query_scan_gbs\":{:.2},\"ratio_to_bandwidth\":{:.2},\"batch_queries\":{q},\"batch_qps\":{:.1},\"batch_effective_gbs\":{:.2},\"sink\":{}}}",
        simd_level(),
        bytes / 1e6,
        bw / 1e9,
        single_s * 1e3,
        single_bw / 1e9,
        single_bw / bw,
        q as f64 / batch_s,
        bytes * (q as f64 / 16.0).ceil() / batch_s / 1e9,
        sink.is_finite()
    );
}

fn knn(path: &Path, dim: usize, k: usize, limit: usize) {
    let all = VectorMatrix::open(path, dim).unwrap();
    let n = all.len().min(limit);
    let m = VectorMatrix::from_rows(dim, all.as_slice()[..n * dim].to_vec()).unwrap();
    let t = Instant::now();
    let exact = knn_graph(
        &m,
        k,
        &KnnOptions {
            exact_threshold: usize::MAX,
            ..Default::default()
        },
    )
    .unwrap();
    let exact_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let hnsw = knn_graph(
        &m,
        k,
        &KnnOptions {
            exact_threshold: 0,
            recall_sample: n.min(1000),
            ..Default::default()
        },
    )
    .unwrap();
    let hnsw_s = t.elapsed().as_secs_f64();
    assert_eq!(exact.neighbours.len(), hnsw.neighbours.len());
    println!(
        "{{\"mode\":\"knn\",\"vectors\":{n},\"dim\":{dim},\"k\":{k},\"exact_seconds\":{exact_s:.2},\"hnsw_seconds\":{hnsw_s:.2},\"hnsw_recall_at_10\":{:.4}}}",
        hnsw.recall_at_10.unwrap_or(f64::NAN)
    );
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let arg = |i: usize| args.get(i).cloned().unwrap_or_default();
    let num = |i: usize, d: usize| args.get(i).and_then(|s| s.parse().ok()).unwrap_or(d);
    match arg(0).as_str() {
        "gen" => generate(Path::new(&arg(1)), num(2, 1_000_000), num(3, 1000)),
        "index" => index(Path::new(&arg(1)), Path::new(&arg(2))),
        "query" => query(Path::new(&arg(1)), Path::new(&arg(2)), num(3, 100)),
        "knn" => knn(
            Path::new(&arg(1)),
            num(2, 384),
            num(3, 10),
            num(4, usize::MAX),
        ),
        "dense" => dense(num(1, 1_000_000), num(2, 384), num(3, 64), num(4, 100)),
        _ => eprintln!(
            "usage: retrieve gen DIR N Q | index CORPUS INDEX | query INDEX QUERIES K | dense N DIM Q K | knn VECTORS DIM K [N]"
        ),
    }
}
