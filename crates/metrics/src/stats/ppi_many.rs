//! Prediction-powered inference for a mean with several predictions per item at once (one per
//! judge), each a control variate with its own weight:
//!
//! ```text
//! theta = mean_n(Y) + sum_k lambda_k * (mean_N(f_k) - mean_n(f_k))
//! ```
//!
//! Why: [`super::ppi_mean`] takes one prediction, in an audit the ensemble's. One informative
//! judge beside two that give every item the same grade makes an ensemble whose "rated below 3"
//! never fires, and PPI then gains nothing from the informative judge, which agrees with the
//! reviewers. Here every judge's own score enters, and the weights are tuned (the clustered
//! variance of [`super::ppi_mean`], minimised over the vector `lambda` by least squares), so the
//! informative judge gets the weight and the constant ones none.
//!
//! Unbiased whatever the weights, since each correction has expectation 0 when the labelled
//! items are a random draw; tuning the weights on the same labels costs degrees of freedom,
//! one per predictor used, which the variance and the Student's t quantile account for
//! (`(G_l - 1) / (G_l - 1 - K)` and `G_l - 1 - K` degrees of freedom, `G_l` the labelled
//! clusters, `K` the predictors used). Which predictors are used is decided without the labels:
//! those with no spread, or whose correction terms repeat earlier ones (collinear), are left
//! out, in the order given, and at most `G_l - 1 - MIN_DEGREES` are used, so a review of few
//! dialogues falls back to fewer predictors (none: the labels' own mean).

use super::interval::ConfidenceInterval;
use super::mean;
pub use super::ppi::MIN_DEGREES;
use super::ppi::{cluster_interval, small_sample};
use crate::error::{MetricsError, Result};

/// One item: its cluster, one prediction per predictor (the same number on every item), and
/// its label if it was labelled.
#[derive(Debug, Clone, PartialEq)]
pub struct PpiManyItem {
    /// Any id; items with the same id are one cluster.
    pub cluster: usize,
    /// One prediction per predictor.
    pub predictions: Vec<f64>,
    /// The label, if the item was labelled.
    pub label: Option<f64>,
}

/// The prediction-powered and the labels-only estimate of one mean.
#[derive(Debug, Clone, PartialEq)]
pub struct PpiManyEstimate {
    /// Prediction-powered, with the tuned weights.
    pub ppi: ConfidenceInterval,
    /// Labels only (the classical mean of the labelled items).
    pub labels_only: ConfidenceInterval,
    /// Each predictor's weight (0 for one left out).
    pub lambdas: Vec<f64>,
    /// Predictors used.
    pub used: usize,
    /// Labelled items.
    pub labelled: usize,
    /// All items.
    pub items: usize,
    /// Clusters among all items.
    pub clusters: usize,
    /// Clusters among the labelled items.
    pub labelled_clusters: usize,
}

/// Per-cluster sums of the influence terms: `b` of the labels, `e[k]` of predictor k's
/// correction (`a - d` of the module doc of [`super::ppi_mean`]), which clusters hold a label,
/// the labels' mean and each predictor's `mean_N(f) - mean_n(f)`.
struct Terms {
    b: Vec<f64>,
    e: Vec<Vec<f64>>,
    has_label: Vec<bool>,
    mean_y: f64,
    shift: Vec<f64>,
}

fn terms(items: &[PpiManyItem], k: usize) -> Terms {
    let mut ids: Vec<usize> = items.iter().map(|i| i.cluster).collect();
    ids.sort_unstable();
    ids.dedup();
    let big_n = items.len() as f64;
    let labelled: Vec<&PpiManyItem> = items.iter().filter(|i| i.label.is_some()).collect();
    let n = labelled.len() as f64;
    let mean_y = mean(labelled.iter().filter_map(|i| i.label)).unwrap_or(f64::NAN);
    let col_mean = |xs: &[&PpiManyItem], j: usize| {
        mean(xs.iter().map(|i| i.predictions[j])).unwrap_or(f64::NAN)
    };
    let all: Vec<&PpiManyItem> = items.iter().collect();
    let mean_all: Vec<f64> = (0..k).map(|j| col_mean(&all, j)).collect();
    let mean_lab: Vec<f64> = (0..k).map(|j| col_mean(&labelled, j)).collect();
    let g = ids.len();
    let mut b = vec![0.0; g];
    let mut e = vec![vec![0.0; g]; k];
    let mut has_label = vec![false; g];
    for it in items {
        let Ok(c) = ids.binary_search(&it.cluster) else {
            continue;
        };
        for j in 0..k {
            e[j][c] += (it.predictions[j] - mean_all[j]) / big_n;
        }
        if let Some(y) = it.label {
            b[c] += (y - mean_y) / n;
            has_label[c] = true;
            for j in 0..k {
                e[j][c] -= (it.predictions[j] - mean_lab[j]) / n;
            }
        }
    }
    let shift: Vec<f64> = mean_all.iter().zip(&mean_lab).map(|(a, l)| a - l).collect();
    Terms {
        b,
        e,
        has_label,
        mean_y,
        shift,
    }
}

