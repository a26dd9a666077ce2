//! `mtr synth` with a `[synth.mix]` that asks for turn kinds beyond answerable questions on one
//! passage, on the fake server with the pipeline's scripted agents: the turns drawn
//! `unanswerable` are made and verified as such (tagged, gold empty, a reference answer that
//! says the documents do not hold it), the report's Turn mix counts them as obtained, the dry
//! run plans their calls, and `mtr bench` leaves them out of its measures and counts them, as
//! it does MTRAG's own unanswerable turns; the turns drawn `two_passage` are made on two
//! passages of one topic path, both gold, tagged Composite or Comparative; the turns drawn
//! `conversational` (after a first) need no retrieval and have no gold; the turns drawn
//! `partial` have their passage as gold, a reference answer that gives the found part and says
//! the rest is not in the documents, are rejected when a passage answers their missing part or
//! their answered part fails its check, and `mtr bench` scores them.

use std::path::Path;

use assert_cmd::Command;
use mtr_llm::fake::FakeServer;
use mtr_pipeline::fake_agents::FakeAgents;
use serde_json::Value;

fn mtr() -> Command {
    Command::cargo_bin("mtr").unwrap()
}

async fn fake(agents: FakeAgents) -> FakeServer {
    FakeServer::builder()
        .respond(move |r| agents.reply(r))
        .dims(64)
        .start()
        .await
        .unwrap()
}

/// The fake config with `mix` as `[synth.mix]`.
fn config(dir: &Path, base_url: &str, mix: &str) -> std::path::PathBuf {
    let p = crate::synth::fake_config(dir, "kinds", base_url);
    let mut text = std::fs::read_to_string(&p).unwrap();
    text.push_str(&format!(
        "[synth.style]\nprofile = \"concise\"\n[synth.mix]\n{mix}"
    ));
    std::fs::write(&p, text).unwrap();
    p
}

fn synth(config: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpora/en");
    mtr()
        .arg("--config")
        .arg(config)
        .arg("--quiet")
        .arg("synth")
        .arg("--corpus")
        .arg(corpus)
        .arg("-o")
        .arg(out)
        .args(["--dialogues", "4", "--turns", "3", "--seed", "11"])
        .args(extra)
        .output()
        .unwrap()
}

/// Every turn of the benchmark at `out`.
fn turns(out: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(out.join("dialogues.jsonl")).unwrap();
    text.lines()
        .flat_map(|l| {
            let d: Value = serde_json::from_str(l).unwrap();
            d["turns"].as_array().cloned().unwrap_or_default()
        })
        .collect()
}

