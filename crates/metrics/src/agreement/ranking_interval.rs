//! Kendall's tau-b of two leaderboards with a bootstrap interval: how sure is it that a change
//! of labels (holes filled by judges, golds removed) keeps the systems' order? The systems are
//! scored per query under both labels; each resample draws the queries' clusters (a query its
//! own cluster resamples turns, a dialogue per cluster resamples dialogues) once for both
//! scorings, so the two leaderboards of a resample rest on the same queries, and tau-b of the
//! two resampled mean vectors is one replicate. The interval is the percentile interval of the
//! replicates around tau-b of the plain means ([`crate::stats::ClusterBootstrap`]).

use crate::stats::{ClusterBootstrap, ConfidenceInterval};

use super::ranking::tau_b;

/// Per-query values of every system under two labellings of the same queries.
#[derive(Debug, Clone, Copy)]
pub struct PairedScores<'a> {
    /// `first[s][q]`: system `s` on query `q` under the first labels (the reference).
    pub first: &'a [&'a [f64]],
    /// `second[s][q]`: the same under the second labels.
    pub second: &'a [&'a [f64]],
    /// `clusters[q]`: the cluster of query `q`, below the bootstrap's cluster count.
    pub clusters: &'a [usize],
}

/// Tau-b between the systems' means under the first and under the second labels, with the
/// bootstrap's percentile interval; `None` with fewer than two systems, no query, series of
/// unequal lengths, or a constant mean vector (tau-b undefined). Resamples in which tau-b is
/// undefined are left out of the interval.
pub fn tau_b_interval(p: &PairedScores<'_>, boot: &ClusterBootstrap) -> Option<ConfidenceInterval> {
    let n = p.clusters.len();
    let systems = p.first.len();
    if systems < 2 || p.second.len() != systems || n == 0 {
        return None;
    }
    if p.first.iter().chain(p.second).any(|s| s.len() != n) {
        return None;
    }
    let means = |series: &[&[f64]]| -> Vec<f64> {
        series
            .iter()
            .map(|s| s.iter().sum::<f64>() / n as f64)
            .collect()
    };
    let point = tau_b(&means(p.first), &means(p.second))?;
    let all: Vec<usize> = (0..n).collect();
    let a = boot.replicates(p.clusters, &all, p.first);
    let b = boot.replicates(p.clusters, &all, p.second);
    let reps = a.rows().into_iter().zip(b.rows()).filter_map(|(x, y)| {
        let (x, y) = (x.to_vec(), y.to_vec());
        if x.iter().chain(&y).all(|v| v.is_finite()) {
            tau_b(&x, &y)
        } else {
            None
        }
    });
    Some(boot.interval(point, reps))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn boot(n: usize) -> ClusterBootstrap {
        ClusterBootstrap::new(n, 500, 0.95, 7)
    }

    #[test]
    fn the_same_order_under_both_labels_is_tau_one_with_a_degenerate_interval() {
        let s1 = [0.9, 0.8, 0.7, 0.6];
        let s2 = [0.5, 0.4, 0.3, 0.2];
        let s3 = [0.1, 0.0, 0.05, 0.0];
        let sys: [&[f64]; 3] = [&s1, &s2, &s3];
        let clusters = [0, 1, 2, 3];
        let ci = tau_b_interval(
            &PairedScores {
                first: &sys,
                second: &sys,
                clusters: &clusters,
            },
            &boot(4),
        )
        .unwrap();
        assert_eq!((ci.estimate, ci.lower, ci.upper), (1.0, 1.0, 1.0));
        assert_eq!((ci.resamples, ci.seed, ci.level), (500, 7, 0.95));
    }

    #[test]
    fn a_swap_that_rests_on_one_query_gets_a_wide_interval() {
        // under the second labels, system b beats a on query 0 only, by enough to swap means
        let (a1, b1, c1) = ([0.6, 0.6, 0.6, 0.6], [0.5, 0.5, 0.5, 0.5], [0.0; 4]);
        let (a2, b2) = ([0.6, 0.6, 0.6, 0.6], [1.0, 0.5, 0.5, 0.5]);
        let first: [&[f64]; 3] = [&a1, &b1, &c1];
        let second: [&[f64]; 3] = [&a2, &b2, &c1];
        let clusters = [0, 1, 2, 3];
        let p = PairedScores {
            first: &first,
            second: &second,
            clusters: &clusters,
        };
        let ci = tau_b_interval(&p, &boot(4)).unwrap();
        assert!((ci.estimate - 1.0 / 3.0).abs() < 1e-12, "{ci:?}");
        // resamples without query 0 keep the order (tau 1): the interval reaches 1
        assert_eq!(ci.upper, 1.0);
        assert!(ci.lower <= 1.0 / 3.0, "{ci:?}");
        // the same seed, the same interval
        assert_eq!(tau_b_interval(&p, &boot(4)).unwrap(), ci);
    }

    #[test]
    fn undefined_cases_are_none() {
        let a = [0.1, 0.2];
        let one: [&[f64]; 1] = [&a];
        let c = [0, 1];
        let p = PairedScores {
            first: &one,
            second: &one,
            clusters: &c,
        };
        assert!(tau_b_interval(&p, &boot(2)).is_none(), "one system");
        let two: [&[f64]; 2] = [&a, &a];
        let p = PairedScores {
            first: &two,
            second: &two,
            clusters: &c,
        };
        assert!(tau_b_interval(&p, &boot(2)).is_none(), "constant means");
        let short = [0.3];
        let ragged: [&[f64]; 2] = [&a, &short];
        let p = PairedScores {
            first: &ragged,
            second: &ragged,
            clusters: &c,
        };
        assert!(tau_b_interval(&p, &boot(2)).is_none(), "unequal lengths");
    }
}
