//! A cluster bootstrap for any statistic, not only a mean: correlations, kappas, adjusted means
//! and residuals of the audit are computed on units that come in clusters (turns of one
//! dialogue, answers of one task, trials of one item), so their intervals must resample whole
//! clusters. The statistic sees the indices of the drawn units (with repeats) and may return
//! `None` for a degenerate resample (no variation, too few units); those resamples are left
//! out, and an interval needs at least half of the resamples to be defined. The draws are
//! mtr-metrics' one seeded cluster draw ([`ClusterDraws`]), as for every other interval.

use mtr_metrics::stats::ClusterDraws;

use crate::config::AuditSettings;
use crate::statistics::interval::Interval;

/// Settings of one bootstrap: resamples, confidence level, seed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Resampling {
    pub resamples: usize,
    pub level: f64,
    pub seed: u64,
}

/// Bootstrap settings of the audit.
pub(crate) fn bootstrap(s: &AuditSettings, salt: &str) -> Resampling {
    Resampling {
        resamples: s.resamples,
        level: s.confidence,
        seed: crate::seed::derive(s.seed, &["bootstrap", salt]),
    }
}

/// Percentile interval of `stat` over cluster-bootstrap resamples of `clusters` (one label per
/// unit). `None` with fewer than two clusters, or when too few resamples give a value.
pub(crate) fn cluster_interval<F>(clusters: &[&str], r: &Resampling, stat: F) -> Option<Interval>
where
    F: Fn(&[usize]) -> Option<f64>,
{
    cluster_intervals(clusters, r, 1, |idx| vec![stat(idx)])
        .pop()
        .flatten()
}

/// Like [`cluster_interval`] for `k` statistics computed together on the same resamples.
pub(crate) fn cluster_intervals<F>(
    clusters: &[&str],
    r: &Resampling,
    k_stats: usize,
    stat: F,
) -> Vec<Option<Interval>>
where
    F: Fn(&[usize]) -> Vec<Option<f64>>,
{
    let mut names: Vec<&str> = clusters.to_vec();
    names.sort_unstable();
    names.dedup();
    if names.len() < 2 || r.resamples < 2 || !(r.level > 0.0 && r.level < 1.0) {
        return vec![None; k_stats];
    }
    // members of each cluster, clusters in sorted-name order (independent of input order)
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); names.len()];
    for (i, c) in clusters.iter().enumerate() {
        if let Ok(k) = names.binary_search(c) {
            members[k].push(i);
        }
    }
    let k = names.len();
    let mut draws = ClusterDraws::new(k, crate::seed::derive(r.seed, &["cluster-bootstrap"]));
    let mut drawn = vec![0usize; k];
    let mut stats: Vec<Vec<f64>> = vec![Vec::with_capacity(r.resamples); k_stats];
    let mut idx = Vec::with_capacity(clusters.len());
    for _ in 0..r.resamples {
        draws.next_into(&mut drawn);
        idx.clear();
        for &c in &drawn {
            idx.extend_from_slice(&members[c]);
        }
        for (st, x) in stats.iter_mut().zip(stat(&idx)) {
            if let Some(x) = x.filter(|x| x.is_finite()) {
                st.push(x);
            }
        }
    }
    let alpha = 1.0 - r.level;
    stats
        .into_iter()
        .map(|mut st| {
            if st.len() * 2 < r.resamples {
                return None;
            }
            st.sort_by(f64::total_cmp);
            Some(Interval {
                lower: mtr_metrics::stats::percentile(&st, alpha / 2.0),
                upper: mtr_metrics::stats::percentile(&st, 1.0 - alpha / 2.0),
                level: r.level,
                resamples: st.len(),
                clusters: k,
            })
        })
        .collect()
}

/// Mean of the values at `idx`.
pub(crate) fn mean_at(values: &[f64], idx: &[usize]) -> Option<f64> {
    (!idx.is_empty()).then(|| idx.iter().map(|&i| values[i]).sum::<f64>() / idx.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clustered_units_widen_the_interval_and_results_are_seeded() {
        let r = Resampling {
            resamples: 500,
            level: 0.95,
            seed: 7,
        };
        // 10 clusters of 5 identical values: the interval is that of 10 values, not 50
        let values: Vec<f64> = (0..50).map(|i| f64::from((i / 5) as u8)).collect();
        let labels: Vec<String> = (0..50).map(|i| format!("c{}", i / 5)).collect();
        let clustered: Vec<&str> = labels.iter().map(String::as_str).collect();
        let single: Vec<String> = (0..50).map(|i| format!("u{i}")).collect();
        let single: Vec<&str> = single.iter().map(String::as_str).collect();
        let a = cluster_interval(&clustered, &r, |i| mean_at(&values, i)).unwrap();
        let b = cluster_interval(&single, &r, |i| mean_at(&values, i)).unwrap();
        assert!(a.upper - a.lower > 1.5 * (b.upper - b.lower), "{a:?} {b:?}");
        assert_eq!(a.clusters, 10);
        let again = cluster_interval(&clustered, &r, |i| mean_at(&values, i)).unwrap();
        assert_eq!(a, again);
        assert!(cluster_interval(&["x", "x"], &r, |i| mean_at(&values, i)).is_none());
    }
}
