//! Property tests: perfect rankings score 1, reversing a perfect ranking never helps, every
//! normalised measure stays in [0, 1], and the order of input lines never matters.

use proptest::prelude::*;

use crate::eval::evaluate_files;
use crate::measure::MeasureSet;
use crate::{EvalOptions, MissingQueries, evaluate};

const UNIT_MEASURES: [&str; 12] = [
    "map",
    "Rprec",
    "bpref",
    "recip_rank",
    "P.1,3,10",
    "recall.1,3,10",
    "ndcg",
    "ndcg_cut.1,3,10",
    "map_cut.3,10",
    "success.1,3",
    "ndcg_exp_cut.3,10",
    "map_capped_cut.3,10",
];

fn opts() -> EvalOptions {
    EvalOptions {
        missing: MissingQueries::Complete,
        ..EvalOptions::with_measures(MeasureSet::parse(UNIT_MEASURES).unwrap())
    }
}

/// One query: grades for docs d0..dn (some unjudged = None).
fn query() -> impl Strategy<Value = Vec<Option<i32>>> {
    prop::collection::vec(prop::option::weighted(0.8, -1i32..4), 1..25)
}

fn qrels_of(qs: &[Vec<Option<i32>>]) -> mtr_core::Qrels {
    let mut q = mtr_core::Qrels::new();
    for (i, grades) in qs.iter().enumerate() {
        let e = q.entry(format!("q{i}")).or_default();
        for (d, g) in grades.iter().enumerate() {
            if let Some(g) = g {
                e.insert(format!("d{d}"), *g);
            }
        }
    }
    q
}

/// Ranking in the given doc order with strictly decreasing scores.
fn run_in_order(qid: &str, order: &[usize]) -> mtr_core::Run {
    let mut r = mtr_core::Run::new();
    r.insert(
        qid.to_string(),
        order
            .iter()
            .enumerate()
            .map(|(rank, d)| (format!("d{d}"), 1000.0 - rank as f64))
            .collect(),
    );
    r
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn perfect_ranking_scores_one_and_reversal_never_helps(grades in query()) {
        prop_assume!(grades.iter().any(|g| g.is_some_and(|g| g > 0)));
        let qrels = qrels_of(std::slice::from_ref(&grades));
        // Ideal order: all judged docs by grade descending (unjudged last).
        let mut order: Vec<usize> = (0..grades.len()).collect();
        order.sort_by_key(|d| std::cmp::Reverse(grades[*d].unwrap_or(-100)));
        let o = EvalOptions::with_measures(MeasureSet::parse(["ndcg", "map", "recip_rank", "ndcg_cut.5", "ndcg_exp_cut.5", "map_capped_cut.5", "Rprec"]).unwrap());
        let best = evaluate(&qrels, &run_in_order("q0", &order), &o).unwrap();
        for name in ["ndcg", "map", "recip_rank", "ndcg_cut_5", "ndcg_exp_cut_5", "map_capped_cut_5", "Rprec"] {
            let v = best.mean(name).unwrap();
            prop_assert!((v - 1.0).abs() < 1e-12, "{} = {}", name, v);
        }
        let rev: Vec<usize> = order.iter().rev().copied().collect();
        let worst = evaluate(&qrels, &run_in_order("q0", &rev), &o).unwrap();
        for (c, (b, w)) in best.columns.iter().zip(best.summary.iter().zip(&worst.summary)) {
            prop_assert!(w <= &(b + 1e-12), "{}: reversed {} > perfect {}", c.name, w, b);
        }
    }

    #[test]
    fn measures_stay_in_unit_interval(
        qs in prop::collection::vec(query(), 1..6),
        perm_seed in any::<u64>(),
        scores in prop::collection::vec(0u8..5, 30),
    ) {
        prop_assume!(qs.iter().flatten().any(Option::is_some));
        let qrels = qrels_of(&qs);
        let mut run = mtr_core::Run::new();
        for (i, grades) in qs.iter().enumerate() {
            // Retrieve a pseudo-random subset with tied scores and one unjudged doc.
            let mut docs: Vec<(String, f64)> = (0..grades.len())
                .filter(|d| (perm_seed >> ((d + i) % 64)) & 1 == 1)
                .map(|d| (format!("d{d}"), f64::from(scores[d % scores.len()])))
                .collect();
            docs.push(("unjudged".to_string(), 1.5));
            run.insert(format!("q{i}"), docs);
        }
        let ev = evaluate(&qrels, &run, &opts()).unwrap();
        for q in &ev.queries {
            for (c, v) in ev.columns.iter().zip(&q.values) {
                prop_assert!((0.0..=1.0).contains(v), "{} {} = {}", q.qid, c.name, v);
            }
        }
    }

    #[test]
    fn permuting_input_lines_changes_nothing(
        qs in prop::collection::vec(query(), 1..5),
        scores in prop::collection::vec(0u8..4, 40),
        shuffle in any::<u64>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let mut qrels_lines = Vec::new();
        let mut run_lines = Vec::new();
        for (i, grades) in qs.iter().enumerate() {
            for (d, g) in grades.iter().enumerate() {
                if let Some(g) = g {
                    qrels_lines.push(format!("q{i} 0 d{d} {g}"));
                }
                // Few distinct scores: many ties, broken by docno.
                run_lines.push(format!("q{i} Q0 d{d} {} {} t", d + 1, scores[(d * 7 + i) % scores.len()]));
            }
        }
        prop_assume!(!qrels_lines.is_empty());
        let write = |name: &str, lines: &[String]| {
            let p = dir.path().join(name);
            std::fs::write(&p, lines.join("\n") + "\n").unwrap();
            p
        };
        let q1 = write("q1", &qrels_lines);
        let r1 = write("r1", &run_lines);
        // Deterministic shuffle from the seed.
        let mut perm_q = qrels_lines.clone();
        let mut perm_r = run_lines.clone();
        let mut s = shuffle | 1;
        for v in [&mut perm_q, &mut perm_r] {
            for i in (1..v.len()).rev() {
                s ^= s << 13; s ^= s >> 7; s ^= s << 17;
                v.swap(i, (s % (i as u64 + 1)) as usize);
            }
        }
        let q2 = write("q2", &perm_q);
        let r2 = write("r2", &perm_r);
        let a = evaluate_files(&q1, &r1, &opts()).unwrap();
        let b = evaluate_files(&q2, &r2, &opts()).unwrap();
        prop_assert_eq!(a.queries, b.queries);
        prop_assert_eq!(a.summary, b.summary);
    }
}
