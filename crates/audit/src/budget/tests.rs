//! The plan's selection on made-up work at a made-up speed.

use super::*;
use mtr_llm::PlannedEndpoint;
use mtr_llm::budget::{Run, TenPerSecond};

/// A dialogue of one judgement per endpoint taking `secs` on it.
fn dialogue(id: &str, endpoints: &[(&str, f64)]) -> (String, DialogueWork) {
    let calls = endpoints
        .iter()
        .map(|(n, secs)| {
            let p = PlannedEndpoint {
                calls: 1,
                completion_tokens_expected: (secs * 10.0) as u64,
                ..Default::default()
            };
            (n.to_string(), p)
        })
        .collect();
    let w = DialogueWork {
        jobs: endpoints.len(),
        reused: 0,
        calls,
    };
    (id.to_string(), w)
}

fn done(id: &str) -> (String, DialogueWork) {
    let w = DialogueWork {
        jobs: 2,
        reused: 2,
        calls: Default::default(),
    };
    (id.to_string(), w)
}

#[test]
fn dialogues_start_in_plan_order_while_they_fit() {
    // judges side by side: k dialogues take k x 100 s
    let work: Vec<_> = (0..6)
        .map(|i| dialogue(&format!("d{i}"), &[("a", 100.0), ("b", 50.0)]))
        .collect();
    let p = select(&work, &TenPerSecond { shared: false }, 350.0, 20.0);
    assert_eq!(p.selected, [true, true, true, false, false, false]);
    assert_eq!(p.info.expected_s, Some(300.0));
    assert_eq!((p.info.dialogues_started, p.not_started()), (3, 3));
    assert_eq!(
        p.line(Run::Real),
        "time budget 5m 50s: auditing 3 of 6 planned dialogues (expected 5m 00s at the measured speed, after 20s of preparation); 3 left for a rerun with more time to continue"
    );
    assert_eq!(p.restriction().map(|r| r.len()), Some(3));
    // an hour fits all (nothing to restrict); a second none
    let all = select(&work, &TenPerSecond { shared: false }, 3600.0, 20.0);
    assert_eq!((all.info.dialogues_started, all.restriction()), (6, None));
    assert!(
        !all.line(Run::Dry).contains("rerun"),
        "{}",
        all.line(Run::Dry)
    );
    let none = select(&work, &TenPerSecond { shared: false }, 0.0, 0.0);
    assert_eq!((none.info.dialogues_started, none.not_started()), (0, 6));
    assert_eq!(none.restriction().map(|r| r.len()), Some(0));
}

#[test]
fn finished_dialogues_are_skipped_the_order_is_kept_and_the_run_is_counted() {
    let work = vec![
        done("d0"),
        dialogue("d1", &[("a", 100.0)]),
        dialogue("d2", &[("a", 300.0)]),
        dialogue("d3", &[("a", 10.0)]),
    ];
    // d2 does not fit: d3 is not taken past it
    let mut p = select(&work, &TenPerSecond { shared: false }, 200.0, 0.0);
    assert_eq!(p.selected, [false, true, false, false]);
    assert_eq!(p.info.dialogues_done_before, 1);
    assert!(
        p.line(Run::Real)
            .contains("auditing 1 of 4 planned dialogues, 1 done before")
    );
    let record = |d: &str| {
        let mut j = crate::items::aggregate::tests::judgement(
            crate::dimension::Dimension::Quality,
            "t",
            None,
            "a",
            None,
            Some(3.0),
            None,
        );
        j.dialogue_id = d.into();
        Some(Box::new(j))
    };
    p.finish(&[record("d0"), record("d0"), record("d1"), None, None]);
    assert_eq!((p.info.dialogues_audited, p.info.dialogues_left), (1, 2));
}

#[test]
fn an_unknown_speed_cuts_nothing_and_says_so() {
    let work = vec![
        dialogue("d0", &[("a", 100.0)]),
        dialogue("d1", &[("unknown", 100.0)]),
        done("d2"),
    ];
    let p = select(&work, &TenPerSecond { shared: false }, 10.0, 0.0);
    assert_eq!(p.selected, [true, true, false]);
    assert_eq!((p.info.expected_s, p.restriction()), (None, None));
    assert!(p.line(Run::Real).starts_with("warning: time budget 10s"));
    assert!(p.line(Run::Real).contains("cannot be planned"));
}

#[test]
fn the_report_line_names_what_is_left() {
    let info = TimeBudgetInfo {
        budget_s: 240.0,
        expected_s: Some(200.0),
        preparation_s: 12.0,
        dialogues_planned: 10,
        dialogues_audited: 4,
        dialogues_left: 6,
        deadline_stopped: true,
        ..Default::default()
    };
    let l = info.line();
    assert!(
        l.starts_with("Time budget 4m: 4 of 10 planned dialogues audited"),
        "{l}"
    );
    assert!(
        l.contains("6 left for a rerun") && l.contains("deadline stopped"),
        "{l}"
    );
    assert_eq!(budget_text(90.0), "1m 30s");
}
