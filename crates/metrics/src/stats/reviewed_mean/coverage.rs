//! The coverage study of the reviewed-mean intervals (docs/audit.md), over the regime audits live in: true failing shares 0.5%,
//! 2%, 5% and 20%; 20, 50 and 200 labels; 3, 10 and 30 dialogues; judges constant, weak
//! (AUC 0.7), good (AUC 0.9) and perfect. Each repetition draws an audit of [`UNITS`] units
//! spread evenly over the dialogues, failing where a latent value (a dialogue effect plus unit
//! noise, as `sim.rs`'s) passes the threshold of the cell's share, the judges'
//! verdicts, and a simple random sample of labelled units (as `mtr review` draws it). The truth
//! is the share of failing units of that audit. Counts, not timings: seeded, the same numbers
//! on every machine.
//!
//! The test run in CI ([`every_corner_covers_in_a_short_run`]) takes the grid's 32 corner
//! cells with [`CI_REPS`] repetitions each; the full study (2,000 per cell, the table in docs/audit.md) is
//! `cargo test --release -p mtr-metrics full_coverage_study -- --ignored --nocapture`.

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use statrs::distribution::{ContinuousCDF, Normal};

use super::sim::{DIALOGUE_SD, labelled_sample, normal};
use super::*;

/// Units of every simulated audit (the oracle audit has 535).
const UNITS: usize = 500;
/// Repetitions per cell in the CI run.
const CI_REPS: usize = 30;
const SHARES: [f64; 4] = [0.005, 0.02, 0.05, 0.2];
const LABELS: [usize; 3] = [20, 50, 200];
const DIALOGUES: [usize; 3] = [3, 10, 30];
/// The grid's corners, where intervals break first: the CI run's cells.
const CORNER_SHARES: [f64; 2] = [0.005, 0.2];
const CORNER_LABELS: [usize; 2] = [20, 200];
const CORNER_DIALOGUES: [usize; 2] = [3, 30];

/// A judge's verdicts: the true label flipped at its error rates.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Judge {
    /// Says "fails" of nothing.
    Constant,
    /// Finds 70% of failures, flags 30% of the rest (AUC 0.7).
    Weak,
    /// Finds 90% of failures, flags 10% of the rest (AUC 0.9).
    Good,
    /// Always right.
    Perfect,
}

const JUDGES: [Judge; 4] = [Judge::Constant, Judge::Weak, Judge::Good, Judge::Perfect];

impl Judge {
    fn verdict(self, rng: &mut StdRng, fails: bool) -> f64 {
        let (tpr, fpr) = match self {
            Judge::Constant => (0.0, 0.0),
            Judge::Weak => (0.7, 0.3),
            Judge::Good => (0.9, 0.1),
            Judge::Perfect => (1.0, 0.0),
        };
        f64::from(rng.random::<f64>() < if fails { tpr } else { fpr })
    }
}

/// One cell of the grid.
#[derive(Debug, Clone, Copy)]
struct Cell {
    share: f64,
    labels: usize,
    dialogues: usize,
    judge: Judge,
}

/// What the repetitions of one cell gave, per estimate (reviewers, judges, PPI).
#[derive(Debug, Default)]
struct Outcome {
    reps: usize,
    covered: [usize; 3],
    width_sum: [f64; 3],
    zero_width: usize,
    /// Repetitions whose PPI interval is wider than the reviewers' own (the table's last
    /// column).
    ppi_wider: usize,
}

impl Outcome {
    fn width(&self, k: usize) -> f64 {
        self.width_sum[k] / self.reps as f64
    }
}

/// One simulated audit of `cell`: the items, and the share of failing units.
fn draw(rng: &mut StdRng, cell: &Cell) -> (Vec<PpiItem>, f64) {
    let sd = (1.0 + DIALOGUE_SD * DIALOGUE_SD).sqrt();
    let threshold = Normal::standard().inverse_cdf(1.0 - cell.share) * sd;
    let effects: Vec<f64> = (0..cell.dialogues)
        .map(|_| DIALOGUE_SD * normal(rng))
        .collect();
    let mut items = Vec::with_capacity(UNITS);
    let mut failing = 0;
    for u in 0..UNITS {
        let cluster = u * cell.dialogues / UNITS;
        let fails = effects[cluster] + normal(rng) > threshold;
        failing += usize::from(fails);
        items.push(PpiItem {
            cluster,
            prediction: cell.judge.verdict(rng, fails),
            label: Some(f64::from(fails)),
        });
    }
    let keep = labelled_sample(rng, UNITS, cell.labels);
    for (it, k) in items.iter_mut().zip(keep) {
        if !k {
            it.label = None;
        }
    }
    (items, failing as f64 / UNITS as f64)
}

