//! The cluster bootstrap: resampling whole clusters (dialogues) with replacement, seeded. Turns
//! of one dialogue share a topic and a history, so they are not independent samples:
//! resampling turns would understate the uncertainty. Each resample draws as many clusters as
//! there are, with replacement, and a mean is the sum of the drawn clusters' values over the
//! number of their members (a ratio estimator, so clusters with more members weigh more,
//! exactly as in the plain mean over members).
//!
//! [`ClusterDraws`] is the one seeded draw every cluster bootstrap of mtr uses: resample after
//! resample, `n_clusters` draws each from one `mtr_core::rng::stream(seed, AS_GIVEN)`. Two uses of it:
//! - [`cluster_bootstrap_ci_many`](super::cluster_bootstrap_ci_many) adds the drawn clusters'
//!   sums in draw order (one system or a few, as the audit's intervals);
//! - [`ClusterBootstrap`] counts the draws into a weight matrix `W` (resamples x clusters)
//!   shared by every system, measure and stratum; for a set of series with per-cluster sums `S`
//!   (clusters x series) and counts `n`, the resampled means are `(W S) / (W n)`, one matrix
//!   product (bench: 20 systems x 10,000 turns x 1,000 resamples within seconds).
//!
//! Both end in [`ConfidenceInterval::percentile`].

use mtr_core::rng::{self, SeededRng};
use ndarray::{Array1, Array2, Axis};
use rand::RngExt;

use super::interval::{BootstrapOptions, ConfidenceInterval};

/// Seeded draws of clusters with replacement, one resample at a time.
#[derive(Debug)]
pub struct ClusterDraws {
    rng: SeededRng,
    n_clusters: usize,
}

impl ClusterDraws {
    /// A stream of draws over `n_clusters` clusters from `seed`.
    pub fn new(n_clusters: usize, seed: u64) -> Self {
        ClusterDraws {
            rng: rng::stream(seed, rng::purpose::AS_GIVEN),
            n_clusters,
        }
    }

    /// Fills `draw` with the clusters of the next resample (one draw per element, in order; a
    /// resample has `n_clusters` of them). Draws nothing when there is no cluster.
    #[inline]
    pub fn next_into(&mut self, draw: &mut [usize]) {
        if self.n_clusters == 0 {
            return;
        }
        for d in draw.iter_mut() {
            *d = self.rng.random_range(0..self.n_clusters);
        }
    }
}

/// Seeded resample weights over clusters, reused for every series.
#[derive(Debug, Clone)]
pub struct ClusterBootstrap {
    /// resamples x clusters: how many times each cluster was drawn.
    weights: Array2<f64>,
    opts: BootstrapOptions,
}

impl ClusterBootstrap {
    /// Draws `resamples` resamples of `n_clusters` clusters with replacement.
    pub fn new(n_clusters: usize, resamples: usize, level: f64, seed: u64) -> Self {
        let mut draws = ClusterDraws::new(n_clusters, seed);
        let mut draw = vec![0usize; n_clusters];
        let mut weights = Array2::<f64>::zeros((resamples, n_clusters));
        for mut row in weights.rows_mut() {
            draws.next_into(&mut draw);
            for &c in &draw {
                row[c] += 1.0;
            }
        }
        let opts = BootstrapOptions {
            resamples,
            level,
            seed,
        };
        Self { weights, opts }
    }

    /// Resamples drawn.
    pub fn resamples(&self) -> usize {
        self.weights.nrows()
    }

    /// Confidence level of the intervals.
    pub fn level(&self) -> f64 {
        self.opts.level
    }

