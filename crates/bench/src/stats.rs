//! The statistics of a bench, batched over all systems at once so that 20 systems x 10,000
//! turns with 1,000 bootstrap resamples and every pairwise test stay within seconds:
//! - [`bootstrap`]: cluster (dialogue) bootstrap percentile intervals, mtr-metrics' one cluster
//!   bootstrap (`ClusterBootstrap`). One set of resampled dialogue multiplicities is shared by
//!   every system, measure and stratum, so each interval is a matrix product of resample
//!   weights and per-dialogue sums; `bench.json` writes them as [`bootstrap::Estimate`].
//! - [`randomization`]: paired sign-flip randomization tests. One set of sign vectors is shared
//!   by every pair, so the permuted sums of each system are computed once and every pair's
//!   permuted difference is a subtraction.
//!
//! Holm's correction, paired effect sizes and the bootstrap come from `mtr_metrics::stats`, like
//! every other statistic; only the batched randomization tests live here, because their
//! per-pair form in mtr-metrics (one resampling per pair) would repeat the same work hundreds of
//! times.
//! Everything takes a seed; the same inputs and seed give the same numbers.

pub mod bootstrap;
pub mod randomization;

/// Holm's step-down adjusted p-values (from mtr-metrics).
pub use mtr_metrics::stats::holm;

/// Paired effect size (Cohen's d_z, mean difference over its standard deviation) from
/// mtr-metrics; 0 when it is undefined (fewer than two pairs).
pub(crate) fn cohens_dz(a: &[f64], b: &[f64]) -> f64 {
    mtr_metrics::stats::paired_effect_size(a, b).map_or(0.0, |e| e.cohens_d)
}

/// Quantile `q` in [0, 1] of sorted values with linear interpolation between order statistics
/// (Hyndman-Fan type 7, numpy's default; mtr-metrics' `percentile`). `None` when empty.
#[cfg(test)]
pub(crate) fn quantile_sorted(sorted: &[f64], q: f64) -> Option<f64> {
    (!sorted.is_empty()).then(|| mtr_metrics::stats::percentile(sorted, q))
}

/// Arithmetic mean; 0 for an empty slice.
pub fn mean(x: &[f64]) -> f64 {
    mtr_metrics::stats::mean(x).unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_match_numpy() {
        // numpy.percentile([1, 2, 3, 4], [2.5, 50, 97.5]) = [1.075, 2.5, 3.925]
        let v = [1.0, 2.0, 3.0, 4.0];
        assert!((quantile_sorted(&v, 0.025).unwrap() - 1.075).abs() < 1e-12);
        assert!((quantile_sorted(&v, 0.5).unwrap() - 2.5).abs() < 1e-12);
        assert!((quantile_sorted(&v, 0.975).unwrap() - 3.925).abs() < 1e-12);
        assert_eq!(quantile_sorted(&[], 0.5), None);
        assert_eq!(mean(&[1.0, 2.0]), 1.5);
    }
}
