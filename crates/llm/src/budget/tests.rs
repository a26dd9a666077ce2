//! Tests of [`super`] (the time budget's planner).

use super::*;

/// A unit whose calls take `secs` on each of `endpoints`.
fn unit(endpoints: &[(&str, f64)]) -> Work {
    endpoints
        .iter()
        .map(|(n, secs)| {
            let p = PlannedEndpoint {
                calls: 1,
                completion_tokens_expected: (secs * 10.0) as u64,
                ..Default::default()
            };
            (n.to_string(), p)
        })
        .collect()
}

#[test]
fn units_start_in_order_while_they_fit_and_the_first_misfit_ends_the_plan() {
    let speeds = TenPerSecond { shared: false };
    let (a, b, c) = (
        unit(&[("gen", 100.0), ("judge", 50.0)]),
        unit(&[("gen", 300.0)]),
        unit(&[("gen", 10.0)]),
    );
    // endpoints work side by side: a takes 100 s; b does not fit 200 s; c is not taken past it
    let work = [None, Some(&a), Some(&b), Some(&c)];
    let s = select(&work, &speeds, 200.0, 50.0);
    assert_eq!(s.selected, [false, true, false, false]);
    assert_eq!((s.done_before, s.started()), (1, 1));
    assert_eq!(s.expected_s, Some(100.0));
    assert_eq!(s.seconds, [None, Some(100.0), Some(300.0), Some(10.0)]);
    // shared-speed endpoints add up: a takes 150 s
    let s = select(&work, &TenPerSecond { shared: true }, 200.0, 50.0);
    assert_eq!((s.started(), s.expected_s), (1, Some(150.0)));
    assert_eq!(select(&work, &speeds, 120.0, 50.0).started(), 0);
}

#[test]
fn an_unknown_speed_starts_every_unfinished_unit() {
    let speeds = TenPerSecond { shared: false };
    let (a, b) = (unit(&[("gen", 100.0)]), unit(&[("unknown", 100.0)]));
    let s = select(&[Some(&a), None, Some(&b), Some(&a)], &speeds, 10.0, 0.0);
    assert_eq!(s.selected, [true, false, true, true]);
    assert_eq!((s.started(), s.done_before, s.expected_s), (3, 1, None));
    assert!(s.seconds.iter().all(Option::is_none));
}

#[test]
fn durations_parse_as_written() {
    let secs = |t: &str| parse_duration(t).map(|d| d.as_secs_f64());
    assert_eq!(secs("90s"), Ok(90.0));
    assert_eq!(secs("14m"), Ok(840.0));
    assert_eq!(secs("1h"), Ok(3600.0));
    assert_eq!(secs("1h30m"), Ok(5400.0));
    assert_eq!(secs("1h 30m"), Ok(5400.0));
    assert_eq!(secs("2.5m"), Ok(150.0));
    assert_eq!(secs("45"), Ok(45.0));
    for bad in ["", "m", "10x", "1h30", "-5", "1..2s"] {
        assert!(parse_duration(bad).is_err(), "{bad}");
    }
    assert_eq!(budget_text(840.0), "14m");
    assert_eq!(budget_text(7200.0), "2h");
    assert_eq!(budget_text(90.0), "1m 30s");
    assert_eq!(budget_text(45.0), "45s");
}
