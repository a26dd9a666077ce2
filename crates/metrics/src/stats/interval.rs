//! The settings of a percentile bootstrap and the one interval type every bootstrap here ends
//! in ([`ConfidenceInterval`]). Apart from the resampling itself ([`super::bootstrap`] over
//! values, [`super::cluster`] over clusters) so that both, and the paired tests, share one
//! percentile rule and one way from replicates to an interval.

use serde::{Deserialize, Serialize};

use crate::error::{MetricsError, Result};

/// Resamples of every bootstrap the project runs unless a setting says otherwise: enough that
/// the 2.5% and 97.5% percentiles move by well under a tenth of the interval's width between
/// seeds.
pub const BOOTSTRAP_RESAMPLES: usize = 10_000;

/// Bootstrap settings.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BootstrapOptions {
    /// Resamples drawn (default [`BOOTSTRAP_RESAMPLES`]).
    pub resamples: usize,
    /// Confidence level, e.g. 0.95.
    pub level: f64,
    /// Seed of the resampling stream.
    pub seed: u64,
}

impl Default for BootstrapOptions {
    fn default() -> Self {
        BootstrapOptions {
            resamples: BOOTSTRAP_RESAMPLES,
            level: 0.95,
            seed: 42,
        }
    }
}

impl BootstrapOptions {
    pub(crate) fn check(&self) -> Result<()> {
        if self.resamples < 2 {
            return Err(MetricsError::invalid(
                "bootstrap needs at least 2 resamples",
            ));
        }
        if !(self.level > 0.0 && self.level < 1.0) {
            return Err(MetricsError::invalid("confidence level must be in (0, 1)"));
        }
        Ok(())
    }
}

/// A confidence interval around a point estimate, with its level and what produced it: the
/// project's one interval type (bootstrap, analytic and exact intervals alike).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ConfidenceInterval {
    /// The point estimate.
    pub estimate: f64,
    /// Lower bound.
    pub lower: f64,
    /// Upper bound.
    pub upper: f64,
    /// Confidence level, e.g. 0.95.
    pub level: f64,
    /// Bootstrap resamples behind the bounds; 0 for an analytic or exact interval.
    pub resamples: usize,
    /// Seed of the resampling; 0 for an analytic or exact interval.
    pub seed: u64,
}

impl ConfidenceInterval {
    /// The percentile interval (type 7) of the replicate values around `estimate`; with no
    /// replicate at all both bounds are the estimate itself.
    pub fn percentile(estimate: f64, mut replicates: Vec<f64>, opts: &BootstrapOptions) -> Self {
        replicates.sort_unstable_by(f64::total_cmp);
        let alpha = 1.0 - opts.level;
        let bound = |p: f64| {
            if replicates.is_empty() {
                estimate
            } else {
                percentile(&replicates, p)
            }
        };
        ConfidenceInterval {
            estimate,
            lower: bound(alpha / 2.0),
            upper: bound(1.0 - alpha / 2.0),
            level: opts.level,
            resamples: opts.resamples,
            seed: opts.seed,
        }
    }

    /// Not a number in every value: the interval of a mean over no value.
    pub fn undefined(opts: &BootstrapOptions) -> Self {
        ConfidenceInterval {
            estimate: f64::NAN,
            lower: f64::NAN,
            upper: f64::NAN,
            level: opts.level,
            resamples: opts.resamples,
            seed: opts.seed,
        }
    }
}

/// The p-quantile of sorted values with linear interpolation between order statistics
/// (Hyndman-Fan type 7, numpy's default); NaN when empty.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let h = (sorted.len() - 1) as f64 * p.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = h.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (h - lo as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_matches_numpy_linear() {
        // numpy.percentile([1,2,3,4], [2.5, 50, 97.5]) = [1.075, 2.5, 3.925]
        let s = [1.0, 2.0, 3.0, 4.0];
        assert!((percentile(&s, 0.025) - 1.075).abs() < 1e-12);
        assert!((percentile(&s, 0.5) - 2.5).abs() < 1e-12);
        assert!((percentile(&s, 0.975) - 3.925).abs() < 1e-12);
        assert!(percentile(&[], 0.5).is_nan());
    }

    #[test]
    fn no_replicate_gives_the_estimate_as_both_bounds() {
        let o = BootstrapOptions::default();
        let ci = ConfidenceInterval::percentile(0.5, Vec::new(), &o);
        assert_eq!((ci.lower, ci.upper), (0.5, 0.5));
        let ci = ConfidenceInterval::percentile(0.5, vec![0.4, 0.2, 0.6], &o);
        assert!(
            ci.lower > 0.2 && ci.upper < 0.6 && ci.lower < ci.upper,
            "{ci:?}"
        );
    }
}
