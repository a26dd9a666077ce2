//! Agreement between judges (human or LLM) and correlation between scorings: Cohen's kappa
//! (plain and weighted), Fleiss' kappa, Krippendorff's alpha (nominal, ordinal, interval, with
//! missing ratings), Pearson, Spearman and Kendall's tau-b with p-values, and a chi-square
//! goodness-of-fit test against a uniform distribution (for position-bias checks); and the
//! agreement of two leaderboards' rankings (bare tau-b and tau_AP, with the strict
//! descending order they rank by, and tau-b with a bootstrap interval over resampled queries).
//!
//! Each is checked against textbook worked examples and scipy / statsmodels / sklearn /
//! `krippendorff` values computed once and stored in the tests.

mod chisq;
mod correlation;
mod kappa;
mod krippendorff;
mod ranking;
mod ranking_interval;

pub use chisq::{ChiSquare, chi_square_uniform};
pub use correlation::{Correlation, kendall_tau_b, pearson, spearman};
pub use kappa::{KappaWeights, cohens_kappa, fleiss_kappa, weighted_kappa};
pub use krippendorff::{Level, krippendorff_alpha};
pub use ranking::{descending_order, tau_ap, tau_b};
pub use ranking_interval::{PairedScores, tau_b_interval};
