//! Prediction-powered inference for a mean (Angelopoulos et al., Science 2023; PPI++ with power
//! tuning, Angelopoulos, Duchi and Zrnic 2024): a prediction `f` (an LLM judge's verdict) on
//! every one of N items, a label `Y` (a person's) on a random n of them, and an estimate of the
//! mean of `Y` that is unbiased whatever the predictions are worth:
//!
//! ```text
//! theta = mean_n(Y) + lambda * (mean_N(f) - mean_n(f))
//! ```
//!
//! With `lambda = 0` it is the classical mean of the labels; with `lambda = 1` the original PPI.
//! Power tuning picks the `lambda` that minimises the estimate's variance (clipped to `[0, 1]`),
//! so predictions that carry signal narrow the interval, and predictions that carry none
//! (a constant judge) leave it as wide as the labels' own.
//!
//! Items come in clusters (turns of one dialogue), so the variance is a cluster-robust
//! sandwich over clusters covering both terms at once. The estimate is a sum of per-item
//! influence terms; summed per cluster `c`:
//!
//! ```text
//! a_c = sum_{i in c} (f_i - mean_N(f)) / N              (every item)
//! b_c = sum_{j in c, labelled} (Y_j - mean_n(Y)) / n
//! d_c = sum_{j in c, labelled} (f_j - mean_n(f)) / n
//! psi_c(lambda) = b_c + lambda * (a_c - d_c)
//! Var(theta) = G / (G - 1) * sum_c psi_c^2               (G clusters)
//! ```
//!
//! The labelled items are among the N, so a cluster's labelled and unlabelled items (and an
//! item's label and its own prediction) stay together in one `psi_c`. The variance is a
//! quadratic in `lambda`, minimised at `lambda = -sum b e / sum e^2` with `e = a - d` (the
//! clustered form of PPI++'s `Cov(Y, f) / ((1 + n/N) Var(f))`). The interval is
//! `theta +- q * sqrt(Var)` with `q` Student's t quantile on `G_l - 1` degrees of freedom
//! (`G_l` the clusters with a label; the predictions-only interval: `G - 1`), as for any
//! cluster-robust variance: a review of a few dialogues has few clusters, where the normal
//! quantile undercovers badly. The classical (labels only) and the predictions-only estimates
//! come with the same clustered variance, for comparison.
//!
//! These intervals are analytic: their [`ConfidenceInterval::resamples`] and `seed` are 0.

use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

use super::interval::ConfidenceInterval;
use super::mean;
use crate::error::{MetricsError, Result};

/// One item: its cluster, the prediction on it, and its label if it was labelled.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PpiItem {
    /// Any id; items with the same id are one cluster (e.g. a dialogue's index).
    pub cluster: usize,
    /// The prediction on the item.
    pub prediction: f64,
    /// The label, if the item was labelled.
    pub label: Option<f64>,
}

/// The three estimates of one mean, with what they rest on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PpiEstimate {
    /// Prediction-powered (PPI++, power-tuned).
    pub ppi: ConfidenceInterval,
    /// Labels only (the classical mean of the labelled items).
    pub labels_only: ConfidenceInterval,
    /// Predictions only (the mean prediction over all items; biased by the predictor).
    pub predictions_only: ConfidenceInterval,
    /// The tuned weight of the predictions, in `[0, 1]`.
    pub lambda: f64,
    /// Labelled items.
    pub labelled: usize,
    /// All items (labelled ones included).
    pub items: usize,
    /// Clusters among all items.
    pub clusters: usize,
    /// Clusters among the labelled items.
    pub labelled_clusters: usize,
}

/// Sums per cluster of the influence terms (see the module doc).
struct ClusterTerms {
    a: Vec<f64>,
    b: Vec<f64>,
    d: Vec<f64>,
    /// Clusters with at least one labelled item.
    labelled: Vec<bool>,
}

