//! Cluster bootstrap over dialogues. Turns of one dialogue share a topic and a history, so they
//! are not independent samples: resampling turns would understate the uncertainty. Each
//! resample draws as many dialogues as there are, with replacement, and a mean is the sum of
//! the drawn dialogues' turn values over the number of their turns (a ratio estimator, so
//! dialogues with more turns weigh more, exactly as in the plain mean over turns).
//!
//! The resample weights (how often each dialogue was drawn) form a matrix `W` (resamples x
//! dialogues) shared by every system, measure and stratum; for a set of series with
//! per-dialogue sums `S` (dialogues x series) and counts `n`, the resampled means are
//! `(W S) / (W n)`, one matrix product.

use ndarray::{Array1, Array2, Axis};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde::{Deserialize, Serialize};

use super::quantile_sorted;

/// A point estimate with its bootstrap percentile interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    pub mean: f64,
    pub ci_low: f64,
    pub ci_high: f64,
}

/// Seeded resample weights over clusters, reused for every series.
#[derive(Debug, Clone)]
pub struct ClusterBootstrap {
    /// resamples x clusters: how many times each cluster was drawn.
    weights: Array2<f64>,
    /// Confidence level, e.g. 0.95.
    level: f64,
}

impl ClusterBootstrap {
    /// Draws `resamples` resamples of `n_clusters` clusters with replacement.
    pub fn new(n_clusters: usize, resamples: usize, level: f64, seed: u64) -> Self {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut weights = Array2::<f64>::zeros((resamples, n_clusters));
        if n_clusters > 0 {
            for mut row in weights.rows_mut() {
                for _ in 0..n_clusters {
                    let c = rng.random_range(0..n_clusters);
                    row[c] += 1.0;
                }
            }
        }
        Self { weights, level }
    }

    pub fn resamples(&self) -> usize {
        self.weights.nrows()
    }

    pub fn level(&self) -> f64 {
        self.level
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

    /// Percentile interval of finite replicate values around a point estimate.
    pub fn interval(&self, point: f64, replicates: impl Iterator<Item = f64>) -> Estimate {
        let mut v: Vec<f64> = replicates.filter(|x| x.is_finite()).collect();
        v.sort_unstable_by(f64::total_cmp);
        let alpha = 1.0 - self.level;
        Estimate {
            mean: point,
            ci_low: quantile_sorted(&v, alpha / 2.0).unwrap_or(point),
            ci_high: quantile_sorted(&v, 1.0 - alpha / 2.0).unwrap_or(point),
        }
    }

    /// Estimates for several series of per-query values over the same queries: `clusters[q]` is
    /// the cluster of query `q`, `series[s][q]` the value of series `s` on query `q`, and
    /// `members` the queries to use (a stratum; all when `None`).
    pub fn estimate(
        &self,
        clusters: &[usize],
        members: Option<&[usize]>,
        series: &[&[f64]],
    ) -> Vec<Estimate> {
        let all: Vec<usize>;
        let members = match members {
            Some(m) => m,
            None => {
                all = (0..clusters.len()).collect();
                &all
            }
        };
        if members.is_empty() || series.is_empty() {
            return vec![
                Estimate {
                    mean: f64::NAN,
                    ci_low: f64::NAN,
                    ci_high: f64::NAN
                };
                series.len()
            ];
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
        let alpha = 1.0 - self.level;
        (0..series.len())
            .map(|s| {
                let mean = members.iter().map(|&q| series[s][q]).sum::<f64>() / n;
                let mut boot: Vec<f64> = num
                    .column(s)
                    .iter()
                    .zip(den.iter())
                    .filter(|(_, d)| **d > 0.0)
                    .map(|(x, d)| x / d)
                    .collect();
                boot.sort_unstable_by(f64::total_cmp);
                Estimate {
                    mean,
                    ci_low: quantile_sorted(&boot, alpha / 2.0).unwrap_or(mean),
                    ci_high: quantile_sorted(&boot, 1.0 - alpha / 2.0).unwrap_or(mean),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_cluster_per_query_matches_plain_bootstrap_and_covers_mean() {
        let values: Vec<f64> = (0..200).map(|i| (i % 7) as f64 / 6.0).collect();
        let clusters: Vec<usize> = (0..200).collect();
        let b = ClusterBootstrap::new(200, 2000, 0.95, 7);
        let e = b.estimate(&clusters, None, &[&values])[0];
        let m = values.iter().sum::<f64>() / 200.0;
        assert!((e.mean - m).abs() < 1e-12);
        assert!(e.ci_low < m && m < e.ci_high, "{e:?}");
        // Standard error of the mean ~ sd/sqrt(n); the 95% interval is about 3.92 SE wide.
        let sd = (values.iter().map(|v| (v - m).powi(2)).sum::<f64>() / 199.0).sqrt();
        let width = e.ci_high - e.ci_low;
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
            (c.ci_high - c.ci_low) > 2.5 * (n.ci_high - n.ci_low),
            "{c:?} {n:?}"
        );
    }

    #[test]
    fn members_select_a_stratum_and_seed_reproduces() {
        let clusters = vec![0, 0, 1, 1, 2, 2];
        let v = vec![1.0, 0.0, 1.0, 1.0, 0.0, 0.0];
        let b = ClusterBootstrap::new(3, 500, 0.95, 3);
        let e = b.estimate(&clusters, Some(&[0, 1, 2]), &[&v])[0];
        assert!((e.mean - 2.0 / 3.0).abs() < 1e-12);
        assert!(e.ci_low >= 0.0 && e.ci_high <= 1.0);
        let again =
            ClusterBootstrap::new(3, 500, 0.95, 3).estimate(&clusters, Some(&[0, 1, 2]), &[&v])[0];
        assert_eq!(e, again);
        let empty = b.estimate(&clusters, Some(&[]), &[&v])[0];
        assert!(empty.mean.is_nan());
    }
}
