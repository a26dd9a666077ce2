//! Cluster bootstrap over dialogues, as bench uses it. The computation is mtr-metrics' one
//! cluster bootstrap ([`ClusterBootstrap`], re-exported here): one seeded set of resampled
//! dialogue multiplicities shared by every system, measure and stratum, each interval a matrix
//! product of resample weights and per-dialogue sums, ending in a
//! [`mtr_metrics::stats::ConfidenceInterval`].
//!
//! [`Estimate`] stays here as the shape `bench.json` (and the leaderboard) writes an interval
//! in: `{mean, ci_low, ci_high}`, built from the computation's interval, so the outputs keep
//! their fields and bytes.

use mtr_metrics::stats::ConfidenceInterval;
use serde::{Deserialize, Serialize};

pub use mtr_metrics::stats::ClusterBootstrap;

/// A point estimate with its bootstrap percentile interval, as the report writes it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// The point estimate (the mean).
    pub mean: f64,
    /// The interval's lower bound.
    pub ci_low: f64,
    /// The interval's upper bound.
    pub ci_high: f64,
}

impl From<ConfidenceInterval> for Estimate {
    fn from(ci: ConfidenceInterval) -> Self {
        Estimate {
            mean: ci.estimate,
            ci_low: ci.lower,
            ci_high: ci.upper,
        }
    }
}

/// Estimates for several series, as [`ClusterBootstrap::estimate`] computes them.
pub fn estimates(
    boot: &ClusterBootstrap,
    clusters: &[usize],
    members: Option<&[usize]>,
    series: &[&[f64]],
) -> Vec<Estimate> {
    boot.estimate(clusters, members, series)
        .into_iter()
        .map(Estimate::from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_estimate_is_the_interval_in_the_reports_shape() {
        let b = ClusterBootstrap::new(3, 200, 0.95, 3);
        let clusters = [0, 0, 1, 2];
        let v = [1.0, 0.0, 1.0, 0.5];
        let ci = b.estimate(&clusters, None, &[&v])[0];
        let e = estimates(&b, &clusters, None, &[&v])[0];
        assert_eq!(
            (e.mean, e.ci_low, e.ci_high),
            (ci.estimate, ci.lower, ci.upper)
        );
        assert_eq!(e.mean, 0.625);
    }
}
