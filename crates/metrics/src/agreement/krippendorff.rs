//! Krippendorff's alpha for any number of coders, with missing ratings, at the nominal,
//! ordinal or interval level (Krippendorff 2011, "Computing Krippendorff's Alpha-Reliability":
//! coincidence matrix, alpha = 1 - (n - 1) * sum(o_ck d_ck) / sum(n_c n_k d_ck)).

use serde::{Deserialize, Serialize};

use crate::error::{MetricsError, Result};

/// The measurement level of Krippendorff's alpha's distance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// Categories without order.
    Nominal,
    /// Ordered categories (rank distances).
    Ordinal,
    /// Numbers (squared differences).
    Interval,
}

/// `data[coder][unit]`, `None` = no rating. Units with fewer than two ratings are not pairable
/// and are dropped. NaN when there is no disagreement to expect (a single value overall).
pub fn krippendorff_alpha(data: &[Vec<Option<f64>>], level: Level) -> Result<f64> {
    let units = data.first().map_or(0, Vec::len);
    if data.iter().any(|c| c.len() != units) {
        return Err(MetricsError::invalid(
            "krippendorff alpha: coders rated different numbers of units",
        ));
    }
    if data.iter().flatten().flatten().any(|v| !v.is_finite()) {
        return Err(MetricsError::invalid(
            "krippendorff alpha: ratings must be finite",
        ));
    }
    let mut values: Vec<f64> = data.iter().flatten().flatten().copied().collect();
    values.sort_by(f64::total_cmp);
    values.dedup();
    let k = values.len();
    if k == 0 {
        return Err(MetricsError::invalid("krippendorff alpha: no ratings"));
    }
    let index = |v: f64| values.partition_point(|x| *x < v);
    let mut o = vec![vec![0.0f64; k]; k];
    for u in 0..units {
        let ratings: Vec<usize> = data.iter().filter_map(|c| c[u]).map(index).collect();
        let m = ratings.len();
        if m < 2 {
            continue;
        }
        for (i, a) in ratings.iter().enumerate() {
            for (j, b) in ratings.iter().enumerate() {
                if i != j {
                    o[*a][*b] += 1.0 / (m as f64 - 1.0);
                }
            }
        }
    }
    let nc: Vec<f64> = o.iter().map(|r| r.iter().sum()).collect();
    let n: f64 = nc.iter().sum();
    if n == 0.0 {
        return Err(MetricsError::invalid(
            "krippendorff alpha: no unit has two ratings",
        ));
    }
    let delta = |c: usize, k2: usize| -> f64 {
        match level {
            Level::Nominal => {
                if c == k2 {
                    0.0
                } else {
                    1.0
                }
            }
            Level::Interval => (values[c] - values[k2]).powi(2),
            Level::Ordinal => {
                let (lo, hi) = if c <= k2 { (c, k2) } else { (k2, c) };
                let s: f64 = nc[lo..=hi].iter().sum::<f64>() - (nc[c] + nc[k2]) / 2.0;
                s * s
            }
        }
    };
    let (mut num, mut den) = (0.0, 0.0);
    for c in 0..k {
        for k2 in 0..k {
            let d = delta(c, k2);
            num += o[c][k2] * d;
            den += nc[c] * nc[k2] * d;
        }
    }
    Ok(1.0 - (n - 1.0) * num / den)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example() -> Vec<Vec<Option<f64>>> {
        // Krippendorff (2011), section C: 4 coders, 12 units, missing data.
        let raw: [[f64; 12]; 4] = [
            [
                1.,
                2.,
                3.,
                3.,
                2.,
                1.,
                4.,
                1.,
                2.,
                f64::NAN,
                f64::NAN,
                f64::NAN,
            ],
            [1., 2., 3., 3., 2., 2., 4., 1., 2., 5., f64::NAN, 3.],
            [f64::NAN, 3., 3., 3., 2., 3., 4., 2., 2., 5., 1., f64::NAN],
            [1., 2., 3., 3., 2., 4., 4., 1., 2., 5., 1., f64::NAN],
        ];
        raw.iter()
            .map(|r| {
                r.iter()
                    .map(|v| if v.is_nan() { None } else { Some(*v) })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn textbook_example_all_levels() {
        // Krippendorff's published values 0.743 / 0.815 / 0.849; the `krippendorff` 0.9.0
        // package gives these digits.
        let d = example();
        assert!(
            (krippendorff_alpha(&d, Level::Nominal).unwrap() - 0.743421052631579).abs() < 1e-12
        );
        assert!(
            (krippendorff_alpha(&d, Level::Ordinal).unwrap() - 0.8153875037548814).abs() < 1e-12
        );
        assert!(
            (krippendorff_alpha(&d, Level::Interval).unwrap() - 0.8491071428571428).abs() < 1e-12
        );
    }

    #[test]
    fn perfect_agreement_and_errors() {
        let d = vec![vec![Some(1.0), Some(2.0)], vec![Some(1.0), Some(2.0)]];
        assert_eq!(krippendorff_alpha(&d, Level::Nominal).unwrap(), 1.0);
        assert!(krippendorff_alpha(&[vec![Some(1.0)], vec![None]], Level::Nominal).is_err());
        assert!(krippendorff_alpha(&[vec![Some(1.0)], vec![]], Level::Nominal).is_err());
    }
}
