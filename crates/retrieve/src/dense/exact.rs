//! Exact (brute-force) top-k by dot product. One pass over the vectors serves a block of
//! queries at once, so the scan is bound by memory bandwidth rather than by the number of
//! queries. The dot product uses AVX (8 lanes) when the CPU has it and an 8-accumulator
//! portable loop otherwise; both add in the same order, so scores are bit-identical on every
//! machine (no FMA, whose single rounding would differ).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use rayon::prelude::*;

use super::matrix::VectorMatrix;

/// Rows scanned per parallel task.
const ROWS_PER_TASK: usize = 8192;
/// Queries served by one pass over a block of rows.
const QUERY_BLOCK: usize = 16;

/// Which dot-product kernel this CPU runs: `avx` or `portable`.
pub fn simd_level() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx") {
            return "avx";
        }
    }
    "portable"
}

/// Dot product of two equally long vectors.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx") {
            // SAFETY: the CPU supports AVX (checked just above).
            return unsafe { dot_avx(a, b) };
        }
    }
    dot_portable(a, b)
}

/// Eight running sums, lane j over elements 8i + j, then a fixed reduction tree.
#[inline]
fn dot_portable(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0f32; 8];
    let mut ca = a.chunks_exact(8);
    let mut cb = b.chunks_exact(8);
    for (x, y) in (&mut ca).zip(&mut cb) {
        for j in 0..8 {
            acc[j] += x[j] * y[j];
        }
    }
    let mut s = reduce8(&acc);
    for (x, y) in ca.remainder().iter().zip(cb.remainder()) {
        s += x * y;
    }
    s
}

#[inline]
fn reduce8(l: &[f32; 8]) -> f32 {
    ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]))
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn dot_avx(a: &[f32], b: &[f32]) -> f32 {
    use std::arch::x86_64::*;
    let n = a.len().min(b.len());
    let chunks = n / 8;
    let mut acc = _mm256_setzero_ps();
    for i in 0..chunks {
        // SAFETY: i * 8 + 8 <= n, so both 8-float loads are in bounds (unaligned loads).
        let (x, y) = unsafe {
            (
                _mm256_loadu_ps(a.as_ptr().add(i * 8)),
                _mm256_loadu_ps(b.as_ptr().add(i * 8)),
            )
        };
        acc = _mm256_add_ps(acc, _mm256_mul_ps(x, y));
    }
    let mut lanes = [0f32; 8];
    // SAFETY: `lanes` holds exactly 8 floats.
    unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), acc) };
    let mut s = reduce8(&lanes);
    for i in chunks * 8..n {
        s += a[i] * b[i];
    }
    s
}

/// A candidate ordered so that the heap's maximum is the worst one kept.
#[derive(Clone, Copy, PartialEq)]
struct Cand {
    score: f32,
    row: u32,
}

impl Eq for Cand {}

impl Ord for Cand {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .score
            .total_cmp(&self.score)
            .then(self.row.cmp(&other.row))
    }
}

impl PartialOrd for Cand {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// A bounded best-k heap.
struct TopK {
    k: usize,
    heap: BinaryHeap<Cand>,
}

impl TopK {
    fn new(k: usize) -> Self {
        Self {
            k,
            heap: BinaryHeap::with_capacity(k + 1),
        }
    }

    #[inline]
    fn push(&mut self, c: Cand) {
        if self.heap.len() < self.k {
            self.heap.push(c);
        } else if let Some(mut worst) = self.heap.peek_mut()
            && c < *worst
        {
            *worst = c;
        }
    }

    fn merge(mut self, other: TopK) -> TopK {
        for c in other.heap {
            self.push(c);
        }
        self
    }

