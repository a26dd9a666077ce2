//! Exact intervals for a share (a mean of 0/1 labels) that keep their coverage where the
//! normal approximation breaks: 0 or n of n observed, rare events, few labels, few clusters.
//!
//! The interval is Clopper-Pearson's on an effective sample size (Korn and Graubard 1998, as
//! survey software computes a proportion's interval from a clustered sample): the design
//! effect (the clustered variance of the share over the simple-random-sample one, at least
//! one) shrinks the sample to `n / deff`, and with few clusters the size shrinks again by
//! `(t_{n-1} / t_{G-1})^2`, the small-sample correction of a variance estimated from `G`
//! clusters. With 0 (or n) of n observed the design effect is undefined and 1 is used: the
//! interval is then the exact `[0, 1 - (alpha/2)^(1/n)]` (or its mirror), never of zero width.

use statrs::distribution::{ContinuousCDF, StudentsT};
use statrs::function::beta::inv_beta_reg;

/// Clopper-Pearson bounds at `level` for `successes` of `n`, both real-valued (an effective
/// sample): the exact binomial interval, `[0, .]` at 0 successes and `[., 1]` at n.
pub(crate) fn clopper_pearson(successes: f64, n: f64, level: f64) -> (f64, f64) {
    let alpha = 1.0 - level;
    let lower = if successes <= 0.0 {
        0.0
    } else {
        inv_beta_reg(successes, n - successes + 1.0, alpha / 2.0)
    };
    let upper = if successes >= n {
        1.0
    } else {
        inv_beta_reg(successes + 1.0, n - successes, 1.0 - alpha / 2.0)
    };
    (lower, upper)
}

/// The two-sided `level` quantile of Student's t with `df` degrees of freedom (at least 1).
pub(crate) fn t_quantile(level: f64, df: f64) -> f64 {
    let p = 1.0 - (1.0 - level) / 2.0;
    StudentsT::new(0.0, 1.0, df.max(1.0)).map_or(f64::NAN, |t| t.inverse_cdf(p))
}

/// What the Korn-Graubard interval of one sample rests on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ShareSample {
    /// Labelled items.
    pub(crate) n: usize,
    /// The share observed among them.
    pub(crate) share: f64,
    /// The share's cluster-robust variance (0 when every label is the same).
    pub(crate) clustered_variance: f64,
    /// Clusters the labelled items come from.
    pub(crate) clusters: usize,
}

/// The Korn-Graubard interval of a share (see the module doc): Clopper-Pearson on the
/// effective sample size after the design effect and the few-clusters correction.
pub(crate) fn korn_graubard(s: &ShareSample, level: f64) -> (f64, f64) {
    let n = s.n as f64;
    let srs_variance = s.share * (1.0 - s.share) / n;
    let deff = if srs_variance > 0.0 && s.clustered_variance.is_finite() {
        (s.clustered_variance / srs_variance).max(1.0)
    } else {
        1.0
    };
    let t_ratio = if s.clusters >= 2 && s.n >= 2 {
        t_quantile(level, n - 1.0) / t_quantile(level, s.clusters as f64 - 1.0)
    } else {
        1.0
    };
    let n_eff = (n / deff * t_ratio * t_ratio).max(1.0);
    clopper_pearson(s.share * n_eff, n_eff, level)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-9, "{a} vs {b}");
    }

    #[test]
    fn clopper_pearson_matches_scipy() {
        // the binomial tail inverted by bisection: P(X >= 3 | lo) = P(X <= 3 | hi) = 0.025
        let (lo, hi) = clopper_pearson(0.0, 40.0, 0.95);
        close(lo, 0.0);
        close(hi, 1.0 - 0.025f64.powf(1.0 / 40.0));
        let (lo, hi) = clopper_pearson(3.0, 20.0, 0.95);
        close(lo, 0.032_070_937_185_463_67);
        close(hi, 0.378_926_826_545_313_96);
        let (lo, hi) = clopper_pearson(20.0, 20.0, 0.95);
        close(lo, 0.025f64.powf(1.0 / 20.0));
        close(hi, 1.0);
    }

    #[test]
    fn the_design_effect_and_few_clusters_widen_the_interval() {
        let srs = ShareSample {
            n: 50,
            share: 0.2,
            clustered_variance: 0.2 * 0.8 / 50.0,
            clusters: 50,
        };
        let plain = korn_graubard(&srs, 0.95);
        let clustered = korn_graubard(
            &ShareSample {
                clustered_variance: 3.0 * srs.clustered_variance,
                ..srs
            },
            0.95,
        );
        let few = korn_graubard(&ShareSample { clusters: 4, ..srs }, 0.95);
        let width = |(lo, hi): (f64, f64)| hi - lo;
        assert!(
            width(clustered) > 1.5 * width(plain),
            "{plain:?} {clustered:?}"
        );
        assert!(width(few) > 1.3 * width(plain), "{plain:?} {few:?}");
        // none observed: the exact one-sided bound, whatever the clusters say
        let none = korn_graubard(
            &ShareSample {
                share: 0.0,
                clustered_variance: 0.0,
                ..srs
            },
            0.95,
        );
        close(none.0, 0.0);
        close(none.1, 1.0 - 0.025f64.powf(1.0 / 50.0));
    }
}
