//! Intervals over dialogues for the realism measures: a share or mean by the cluster
//! bootstrap of mtr-metrics ([`ClusterBootstrap`]), and a quantile (median, quartiles) by
//! the same seeded draws of whole dialogues ([`ClusterDraws`]), recomputing the quantile of
//! the drawn dialogues' values. Turns of one dialogue share a topic and a writer, so
//! resampling turns would understate the uncertainty.

use mtr_metrics::stats::{
    BootstrapOptions, ClusterBootstrap, ClusterDraws, ConfidenceInterval, percentile,
};

/// The bootstrap's settings for every realism interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IntervalOptions {
    /// Bootstrap resamples (default 1000).
    pub resamples: usize,
    /// Confidence level (default 0.95).
    pub level: f64,
    /// The draws' seed (default 42).
    pub seed: u64,
}

impl Default for IntervalOptions {
    fn default() -> Self {
        Self {
            resamples: 1000,
            level: 0.95,
            seed: 42,
        }
    }
}

impl IntervalOptions {
    fn bootstrap(&self) -> BootstrapOptions {
        BootstrapOptions {
            resamples: self.resamples,
            level: self.level,
            seed: self.seed,
        }
    }
}

/// Values grouped by dialogue: `values[i]` belongs to dialogue `clusters[i]` (`0..n`).
#[derive(Debug, Clone, Default)]
pub struct Clustered {
    /// The dialogue of each value.
    pub clusters: Vec<usize>,
    /// The values.
    pub values: Vec<f64>,
    /// The number of dialogues (one more than the largest in `clusters`).
    pub n_clusters: usize,
}

impl Clustered {
    /// Adds `value` for dialogue `cluster`.
    pub fn push(&mut self, cluster: usize, value: f64) {
        self.clusters.push(cluster);
        self.values.push(value);
        self.n_clusters = self.n_clusters.max(cluster + 1);
    }

    /// How many values it holds.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether it holds no value.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The mean with its interval over dialogues; undefined (NaN) with no value.
    pub fn mean(&self, opts: &IntervalOptions) -> ConfidenceInterval {
        let b = ClusterBootstrap::new(self.n_clusters, opts.resamples, opts.level, opts.seed);
        b.estimate(&self.clusters, None, &[&self.values])
            .pop()
            .unwrap_or_else(|| ConfidenceInterval::undefined(&opts.bootstrap()))
    }

    /// The `p`-quantiles (type 7) with their intervals over dialogues, all from the same
    /// resamples; undefined with no value.
    pub(crate) fn quantiles(&self, ps: &[f64], opts: &IntervalOptions) -> Vec<ConfidenceInterval> {
        let b = opts.bootstrap();
        if self.is_empty() {
            return vec![ConfidenceInterval::undefined(&b); ps.len()];
        }
        let mut by_cluster: Vec<Vec<f64>> = vec![Vec::new(); self.n_clusters];
        for (&c, &v) in self.clusters.iter().zip(&self.values) {
            by_cluster[c].push(v);
        }
        let mut all = self.values.clone();
        all.sort_unstable_by(f64::total_cmp);
        let mut replicates: Vec<Vec<f64>> = vec![Vec::with_capacity(opts.resamples); ps.len()];
        let mut draws = ClusterDraws::new(self.n_clusters, opts.seed);
        let mut draw = vec![0usize; self.n_clusters];
        let mut pooled = Vec::with_capacity(self.values.len() * 2);
        for _ in 0..opts.resamples {
            draws.next_into(&mut draw);
            pooled.clear();
            for &c in &draw {
                pooled.extend_from_slice(&by_cluster[c]);
            }
            if pooled.is_empty() {
                continue;
            }
            pooled.sort_unstable_by(f64::total_cmp);
            for (r, &p) in replicates.iter_mut().zip(ps) {
                r.push(percentile(&pooled, p));
            }
        }
        ps.iter()
            .zip(replicates)
            .map(|(&p, r)| ConfidenceInterval::percentile(percentile(&all, p), r, &b))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_hold_their_estimate_and_repeat_with_the_seed() {
        let mut c = Clustered::default();
        for d in 0..20 {
            for t in 0..5 {
                c.push(d, (d % 7 + t) as f64);
            }
        }
        let opts = IntervalOptions::default();
        let q = c.quantiles(&[0.25, 0.5, 0.75], &opts);
        for ci in &q {
            assert!(ci.lower <= ci.estimate && ci.estimate <= ci.upper, "{ci:?}");
        }
        assert_eq!(q, c.quantiles(&[0.25, 0.5, 0.75], &opts));
        let m = c.mean(&opts);
        assert!(m.lower <= m.estimate && m.estimate <= m.upper);
        assert!(Clustered::default().mean(&opts).estimate.is_nan());
        assert!(
            Clustered::default().quantiles(&[0.5], &opts)[0]
                .estimate
                .is_nan()
        );
    }
}
