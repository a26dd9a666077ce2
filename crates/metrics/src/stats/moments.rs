//! The mean and standard deviation of a sample, and the checks of the values the moment-based
//! statistics take (some, all finite, paired samples of one length).

use std::borrow::Borrow;

use crate::error::{MetricsError, Result};

/// The arithmetic mean of the values, summed in their order; `None` when there is none (a
/// caller that means 0 or NaN for "no value" says so with `unwrap_or`). Takes a slice, a
/// `Vec`'s reference or any iterator of `f64` or `&f64`.
pub fn mean<I>(xs: I) -> Option<f64>
where
    I: IntoIterator,
    I::Item: Borrow<f64>,
{
    let mut n = 0usize;
    let sum: f64 = xs
        .into_iter()
        .map(|x| {
            n += 1;
            *x.borrow()
        })
        .sum();
    (n > 0).then(|| sum / n as f64)
}

/// Sample standard deviation (n - 1 denominator); NaN with fewer than two values.
pub(crate) fn std_dev(xs: &[f64]) -> f64 {
    let m = mean(xs).unwrap_or(f64::NAN);
    let ss: f64 = xs.iter().map(|x| (x - m) * (x - m)).sum();
    (ss / (xs.len() as f64 - 1.0)).sqrt()
}

pub(crate) fn check_nonempty(xs: &[f64], what: &str) -> Result<()> {
    if xs.is_empty() {
        return Err(MetricsError::invalid(format!("{what}: no values")));
    }
    if xs.iter().any(|x| !x.is_finite()) {
        return Err(MetricsError::invalid(format!(
            "{what}: values must be finite"
        )));
    }
    Ok(())
}

pub(crate) fn check_paired(a: &[f64], b: &[f64], what: &str) -> Result<Vec<f64>> {
    if a.len() != b.len() {
        return Err(MetricsError::invalid(format!(
            "{what}: paired samples differ in length ({} vs {})",
            a.len(),
            b.len()
        )));
    }
    check_nonempty(a, what)?;
    check_nonempty(b, what)?;
    Ok(a.iter().zip(b).map(|(x, y)| x - y).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_of_nothing_is_none_and_of_values_their_average() {
        assert_eq!(mean(&[] as &[f64]), None);
        assert_eq!(mean(std::iter::empty::<f64>()), None);
        let values = vec![1.0, 2.0, 4.5];
        assert_eq!(mean(&values), Some(2.5));
        assert_eq!(mean([0.5, 1.5].iter()), Some(1.0));
        assert_eq!(mean(vec![3.0]), Some(3.0));
        assert!(std_dev(&[1.0]).is_nan());
    }
}
