//! The k-nearest-neighbour graph of a set of vectors (each row's k most similar other rows by
//! dot product). Exact all-pairs search up to a threshold (cost n^2 d: about 40 s for 50k
//! 384-d vectors on 2 cores), HNSW (hnsw_rs) above it, with recall@10 against exact search
//! measured on a sample of rows so that the approximation is reported, not hidden.

use hnsw_rs::prelude::{Distance, Hnsw};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::exact::{dot, exact_top_k_filtered};
use super::matrix::VectorMatrix;
use crate::error::{Error, Result};

/// HNSW parameters.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HnswOptions {
    /// Links per node (M); at most 255.
    pub max_connections: usize,
    /// Candidate list size while building.
    pub ef_construction: usize,
    /// Candidate list size while searching (raised to at least k).
    pub ef_search: usize,
    /// Insert one vector at a time: the graph, and so every result, is the same on every run.
    /// Parallel insertion is about twice as fast on two cores but its graph depends on thread
    /// timing.
    pub deterministic: bool,
}

impl Default for HnswOptions {
    fn default() -> Self {
        Self {
            max_connections: 24,
            ef_construction: 200,
            ef_search: 128,
            deterministic: true,
        }
    }
}

/// How to compute a kNN graph.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KnnOptions {
    /// Exact all-pairs search for at most this many rows; HNSW above.
    pub exact_threshold: usize,
    /// The HNSW settings used above the exact threshold.
    pub hnsw: HnswOptions,
    /// Rows sampled to measure HNSW recall@10 against exact search (0: do not measure).
    pub recall_sample: usize,
}

impl Default for KnnOptions {
    fn default() -> Self {
        Self {
            exact_threshold: 50_000,
            hnsw: HnswOptions::default(),
            recall_sample: 500,
        }
    }
}

/// How a kNN graph was computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KnnMethod {
    /// Exact all-pairs search (at most [`KnnOptions::exact_threshold`] rows).
    Exact,
    /// An approximate HNSW search (more rows than the exact threshold).
    Hnsw,
}

/// Row i's neighbours, best first, as `(row, dot product)`; a row is never its own neighbour.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KnnGraph {
    /// Neighbours asked for per row.
    pub k: usize,
    /// How the neighbours were found.
    pub method: KnnMethod,
    /// Per row, its neighbours as `(row, dot product)`, best first.
    pub neighbours: Vec<Vec<(u32, f32)>>,
    /// Mean recall@10 of the HNSW neighbours against exact search on a sample of rows.
    pub recall_at_10: Option<f64>,
}

/// Computes the kNN graph of the rows of `m` (rows should be L2-normalised for cosine).
pub fn knn_graph(m: &VectorMatrix, k: usize, opts: &KnnOptions) -> Result<KnnGraph> {
    if m.len() <= opts.exact_threshold {
        return Ok(KnnGraph {
            k,
            method: KnnMethod::Exact,
            neighbours: exact_graph(m, k, 0..m.len()),
            recall_at_10: None,
        });
    }
    let hnsw = build_hnsw(m, &opts.hnsw)?;
    let ef = opts.hnsw.ef_search.max(k + 1);
    let neighbours: Vec<Vec<(u32, f32)>> = (0..m.len())
        .into_par_iter()
        .map(|i| {
            let mut nb: Vec<(u32, f32)> = hnsw
                .search(m.row(i), k + 1, ef)
                .into_iter()
                .filter(|n| n.d_id != i)
                .map(|n| (n.d_id as u32, dot(m.row(i), m.row(n.d_id))))
                .collect();
            sort_neighbours(&mut nb);
            nb.truncate(k);
            nb
        })
        .collect();
    let recall_at_10 = if opts.recall_sample > 0 {
        Some(recall_at_10(m, &neighbours, opts.recall_sample))
    } else {
        None
    };
    if let Some(r) = recall_at_10 {
        tracing::info!(rows = m.len(), recall_at_10 = r, "hnsw kNN graph");
    }
    Ok(KnnGraph {
        k,
        method: KnnMethod::Hnsw,
        neighbours,
        recall_at_10,
    })
}

/// Best first: dot product descending, then row ascending.
pub(crate) fn sort_neighbours(nb: &mut [(u32, f32)]) {
    nb.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
}

