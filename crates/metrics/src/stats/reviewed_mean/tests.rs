use super::*;

fn item(cluster: usize, prediction: f64, label: Option<f64>) -> PpiItem {
    PpiItem {
        cluster,
        prediction,
        label,
    }
}

fn width(e: &MeanEstimate) -> f64 {
    e.interval.upper - e.interval.lower
}

/// Issue 54's oracle audit: judges right on every item, 535 units of which 13 (2.4%) fail, a
/// reviewer who labels 40 of them correctly, none failing. Before, every interval was
/// [0, 0] but the judges' own; now the reviewers' is Clopper-Pearson's [0, 8.8%] and the
/// prediction-powered one holds 2.4%.
#[test]
fn the_oracle_audit_gives_a_ppi_interval_that_holds_the_truth() {
    let failing: Vec<usize> = (0..13).map(|k| 7 + 41 * k).collect();
    let mut items: Vec<PpiItem> = (0..535)
        .map(|i| {
            let y = f64::from(failing.contains(&i));
            item(i / 12, y, None)
        })
        .collect();
    // a random-looking sample of 40 units, none of them failing
    let mut labelled = 0;
    for i in (0..535).map(|k| (k * 97 + 3) % 535) {
        if labelled < 40 && !failing.contains(&i) {
            items[i].label = Some(0.0);
            labelled += 1;
        }
    }
    let truth = 13.0 / 535.0;
    let e = reviewed_mean(&items, &ReviewedMeanOptions::default()).unwrap();
    assert_eq!((e.labelled, e.items), (40, 535));
    assert_eq!(e.reviewers.method, IntervalMethod::ClopperPearson);
    assert_eq!(e.reviewers.interval.lower, 0.0);
    // the exact bound of 0 of 40 (8.8%), a little wider for the labels' dialogues (9.4%)
    let exact = 1.0 - 0.025f64.powf(1.0 / 40.0);
    let upper = e.reviewers.interval.upper;
    assert!(exact < upper && upper < 0.095, "{:?}", e.reviewers);
    // the judges are kept (weight 1: their predictions on the sample do not vary)
    assert_eq!(e.lambda, 1.0);
    assert!(
        (e.ppi.interval.estimate - truth).abs() < 1e-12,
        "{:?}",
        e.ppi
    );
    assert!(
        e.ppi.interval.lower <= truth && truth <= e.ppi.interval.upper && width(&e.ppi) > 0.0,
        "{:?}",
        e.ppi
    );
    // perfect judges: the prediction-powered interval is no wider than the reviewers' own
    assert!(
        width(&e.ppi) <= width(&e.reviewers),
        "{:?} wider than {:?}",
        e.ppi,
        e.reviewers
    );
    assert!((e.judges.interval.estimate - truth).abs() < 1e-12);
    assert_eq!(e.few_clusters, None);
}

#[test]
fn none_or_all_observed_never_give_a_zero_width_interval() {
    for y in [0.0, 1.0] {
        let items: Vec<PpiItem> = (0..30).map(|i| item(i / 3, y, Some(y))).collect();
        let e = reviewed_mean(&items, &ReviewedMeanOptions::default()).unwrap();
        for est in [&e.reviewers, &e.judges, &e.ppi] {
            assert!(width(est) > 0.0, "{y}: {est:?}");
            assert!(
                est.interval.lower <= y && y <= est.interval.upper,
                "{est:?}"
            );
        }
    }
    // a rating whose every label and prediction is 5 still has an interval
    let items: Vec<PpiItem> = (0..20).map(|i| item(i % 5, 5.0, Some(5.0))).collect();
    let opts = ReviewedMeanOptions {
        range: (1.0, 5.0),
        ..Default::default()
    };
    let e = reviewed_mean(&items, &opts).unwrap();
    assert_eq!(e.reviewers.method, IntervalMethod::AdjustedWald);
    assert!(width(&e.reviewers) > 0.0 && e.reviewers.interval.upper == 5.0);
}

#[test]
fn perfect_judges_give_a_narrower_interval_than_the_labels() {
    // 400 items in 40 clusters, a fifth failing, 60 labelled
    let items: Vec<PpiItem> = (0..400)
        .map(|i| {
            let y = f64::from(i % 5 == 0);
            item(i % 40, y, (i % 7 == 0 && i < 420).then_some(y))
        })
        .collect();
    let e = reviewed_mean(&items, &ReviewedMeanOptions::default()).unwrap();
    assert_eq!(e.lambda_rule, LambdaRule::CrossFitted);
    assert_eq!(e.lambda, 1.0);
    assert!((e.ppi.interval.estimate - 0.2).abs() < 1e-12);
    assert!(width(&e.ppi) < 0.5 * width(&e.reviewers), "{e:?}");
}

