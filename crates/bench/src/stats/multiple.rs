//! Multiple-comparison correction and effect sizes for paired comparisons.

/// Holm's step-down adjusted p-values, in the input order: sort ascending, multiply the i-th
/// smallest (0-based) by `m - i`, enforce monotonicity, cap at 1.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]).then(a.cmp(&b)));
    let mut adjusted = vec![0.0; m];
    let mut running: f64 = 0.0;
    for (i, &idx) in order.iter().enumerate() {
        let v = ((m - i) as f64 * p[idx]).min(1.0);
        running = running.max(v);
        adjusted[idx] = running;
    }
    adjusted
}

/// Paired effect size (Cohen's d_z): mean of the differences over their standard deviation
/// (n - 1 denominator). 0 when there is no variation and no difference; infinite when every
/// difference is the same non-zero value.
pub fn cohens_dz(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len().min(b.len());
    if n < 2 {
        return 0.0;
    }
    let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    let m = d.iter().sum::<f64>() / n as f64;
    let var = d.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (n - 1) as f64;
    if var == 0.0 {
        if m == 0.0 { 0.0 } else { m.signum() * f64::INFINITY }
    } else {
        m / var.sqrt()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holm_matches_statsmodels() {
        // statsmodels.stats.multitest.multipletests([0.01, 0.04, 0.03, 0.005], method="holm")
        // -> [0.03, 0.06, 0.06, 0.02]
        let adj = holm(&[0.01, 0.04, 0.03, 0.005]);
        let want = [0.03, 0.06, 0.06, 0.02];
        for (a, w) in adj.iter().zip(want) {
            assert!((a - w).abs() < 1e-12, "{adj:?}");
        }
        assert!(holm(&[]).is_empty());
        assert_eq!(holm(&[0.9, 0.8]), vec![1.0, 1.0]);
    }

    #[test]
    fn effect_size() {
        // differences 1, 2, 3: mean 2, sd 1
        assert!((cohens_dz(&[2.0, 3.0, 4.0], &[1.0, 1.0, 1.0]) - 2.0).abs() < 1e-12);
        assert_eq!(cohens_dz(&[1.0, 1.0], &[1.0, 1.0]), 0.0);
    }
}
