//! Pearson, Spearman and Kendall tau-b correlations with two-sided p-values, as scipy computes
//! them (Pearson and Spearman via Student's t with n - 2 df; Kendall via the tie-corrected
//! normal approximation, scipy's `method="asymptotic"`). Kendall is O(n^2): fine for judge
//! agreement sets of a few thousand items; its coefficient comes from [`super::ranking`].

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

use super::ranking::PairCounts;
use crate::error::{MetricsError, Result};

/// A correlation coefficient with its two-sided p-value.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Correlation {
    /// The coefficient (r, rho or tau-b).
    pub r: f64,
    /// Two-sided p-value of no correlation.
    pub p_value: f64,
    /// Pairs it rests on.
    pub n: usize,
}

fn check(x: &[f64], y: &[f64], what: &str) -> Result<()> {
    if x.len() != y.len() {
        return Err(MetricsError::invalid(format!(
            "{what}: {} vs {} values",
            x.len(),
            y.len()
        )));
    }
    if x.len() < 3 {
        return Err(MetricsError::invalid(format!(
            "{what}: need at least 3 pairs"
        )));
    }
    if x.iter().chain(y).any(|v| !v.is_finite()) {
        return Err(MetricsError::invalid(format!(
            "{what}: values must be finite"
        )));
    }
    Ok(())
}

fn r_of(x: &[f64], y: &[f64]) -> f64 {
    let n = x.len() as f64;
    let mx = x.iter().sum::<f64>() / n;
    let my = y.iter().sum::<f64>() / n;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx) * (a - mx);
        syy += (b - my) * (b - my);
    }
    (sxy / (sxx * syy).sqrt()).clamp(-1.0, 1.0)
}

fn t_p(r: f64, n: usize) -> f64 {
    if r.abs() >= 1.0 {
        return 0.0;
    }
    if r.is_nan() {
        return f64::NAN;
    }
    let df = (n - 2) as f64;
    let t = r * (df / ((1.0 + r) * (1.0 - r))).sqrt();
    match StudentsT::new(0.0, 1.0, df) {
        Ok(d) => (2.0 * d.sf(t.abs())).min(1.0),
        Err(_) => f64::NAN,
    }
}

/// Pearson's r. NaN when either variable is constant.
pub fn pearson(x: &[f64], y: &[f64]) -> Result<Correlation> {
    check(x, y, "pearson")?;
    let r = r_of(x, y);
    Ok(Correlation {
        r,
        p_value: t_p(r, x.len()),
        n: x.len(),
    })
}

/// Average ranks (1-based), ties sharing the mean of their positions.
fn ranks(x: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..x.len()).collect();
    idx.sort_by(|a, b| x[*a].total_cmp(&x[*b]));
    let mut r = vec![0.0; x.len()];
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && x[idx[j + 1]] == x[idx[i]] {
            j += 1;
        }
        let avg = (i + j) as f64 / 2.0 + 1.0;
        for k in &idx[i..=j] {
            r[*k] = avg;
        }
        i = j + 1;
    }
    r
}

/// Spearman's rho (Pearson on average ranks).
pub fn spearman(x: &[f64], y: &[f64]) -> Result<Correlation> {
    check(x, y, "spearman")?;
    let r = r_of(&ranks(x), &ranks(y));
    Ok(Correlation {
        r,
        p_value: t_p(r, x.len()),
        n: x.len(),
    })
}

/// (sum t(t-1)/2, sum t(t-1)(t-2), sum t(t-1)(2t+5)) over tie groups.
fn tie_terms(x: &[f64]) -> (f64, f64, f64) {
    let mut v = x.to_vec();
    v.sort_by(f64::total_cmp);
    let (mut a, mut b, mut c) = (0.0, 0.0, 0.0);
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[i] {
            j += 1;
        }
        let t = (j - i + 1) as f64;
        a += t * (t - 1.0) / 2.0;
        b += t * (t - 1.0) * (t - 2.0);
        c += t * (t - 1.0) * (2.0 * t + 5.0);
        i = j + 1;
    }
    (a, b, c)
}

/// Kendall's tau-b ([`super::tau_b`]'s coefficient) with the tie-corrected asymptotic
/// two-sided p-value. NaN when either variable is constant.
pub fn kendall_tau_b(x: &[f64], y: &[f64]) -> Result<Correlation> {
    check(x, y, "kendall")?;
    let n = x.len();
    let counts = PairCounts::of(x, y);
    let s = counts.s() as f64;
    let nf = n as f64;
    let (xt, x0, x1) = tie_terms(x);
    let (yt, y0, y1) = tie_terms(y);
    let tau = counts.tau_b().unwrap_or(f64::NAN);
    let var = (nf * (nf - 1.0) * (2.0 * nf + 5.0) - x1 - y1) / 18.0
        + 2.0 * xt * yt / (nf * (nf - 1.0))
        + x0 * y0 / (9.0 * nf * (nf - 1.0) * (nf - 2.0));
    let z = s / var.sqrt();
    let p = match Normal::new(0.0, 1.0) {
        Ok(d) => (2.0 * d.sf(z.abs())).min(1.0),
        Err(_) => f64::NAN,
    };
    Ok(Correlation {
        r: tau.clamp(-1.0, 1.0),
        p_value: p,
        n,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const X: [f64; 10] = [0.2, 0.5, 0.1, 0.9, 0.4, 0.4, 0.7, 0.3, 0.8, 0.6];
    const Y: [f64; 10] = [0.1, 0.6, 0.2, 0.7, 0.5, 0.3, 0.9, 0.3, 0.6, 0.8];

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn match_scipy() {
        // scipy 1.17.1: pearsonr, spearmanr, kendalltau(method="asymptotic")
        let p = pearson(&X, &Y).unwrap();
        assert!(
            close(p.r, 0.8329227231416969, 1e-12) && close(p.p_value, 0.002772096957019579, 1e-9),
            "{p:?}"
        );
        let s = spearman(&X, &Y).unwrap();
        assert!(
            close(s.r, 0.8654474719182605, 1e-12) && close(s.p_value, 0.001215183136011975, 1e-9),
            "{s:?}"
        );
        let k = kendall_tau_b(&X, &Y).unwrap();
        assert!(
            close(k.r, 0.7356807837947247, 1e-12) && close(k.p_value, 0.003772107928020935, 1e-9),
            "{k:?}"
        );
    }

    #[test]
    fn perfect_and_degenerate() {
        let a = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(spearman(&a, &[10.0, 20.0, 30.0, 40.0]).unwrap().r, 1.0);
        assert_eq!(kendall_tau_b(&a, &[4.0, 3.0, 2.0, 1.0]).unwrap().r, -1.0);
        assert!(pearson(&a, &[1.0, 1.0, 1.0, 1.0]).unwrap().r.is_nan());
        assert!(pearson(&a[..2], &a[..2]).is_err());
    }
}
