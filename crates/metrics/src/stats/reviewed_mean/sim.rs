//! Simulated audits for the tests: items with a latent value (a dialogue effect plus item
//! noise) that fail above [`THRESHOLD`], and a simple random sample of them labelled.

use rand::RngExt;
use rand::rngs::StdRng;

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
