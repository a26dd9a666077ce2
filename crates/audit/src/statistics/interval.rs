//! The confidence interval as the audit's outputs carry it (`summary.json`, the human
//! calibration), and the interval of a mean.
//!
//! The computation of a mean's interval is mtr-metrics' one cluster bootstrap
//! ([`mtr_metrics::stats::cluster_bootstrap_ci`], through [`interval`]); the intervals of other
//! statistics (correlations, kappas, residuals: `resample.rs`) fill the same shape. [`Interval`]
//! is only the report's wire shape: its field names are those of `summary.json` and of the JSON
//! Schema in `docs/schema/`. This module imports neither the summary nor its users, so
//! `summary`, `human` and `resample` can all use it without importing each other.

use mtr_metrics::stats::{BootstrapOptions, cluster_bootstrap_ci};
use serde::{Deserialize, Serialize};

use crate::config::AuditSettings;

/// A confidence interval (cluster bootstrap over dialogues).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Interval {
    pub lower: f64,
    pub upper: f64,
    pub level: f64,
    pub resamples: usize,
    /// Dialogues resampled (clusters).
    pub clusters: usize,
}

/// Cluster-bootstrap CI of the mean of `values` (one per item), clustered by dialogue.
pub(crate) fn interval(
    values: &[f64],
    clusters: &[&str],
    s: &AuditSettings,
    salt: &str,
) -> Option<Interval> {
    let mut distinct: Vec<&str> = clusters.to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    if values.len() < 2 || distinct.len() < 2 {
        return None;
    }
    let opts = BootstrapOptions {
        resamples: s.resamples,
        level: s.confidence,
        seed: crate::seed::derive(s.seed, &["bootstrap", salt]),
    };
    let ci = cluster_bootstrap_ci(values, clusters, &opts).ok()?;
    (ci.lower.is_finite() && ci.upper.is_finite()).then_some(Interval {
        lower: ci.lower,
        upper: ci.upper,
        level: ci.level,
        resamples: ci.resamples,
        clusters: distinct.len(),
    })
}