    /// The resampled means themselves: `out[[r, s]]` is the mean of series `s` over `members`
    /// in resample `r` (NaN when resample `r` drew none of their clusters). Every cluster index
    /// must be below the `n_clusters` this bootstrap was drawn for. Two calls with different
    /// members share the resampled clusters, so statistics that compare two sets of turns from
    /// the same dialogues (a mean under two qrels) stay paired.
    pub fn replicates(
        &self,
        clusters: &[usize],
        members: &[usize],
        series: &[&[f64]],
    ) -> Array2<f64> {
        let c = self.weights.ncols();
        let mut sums = Array2::<f64>::zeros((c, series.len()));
        let mut counts = Array1::<f64>::zeros(c);
        for &q in members {
            let k = clusters[q];
            if k >= c {
                continue;
            }
            counts[k] += 1.0;
            for (s, values) in series.iter().enumerate() {
                sums[[k, s]] += values[q];
            }
        }
        let mut num = self.weights.dot(&sums);
        let den = self.weights.dot(&counts);
        for (mut row, d) in num.rows_mut().into_iter().zip(den.iter()) {
            if *d > 0.0 {
                row.mapv_inplace(|x| x / d);
            } else {
                row.fill(f64::NAN);
            }
        }
        num
    }

    /// Percentile interval of the finite replicate values around a point estimate.
    pub fn interval(
        &self,
        point: f64,
        replicates: impl Iterator<Item = f64>,
    ) -> ConfidenceInterval {
        let v: Vec<f64> = replicates.filter(|x| x.is_finite()).collect();
        ConfidenceInterval::percentile(point, v, &self.opts)
    }

