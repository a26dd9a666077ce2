//! Effect sizes that say how large a difference is, next to whether it is significant.
//!
//! Paired designs (two systems on the same queries) use Cohen's d_z = mean(d) / sd(d) and its
//! small-sample correction Hedges' g_z = d_z * J, J = 1 - 3 / (4 (n - 1) - 1). Independent
//! samples use Cohen's d with the pooled standard deviation.

use serde::{Deserialize, Serialize};

use super::{check_nonempty, check_paired, mean, std_dev};
use crate::error::{MetricsError, Result};

/// Standardized effect sizes of a paired difference.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct EffectSize {
    /// d_z = mean(a - b) / sd(a - b)
    pub cohens_d: f64,
    /// d_z with Hedges' small-sample correction.
    pub hedges_g: f64,
    /// mean(a - b).
    pub mean_diff: f64,
    /// Pairs.
    pub n: usize,
}

/// Effect size of a paired difference a - b.
pub fn paired_effect_size(a: &[f64], b: &[f64]) -> Result<EffectSize> {
    let d = check_paired(a, b, "effect size")?;
    let n = d.len();
    if n < 2 {
        return Err(MetricsError::invalid("effect size needs at least 2 pairs"));
    }
    let m = mean(&d).unwrap_or(f64::NAN);
    let sd = std_dev(&d);
    let dz = if sd == 0.0 {
        if m == 0.0 {
            0.0
        } else {
            m.signum() * f64::INFINITY
        }
    } else {
        m / sd
    };
    let j = 1.0 - 3.0 / (4.0 * (n as f64 - 1.0) - 1.0);
    Ok(EffectSize {
        cohens_d: dz,
        hedges_g: dz * j,
        mean_diff: m,
        n,
    })
}

/// Cohen's d for two independent samples (pooled standard deviation).
pub fn cohens_d(a: &[f64], b: &[f64]) -> Result<f64> {
    check_nonempty(a, "cohen's d")?;
    check_nonempty(b, "cohen's d")?;
    if a.len() < 2 || b.len() < 2 {
        return Err(MetricsError::invalid(
            "cohen's d needs at least 2 values per sample",
        ));
    }
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (sa, sb) = (std_dev(a), std_dev(b));
    let pooled = (((na - 1.0) * sa * sa + (nb - 1.0) * sb * sb) / (na + nb - 2.0)).sqrt();
    Ok((mean(a).unwrap_or(f64::NAN) - mean(b).unwrap_or(f64::NAN)) / pooled)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn textbook_values() {
        // d = (mean diff) / pooled sd: a = 2,4,6 (sd 2), b = 1,3,5 (sd 2): d = 1/2.
        assert!((cohens_d(&[2.0, 4.0, 6.0], &[1.0, 3.0, 5.0]).unwrap() - 0.5).abs() < 1e-12);
        // Paired: differences 1, 2, 3 -> mean 2, sd 1, d_z = 2, J = 1 - 3/7.
        let e = paired_effect_size(&[2.0, 4.0, 6.0], &[1.0, 2.0, 3.0]).unwrap();
        assert!((e.cohens_d - 2.0).abs() < 1e-12);
        assert!((e.hedges_g - 2.0 * (1.0 - 3.0 / 7.0)).abs() < 1e-12);
        assert!(paired_effect_size(&[1.0], &[1.0]).is_err());
    }
}