    fn into_sorted(self) -> Vec<(u32, f32)> {
        let mut v = self.heap.into_vec();
        v.sort();
        v.into_iter().map(|c| (c.row, c.score)).collect()
    }
}

/// The `k` rows with the largest dot product with `query`, best first (ties: lower row first).
pub fn exact_top_k(m: &VectorMatrix, query: &[f32], k: usize) -> Vec<(u32, f32)> {
    exact_top_k_batch(m, std::slice::from_ref(&query.to_vec()), k)
        .pop()
        .unwrap_or_default()
}

/// [`exact_top_k`] for many queries, scanning the matrix once per block of 16 queries.
pub fn exact_top_k_batch(m: &VectorMatrix, queries: &[Vec<f32>], k: usize) -> Vec<Vec<(u32, f32)>> {
    exact_top_k_filtered(m, queries, k, |_, _| true)
}

/// Like [`exact_top_k_batch`], keeping only rows for which `keep(query_index, row)` is true.
pub(crate) fn exact_top_k_filtered<F>(
    m: &VectorMatrix,
    queries: &[Vec<f32>],
    k: usize,
    keep: F,
) -> Vec<Vec<(u32, f32)>>
where
    F: Fn(usize, u32) -> bool + Sync,
{
    if k == 0 || m.is_empty() {
        return vec![Vec::new(); queries.len()];
    }
    let k = k.min(m.len());
    let dim = m.dim();
    let data = m.as_slice();
    let mut out = Vec::with_capacity(queries.len());
    for (block_no, block) in queries.chunks(QUERY_BLOCK).enumerate() {
        let base = block_no * QUERY_BLOCK;
        let tops = data
            .par_chunks(ROWS_PER_TASK * dim)
            .enumerate()
            .map(|(task, rows)| {
                let first = task * ROWS_PER_TASK;
                let mut tops: Vec<TopK> = block.iter().map(|_| TopK::new(k)).collect();
                for (r, row) in rows.chunks_exact(dim).enumerate() {
                    let row_id = (first + r) as u32;
                    for (qi, q) in block.iter().enumerate() {
                        if keep(base + qi, row_id) {
                            tops[qi].push(Cand {
                                score: dot(q, row),
                                row: row_id,
                            });
                        }
                    }
                }
                tops
            })
            .reduce(
                || block.iter().map(|_| TopK::new(k)).collect(),
                |a, b| a.into_iter().zip(b).map(|(x, y)| x.merge(y)).collect(),
            );
        out.extend(tops.into_iter().map(TopK::into_sorted));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn avx_and_portable_agree_bit_for_bit() {
        let a: Vec<f32> = (0..389)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0)
            .collect();
        let b: Vec<f32> = (0..389)
            .map(|i| ((i * 53 % 97) as f32 - 40.0) / 3.0)
            .collect();
        let naive: f64 = a
            .iter()
            .zip(&b)
            .map(|(x, y)| f64::from(*x) * f64::from(*y))
            .sum();
        assert!((f64::from(dot_portable(&a, &b)) - naive).abs() < 1e-2);
        assert_eq!(dot(&a, &b).to_bits(), dot_portable(&a, &b).to_bits());
    }

    #[test]
    fn top_k_matches_sorting_all() {
        let dim = 12;
        let rows: Vec<f32> = (0..20_000 * dim)
            .map(|i| (((i * 7919) % 1009) as f32 / 1009.0) - 0.5)
            .collect();
        let m = VectorMatrix::from_rows(dim, rows).unwrap();
        let queries: Vec<Vec<f32>> = (0..20)
            .map(|q| {
                (0..dim)
                    .map(|j| ((q * 31 + j * 17) % 13) as f32 - 6.0)
                    .collect()
            })
            .collect();
        let got = exact_top_k_batch(&m, &queries, 7);
        for (q, hits) in queries.iter().zip(&got) {
            let mut all: Vec<(u32, f32)> =
                (0..m.len()).map(|r| (r as u32, dot(q, m.row(r)))).collect();
            all.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            all.truncate(7);
            assert_eq!(hits, &all);
        }
        assert_eq!(exact_top_k(&m, &queries[3], 7), got[3]);
        let filtered = exact_top_k_filtered(&m, &queries[..1], 3, |_, r| r != got[0][0].0);
        assert_eq!(filtered[0][0], got[0][1]);
    }
}