fn cluster_terms(items: &[PpiItem], mean_f_all: f64, mean_y: f64, mean_f_lab: f64) -> ClusterTerms {
    let mut ids: Vec<usize> = items.iter().map(|i| i.cluster).collect();
    ids.sort_unstable();
    ids.dedup();
    let big_n = items.len() as f64;
    let n = items.iter().filter(|i| i.label.is_some()).count() as f64;
    let g = ids.len();
    let mut t = ClusterTerms {
        a: vec![0.0; g],
        b: vec![0.0; g],
        d: vec![0.0; g],
        labelled: vec![false; g],
    };
    for it in items {
        let Ok(c) = ids.binary_search(&it.cluster) else {
            continue;
        };
        t.a[c] += (it.prediction - mean_f_all) / big_n;
        if let Some(y) = it.label {
            t.b[c] += (y - mean_y) / n;
            t.d[c] += (it.prediction - mean_f_lab) / n;
            t.labelled[c] = true;
        }
    }
    t
}

/// `G / (G - 1)`: the small-sample factor of the cluster-robust variance.
pub(super) fn small_sample(g: usize) -> f64 {
    if g > 1 {
        g as f64 / (g as f64 - 1.0)
    } else {
        f64::NAN
    }
}

/// `estimate +- q * sqrt(variance)` with `q` the `level` quantile of Student's t with
/// `clusters - 1` degrees of freedom: a cluster-robust variance from G clusters has about
/// G - 1 of them, and with a handful of dialogues the normal quantile undercovers badly
/// (3 dialogues: 72% for a nominal 95%). Large G gives the normal interval.
pub(super) fn cluster_interval(
    estimate: f64,
    variance: f64,
    level: f64,
    clusters: usize,
) -> ConfidenceInterval {
    let p = 1.0 - (1.0 - level) / 2.0;
    let df = clusters.saturating_sub(1).max(1) as f64;
    let q = StudentsT::new(0.0, 1.0, df)
        .map_or_else(|_| Normal::standard().inverse_cdf(p), |t| t.inverse_cdf(p));
    let half = q * variance.max(0.0).sqrt();
    ConfidenceInterval {
        estimate,
        lower: estimate - half,
        upper: estimate + half,
        level,
        resamples: 0,
        seed: 0,
    }
}

/// Degrees of freedom the variance keeps after the predictions' weights are tuned (here and
/// in `ppi_many`, whose weights are one per predictor).
pub const MIN_DEGREES: usize = 4;

/// Labelled clusters needed before the predictions' weight is tuned: the tuned weight takes a
/// degree of freedom, and the variance keeps [`MIN_DEGREES`] more.
pub(super) const MIN_TUNING_CLUSTERS: usize = 2 + MIN_DEGREES;

