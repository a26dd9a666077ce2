//! Simulated audits with known truth: an informative judge beside judges that give every
//! item the same grade, or that rate at random; the share of items that fail, estimated from
//! a random sample of labels with every judge's rating as a predictor.

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use statrs::distribution::{ContinuousCDF, Normal};

use super::*;
use crate::stats::{PpiItem, ppi_mean};

fn normal(rng: &mut StdRng) -> f64 {
    let u: f64 = rng.random::<f64>().max(1e-300);
    let v: f64 = rng.random::<f64>();
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

const DIALOGUE_SD: f64 = 0.7;
/// An item fails (its gold does not answer) when its latent value is above this.
const THRESHOLD: f64 = 1.0;

fn truth() -> f64 {
    let sd = (1.0 + DIALOGUE_SD * DIALOGUE_SD).sqrt();
    1.0 - Normal::standard().cdf(THRESHOLD / sd)
}

#[derive(Clone, Copy, PartialEq)]
enum Others {
    /// The other two judges rate every item 5 and 4.
    Constant,
    /// The other two rate at random, 1-5.
    Random,
}

/// One simulated audit: per item the judges' ratings `[informative, other, other]`, the
/// ensemble's "rated below 3" (`1[mean < 3]`) first, and a reviewer's "fails" label on a
/// random `labelled` of them.
fn draw(rng: &mut StdRng, others: Others, dialogues: usize, labelled: usize) -> Vec<PpiManyItem> {
    let mut items = Vec::new();
    for g in 0..dialogues {
        let u = DIALOGUE_SD * normal(rng);
        for _ in 0..rng.random_range(1..=8usize) {
            let z = u + normal(rng);
            let seen = z + 0.5 * normal(rng);
            // the informative judge rates 5 far below the threshold, 1 far above it
            let informative = (3.0 - 1.5 * (seen - THRESHOLD)).round().clamp(1.0, 5.0);
            let (b, c) = match others {
                Others::Constant => (5.0, 4.0),
                Others::Random => (
                    f64::from(rng.random_range(1..=5u8)),
                    f64::from(rng.random_range(1..=5u8)),
                ),
            };
            let ensemble = f64::from((informative + b + c) / 3.0 < 3.0);
            items.push(PpiManyItem {
                cluster: g,
                predictions: vec![ensemble, informative, b, c],
                label: Some(f64::from(z > THRESHOLD)),
            });
        }
    }
    let n = items.len();
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
    for (it, k) in items.iter_mut().zip(keep) {
        if !k {
            it.label = None;
        }
    }
    items
}

struct Runs {
    covered: usize,
    width_many: f64,
    width_ensemble: f64,
    width_labels: f64,
    bias: f64,
}

fn simulate(others: Others, seed: u64, dialogues: usize, labelled: usize) -> Runs {
    const REPS: usize = 2000;
    let mut rng = StdRng::seed_from_u64(seed);
    let p = truth();
    let mut r = Runs {
        covered: 0,
        width_many: 0.0,
        width_ensemble: 0.0,
        width_labels: 0.0,
        bias: 0.0,
    };
    for _ in 0..REPS {
        let items = draw(&mut rng, others, dialogues, labelled);
        let e = ppi_mean_many(&items, 0.95).unwrap();
        // the one-predictor PPI++ on the ensemble's verdict, as the audit used it
        let one: Vec<PpiItem> = items
            .iter()
            .map(|i| PpiItem {
                cluster: i.cluster,
                prediction: i.predictions[0],
                label: i.label,
            })
            .collect();
        let s = ppi_mean(&one, 0.95).unwrap();
        r.covered += usize::from(e.ppi.lower <= p && p <= e.ppi.upper);
        r.width_many += (e.ppi.upper - e.ppi.lower) / REPS as f64;
        r.width_ensemble += (s.ppi.upper - s.ppi.lower) / REPS as f64;
        r.width_labels += (e.labels_only.upper - e.labels_only.lower) / REPS as f64;
        r.bias += (e.ppi.estimate - p) / REPS as f64;
    }
    eprintln!(
        "covered {} of {REPS}; widths: per-judge {:.3}, ensemble {:.3}, labels {:.3}; bias {:+.4}",
        r.covered, r.width_many, r.width_ensemble, r.width_labels, r.bias
    );
    r
}

#[test]
fn one_informative_judge_beside_constant_ones_narrows_the_interval() {
    let r = simulate(Others::Constant, 21, 200, 150);
    assert!(
        (1860..=1940).contains(&r.covered),
        "covered {} of 2000",
        r.covered
    );
    assert!(r.bias.abs() < 0.005, "bias {}", r.bias);
    // the ensemble's verdict never fires: PPI on it is the reviewers' own interval
    assert!(
        (r.width_ensemble / r.width_labels - 1.0).abs() < 0.02,
        "ensemble {} labels {}",
        r.width_ensemble,
        r.width_labels
    );
    assert!(
        r.width_many < 0.85 * r.width_labels,
        "many {} labels {}",
        r.width_many,
        r.width_labels
    );
}

#[test]
fn one_informative_judge_beside_random_ones_still_covers_and_gains() {
    let r = simulate(Others::Random, 22, 200, 150);
    assert!(
        (1860..=1940).contains(&r.covered),
        "covered {} of 2000",
        r.covered
    );
    assert!(r.width_many < 0.85 * r.width_labels);
}

#[test]
fn few_labelled_dialogues_fall_back_to_the_labels() {
    // 5 labelled dialogues: 5 - 1 - MIN_DEGREES = 0 predictors can be used
    let mut rng = StdRng::seed_from_u64(3);
    let items = draw(&mut rng, Others::Constant, 5, 30);
    let e = ppi_mean_many(&items, 0.95).unwrap();
    assert_eq!(e.used, 0);
    assert_eq!(e.ppi, e.labels_only);
    assert!(e.lambdas.iter().all(|l| *l == 0.0));
}

#[test]
fn constant_and_collinear_predictors_are_left_out() {
    let mut rng = StdRng::seed_from_u64(4);
    let mut items = draw(&mut rng, Others::Constant, 60, 80);
    for it in &mut items {
        let x = it.predictions[1];
        it.predictions.push(2.0 * x + 1.0);
    }
    let e = ppi_mean_many(&items, 0.95).unwrap();
    // the ensemble and the two constant judges have no spread; the last repeats the second
    assert_eq!(e.used, 1);
    assert_eq!(
        e.lambdas.iter().map(|l| *l != 0.0).collect::<Vec<_>>(),
        [false, true, false, false, false]
    );
}

#[test]
fn uneven_or_bad_predictions_are_errors() {
    let a = PpiManyItem {
        cluster: 0,
        predictions: vec![1.0],
        label: Some(1.0),
    };
    let b = PpiManyItem {
        cluster: 1,
        predictions: vec![1.0, 2.0],
        label: Some(0.0),
    };
    assert!(ppi_mean_many(&[a.clone(), b], 0.95).is_err());
    let nan = PpiManyItem {
        cluster: 1,
        predictions: vec![f64::NAN],
        label: Some(0.0),
    };
    assert!(ppi_mean_many(&[a.clone(), nan], 0.95).is_err());
    assert!(ppi_mean_many(std::slice::from_ref(&a), 0.95).is_err());
}
