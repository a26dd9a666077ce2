//! The tests of the holes' figures in a bench.

use mtr_core::{Dialogue, Passage, Run};

use super::*;
use crate::job::{Provenance, prepare};
use crate::measure::Measure;
use crate::query_set::tests::turn;
use crate::result::SystemKind;

/// A system ranking `top` (with `N` the turn's number) on each of the four turns.
fn system(name: &str, top: [&str; 2]) -> SystemInput {
    let run: Run = (0..4)
        .map(|i| {
            let docs = &top;
            let n = docs.len();
            (
                format!("d{i}::1"),
                docs.iter()
                    .enumerate()
                    .map(|(r, d)| (d.replace('N', &i.to_string()), (n - r) as f64))
                    .collect(),
            )
        })
        .collect();
    SystemInput {
        name: name.into(),
        kind: SystemKind::External,
        retriever: None,
        formulation: None,
        source: Some(format!("{name}.trec")),
        config_hash: name.into(),
        prompt_hash: None,
        run,
        queries: Default::default(),
    }
}

/// Four one-turn dialogues, gold `gN`; A ranks the gold first and an unjudged `xN` second,
/// B an unjudged `hN` (relevant once judged) before the gold, C two unjudged passages.
fn fixture(tmp: &std::path::Path) -> (crate::job::Prepared, Vec<SystemInput>) {
    let dialogues: Vec<Dialogue> = (0..4)
        .map(|i| Dialogue {
            id: format!("d{i}"),
            turns: vec![turn(&format!("d{i}::1"), &[(&format!("g{i}"), 1)])],
            meta: Default::default(),
        })
        .collect();
    let corpus = (0..4).flat_map(|i| {
        ["g", "h", "x", "y"].map(|p| {
            Ok(Passage {
                id: format!("{p}{i}"),
                title: String::new(),
                text: format!("passage {p}{i}"),
                doc_id: None,
                meta: Default::default(),
            })
        })
    });
    let manifest = mtr_core::benchmark::Manifest {
        name: "holes".into(),
        ..Default::default()
    };
    let dir = mtr_core::benchmark::write_benchmark(tmp, manifest, &dialogues, corpus).unwrap();
    let p = prepare(&dir, None).unwrap();
    let systems = vec![
        system("A", ["gN", "xN"]),
        system("B", ["hN", "gN"]),
        system("C", ["xN", "yN"]),
    ];
    (p, systems)
}

/// The filled qrels: every `hN` relevant, every `xN` judged not relevant, `yN` unjudged.
fn filled(p: &crate::job::Prepared) -> Qrels {
    let mut q = p.qrels.clone();
    for i in 0..4 {
        let t = q.entry(format!("d{i}::1")).or_default();
        t.insert(format!("h{i}"), 1);
        t.insert(format!("x{i}"), 0);
    }
    q
}

#[test]
fn judged_at_k_and_the_filled_measures_beside_the_original() {
    let tmp = tempfile::tempdir().unwrap();
    let (p, systems) = fixture(tmp.path());
    let settings = Settings {
        measures: vec![Measure::Ndcg(2), Measure::Precision(2)],
        main: Measure::Ndcg(2),
        resamples: 200,
        permutations: 200,
        ..Settings::default()
    };
    let prov = Provenance {
        tool_version: "test".into(),
        date: "2026-01-01".into(),
        ..Default::default()
    };
    let mut outcome = crate::job::score(&p, &systems, &[], &settings, &prov, None).unwrap();
    let f = filled(&p);
    let fill = FilledHoles {
        depth: 2,
        filled: &f,
        folder: "holes",
        holes: 12,
        judged: 8,
        relevant: 4,
    };
    apply(&mut outcome, &systems, &settings, &fill).unwrap();
    let by = |name: &str| outcome.result.system(name).unwrap().holes.clone().unwrap();
    let (a, b, c) = (by("A"), by("B"), by("C"));
    assert_eq!((a.judged.mean, a.judged_filled.mean), (0.5, 1.0));
    assert_eq!((b.judged.mean, b.judged_filled.mean), (0.5, 1.0));
    assert_eq!(
        (c.judged.mean, c.judged_filled.mean),
        (0.0, 0.5),
        "yN stays a hole"
    );
    let ideal2 = 1.0 + 1.0 / 3f64.log2();
    let close = |x: f64, y: f64| (x - y).abs() < 1e-9;
    assert!(close(a.filled["ndcg_cut.2"].mean, 1.0 / ideal2));
    assert!(close(b.filled["ndcg_cut.2"].mean, 1.0));
    assert_eq!(
        (
            a.filled["P.2"].mean,
            b.filled["P.2"].mean,
            c.filled["P.2"].mean
        ),
        (0.5, 1.0, 0.0)
    );
    // the original measures are untouched
    let orig = |name: &str| outcome.result.system(name).unwrap().measures["ndcg_cut.2"].mean;
    assert!(close(orig("A"), 1.0) && close(orig("B"), 1.0 / 3f64.log2()));
    // A above B above C, then B above A above C: one pair of three swapped
    let h = outcome.result.holes.clone().unwrap();
    assert_eq!(
        (h.depth, h.folder.as_str(), h.holes, h.judged, h.relevant),
        (2, "holes", 12, 8, 4)
    );
    let tau = h.kendall_tau.unwrap();
    assert!(close(tau.mean, 1.0 / 3.0), "{tau:?}");
    assert!(tau.ci_low <= tau.mean && tau.mean <= tau.ci_high, "{tau:?}");
    // bench.json carries them and reads them back
    let json = serde_json::to_value(&outcome.result).unwrap();
    assert_eq!(json["holes"]["kendall_tau"]["mean"], tau.mean);
    let back: HolesInfo = serde_json::from_value(json["holes"].clone()).unwrap();
    assert_eq!(back, h);
    let back: SystemHoles = serde_json::from_value(json["systems"][1]["holes"].clone()).unwrap();
    assert_eq!(back, b);
}

#[test]
fn a_result_without_holes_reads_and_writes_as_before() {
    let tmp = tempfile::tempdir().unwrap();
    let (p, systems) = fixture(tmp.path());
    let settings = Settings {
        measures: vec![Measure::Ndcg(2)],
        main: Measure::Ndcg(2),
        resamples: 50,
        permutations: 50,
        ..Settings::default()
    };
    let outcome =
        crate::job::score(&p, &systems, &[], &settings, &Provenance::default(), None).unwrap();
    let json = serde_json::to_string(&outcome.result).unwrap();
    assert!(!json.contains("\"holes\":"), "{json}");
}
