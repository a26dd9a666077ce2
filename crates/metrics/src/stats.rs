//! Uncertainty and significance for per-query scores: bootstrap confidence intervals (plain and
//! over clusters such as dialogues, whose turns are not independent), a paired randomization
//! test between systems, multiple-testing correction and effect sizes, and the
//! prediction-powered mean of labels on a random sample helped by predictions on every item.
//!
//! The project's one [`mean`], one interval type ([`ConfidenceInterval`], which carries its
//! level) and one bootstrap default ([`BOOTSTRAP_RESAMPLES`]) live here.
//!
//! Everything random takes a seed and uses `mtr_core::rng::stream` (ChaCha12 by name), so the same inputs and seed
//! give the same numbers on every run.

mod bootstrap;
mod cluster;
mod effect;
mod interval;
mod moments;
mod paired;
mod reviewed_mean;
mod share;

pub use bootstrap::{bootstrap_ci, cluster_bootstrap_ci};
pub use cluster::{ClusterBootstrap, ClusterDraws};
pub use effect::{EffectSize, cohens_d, paired_effect_size};
pub use interval::{BOOTSTRAP_RESAMPLES, BootstrapOptions, ConfidenceInterval, percentile};
pub use moments::mean;
pub(crate) use moments::{check_nonempty, check_paired, std_dev};
pub use paired::{TestResult, holm, randomization_test};
pub use reviewed_mean::{
    FEW_CLUSTERS, IntervalMethod, LambdaRule, MeanEstimate, PpiItem, ReviewedMean,
    ReviewedMeanOptions, reviewed_mean,
};
