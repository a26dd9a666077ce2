//! Cohen's kappa for two raters and Fleiss' kappa for many.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{MetricsError, Result};

/// Cohen's kappa of two raters' labels on the same items (sklearn's `cohen_kappa_score`).
/// NaN when chance agreement is 1 (both raters always give one and the same label).
pub fn cohens_kappa<L: Ord + Clone>(a: &[L], b: &[L]) -> Result<f64> {
    let (m, _) = confusion(a, b)?;
    Ok(kappa_from(&m, |i, j| if i == j { 0.0 } else { 1.0 }))
}

/// Disagreement weights of weighted kappa, by distance between label positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KappaWeights {
    /// Weight proportional to the distance.
    Linear,
    /// Weight proportional to the squared distance.
    Quadratic,
}

/// Weighted Cohen's kappa for ordinal labels (sklearn's `weights="linear"|"quadratic"`:
/// distances are between positions in the sorted set of labels used).
pub fn weighted_kappa(a: &[i64], b: &[i64], weights: KappaWeights) -> Result<f64> {
    let (m, _) = confusion(a, b)?;
    Ok(kappa_from(&m, |i, j| {
        let d = (i as f64 - j as f64).abs();
        match weights {
            KappaWeights::Linear => d,
            KappaWeights::Quadratic => d * d,
        }
    }))
}

fn confusion<L: Ord + Clone>(a: &[L], b: &[L]) -> Result<(Vec<Vec<f64>>, Vec<L>)> {
    if a.len() != b.len() {
        return Err(MetricsError::invalid(format!(
            "kappa: {} vs {} labels",
            a.len(),
            b.len()
        )));
    }
    if a.is_empty() {
        return Err(MetricsError::invalid("kappa: no labels"));
    }
    let mut labels: BTreeMap<L, usize> = BTreeMap::new();
    for l in a.iter().chain(b) {
        labels.entry(l.clone()).or_insert(0);
    }
    for (i, v) in labels.values_mut().enumerate() {
        *v = i;
    }
    let k = labels.len();
    let mut m = vec![vec![0.0; k]; k];
    for (x, y) in a.iter().zip(b) {
        m[labels[x]][labels[y]] += 1.0;
    }
    Ok((m, labels.into_keys().collect()))
}

fn kappa_from(m: &[Vec<f64>], w: impl Fn(usize, usize) -> f64) -> f64 {
    let k = m.len();
    let n: f64 = m.iter().flatten().sum();
    let rows: Vec<f64> = m.iter().map(|r| r.iter().sum()).collect();
    let cols: Vec<f64> = (0..k).map(|j| m.iter().map(|r| r[j]).sum()).collect();
    let (mut obs, mut exp) = (0.0, 0.0);
    for i in 0..k {
        for j in 0..k {
            obs += w(i, j) * m[i][j];
            exp += w(i, j) * rows[i] * cols[j] / n;
        }
    }
    1.0 - obs / exp
}

/// Fleiss' kappa from a subjects x categories table of rating counts; every subject must have
/// the same number of ratings (statsmodels' `fleiss_kappa`).
pub fn fleiss_kappa(counts: &[Vec<usize>]) -> Result<f64> {
    let Some(first) = counts.first() else {
        return Err(MetricsError::invalid("fleiss kappa: no subjects"));
    };
    let k = first.len();
    let raters: usize = first.iter().sum();
    if raters < 2 {
        return Err(MetricsError::invalid(
            "fleiss kappa: need at least 2 ratings per subject",
        ));
    }
    for (i, row) in counts.iter().enumerate() {
        if row.len() != k || row.iter().sum::<usize>() != raters {
            return Err(MetricsError::invalid(format!(
                "fleiss kappa: subject {i} has a different number of categories or ratings"
            )));
        }
    }
    let n_sub = counts.len() as f64;
    let r = raters as f64;
    let total = n_sub * r;
    let p_cat: Vec<f64> = (0..k)
        .map(|j| counts.iter().map(|row| row[j] as f64).sum::<f64>() / total)
        .collect();
    let p_mean = counts
        .iter()
        .map(|row| (row.iter().map(|c| (c * c) as f64).sum::<f64>() - r) / (r * (r - 1.0)))
        .sum::<f64>()
        / n_sub;
    let p_exp: f64 = p_cat.iter().map(|p| p * p).sum();
    Ok((p_mean - p_exp) / (1.0 - p_exp))
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: [i64; 12] = [1, 2, 3, 1, 2, 3, 1, 2, 2, 3, 1, 1];
    const B: [i64; 12] = [1, 2, 3, 1, 3, 3, 2, 2, 2, 3, 1, 2];

    #[test]
    fn cohen_matches_sklearn() {
        // sklearn 1.9.1 cohen_kappa_score(A, B[, weights=...])
        assert!((cohens_kappa(&A, &B).unwrap() - 0.6288659793814433).abs() < 1e-12);
        assert!(
            (weighted_kappa(&A, &B, KappaWeights::Linear).unwrap() - 0.7142857142857143).abs()
                < 1e-12
        );
        assert!(
            (weighted_kappa(&A, &B, KappaWeights::Quadratic).unwrap() - 0.8043478260869565).abs()
                < 1e-12
        );
        let s: Vec<&str> = A
            .iter()
            .map(|x| ["", "lo", "mid", "hi"][*x as usize])
            .collect();
        let t: Vec<&str> = B
            .iter()
            .map(|x| ["", "lo", "mid", "hi"][*x as usize])
            .collect();
        assert!((cohens_kappa(&s, &t).unwrap() - 0.6288659793814433).abs() < 1e-12);
        assert_eq!(cohens_kappa(&A, &A).unwrap(), 1.0);
        assert!(cohens_kappa(&[1, 1], &[1, 1]).unwrap().is_nan());
        assert!(cohens_kappa(&A, &B[..3]).is_err());
    }

    #[test]
    fn fleiss_matches_textbook_example() {
        // Fleiss (1971) as in Wikipedia's worked example: kappa = 0.210 (statsmodels
        // 0.15.0 gives 0.20993070442195522).
        let t: Vec<Vec<usize>> = vec![
            vec![0, 0, 0, 0, 14],
            vec![0, 2, 6, 4, 2],
            vec![0, 0, 3, 5, 6],
            vec![0, 3, 9, 2, 0],
            vec![2, 2, 8, 1, 1],
            vec![7, 7, 0, 0, 0],
            vec![3, 2, 6, 3, 0],
            vec![2, 5, 3, 2, 2],
            vec![6, 5, 2, 1, 0],
            vec![0, 2, 2, 3, 7],
        ];
        assert!((fleiss_kappa(&t).unwrap() - 0.20993070442195522).abs() < 1e-12);
        assert!(fleiss_kappa(&[vec![1, 1], vec![2, 1]]).is_err());
    }
}
