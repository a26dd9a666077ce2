//! `mtr audit --time-budget` on the fake server over the imported MTRAG clapnq benchmark: the
//! judges are configured slow (hours a dialogue at their stated speed), so the plan, not the
//! clock, decides which dialogues are audited, and the run-time deadline never comes near.
//! `--dry-run` lists what each dialogue adds; a budget of three and a half of them audits
//! three and says so on stderr and in summary.json; a rerun without a budget judges only the
//! other dialogues, with the same fingerprint. Skips when ../shared is absent.

use std::path::{Path, PathBuf};

use mtr_llm::fake::FakeServer;

use crate::audit::{hashed, import_clapnq, mtr};

/// An mtr.toml with two slow judges on the fake server: 100 expected answer tokens at 0.01 a
/// second over 4 streams, 2,500 s a call.
fn slow_config(dir: &Path, base_url: &str) -> PathBuf {
    let p = dir.join("slow.toml");
    let mut t = format!(
        "[llm]\ncache = \"{}\"\n",
        dir.join("cache.sqlite").display()
    );
    for n in ["judge-a", "judge-b"] {
        t.push_str(&format!(
            "[[llm.endpoints]]\nname = \"{n}\"\nbase_url = \"{base_url}\"\nmodel = \"{n}-model\"\nmax_concurrency = 4\ntimeout_s = 30\noutput_tokens_per_s = 0.01\nexpected_completion_tokens = 100\n"
        ));
    }
    t.push_str("[llm.roles]\njudges = [\"judge-a\", \"judge-b\"]\n[audit]\nresamples = 100\n");
    std::fs::write(&p, t).unwrap();
    p
}

/// Runs `mtr audit` on 6 sampled dialogues (alignment and quality) with the extra flags; it
/// must succeed. Returns stdout and stderr.
fn audit(config: &Path, bench: &Path, out: &Path, extra: &[&str]) -> (String, String) {
    let o = mtr()
        .arg("--config")
        .arg(config)
        .arg("--quiet")
        .arg("audit")
        .arg(bench)
        .arg("-o")
        .arg(out)
        .args(["--sample", "6", "--dimensions", "alignment,quality"])
        .args(extra)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(o.status.success(), "{stderr}");
    (String::from_utf8_lossy(&o.stdout).to_string(), stderr)
}

/// The dialogues of a dry run's `dialogues the budget would start (n): id (+6h 57m), ...`.
fn listed(stdout: &str) -> Vec<(String, f64)> {
    let line = stdout
        .lines()
        .find(|l| l.starts_with("dialogues the budget would start"))
        .unwrap_or_else(|| panic!("no dialogue list in {stdout}"));
    let (_, list) = line.split_once("): ").unwrap();
    list.split(", ")
        .map(|d| {
            let (id, secs) = d.split_once(" (+").unwrap();
            let secs = mtr_llm::budget::parse_duration(secs.trim_end_matches(')')).unwrap();
            (id.to_string(), secs.as_secs_f64())
        })
        .collect()
}

fn summary(out: &Path) -> serde_json::Value {
    serde_json::from_slice(&crate::audit::read(&out.join("summary.json"))).unwrap()
}

fn item_lines(out: &Path) -> Vec<serde_json::Value> {
    String::from_utf8(crate::audit::read(&out.join("items.jsonl")))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_budget_audits_what_fits_and_a_rerun_finishes() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(bench) = import_clapnq(tmp.path()) else {
        return;
    };
    let fake = FakeServer::builder().respond(hashed).start().await.unwrap();
    let cfg = slow_config(tmp.path(), fake.base_url());
    let out = tmp.path().join("audit");

    // the dry run lists every dialogue with the time it adds
    let (plan, _) = audit(
        &cfg,
        &bench,
        &out,
        &["--dry-run", "--time-budget", "100000h"],
    );
    assert!(
        plan.contains("would audit 6 of 6 planned dialogues"),
        "{plan}"
    );
    let all = listed(&plan);
    assert_eq!(all.len(), 6, "{plan}");
    assert!(all[3].1 >= 4.0 * 2500.0, "{plan}");
    assert_eq!(fake.chat_calls(), 0, "a dry run calls nothing");
    // three and a half dialogues' time: three fit, with hours to spare either way
    let secs: f64 = all[..3].iter().map(|d| d.1).sum::<f64>() + all[3].1 / 2.0;
    let budget = format!("{}s", secs.round());
    let (plan, _) = audit(&cfg, &bench, &out, &["--dry-run", "--time-budget", &budget]);
    assert!(
        plan.contains("would audit 3 of 6 planned dialogues"),
        "{plan}"
    );
    assert_eq!(listed(&plan).len(), 3);

    // the run audits those three and says so
    let (stdout, stderr) = audit(&cfg, &bench, &out, &["--time-budget", &budget]);
    assert!(
        stderr.contains("auditing 3 of 6 planned dialogues")
            && stderr.contains("3 of 6 planned dialogues are not audited yet"),
        "{stderr}"
    );
    assert!(stdout.contains("incomplete: time budget"), "{stdout}");
    let first = summary(&out);
    let tb = &first["time_budget"];
    assert_eq!(tb["dialogues_audited"], 3, "{tb}");
    assert_eq!(tb["dialogues_left"], 3, "{tb}");
    assert_eq!(tb["deadline_stopped"], false, "{tb}");
    let report = String::from_utf8(crate::audit::read(&out.join("report.md"))).unwrap();
    assert!(report.contains("Time budget"), "{report}");
    let items = item_lines(&out);
    let started: Vec<&str> = all[..3].iter().map(|d| d.0.as_str()).collect();
    assert!(
        items
            .iter()
            .all(|j| started.contains(&j["dialogue_id"].as_str().unwrap()))
    );
    let calls = fake.chat_calls();
    assert_eq!(calls, items.len() as u64);

    // without a budget the rerun judges only the other three, under the same fingerprint
    let (_, stderr) = audit(&cfg, &bench, &out, &[]);
    assert!(!stderr.contains("time budget"), "{stderr}");
    let second = summary(&out);
    assert_eq!(second["complete"], true);
    assert!(second.get("time_budget").is_none());
    assert_eq!(second["fingerprint"], first["fingerprint"]);
    let all_items = item_lines(&out);
    assert_eq!(
        fake.chat_calls() - calls,
        (all_items.len() - items.len()) as u64
    );
}
