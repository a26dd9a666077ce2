//! Benchmark: greedy topic-path traversal over a precomputed top-K neighbour graph, for
//! N = 125k .. 1M nodes (K = 100 by default), to check the < 10 s target at 1M and linear
//! growth. The graph is synthetic: each node's neighbours are drawn near it on a ring (a
//! stand-in for a real similarity graph, with locality) plus uniform random long-range ones.
//!
//! Usage: traverse [MAX_N] [K]

#![allow(clippy::print_stdout, clippy::panic)] // a benchmark program: prints results, stops on bad input

use std::time::Instant;

use mtr_pipeline::{NeighbourGraph, PathOptions, greedy_paths};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use rayon::prelude::*;

fn graph(n: usize, k: usize, seed: u64) -> NeighbourGraph {
    let ids: Vec<u32> = (0..n)
        .into_par_iter()
        .flat_map_iter(|i| {
            let mut rng =
                StdRng::seed_from_u64(seed ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
            (0..k).map(move |r| {
                if r < k * 3 / 4 {
                    let off = rng.random_range(1..=(4 * k) as i64)
                        * if rng.random_range(0..2) == 0 { 1 } else { -1 };
                    ((i as i64 + off).rem_euclid(n as i64)) as u32
                } else {
                    rng.random_range(0..n as u32)
                }
            })
        })
        .collect();
    NeighbourGraph::from_flat(ids, k).unwrap_or_else(|| panic!("graph shape"))
}

fn main() {
    let max_n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let k: usize = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(100);
    let opts = PathOptions {
        size: 8,
        min_size: 4,
        k,
    };
    let mut n = max_n / 8;
    while n <= max_n {
        let t = Instant::now();
        let g = graph(n, k, 7);
        let t_graph = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let paths = greedy_paths(&g, &opts, 42);
        let secs = t.elapsed().as_secs_f64();
        let sizes: usize = paths.iter().map(Vec::len).sum();
        assert_eq!(sizes, n, "every node exactly once");
        let small = paths.iter().filter(|p| p.len() < opts.min_size).count();
        println!(
            "N={n:>8} K={k}: traversal+fold {secs:>7.3} s  ({:.1} ns/node)  {} paths, {small} below min, graph build {t_graph:.1} s",
            secs * 1e9 / n as f64,
            paths.len()
        );
        n *= 2;
    }
}
