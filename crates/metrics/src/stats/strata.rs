//! Per-stratum summaries (by turn depth, question type, topic switch, any tag), with the
//! warning that a stratum under 30 queries is too small to read much into.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::bootstrap::{bootstrap_ci, cluster_bootstrap_ci};
use super::interval::{BootstrapOptions, ConfidenceInterval};
use super::mean;
use crate::error::{MetricsError, Result};

/// Strata with fewer queries than this are flagged `small`.
pub const SMALL_STRATUM: usize = 30;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stratum {
    pub name: String,
    pub n: usize,
    pub mean: f64,
    pub ci: Option<ConfidenceInterval>,
    /// Fewer than [`SMALL_STRATUM`] queries: report, but do not draw conclusions.
    pub small: bool,
}

/// Groups `values` by `labels` (strata in label byte order) and summarises each group; with
/// `ci`, adds a bootstrap CI (over `clusters` when given, e.g. dialogue ids, else over queries).
pub fn stratify<L: AsRef<str>, C: AsRef<str>>(
    values: &[f64],
    labels: &[L],
    clusters: Option<&[C]>,
    ci: Option<&BootstrapOptions>,
) -> Result<Vec<Stratum>> {
    if values.len() != labels.len() || clusters.is_some_and(|c| c.len() != values.len()) {
        return Err(MetricsError::invalid(
            "stratify: values, labels and clusters differ in length",
        ));
    }
    let mut groups: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, l) in labels.iter().enumerate() {
        groups.entry(l.as_ref()).or_default().push(i);
    }
    let mut out = Vec::with_capacity(groups.len());
    for (name, idx) in groups {
        let vals: Vec<f64> = idx.iter().map(|i| values[*i]).collect();
        let ci = match (ci, clusters) {
            (None, _) => None,
            (Some(o), Some(c)) => {
                let cl: Vec<&str> = idx.iter().map(|i| c[*i].as_ref()).collect();
                Some(cluster_bootstrap_ci(&vals, &cl, o)?)
            }
            (Some(o), None) => Some(bootstrap_ci(&vals, o)?),
        };
        let small = vals.len() < SMALL_STRATUM;
        if small {
            tracing::warn!(
                stratum = name,
                n = vals.len(),
                "stratum has fewer than {SMALL_STRATUM} queries"
            );
        }
        out.push(Stratum {
            name: name.to_string(),
            n: vals.len(),
            mean: mean(&vals),
            ci,
            small,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_sorted_with_small_flag() {
        let values: Vec<f64> = (0..70).map(|i| (i % 2) as f64).collect();
        let labels: Vec<&str> = (0..70)
            .map(|i| if i < 40 { "turn 2" } else { "turn 1" })
            .collect();
        let s = stratify::<_, &str>(
            &values,
            &labels,
            None,
            Some(&BootstrapOptions {
                resamples: 200,
                ..Default::default()
            }),
        )
        .unwrap();
        assert_eq!(
            s.iter().map(|x| x.name.as_str()).collect::<Vec<_>>(),
            ["turn 1", "turn 2"]
        );
        assert_eq!((s[0].n, s[0].small), (30, false));
        assert_eq!((s[1].n, s[1].small), (40, false));
        assert_eq!(s[0].mean, 0.5);
        assert!(s[0].ci.unwrap().lower < 0.5);
        let s = stratify::<_, &str>(&values[..10], &labels[..10], None, None).unwrap();
        assert!(s[0].small && s[0].ci.is_none());
        assert!(stratify::<_, &str>(&values, &labels[..3], None, None).is_err());
    }
}
