//! The tests of measure names, parameters and columns.

use super::*;

fn names(set: &MeasureSet) -> Vec<String> {
    set.columns().into_iter().map(|c| c.name).collect()
}

#[test]
fn official_matches_trec_eval_order() {
    let n = names(&MeasureSet::official());
    assert_eq!(
        &n[..6],
        &["runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map"]
    );
    assert!(n.contains(&"iprec_at_recall_0.00".to_string()));
    assert_eq!(n.last().map(String::as_str), Some("P_1000"));
    assert_eq!(n.len(), 10 + 11 + 9);
}

#[test]
fn params_sorted_and_printed_like_trec_eval() {
    let s = MeasureSet::parse([
        "success.2,5,20",
        "P.5,7,3",
        "ndcg_cut.10,20,23.4",
        "ndcg.1=3,2=9,4=4.5",
    ])
    .unwrap();
    assert_eq!(
        names(&s),
        [
            "P_3",
            "P_5",
            "P_7",
            "ndcg_1=3,2=9,4=4.5",
            "ndcg_cut_10",
            "ndcg_cut_20",
            "ndcg_cut_23",
            "success_2",
            "success_5",
            "success_20"
        ]
    );
    let s = MeasureSet::parse(["iprec_at_recall..10,.20,.25,.75,.50"]).unwrap();
    assert_eq!(names(&s)[2], "iprec_at_recall_0.25");
}

#[test]
fn first_parameter_list_wins() {
    let s = MeasureSet::parse(["P.5", "P.10", "P"]).unwrap();
    assert_eq!(names(&s), ["P_5"]);
    let s = MeasureSet::parse(["P", "P.10"]).unwrap();
    assert_eq!(names(&s), ["P_10"]);
}

#[test]
fn bad_specs_are_errors() {
    for bad in [
        "nope", "P.0", "P.5,5", "P.", "map.5", "ndcg.1", "utility", "P.x",
    ] {
        assert!(MeasureSet::parse([bad]).is_err(), "{bad}");
    }
}

#[test]
fn ir_measures_names_mean_the_trec_eval_measures() {
    for (ir, trec) in [
        ("nDCG@10", "ndcg_cut.10"),
        ("RR@10", "recip_rank_cut.10"),
        ("RR", "recip_rank"),
        ("P@5", "P.5"),
        ("R@100", "recall.100"),
        ("AP@100", "map_cut.100"),
        ("AP", "map"),
        ("Success@10", "success.10"),
        ("nDCG", "ndcg"),
        ("Rprec", "Rprec"),
        ("Judged@10", "judged.10"),
    ] {
        assert_eq!(
            names(&MeasureSet::parse([ir]).unwrap()),
            names(&MeasureSet::parse([trec]).unwrap()),
            "{ir}"
        );
    }
    for bad in [
        "R",
        "Success",
        "Judged",
        "Rprec@5",
        "nDCG@0",
        "Judged@0",
        "nDCG@x",
        "P(rel=2)@5",
    ] {
        assert!(MeasureSet::parse([bad]).is_err(), "{bad}");
    }
}

#[test]
fn typos_get_a_suggestion() {
    for (typo, want) in [
        ("ndgc_cut.10", "ndcg_cut.10"),
        ("ndcg@10", "nDCG@10"),
        ("NDCG@10", "nDCG@10"),
        ("mrr@10", "RR@10"),
        ("ndcg_cut@10", "ndcg_cut.10"),
        ("recip_rnak", "recip_rank"),
        ("Sucess@10", "Success@10"),
    ] {
        let e = MeasureSet::parse([typo]).unwrap_err().to_string();
        assert!(
            e.contains(&format!("did you mean `{want}`?")),
            "{typo}: {e}"
        );
    }
    assert_eq!(suggest("zzzzzzzz"), None);
}

#[test]
fn extensions_come_after_trec_eval_measures() {
    let s = MeasureSet::parse([
        "recip_rank_cut.10",
        "success_strict.1",
        "map",
        "ndcg_exp_cut.5",
    ])
    .unwrap();
    assert_eq!(
        names(&s),
        [
            "map",
            "ndcg_exp_cut_5",
            "success_strict_1",
            "recip_rank_cut_10"
        ]
    );
    assert_eq!(s.max_depth(), None);
    let s = MeasureSet::parse(["recip_rank_cut.10", "P.20"]).unwrap();
    assert_eq!(s.max_depth(), Some(20));
}
