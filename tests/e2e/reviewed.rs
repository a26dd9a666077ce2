//! Reviewers' labels end to end (issue 40): an audit on the fake server, a labels file in
//! `AUDIT/review/labels.jsonl`, then `mtr report` (the "Reviewed" section and `summary.json`'s
//! `review`; nothing changes without labels), `mtr qrels apply --variant reviewed` (only what
//! reviewers decided) and the refusal of another audit's labels (exit 2). Skips when ../shared
//! is absent.

use std::collections::BTreeSet;
use std::path::Path;

use mtr_llm::fake::FakeServer;

use crate::audit::{config, hashed, import_clapnq, mtr, read};

fn label_line(item: &str, queue: &str, label: &str, reviewer: &str, fp: &str) -> String {
    serde_json::json!({"item": item, "queue": queue, "label": label, "reviewer": reviewer,
        "time": "2026-01-01T00:00:00Z", "seconds": 2.5, "fingerprint": fp})
    .to_string()
}

/// `(dimension, turn, passage)` of every audited item, in file order, once each.
fn items(out: &Path) -> Vec<(String, String, String)> {
    let mut seen = BTreeSet::new();
    String::from_utf8(read(&out.join("items.jsonl")))
        .unwrap()
        .lines()
        .filter_map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let key = (
                v["dimension"].as_str()?.to_string(),
                v["turn_id"].as_str()?.to_string(),
                v["passage_id"].as_str().unwrap_or("").to_string(),
            );
            seen.insert(key.clone()).then_some(key)
        })
        .collect()
}