/// The report's Turn mix row of `kind`: (asked, drawn, obtained).
fn mix_row(report: &str, kind: &str) -> (String, usize, usize) {
    let row = report
        .lines()
        .find(|l| l.starts_with(&format!("| {kind} |")))
        .unwrap_or_else(|| panic!("no {kind} row: {report}"));
    let cells: Vec<&str> = row.split('|').map(str::trim).collect();
    (
        cells[2].to_string(),
        cells[3].parse().unwrap(),
        cells[4].parse().unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_drawn_unanswerable_are_made_verified_and_left_out_of_bench_measures() {
    let tmp = tempfile::tempdir().unwrap();
    let fake = fake(FakeAgents::default()).await;
    let mix = "partial = 0.0\nunanswerable = 0.5\nconversational = 0.0\ntwo_passage = 0.0\n";
    let cfg = config(tmp.path(), fake.base_url(), mix);
    let out = tmp.path().join("bench");

    // the dry run plans the unanswerable turns' own calls
    let dry = synth(&cfg, &out, &["--dry-run"]);
    assert!(
        dry.status.success(),
        "{}",
        String::from_utf8_lossy(&dry.stderr)
    );
    let plan = String::from_utf8_lossy(&dry.stdout).to_string();
    assert!(plan.contains("unanswerable"), "{plan}");
    assert_eq!(fake.chat_calls(), 0);

    let o = synth(&cfg, &out, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let all = turns(&out);
    let tag = |t: &Value, k: &str| t["tags"][k].as_str().map(str::to_string);
    let unanswerable: Vec<&Value> = all
        .iter()
        .filter(|t| tag(t, "answerability").as_deref() == Some("unanswerable"))
        .collect();
    assert!(!unanswerable.is_empty(), "no unanswerable turn");
    assert!(unanswerable.len() < all.len(), "no answerable turn");
    for t in &all {
        for k in ["answerability", "multi_turn_type", "question_type"] {
            assert!(tag(t, k).is_some(), "{k} missing: {t}");
        }
        let gold = t["gold"].as_array().map_or(0, Vec::len);
        if tag(t, "answerability").as_deref() == Some("unanswerable") {
            assert_eq!(gold, 0, "{t}");
            assert!(
                t["answer"].as_str().unwrap().contains("could not find"),
                "{t}"
            );
            assert!(t["tags"].get("evidence").is_none(), "{t}");
        } else {
            assert_eq!(tag(t, "answerability").as_deref(), Some("answerable"));
            assert!(gold >= 1, "{t}");
        }
    }
    let report = std::fs::read_to_string(out.join("synth_report.md")).unwrap();
    let (asked, drawn, obtained) = mix_row(&report, "unanswerable");
    assert_eq!(asked, "50.0%");
    assert_eq!(obtained, unanswerable.len(), "{report}");
    assert!(drawn >= obtained);
    assert!(report.contains("| unanswerable | verified |"), "{report}");

    stats_validate_and_bench(tmp.path(), &out, unanswerable.len());
}

/// `mtr stats` counts the `unanswerable` turns of the benchmark at `out`, `mtr validate`
/// accepts them (no gold), and `mtr bench` leaves them out of its measures and counts them.
fn stats_validate_and_bench(tmp: &Path, out: &Path, unanswerable: usize) {
    // `mtr stats` counts the type; `mtr validate` accepts turns with no gold
    let stats = mtr().arg("stats").arg(out).output().unwrap();
    let text = String::from_utf8_lossy(&stats.stdout).to_string();
    assert!(stats.status.success(), "{text}");
    assert!(
        text.contains(&format!("unanswerable {unanswerable}"))
            || text.contains(&format!("unanswerable: {unanswerable}"))
            || text.contains(&format!("unanswerable={unanswerable}")),
        "{text}"
    );
    let v = mtr().arg("validate").arg(out).output().unwrap();
    assert!(v.status.success(), "{}", String::from_utf8_lossy(&v.stderr));

    // bench: no gold, so not scored, and counted (as MTRAG's unanswerable turns are)
    let results = tmp.join("results");
    let b = mtr()
        .arg("--quiet")
        .arg("bench")
        .arg(out)
        .arg("-o")
        .arg(&results)
        .args(["--retriever", "bm25", "--resamples", "100"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&b.stderr).to_string();
    assert!(b.status.success(), "{err}");
    let said = format!("{unanswerable} turns have no passage judged relevant and are not scored");
    let written: String = std::fs::read_dir(&results)
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.unwrap().path()).ok())
        .collect();
    assert!(written.contains(&said) || err.contains(&said), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswerable_question_that_a_passage_answers_is_rejected_and_the_turn_dropped() {
    let tmp = tempfile::tempdir().unwrap();
    let agents = FakeAgents {
        unanswerable_answered: true,
        ..Default::default()
    };
    let fake = fake(agents).await;
    let mix = "partial = 0.0\nunanswerable = 1.0\nconversational = 0.0\ntwo_passage = 0.0\n";
    let cfg = config(tmp.path(), fake.base_url(), mix);
    let out = tmp.path().join("bench");
    let o = synth(&cfg, &out, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report = std::fs::read_to_string(out.join("synth_report.md")).unwrap();
    let (_, drawn, obtained) = mix_row(&report, "unanswerable");
    assert_eq!((drawn, obtained), (12, 0), "{report}");
    assert!(
        report.contains("| dropped | unanswerable | 12 |"),
        "{report}"
    );
    assert!(report.contains("| unanswerable | answered |"), "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_drawn_two_passage_have_two_golds_and_are_composite_or_comparative() {
    let tmp = tempfile::tempdir().unwrap();
    let fake = fake(FakeAgents::default()).await;
    let mix = "partial = 0.0\nunanswerable = 0.0\nconversational = 0.0\ntwo_passage = 0.5\n";
    let cfg = config(tmp.path(), fake.base_url(), mix);
    let out = tmp.path().join("bench");
    let dry = synth(&cfg, &out, &["--dry-run"]);
    assert!(
        dry.status.success(),
        "{}",
        String::from_utf8_lossy(&dry.stderr)
    );
    assert!(String::from_utf8_lossy(&dry.stdout).contains("two_passage"));
    let o = synth(&cfg, &out, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let all = turns(&out);
    let two: Vec<&Value> = all
        .iter()
        .filter(|t| t["gold"].as_array().is_some_and(|g| g.len() == 2))
        .collect();
    assert!(!two.is_empty(), "no two-passage turn");
    // the paths of the dialogues, by chunk id: both golds come from the dialogue's own passages
    for t in &two {
        let gold = t["gold"].as_array().unwrap();
        assert!(gold.iter().all(|g| g["grade"] == 2), "{t}");
        assert_ne!(gold[0]["passage_id"], gold[1]["passage_id"], "{t}");
        let qt = t["tags"]["question_type"].as_str().unwrap();
        assert!(qt == "Composite" || qt == "Comparative", "{t}");
        assert_eq!(t["tags"]["answerability"], "answerable", "{t}");
    }
    let report = std::fs::read_to_string(out.join("synth_report.md")).unwrap();
    let (asked, drawn, obtained) = mix_row(&report, "two-passage");
    assert_eq!(asked, "50.0%");
    assert_eq!(obtained, two.len(), "{report}");
    assert!(drawn >= obtained);
    assert!(report.contains("| two_passage | verified |"), "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_two_passage_question_one_passage_answers_alone_is_rejected() {
    let tmp = tempfile::tempdir().unwrap();
    let agents = FakeAgents {
        two_passage_one_suffices: true,
        ..Default::default()
    };
    let fake = fake(agents).await;
    let mix = "partial = 0.0\nunanswerable = 0.0\nconversational = 0.0\ntwo_passage = 1.0\n";
    let cfg = config(tmp.path(), fake.base_url(), mix);
    let out = tmp.path().join("bench");
    let o = synth(&cfg, &out, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report = std::fs::read_to_string(out.join("synth_report.md")).unwrap();
    let (_, drawn, obtained) = mix_row(&report, "two-passage");
    assert_eq!((drawn, obtained), (12, 0), "{report}");
    assert!(
        report.contains("| two_passage | one_suffices |"),
        "{report}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_drawn_conversational_need_no_retrieval_and_have_no_gold() {
    let tmp = tempfile::tempdir().unwrap();
    let fake = fake(FakeAgents::default()).await;
    let mix = "partial = 0.0\nunanswerable = 0.0\nconversational = 0.5\ntwo_passage = 0.0\n";
    let cfg = config(tmp.path(), fake.base_url(), mix);
    let out = tmp.path().join("bench");
    let dry = synth(&cfg, &out, &["--dry-run"]);
    assert!(
        dry.status.success(),
        "{}",
        String::from_utf8_lossy(&dry.stderr)
    );
    assert!(String::from_utf8_lossy(&dry.stdout).contains("conversational"));
    let o = synth(&cfg, &out, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let all = turns(&out);
    let conv: Vec<&Value> = all
        .iter()
        .filter(|t| t["tags"]["answerability"] == "conversational")
        .collect();
    assert!(!conv.is_empty(), "no conversational turn");
    for t in &conv {
        assert_eq!(t["gold"].as_array().map_or(0, Vec::len), 0, "{t}");
        assert!(!t["id"].as_str().unwrap().ends_with("::1"), "{t}");
        let asks = t["user"].as_str().unwrap().ends_with('?');
        let mt = t["tags"]["multi_turn_type"].as_str().unwrap();
        let qt = t["tags"]["question_type"].as_str().unwrap();
        if asks {
            assert_eq!(mt, "Clarification", "{t}");
        } else {
            assert_eq!(qt, "Non-Question", "{t}");
        }
    }
    let report = std::fs::read_to_string(out.join("synth_report.md")).unwrap();
    let (asked, drawn, obtained) = mix_row(&report, "conversational");
    assert_eq!(asked, "50.0%");
    assert_eq!(obtained, conv.len(), "{report}");
    assert!(drawn >= obtained);
    assert!(report.contains("| conversational | verified |"), "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversational_message_that_needs_a_search_is_rejected() {
    let tmp = tempfile::tempdir().unwrap();
    let agents = FakeAgents {
        conversational_needs_search: true,
        ..Default::default()
    };
    let fake = fake(agents).await;
    let mix = "partial = 0.0\nunanswerable = 0.0\nconversational = 1.0\ntwo_passage = 0.0\n";
    let cfg = config(tmp.path(), fake.base_url(), mix);
    let out = tmp.path().join("bench");
    let o = synth(&cfg, &out, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report = std::fs::read_to_string(out.join("synth_report.md")).unwrap();
    // the first turns are made answerable (nothing to react to yet), the others rejected
    let (_, drawn, obtained) = mix_row(&report, "conversational");
    assert_eq!((drawn, obtained), (12, 0), "{report}");
    assert!(
        report.contains("| conversational | needs_search |"),
        "{report}"
    );
    assert_eq!(mix_row(&report, "answerable").2, 4, "{report}");
}

/// The partial turns of the benchmark at `out`.
fn partial_turns(out: &Path) -> Vec<Value> {
    turns(out)
        .into_iter()
        .filter(|t| t["tags"]["answerability"] == "partial")
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_drawn_partial_have_their_passage_as_gold_and_say_what_is_missing() {
    let tmp = tempfile::tempdir().unwrap();
    let fake = fake(FakeAgents::default()).await;
    let mix = "partial = 0.5\nunanswerable = 0.0\nconversational = 0.0\ntwo_passage = 0.0\n";
    let cfg = config(tmp.path(), fake.base_url(), mix);
    let out = tmp.path().join("bench");

    // the dry run plans the partial turns' calls: only they call the unanswerable verifier here
    let dry = synth(&cfg, &out, &["--dry-run"]);
    assert!(
        dry.status.success(),
        "{}",
        String::from_utf8_lossy(&dry.stderr)
    );
    let plan = String::from_utf8_lossy(&dry.stdout).to_string();
    assert!(plan.contains("unanswerable"), "{plan}");
    assert_eq!(fake.chat_calls(), 0);

    let o = synth(&cfg, &out, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let all = turns(&out);
    let partial = partial_turns(&out);
    assert!(!partial.is_empty(), "no partial turn");
    assert!(partial.len() < all.len(), "no answerable turn");
    for t in &partial {
        let gold = t["gold"].as_array().unwrap();
        assert_eq!(gold.len(), 1, "{t}");
        assert_eq!(gold[0]["grade"], 2, "{t}");
        assert_eq!(gold[0]["passage_id"], t["tags"]["evidence"], "{t}");
        let answer = t["answer"].as_str().unwrap();
        assert!(answer.starts_with("According to the handbook: "), "{t}");
        assert!(
            answer.contains("could not find the answer to the rest of your question"),
            "{t}"
        );
        let missing = t["tags"]["missing_part"].as_str().unwrap();
        assert!(answer.contains(missing.trim_end_matches('?')), "{t}");
        assert!(t["tags"]["answered_part"].as_str().is_some(), "{t}");
        assert!(t["tags"]["faithfulness_score"].as_i64() >= Some(4), "{t}");
        let user = t["user"].as_str().unwrap();
        assert!(user.contains(" and "), "one question, two parts: {t}");
    }
    let report = std::fs::read_to_string(out.join("synth_report.md")).unwrap();
    let (asked, drawn, obtained) = mix_row(&report, "partial");
    assert_eq!(asked, "50.0%");
    assert_eq!(obtained, partial.len(), "{report}");
    assert!(drawn >= obtained);
    assert!(report.contains("| partial | verified |"), "{report}");
    assert!(!report.contains("partial is made answerable"), "{report}");

    // bench scores them (they have gold) and shows them as an answerability stratum
    let results = tmp.path().join("results");
    let b = mtr()
        .arg("--quiet")
        .arg("bench")
        .arg(&out)
        .arg("-o")
        .arg(&results)
        .args(["--retriever", "bm25", "--resamples", "100"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&b.stderr).to_string();
    assert!(b.status.success(), "{err}");
    let written: String = std::fs::read_dir(&results)
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.unwrap().path()).ok())
        .collect();
    assert!(!written.contains("are not scored"), "{written}");
    assert!(written.contains("### answerability"), "{written}");
    let stratum = format!(" partial (n={}", partial.len());
    assert!(written.contains(&stratum), "{written}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partial_turn_whose_missing_part_a_passage_answers_is_rejected() {
    let tmp = tempfile::tempdir().unwrap();
    let agents = FakeAgents {
        unanswerable_answered: true,
        ..Default::default()
    };
    let fake = fake(agents).await;
    let mix = "partial = 1.0\nunanswerable = 0.0\nconversational = 0.0\ntwo_passage = 0.0\n";
    let cfg = config(tmp.path(), fake.base_url(), mix);
    let out = tmp.path().join("bench");
    let o = synth(&cfg, &out, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report = std::fs::read_to_string(out.join("synth_report.md")).unwrap();
    let (_, drawn, obtained) = mix_row(&report, "partial");
    assert_eq!((drawn, obtained), (12, 0), "{report}");
    assert!(report.contains("| dropped | partial | 12 |"), "{report}");
    assert!(
        report.contains("| partial | missing_answered |"),
        "{report}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partial_turn_whose_answered_part_fails_its_check_is_rejected() {
    let tmp = tempfile::tempdir().unwrap();
    let agents = FakeAgents {
        answerability: 1,
        ..Default::default()
    };
    let fake = fake(agents).await;
    let mix = "partial = 1.0\nunanswerable = 0.0\nconversational = 0.0\ntwo_passage = 0.0\n";
    let cfg = config(tmp.path(), fake.base_url(), mix);
    let out = tmp.path().join("bench");
    let o = synth(&cfg, &out, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report = std::fs::read_to_string(out.join("synth_report.md")).unwrap();
    let (_, drawn, obtained) = mix_row(&report, "partial");
    assert_eq!((drawn, obtained), (12, 0), "{report}");
    assert!(
        report.contains("| dropped | answerability | 12 |"),
        "{report}"
    );
    assert!(report.contains("| partial | answerability |"), "{report}");
    // the missing part is never checked for an answered part that failed
    assert!(!report.contains("| partial | verified |"), "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rerun_of_a_synthesis_with_partial_turns_makes_no_new_call() {
    let tmp = tempfile::tempdir().unwrap();
    let fake = fake(FakeAgents::default()).await;
    let mix = "partial = 0.5\nunanswerable = 0.0\nconversational = 0.0\ntwo_passage = 0.0\n";
    let cfg = config(tmp.path(), fake.base_url(), mix);
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let o = synth(&cfg, &a, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!partial_turns(&a).is_empty(), "no partial turn");
    let calls = fake.chat_calls();
    assert!(calls > 0);
    let o = synth(&cfg, &b, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        fake.chat_calls(),
        calls,
        "the rerun is answered from the cache"
    );
    let read = |p: &Path| std::fs::read(p.join("dialogues.jsonl")).unwrap();
    assert_eq!(read(&a), read(&b), "same inputs and seed: the same bytes");
}