    /// Intervals for several series of per-query values over the same queries: `clusters[q]`
    /// is the cluster of query `q`, `series[s][q]` the value of series `s` on query `q`, and
    /// `members` the queries to use (a stratum; all when `None`). The estimate is the plain
    /// mean over the members; NaN everywhere when there is no member.
    pub fn estimate(
        &self,
        clusters: &[usize],
        members: Option<&[usize]>,
        series: &[&[f64]],
    ) -> Vec<ConfidenceInterval> {
        let all: Vec<usize>;
        let members = match members {
            Some(m) => m,
            None => {
                all = (0..clusters.len()).collect();
                &all
            }
        };
        if members.is_empty() || series.is_empty() {
            return vec![ConfidenceInterval::undefined(&self.opts); series.len()];
        }
        // Compress to the clusters present among the members.
        let mut present: Vec<usize> = members.iter().map(|&q| clusters[q]).collect();
        present.sort_unstable();
        present.dedup();
        let col_of = |c: usize| present.binary_search(&c).unwrap_or(0);
        let mut sums = Array2::<f64>::zeros((present.len(), series.len()));
        let mut counts = Array1::<f64>::zeros(present.len());
        for &q in members {
            let c = col_of(clusters[q]);
            counts[c] += 1.0;
            for (s, values) in series.iter().enumerate() {
                sums[[c, s]] += values[q];
            }
        }
        let n = members.len() as f64;
        let w = if present.len() == self.weights.ncols() {
            self.weights.clone()
        } else {
            self.weights.select(Axis(1), &present)
        };
        let num = w.dot(&sums); // resamples x series
        let den = w.dot(&counts); // resamples
        (0..series.len())
            .map(|s| {
                let mean = members.iter().map(|&q| series[s][q]).sum::<f64>() / n;
                let boot: Vec<f64> = num
                    .column(s)
                    .iter()
                    .zip(den.iter())
                    .filter(|(_, d)| **d > 0.0)
                    .map(|(x, d)| x / d)
                    .collect();
                ConfidenceInterval::percentile(mean, boot, &self.opts)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first draws of this use of the seeded generator ([`mtr_core::rng`]): a dependency
    /// update that changes them fails here, not silently in a report.
    #[test]
    fn golden_first_draws() {
        let mut draws = ClusterDraws::new(10, 7);
        let mut d = vec![0; 12];
        draws.next_into(&mut d);
        assert_eq!(d, vec![4, 0, 1, 3, 0, 1, 6, 5, 6, 2, 7, 9]);
    }

    #[test]
    fn one_cluster_per_query_matches_plain_bootstrap_and_covers_mean() {
        let values: Vec<f64> = (0..200).map(|i| (i % 7) as f64 / 6.0).collect();
        let clusters: Vec<usize> = (0..200).collect();
        let b = ClusterBootstrap::new(200, 2000, 0.95, 7);
        let e = b.estimate(&clusters, None, &[&values])[0];
        let m = values.iter().sum::<f64>() / 200.0;
        assert!((e.estimate - m).abs() < 1e-12);
        assert!(e.lower < m && m < e.upper, "{e:?}");
        // Standard error of the mean ~ sd/sqrt(n); the 95% interval is about 3.92 SE wide.
        let sd = (values.iter().map(|v| (v - m).powi(2)).sum::<f64>() / 199.0).sqrt();
        let width = e.upper - e.lower;
        let expected = 3.92 * sd / (200f64).sqrt();
        assert!(
            (width / expected - 1.0).abs() < 0.15,
            "width {width} vs {expected}"
        );
    }

    #[test]
    fn clustered_values_widen_the_interval() {
        // 20 dialogues of 10 identical turns: effectively 20 samples, not 200.
        let clusters: Vec<usize> = (0..200).map(|i| i / 10).collect();
        let values: Vec<f64> = (0..200).map(|i| ((i / 10) % 2) as f64).collect();
        let naive: Vec<usize> = (0..200).collect();
        let b_cluster = ClusterBootstrap::new(20, 2000, 0.95, 1);
        let b_naive = ClusterBootstrap::new(200, 2000, 0.95, 1);
        let c = b_cluster.estimate(&clusters, None, &[&values])[0];
        let n = b_naive.estimate(&naive, None, &[&values])[0];
        assert!(
            (c.upper - c.lower) > 2.5 * (n.upper - n.lower),
            "{c:?} {n:?}"
        );
    }

    #[test]
    fn members_select_a_stratum_and_seed_reproduces() {
        let clusters = vec![0, 0, 1, 1, 2, 2];
        let v = vec![1.0, 0.0, 1.0, 1.0, 0.0, 0.0];
        let b = ClusterBootstrap::new(3, 500, 0.95, 3);
        let e = b.estimate(&clusters, Some(&[0, 1, 2]), &[&v])[0];
        assert!((e.estimate - 2.0 / 3.0).abs() < 1e-12);
        assert!(e.lower >= 0.0 && e.upper <= 1.0);
        let again =
            ClusterBootstrap::new(3, 500, 0.95, 3).estimate(&clusters, Some(&[0, 1, 2]), &[&v])[0];
        assert_eq!(e, again);
        let empty = b.estimate(&clusters, Some(&[]), &[&v])[0];
        assert!(empty.estimate.is_nan());
    }

    #[test]
    fn the_weights_and_the_summed_draws_are_the_same_resamples() {
        // One cluster per query and no stratum: the matrix product and the sum in draw order
        // see the same resamples, so their intervals agree to rounding.
        let values: Vec<f64> = (0..40).map(|i| ((i * 7) % 11) as f64 / 10.0).collect();
        let ids: Vec<usize> = (0..40).map(|i| i / 4).collect();
        let names: Vec<String> = ids.iter().map(|i| format!("d{i}")).collect();
        let o = BootstrapOptions {
            resamples: 300,
            level: 0.9,
            seed: 5,
        };
        let m = ClusterBootstrap::new(10, o.resamples, o.level, o.seed).estimate(
            &ids,
            None,
            &[&values],
        )[0];
        let s = super::super::cluster_bootstrap_ci(&values, &names, &o).unwrap();
        assert!((m.lower - s.lower).abs() < 1e-12 && (m.upper - s.upper).abs() < 1e-12);
        assert_eq!(
            (m.level, m.resamples, m.seed),
            (s.level, s.resamples, s.seed)
        );
    }
}