/// The PPI++ estimate of the mean label, with the labels-only and predictions-only estimates,
/// each with its `level` interval clustered by [`PpiItem::cluster`]. Needs at least two
/// labelled items in two clusters; every value must be finite.
pub fn ppi_mean(items: &[PpiItem], level: f64) -> Result<PpiEstimate> {
    if !(level > 0.0 && level < 1.0) {
        return Err(MetricsError::invalid("confidence level must be in (0, 1)"));
    }
    if items
        .iter()
        .any(|i| !i.prediction.is_finite() || i.label.is_some_and(|y| !y.is_finite()))
    {
        return Err(MetricsError::invalid("ppi: values must be finite"));
    }
    let labelled: Vec<&PpiItem> = items.iter().filter(|i| i.label.is_some()).collect();
    if labelled.len() < 2 {
        return Err(MetricsError::invalid(
            "ppi: needs at least two labelled items",
        ));
    }
    let mean_f_all = mean(items.iter().map(|i| i.prediction)).unwrap_or(f64::NAN);
    let mean_y = mean(labelled.iter().filter_map(|i| i.label)).unwrap_or(f64::NAN);
    let mean_f_lab = mean(labelled.iter().map(|i| i.prediction)).unwrap_or(f64::NAN);
    let t = cluster_terms(items, mean_f_all, mean_y, mean_f_lab);
    let g = t.a.len();
    let g_lab = t.labelled.iter().filter(|l| **l).count();
    if g_lab < 2 {
        return Err(MetricsError::invalid(
            "ppi: the labelled items must come from at least two clusters",
        ));
    }
    let e: Vec<f64> = t.a.iter().zip(&t.d).map(|(a, d)| a - d).collect();
    let see: f64 = e.iter().map(|x| x * x).sum();
    let sbe: f64 = t.b.iter().zip(&e).map(|(b, e)| b * e).sum();
    let var_labels = small_sample(g_lab) * t.b.iter().map(|b| b * b).sum::<f64>();
    let var_predictions = small_sample(g) * t.a.iter().map(|a| a * a).sum::<f64>();
    let labels_only = cluster_interval(mean_y, var_labels, level, g_lab);
    // With no spread in the predictions, any lambda gives the same variance; with too few
    // labelled clusters, a lambda tuned on them makes the variance look smaller than it is
    // (3 dialogues: an interval 84% narrower than the labels' from a judge that agreed with
    // nobody). Either way: lambda 0, the labels' own estimate.
    let tune = see > 0.0 && g_lab >= MIN_TUNING_CLUSTERS;
    let lambda = if tune {
        (-sbe / see).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let ppi = if tune {
        // one degree of freedom goes to the tuned lambda
        let dof = (g_lab - 1) as f64 / (g_lab - 2) as f64;
        let var_ppi: f64 = small_sample(g)
            * dof
            * t.b
                .iter()
                .zip(&e)
                .map(|(b, e)| (b + lambda * e).powi(2))
                .sum::<f64>();
        let theta = mean_y + lambda * (mean_f_all - mean_f_lab);
        cluster_interval(theta, var_ppi, level, g_lab - 1)
    } else {
        labels_only
    };
    Ok(PpiEstimate {
        ppi,
        labels_only,
        predictions_only: cluster_interval(mean_f_all, var_predictions, level, g),
        lambda,
        labelled: labelled.len(),
        items: items.len(),
        clusters: g,
        labelled_clusters: g_lab,
    })
}

/// What the simulated audits of this module's and [`super::ppi_many`]'s tests share: items
/// with a latent value (a dialogue effect plus item noise) that fail above [`sim::THRESHOLD`],
/// and a simple random sample of them labelled.
#[cfg(test)]
pub(super) mod sim {
    use rand::RngExt;
    use rand::rngs::StdRng;
    use statrs::distribution::{ContinuousCDF, Normal};

    /// Dialogue effect of the latent value (the item noise has 1).
    pub(crate) const DIALOGUE_SD: f64 = 0.7;
    /// An item fails above this latent value.
    pub(crate) const THRESHOLD: f64 = 1.0;

    /// A standard normal draw (Box-Muller).
    pub(crate) fn normal(rng: &mut StdRng) -> f64 {
        let u: f64 = rng.random::<f64>().max(1e-300);
        let v: f64 = rng.random::<f64>();
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }

    /// The share of failing items of the population the benchmarks are drawn from.
    pub(crate) fn truth() -> f64 {
        let sd = (1.0 + DIALOGUE_SD * DIALOGUE_SD).sqrt();
        1.0 - Normal::standard().cdf(THRESHOLD / sd)
    }

    /// Which of `n` items a simple random sample of `labelled` keeps (partial Fisher-Yates).
    pub(crate) fn labelled_sample(rng: &mut StdRng, n: usize, labelled: usize) -> Vec<bool> {
        let labelled = labelled.min(n);
        let mut order: Vec<usize> = (0..n).collect();
        for i in 0..labelled {
            let j = rng.random_range(i..n);
            order.swap(i, j);
        }
        let mut keep = vec![false; n];
        for &i in &order[..labelled] {
            keep[i] = true;
        }
        keep
    }
}

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::{RngExt, SeedableRng};

    use super::sim::{DIALOGUE_SD, THRESHOLD, labelled_sample, normal, truth};
    use super::*;

    #[derive(Clone, Copy)]
    enum Judge {
        /// Sees the item's latent value with some noise, same threshold as the truth.
        Informative,
        /// As informative, but flags far more items (a lower threshold): biased, informative.
        Biased,
        /// Says "fails" of nothing.
        Constant,
    }

    const DIALOGUES: usize = 200;
    const LABELLED: usize = 150;

    /// One simulated benchmark: dialogues of 1-8 turns, a judge's verdict on every item, and
    /// a person's label on a random LABELLED of them.
    fn draw(rng: &mut StdRng, judge: Judge) -> Vec<PpiItem> {
        draw_sized(rng, judge, DIALOGUES, LABELLED)
    }

    /// As [`draw`], with `dialogues` dialogues and `labelled` labels.
    fn draw_sized(
        rng: &mut StdRng,
        judge: Judge,
        dialogues: usize,
        labelled: usize,
    ) -> Vec<PpiItem> {
        let mut items = Vec::new();
        for g in 0..dialogues {
            let u = DIALOGUE_SD * normal(rng);
            for _ in 0..rng.random_range(1..=8usize) {
                let z = u + normal(rng);
                let seen = z + 0.5 * normal(rng);
                let f = match judge {
                    Judge::Informative => f64::from(seen > THRESHOLD),
                    Judge::Biased => f64::from(seen > THRESHOLD - 0.6),
                    Judge::Constant => 0.0,
                };
                // the label is stashed in `label` for now; most are dropped below
                items.push(PpiItem {
                    cluster: g,
                    prediction: f,
                    label: Some(f64::from(z > THRESHOLD)),
                });
            }
        }
        // keep the labels of a simple random sample of `labelled` items
        let keep = labelled_sample(rng, items.len(), labelled);
        for (it, k) in items.iter_mut().zip(keep) {
            if !k {
                it.label = None;
            }
        }
        items
    }

    struct Runs {
        covered: usize,
        width_ppi: f64,
        width_labels: f64,
        lambda: f64,
    }

    fn simulate(judge: Judge, seed: u64) -> Runs {
        const REPS: usize = 2000;
        let mut rng = StdRng::seed_from_u64(seed);
        let p = truth();
        let mut r = Runs {
            covered: 0,
            width_ppi: 0.0,
            width_labels: 0.0,
            lambda: 0.0,
        };
        for _ in 0..REPS {
            let e = ppi_mean(&draw(&mut rng, judge), 0.95).unwrap();
            r.covered += usize::from(e.ppi.lower <= p && p <= e.ppi.upper);
            r.width_ppi += (e.ppi.upper - e.ppi.lower) / REPS as f64;
            r.width_labels += (e.labels_only.upper - e.labels_only.lower) / REPS as f64;
            r.lambda += e.lambda / REPS as f64;
        }
        eprintln!(
            "covered {} of {REPS}; widths: ppi {:.3}, labels {:.3}; lambda {:.2}",
            r.covered, r.width_ppi, r.width_labels, r.lambda
        );
        r
    }

    fn assert_covers(r: &Runs, what: &str) {
        assert!(
            (1860..=1940).contains(&r.covered),
            "{what}: the 95% PPI interval covered the truth in {} of 2000",
            r.covered
        );
    }

    #[test]
    fn few_dialogues_get_students_t_quantiles() {
        // 10 dialogues, 30 labels (the size of a small real review): the normal quantile
        // covered the truth in 1,748 of 2,000 (87%); Student's t with G - 1 degrees of
        // freedom in 1,831 (92%). Clustered Wald intervals of a share stay a little under
        // 95% with this few dialogues.
        let mut rng = StdRng::seed_from_u64(11);
        let p = truth();
        let mut covered = 0;
        for _ in 0..2000 {
            let e = ppi_mean(&draw_sized(&mut rng, Judge::Constant, 10, 30), 0.95).unwrap();
            covered += usize::from(e.labels_only.lower <= p && p <= e.labels_only.upper);
        }
        assert!((1800..=1940).contains(&covered), "{covered} of 2000");
        // three labelled dialogues: the half-width is t(2)'s 4.30 standard errors, not 1.96
        let items: Vec<PpiItem> = (0..9)
            .map(|i| PpiItem {
                cluster: i / 3,
                prediction: 0.0,
                label: Some(f64::from(i < 4)),
            })
            .collect();
        let e = ppi_mean(&items, 0.95).unwrap();
        let mean = 4.0 / 9.0;
        let b: Vec<f64> = [3.0, 1.0, 0.0]
            .iter()
            .map(|k: &f64| (k - 3.0 * mean) / 9.0)
            .collect();
        let se = (1.5 * b.iter().map(|x| x * x).sum::<f64>()).sqrt();
        let half = e.labels_only.upper - e.labels_only.estimate;
        assert!((half / se - 4.302_652_7).abs() < 1e-6, "{}", half / se);
    }

    #[test]
    fn lambda_is_tuned_only_on_enough_labelled_dialogues() {
        // 5 labelled dialogues, an informative judge: before, lambda was tuned on the 5 and
        // the interval claimed far more than the labels could say (10 dialogues, 30 labels:
        // the PPI interval covered in 1,779 of 2,000 against the labels' 1,831)
        let mut rng = StdRng::seed_from_u64(12);
        let e = ppi_mean(&draw_sized(&mut rng, Judge::Informative, 5, 20), 0.95).unwrap();
        assert_eq!(e.labelled_clusters, 5);
        assert_eq!(e.lambda, 0.0);
        assert_eq!(e.ppi, e.labels_only);
        let p = truth();
        let mut covered = 0;
        for _ in 0..2000 {
            let e = ppi_mean(&draw_sized(&mut rng, Judge::Informative, 10, 30), 0.95).unwrap();
            covered += usize::from(e.ppi.lower <= p && p <= e.ppi.upper);
        }
        eprintln!("informative, 10 dialogues, 30 labels: covered {covered} of 2000");
        assert!((1800..=1940).contains(&covered), "{covered} of 2000");
    }

    #[test]
    fn informative_judges_cover_the_truth_with_a_narrower_interval() {
        let r = simulate(Judge::Informative, 1);
        assert_covers(&r, "informative");
        assert!(
            r.width_ppi < 0.85 * r.width_labels,
            "ppi {} vs labels {}",
            r.width_ppi,
            r.width_labels
        );
        assert!(r.lambda > 0.5, "lambda {}", r.lambda);
    }

    #[test]
    fn biased_but_informative_judges_still_cover_the_truth() {
        let r = simulate(Judge::Biased, 2);
        assert_covers(&r, "biased");
        assert!(r.width_ppi < r.width_labels);
    }

    #[test]
    fn constant_judges_cover_the_truth_about_as_wide_as_labels_alone() {
        let r = simulate(Judge::Constant, 3);
        assert_covers(&r, "constant");
        assert!(
            (r.width_ppi / r.width_labels - 1.0).abs() < 0.05,
            "ppi {} vs labels {}",
            r.width_ppi,
            r.width_labels
        );
        assert_eq!(r.lambda, 0.0);
    }

    #[test]
    fn the_biased_judges_alone_miss_the_truth_ppi_does_not() {
        let mut rng = StdRng::seed_from_u64(9);
        let e = ppi_mean(&draw(&mut rng, Judge::Biased), 0.95).unwrap();
        let p = truth();
        assert!(
            e.predictions_only.lower > p,
            "{:?} vs {p}",
            e.predictions_only
        );
        assert!(e.ppi.lower <= p && p <= e.ppi.upper, "{:?} vs {p}", e.ppi);
    }

    #[test]
    fn perfect_predictions_give_the_mean_of_all_items_and_lambda_one() {
        // six clusters, predictions equal to labels where labelled
        let items: Vec<PpiItem> = (0..60)
            .map(|i| PpiItem {
                cluster: i / 10,
                prediction: f64::from(i % 3 == 0),
                label: (i % 2 == 0).then_some(f64::from(i % 3 == 0)),
            })
            .collect();
        let e = ppi_mean(&items, 0.9).unwrap();
        let all = items.iter().map(|i| i.prediction).sum::<f64>() / 60.0;
        assert!((e.lambda - 1.0).abs() < 1e-12, "{}", e.lambda);
        assert!((e.ppi.estimate - all).abs() < 1e-12);
        assert!(e.ppi.upper - e.ppi.lower < e.labels_only.upper - e.labels_only.lower);
        assert_eq!(
            (e.items, e.labelled, e.clusters, e.labelled_clusters),
            (60, 30, 6, 6)
        );
        assert_eq!(e.ppi.level, 0.9);
    }

    #[test]
    fn too_few_labels_or_bad_values_are_errors() {
        let one = [
            PpiItem {
                cluster: 0,
                prediction: 1.0,
                label: Some(1.0),
            },
            PpiItem {
                cluster: 1,
                prediction: 0.0,
                label: None,
            },
        ];
        assert!(ppi_mean(&one, 0.95).is_err());
        let same_cluster = [one[0], one[0]];
        assert!(ppi_mean(&same_cluster, 0.95).is_err());
        let nan = [
            one[0],
            PpiItem {
                cluster: 1,
                prediction: f64::NAN,
                label: Some(0.0),
            },
        ];
        assert!(ppi_mean(&nan, 0.95).is_err());
        assert!(ppi_mean(&[one[0], one[0]], 1.0).is_err());
    }
}