fn dot(x: &[f64], y: &[f64]) -> f64 {
    x.iter().zip(y).map(|(a, b)| a * b).sum()
}

/// The predictors to use, in order: each with spread in its correction terms that the ones
/// before it do not explain (Gram-Schmidt), at most `max`.
fn usable(e: &[Vec<f64>], max: usize) -> Vec<usize> {
    let mut basis: Vec<Vec<f64>> = Vec::new();
    let mut chosen = Vec::new();
    for (j, col) in e.iter().enumerate() {
        if chosen.len() >= max {
            break;
        }
        let norm = dot(col, col);
        let mut r = col.clone();
        for q in &basis {
            let c = dot(&r, q);
            for (x, y) in r.iter_mut().zip(q) {
                *x -= c * y;
            }
        }
        let left = dot(&r, &r);
        if norm > 0.0 && left > 1e-9 * norm && left > 0.0 {
            let s = left.sqrt();
            basis.push(r.iter().map(|x| x / s).collect());
            chosen.push(j);
        }
    }
    chosen
}

/// Solves `m x = r` (a small symmetric positive definite system) by Gaussian elimination with
/// partial pivoting.
fn solve(mut m: Vec<Vec<f64>>, mut r: Vec<f64>) -> Vec<f64> {
    let k = r.len();
    for col in 0..k {
        let pivot = (col..k)
            .max_by(|&a, &b| m[a][col].abs().total_cmp(&m[b][col].abs()))
            .unwrap_or(col);
        m.swap(col, pivot);
        r.swap(col, pivot);
        let p = m[col][col];
        if p == 0.0 {
            continue;
        }
        for row in col + 1..k {
            let (top, bottom) = m.split_at_mut(row);
            let f = bottom[0][col] / p;
            for (x, y) in bottom[0][col..].iter_mut().zip(&top[col][col..]) {
                *x -= f * y;
            }
            r[row] -= f * r[col];
        }
    }
    let mut x = vec![0.0; k];
    for row in (0..k).rev() {
        let s: f64 = (row + 1..k).map(|c| m[row][c] * x[c]).sum();
        x[row] = if m[row][row] == 0.0 {
            0.0
        } else {
            (r[row] - s) / m[row][row]
        };
    }
    x
}

/// The prediction-powered estimate of the mean label with one weight per predictor, and the
/// labels-only estimate, with `level` intervals clustered by [`PpiManyItem::cluster`]. Needs
/// at least two labelled items in two clusters, the same number of predictions on every item,
/// and finite values.
pub fn ppi_mean_many(items: &[PpiManyItem], level: f64) -> Result<PpiManyEstimate> {
    if !(level > 0.0 && level < 1.0) {
        return Err(MetricsError::invalid("confidence level must be in (0, 1)"));
    }
    let k = items.first().map_or(0, |i| i.predictions.len());
    if items.iter().any(|i| {
        i.predictions.len() != k
            || i.predictions.iter().any(|f| !f.is_finite())
            || i.label.is_some_and(|y| !y.is_finite())
    }) {
        return Err(MetricsError::invalid(
            "ppi: every item needs the same number of finite predictions, and a finite label",
        ));
    }
    let labelled = items.iter().filter(|i| i.label.is_some()).count();
    if labelled < 2 {
        return Err(MetricsError::invalid(
            "ppi: needs at least two labelled items",
        ));
    }
    let Terms {
        b,
        e,
        has_label,
        mean_y,
        shift,
    } = terms(items, k);
    let g = b.len();
    let g_lab = has_label.iter().filter(|l| **l).count();
    if g_lab < 2 {
        return Err(MetricsError::invalid(
            "ppi: the labelled items must come from at least two clusters",
        ));
    }
    let chosen = usable(&e, g_lab.saturating_sub(1 + MIN_DEGREES));
    let m: Vec<Vec<f64>> = chosen
        .iter()
        .map(|&i| chosen.iter().map(|&j| dot(&e[i], &e[j])).collect())
        .collect();
    let r: Vec<f64> = chosen.iter().map(|&i| -dot(&e[i], &b)).collect();
    let weights = solve(m, r);
    let mut lambdas = vec![0.0; k];
    for (&j, w) in chosen.iter().zip(&weights) {
        lambdas[j] = *w;
    }
    let psi2: f64 = (0..g)
        .map(|c| {
            let x: f64 = b[c] + (0..k).map(|j| lambdas[j] * e[j][c]).sum::<f64>();
            x * x
        })
        .sum();
    let used = chosen.len();
    let dof = (g_lab - 1) as f64 / (g_lab - 1 - used) as f64;
    let var_ppi = small_sample(g) * dof * psi2;
    let var_labels = small_sample(g_lab) * b.iter().map(|x| x * x).sum::<f64>();
    let theta = mean_y + dot(&lambdas, &shift);
    Ok(PpiManyEstimate {
        ppi: cluster_interval(theta, var_ppi, level, g_lab - used),
        labels_only: cluster_interval(mean_y, var_labels, level, g_lab),
        lambdas,
        used,
        labelled,
        items: items.len(),
        clusters: g,
        labelled_clusters: g_lab,
    })
}

#[cfg(test)]
mod tests;