fn report(out: &Path) -> std::process::Output {
    mtr().args(["--quiet", "report"]).arg(out).output().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reviewed_estimates_and_corrections_end_to_end() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(bench) = import_clapnq(tmp.path()) else {
        return;
    };
    let fake = FakeServer::builder().respond(hashed).start().await.unwrap();
    let cfg = config(tmp.path(), fake.base_url(), 0.0);
    let out = tmp.path().join("audit");
    let o = mtr()
        .arg("--config")
        .arg(&cfg)
        .args(["--quiet", "audit"])
        .arg(&bench)
        .arg("-o")
        .arg(&out)
        .args(["--sample", "8", "--dimensions", "alignment,completeness"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    // without labels, `mtr report` changes nothing
    let files = ["summary.json", "report.md", "report.html"];
    let before: Vec<Vec<u8>> = files.iter().map(|f| read(&out.join(f))).collect();
    assert!(report(&out).status.success());
    for (f, b) in files.iter().zip(&before) {
        assert_eq!(&read(&out.join(f)), b, "{f} changed without labels");
    }

    // labels: `ann` on every item, `bob` on every third; one gold rejected, one suggestion
    // accepted in the flagged queue
    let summary = mtr_audit::output::read_summary(&out.join("summary.json")).unwrap();
    let fp = mtr_audit::review_estimates::audit_fingerprint(&summary);
    let all = items(&out);
    let mut lines = Vec::new();
    for (i, (dim, turn, passage)) in all.iter().enumerate() {
        let key = format!("{dim}|{turn}|{passage}");
        let label = if dim == "completeness" {
            if i % 2 == 0 {
                passage.clone()
            } else {
                "none".into()
            }
        } else {
            (1 + i % 5).to_string()
        };
        lines.push(label_line(&key, "sample", &label, "ann", &fp));
        if i % 3 == 0 {
            lines.push(label_line(&key, "sample", &label, "bob", &fp));
        }
    }
    let golds: Vec<&(String, String, String)> = all.iter().filter(|x| x.0 == "alignment").collect();
    let (rejected_turn, rejected) = (&golds[0].1, &golds[0].2);
    // a passage that is a gold of another turn: not relevant to this one before review
    let (accepted_turn, accepted) = (&golds[0].1, &golds.last().unwrap().2);
    assert_ne!(rejected, accepted);
    lines.push(label_line(
        &format!("gold|{rejected_turn}|{rejected}"),
        "flagged",
        "no",
        "ann",
        &fp,
    ));
    lines.push(label_line(
        &format!("missing|{accepted_turn}|{accepted}"),
        "flagged",
        "yes",
        "ann",
        &fp,
    ));
    let labels = mtr_audit::review_estimates::labels_path(&out);
    std::fs::create_dir_all(labels.parent().unwrap()).unwrap();
    std::fs::write(&labels, lines.join("\n") + "\n").unwrap();

    let o = report(&out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s: serde_json::Value = serde_json::from_slice(&read(&out.join("summary.json"))).unwrap();
    let a = &s["review"]["dimensions"]["alignment"];
    for way in ["judges", "reviewers", "ppi"] {
        assert!(a[way]["estimate"].is_number(), "{way}: {a}");
        assert!(a[way]["ci"]["lower"].is_number(), "{way}: {a}");
        assert!(a[way]["n"].as_u64().unwrap() > 0, "{way}: {a}");
    }
    let n_align = golds.len() as u64;
    assert_eq!(a["reviewers"]["n"], n_align);
    assert!(a["agreement"][0]["kappa"].is_number(), "{a}");
    assert_eq!(a["reviewers_agreement"]["who"], "ann vs bob");
    assert!(s["review"]["dimensions"]["completeness"]["ppi"]["estimate"].is_number());
    let md = String::from_utf8(read(&out.join("report.md"))).unwrap();
    assert!(
        md.contains("\n## Reviewed\n") && md.contains("Prediction-powered"),
        "{md}"
    );
    assert!(
        String::from_utf8(read(&out.join("report.html")))
            .unwrap()
            .contains("Reviewed</h2>")
    );
    // the summary still parses, and reporting again is stable
    let again = read(&out.join("summary.json"));
    assert!(report(&out).status.success());
    assert_eq!(read(&out.join("summary.json")), again);

    // the reviewed qrels: only the rejected gold removed, only the accepted passage added
    let q_orig = tmp.path().join("orig.tsv");
    let q_rev = tmp.path().join("reviewed.tsv");
    for (variant, path) in [("noise-removed", &q_orig), ("reviewed", &q_rev)] {
        let o = mtr()
            .args(["--quiet", "qrels", "apply"])
            .arg(&bench)
            .arg(&out)
            .args(["--variant", variant, "-o"])
            .arg(path)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let lines_of = |p: &Path| -> BTreeSet<String> {
        std::fs::read_to_string(p)
            .unwrap()
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (f[3].parse::<i32>().unwrap() > 0).then(|| format!("{} {}", f[0], f[2]))
            })
            .collect()
    };
    let original: BTreeSet<String> = mtr_core::BenchmarkDir::open(&bench)
        .unwrap()
        .qrels()
        .unwrap()
        .iter()
        .flat_map(|(q, d)| {
            d.iter()
                .filter(|(_, g)| **g > 0)
                .map(move |(p, _)| format!("{q} {p}"))
        })
        .collect();
    let reviewed = lines_of(&q_rev);
    let removed: Vec<&String> = original.difference(&reviewed).collect();
    let added: Vec<&String> = reviewed.difference(&original).collect();
    assert_eq!(removed, [&format!("{rejected_turn} {rejected}")]);
    assert_eq!(added, [&format!("{accepted_turn} {accepted}")]);
    assert!(lines_of(&q_orig).len() <= original.len());

    // labels of another audit are refused, by the report and by the corrections
    std::fs::write(
        &labels,
        label_line("alignment|x|y", "sample", "3", "ann", "another-audit") + "\n",
    )
    .unwrap();
    let o = report(&out);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("another audit"));
    let o = mtr()
        .args(["--quiet", "qrels", "apply"])
        .arg(&bench)
        .arg(&out)
        .args(["--variant", "reviewed", "-o"])
        .arg(&q_rev)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
