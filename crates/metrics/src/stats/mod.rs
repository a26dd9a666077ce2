//! Uncertainty and significance for per-query scores: bootstrap confidence intervals (plain and
//! over clusters such as dialogues, whose turns are not independent), per-stratum summaries,
//! paired tests between systems, multiple-testing correction and effect sizes, and the
//! prediction-powered mean of labels on a random sample helped by predictions on every item.
//!
//! Everything random takes a seed and uses `mtr_core::rng::stream` (ChaCha12 by name), so the same inputs and seed
//! give the same numbers on every run.

mod bootstrap;
mod cluster;
mod effect;
mod interval;
mod paired;
mod ppi;
mod ppi_many;
mod strata;

pub use bootstrap::{bootstrap_ci, cluster_bootstrap_ci, cluster_bootstrap_ci_many};
pub use cluster::{ClusterBootstrap, ClusterDraws};
pub use effect::{EffectSize, cohens_d, paired_effect_size};
pub use interval::{BootstrapOptions, ConfidenceInterval, percentile};
pub use paired::{TestResult, holm, paired_bootstrap_test, paired_t_test, randomization_test};
pub use ppi::{PpiEstimate, PpiItem, ppi_mean};
pub use ppi_many::{
    MIN_DEGREES as PPI_MANY_MIN_DEGREES, PpiManyEstimate, PpiManyItem, ppi_mean_many,
};
pub use strata::{SMALL_STRATUM, Stratum, stratify};

use crate::error::{MetricsError, Result};

/// Arithmetic mean (NaN for an empty slice).
pub fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Sample standard deviation (n - 1 denominator).
pub fn std_dev(xs: &[f64]) -> f64 {
    let m = mean(xs);
    let ss: f64 = xs.iter().map(|x| (x - m) * (x - m)).sum();
    (ss / (xs.len() as f64 - 1.0)).sqrt()
}

pub(crate) fn check_nonempty(xs: &[f64], what: &str) -> Result<()> {
    if xs.is_empty() {
        return Err(MetricsError::invalid(format!("{what}: no values")));
    }
    if xs.iter().any(|x| !x.is_finite()) {
        return Err(MetricsError::invalid(format!(
            "{what}: values must be finite"
        )));
    }
    Ok(())
}

pub(crate) fn check_paired(a: &[f64], b: &[f64], what: &str) -> Result<Vec<f64>> {
    if a.len() != b.len() {
        return Err(MetricsError::invalid(format!(
            "{what}: paired samples differ in length ({} vs {})",
            a.len(),
            b.len()
        )));
    }
    check_nonempty(a, what)?;
    check_nonempty(b, what)?;
    Ok(a.iter().zip(b).map(|(x, y)| x - y).collect())
}
