//! Chi-square goodness of fit against a uniform distribution, e.g. "does this judge pick the
//! first position more often than chance?".

use serde::{Deserialize, Serialize};
use statrs::distribution::{ChiSquared, ContinuousCDF};

use crate::error::{MetricsError, Result};

/// A chi-square goodness-of-fit test's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ChiSquare {
    /// The chi-square statistic.
    pub statistic: f64,
    /// Degrees of freedom.
    pub df: usize,
    /// Upper-tail p-value.
    pub p_value: f64,
}

/// Pearson's chi-square test of observed category counts against equal expected counts
/// (scipy's `chisquare(counts)`).
pub fn chi_square_uniform(counts: &[u64]) -> Result<ChiSquare> {
    if counts.len() < 2 {
        return Err(MetricsError::invalid(
            "chi-square: need at least 2 categories",
        ));
    }
    let total: u64 = counts.iter().sum();
    if total == 0 {
        return Err(MetricsError::invalid("chi-square: no observations"));
    }
    let e = total as f64 / counts.len() as f64;
    let statistic: f64 = counts.iter().map(|o| (*o as f64 - e).powi(2) / e).sum();
    let df = counts.len() - 1;
    let dist = ChiSquared::new(df as f64)
        .map_err(|e| MetricsError::invalid(format!("chi-square: {e}")))?;
    Ok(ChiSquare {
        statistic,
        df,
        p_value: dist.sf(statistic),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_scipy() {
        // scipy.stats.chisquare([18, 22, 30, 10]) -> (10.4, 0.015454827216857748)
        let c = chi_square_uniform(&[18, 22, 30, 10]).unwrap();
        assert!((c.statistic - 10.4).abs() < 1e-12);
        assert_eq!(c.df, 3);
        assert!((c.p_value - 0.015454827216857748).abs() < 1e-10, "{c:?}");
        assert!(chi_square_uniform(&[5]).is_err());
        assert!((chi_square_uniform(&[10, 10, 10]).unwrap().p_value - 1.0).abs() < 1e-12);
    }
}