/// Exact neighbours of the rows in `rows`.
fn exact_graph(
    m: &VectorMatrix,
    k: usize,
    rows: impl Iterator<Item = usize>,
) -> Vec<Vec<(u32, f32)>> {
    let rows: Vec<usize> = rows.collect();
    let mut out = Vec::with_capacity(rows.len());
    for chunk in rows.chunks(1024) {
        let queries: Vec<Vec<f32>> = chunk.iter().map(|&r| m.row(r).to_vec()).collect();
        out.extend(exact_top_k_filtered(m, &queries, k, |qi, row| {
            row as usize != chunk[qi]
        }));
    }
    out
}

/// Distance `1 - dot`, clamped at 0, for unit vectors. (anndists' `DistDot` asserts that the
/// dot product never exceeds 1, which rounding breaks for a vector and itself.)
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct UnitDot;

impl Distance<f32> for UnitDot {
    fn eval(&self, a: &[f32], b: &[f32]) -> f32 {
        (1.0 - dot(a, b)).max(0.0)
    }
}

/// An HNSW graph over the rows of `m` (dot-product distance, data copied into the graph).
pub(crate) fn build_hnsw(m: &VectorMatrix, o: &HnswOptions) -> Result<Hnsw<'static, f32, UnitDot>> {
    if o.max_connections == 0 || o.max_connections > 255 {
        return Err(Error::Internal(format!(
            "HNSW max_connections must be 1..=255, got {}",
            o.max_connections
        )));
    }
    let hnsw =
        Hnsw::<f32, UnitDot>::new(o.max_connections, m.len(), 16, o.ef_construction, UnitDot);
    if o.deterministic {
        for i in 0..m.len() {
            hnsw.insert_slice((m.row(i), i));
        }
    } else {
        let data: Vec<(&[f32], usize)> = (0..m.len()).map(|i| (m.row(i), i)).collect();
        for block in data.chunks(100_000) {
            hnsw.parallel_insert_slice(&block.to_vec());
        }
    }
    Ok(hnsw)
}

/// Mean recall@10 of `neighbours` against exact search, over `sample` evenly spaced rows.
fn recall_at_10(m: &VectorMatrix, neighbours: &[Vec<(u32, f32)>], sample: usize) -> f64 {
    let n = m.len();
    let s = sample.min(n).max(1);
    let rows: Vec<usize> = (0..s).map(|i| i * n / s).collect();
    let exact = exact_graph(m, 10, rows.iter().copied());
    let mut total = 0.0;
    for (r, truth) in rows.iter().zip(&exact) {
        let got: std::collections::HashSet<u32> =
            neighbours[*r].iter().take(10).map(|x| x.0).collect();
        let hit = truth.iter().filter(|t| got.contains(&t.0)).count();
        total += hit as f64 / truth.len().max(1) as f64;
    }
    total / rows.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn random_unit_rows(n: usize, dim: usize, seed: u64) -> VectorMatrix {
        let mut state = seed;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        };
        let mut m = VectorMatrix::from_rows(dim, (0..n * dim).map(|_| next()).collect()).unwrap();
        m.normalize().unwrap();
        m
    }

    #[test]
    fn exact_graph_excludes_self_and_is_sorted() {
        let m = random_unit_rows(300, 16, 7);
        let g = knn_graph(&m, 5, &KnnOptions::default()).unwrap();
        assert_eq!(g.method, KnnMethod::Exact);
        for (i, nb) in g.neighbours.iter().enumerate() {
            assert_eq!(nb.len(), 5);
            assert!(nb.iter().all(|(r, _)| *r as usize != i));
            assert!(nb.windows(2).all(|w| w[0].1 >= w[1].1));
        }
    }

    #[test]
    fn hnsw_graph_has_high_recall_and_is_deterministic() {
        // Small on purpose: hnsw_rs is slow in debug builds. Recall on larger real vectors is
        // measured by benchmarks/retrieve (`knn` mode).
        let m = random_unit_rows(600, 8, 11);
        let opts = KnnOptions {
            exact_threshold: 100,
            recall_sample: 100,
            hnsw: HnswOptions {
                max_connections: 12,
                ef_construction: 64,
                ef_search: 64,
                deterministic: true,
            },
        };
        let g = knn_graph(&m, 10, &opts).unwrap();
        assert_eq!(g.method, KnnMethod::Hnsw);
        let r = g.recall_at_10.unwrap();
        assert!(r > 0.9, "recall@10 {r}");
        assert!(
            g.neighbours
                .iter()
                .enumerate()
                .all(|(i, nb)| nb.len() == 10 && nb.iter().all(|(j, _)| *j as usize != i))
        );
        let g2 = knn_graph(&m, 10, &opts).unwrap();
        assert_eq!(g.neighbours, g2.neighbours);
    }
}