fn run_cell(cell: &Cell, reps: usize, seed: u64) -> Outcome {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut out = Outcome::default();
    let opts = ReviewedMeanOptions::default();
    while out.reps < reps {
        let (items, truth) = draw(&mut rng, cell);
        // a sample from one dialogue has no interval (3 dialogues, 20 labels: never seen)
        let Ok(e) = reviewed_mean(&items, &opts) else {
            continue;
        };
        out.reps += 1;
        for (k, est) in [e.reviewers, e.judges, e.ppi].iter().enumerate() {
            let ci = est.interval;
            out.covered[k] += usize::from(ci.lower <= truth && truth <= ci.upper);
            out.width_sum[k] += ci.upper - ci.lower;
            out.zero_width += usize::from(ci.upper <= ci.lower);
        }
        let width = |m: &MeanEstimate| m.interval.upper - m.interval.lower;
        out.ppi_wider += usize::from(width(&e.ppi) > width(&e.reviewers) + 1e-12);
    }
    out
}

fn grid(shares: &[f64], label_counts: &[usize], dialogue_counts: &[usize]) -> Vec<Cell> {
    let mut cells = Vec::new();
    for &share in shares {
        for &labels in label_counts {
            for &dialogues in dialogue_counts {
                for judge in JUDGES {
                    cells.push(Cell {
                        share,
                        labels,
                        dialogues,
                        judge,
                    });
                }
            }
        }
    }
    cells
}

/// Runs the cells, returning each with its outcome (one seed per cell).
fn study(cells: Vec<Cell>, reps: usize) -> Vec<(Cell, Outcome)> {
    cells
        .into_iter()
        .enumerate()
        .map(|(i, c)| (c, run_cell(&c, reps, 54_000 + i as u64)))
        .collect()
}

/// The study as the Markdown table of docs/audit.md.
fn table(results: &[(Cell, Outcome)]) -> String {
    let mut s = String::from(
        "| share | labels | dialogues | judges | reviewers cover | judges cover | PPI cover | \
         reviewers width | judges width | PPI width | PPI wider |\n\
         |---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for (c, o) in results {
        let pct = |k: usize| 100.0 * o.covered[k] as f64 / o.reps as f64;
        s.push_str(&format!(
            "| {:.1}% | {} | {} | {:?} | {:.1}% | {:.1}% | {:.1}% | {:.3} | {:.3} | {:.3} | {:.1}% |\n",
            100.0 * c.share,
            c.labels,
            c.dialogues,
            c.judge,
            pct(0),
            pct(1),
            pct(2),
            o.width(0),
            o.width(1),
            o.width(2),
            100.0 * o.ppi_wider as f64 / o.reps as f64,
        ));
    }
    s
}

/// What must hold in every cell: reviewers-only and PPI cover the truth at least `min_cover` of
/// the time, no interval has zero width, and with perfect judges PPI is no wider than the
/// reviewers' interval.
fn check(results: &[(Cell, Outcome)], min_cover: f64) {
    for (c, o) in results {
        assert_eq!(o.zero_width, 0, "{c:?}: zero-width intervals");
        for (k, what) in [(0, "reviewers"), (2, "PPI")] {
            let cover = o.covered[k] as f64 / o.reps as f64;
            assert!(cover >= min_cover, "{c:?}: {what} covered {cover}");
        }
        if c.judge == Judge::Perfect {
            assert!(o.width(2) <= o.width(0), "{c:?}: PPI wider than reviewers");
        }
    }
}

#[test]
fn every_corner_covers_in_a_short_run() {
    let cells = grid(&CORNER_SHARES, &CORNER_LABELS, &CORNER_DIALOGUES);
    let results = study(cells, CI_REPS);
    eprintln!("{}", table(&results));
    // 30 repetitions resolve coverage to a few points only: every cell must reach 85%, and
    // the corners as a whole 95% for reviewers and PPI.
    check(&results, 0.85);
    for k in [0, 2] {
        let covered: usize = results.iter().map(|(_, o)| o.covered[k]).sum();
        let reps: usize = results.iter().map(|(_, o)| o.reps).sum();
        assert!(
            covered as f64 >= 0.95 * reps as f64,
            "{k}: {covered} of {reps}"
        );
    }
}

#[test]
#[ignore = "the full 2,000-repetition study: minutes in a release build"]
fn full_coverage_study() {
    let results = study(grid(&SHARES, &LABELS, &DIALOGUES), 2000);
    println!("{}", table(&results));
    check(&results, 0.93);
}