#[test]
fn few_labelled_clusters_are_named_and_widen_the_interval() {
    let make = |clusters: usize| -> ReviewedMean {
        let items: Vec<PpiItem> = (0..120)
            .map(|i| {
                let y = f64::from(i % 4 == 0);
                item(i % clusters, 0.0, (i % 2 == 0).then_some(y))
            })
            .collect();
        reviewed_mean(&items, &ReviewedMeanOptions::default()).unwrap()
    };
    let few = make(3);
    let many = make(30);
    assert_eq!(few.few_clusters, Some(3));
    assert_eq!(many.few_clusters, None);
    assert_eq!(few.lambda_rule, LambdaRule::Plain);
    assert!(width(&few.reviewers) > width(&many.reviewers));
    assert!(width(&few.ppi) > width(&many.ppi));
}

#[test]
fn bad_input_is_an_error() {
    let one = [item(0, 1.0, Some(1.0)), item(1, 0.0, None)];
    let opts = ReviewedMeanOptions::default();
    assert!(reviewed_mean(&one, &opts).is_err());
    assert!(reviewed_mean(&[one[0], one[0]], &opts).is_err());
    let outside = [item(0, 2.0, Some(1.0)), item(1, 0.0, Some(0.0))];
    assert!(reviewed_mean(&outside, &opts).is_err());
    let nan = [item(0, f64::NAN, Some(1.0)), item(1, 0.0, Some(0.0))];
    assert!(reviewed_mean(&nan, &opts).is_err());
    let bad_level = ReviewedMeanOptions { level: 1.0, ..opts };
    let two = [item(0, 1.0, Some(1.0)), item(1, 0.0, Some(0.0))];
    assert!(reviewed_mean(&two, &bad_level).is_err());
    assert!(reviewed_mean(&two, &opts).is_ok());
}

#[test]
fn a_ppi_interval_outside_the_range_gives_way_to_the_reviewers() {
    // the judges flag the 20 reviewed items (none fails) and almost nothing else: PPI's
    // interval lies wholly below 0 (before: cut to [0, 0], zero width, missing the truth)
    let items: Vec<PpiItem> = (0..300)
        .map(|i| {
            let reviewed = i % 15 == 0;
            item(i % 7, f64::from(reviewed), reviewed.then_some(0.0))
        })
        .collect();
    let e = reviewed_mean(&items, &ReviewedMeanOptions::default()).unwrap();
    assert_eq!(e.labelled, 20);
    assert_eq!(e.ppi, e.reviewers);
    assert!(width(&e.ppi) > 0.0);
}

/// A simulated benchmark: 200 dialogues of 1-8 turns, a judge
/// that sees each item's latent value with noise and flags it above `judge_threshold`, and a
/// person's label on a simple random sample of 150; with the share failing among all items
/// (the target, see the module doc).
fn draw_judged(rng: &mut rand::rngs::StdRng, judge_threshold: f64) -> (Vec<PpiItem>, f64) {
    use super::sim::{DIALOGUE_SD, THRESHOLD, labelled_sample, normal};
    use rand::RngExt;
    let mut items = Vec::new();
    for g in 0..200 {
        let u = DIALOGUE_SD * normal(rng);
        for _ in 0..rng.random_range(1..=8usize) {
            let z = u + normal(rng);
            let seen = z + 0.5 * normal(rng);
            items.push(item(
                g,
                f64::from(seen > judge_threshold),
                Some(f64::from(z > THRESHOLD)),
            ));
        }
    }
    let truth = items.iter().filter_map(|i| i.label).sum::<f64>() / items.len() as f64;
    let keep = labelled_sample(rng, items.len(), 150);
    for (it, k) in items.iter_mut().zip(keep) {
        if !k {
            it.label = None;
        }
    }
    (items, truth)
}

#[test]
fn informative_judges_narrow_and_biased_ones_still_cover_where_their_own_share_misses() {
    use rand::SeedableRng;
    const REPS: usize = 1000;
    let mut rng = rand::rngs::StdRng::seed_from_u64(13);
    // (judge's threshold, PPI covered, judges covered, PPI width, reviewers' width)
    let mut runs = [
        (super::sim::THRESHOLD, 0, 0, 0.0, 0.0),
        (0.4, 0, 0, 0.0, 0.0),
    ];
    for r in &mut runs {
        for _ in 0..REPS {
            let (items, p) = draw_judged(&mut rng, r.0);
            let m = reviewed_mean(&items, &ReviewedMeanOptions::default()).unwrap();
            let holds = |e: &MeanEstimate| e.interval.lower <= p && p <= e.interval.upper;
            r.1 += usize::from(holds(&m.ppi));
            r.2 += usize::from(holds(&m.judges));
            r.3 += width(&m.ppi) / REPS as f64;
            r.4 += width(&m.reviewers) / REPS as f64;
        }
    }
    eprintln!(
        "(judge threshold, PPI covered, judges covered, PPI width, reviewers width): {runs:?}"
    );
    let [informative, biased] = runs;
    for r in &runs {
        assert!(
            (930..=990).contains(&r.1),
            "PPI covered {} of {REPS}: {runs:?}",
            r.1
        );
    }
    assert!(informative.3 < 0.9 * informative.4, "{informative:?}");
    // the biased judge flags far more items: its own share misses, PPI's does not
    assert!(
        biased.2 < REPS / 10,
        "judges-only covered {} of {REPS}",
        biased.2
    );
}
