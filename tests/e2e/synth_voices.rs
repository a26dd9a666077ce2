//! `mtr synth --personas FILE|topics --seed-questions FILE` on the fake server with the
//! pipeline's scripted agents: each dialogue draws a persona (recorded on the dialogue, counted
//! in the report, shown to the user agent after the passages), seed questions are shown to
//! imitate and a question that copies one is rejected (its own reason, fed back, counted), a
//! rerun pays nothing and writes the same bytes, the fingerprint follows the persona file's
//! content, and a bad file exits 2 naming its line and field.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use assert_cmd::Command;
use mtr_llm::fake::FakeServer;
use mtr_pipeline::fake_agents::FakeAgents;
use serde_json::Value;

/// A fake server that keeps the user messages of every request.
async fn serve(agents: FakeAgents) -> (FakeServer, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let kept = seen.clone();
    let server = FakeServer::builder()
        .respond(move |r| {
            kept.lock().unwrap().push(r.last_user.clone());
            agents.reply(r)
        })
        .dims(64)
        .start()
        .await
        .unwrap();
    (server, seen)
}

/// The fake config, answerable turns only, concise style.
fn config(dir: &Path, base_url: &str) -> PathBuf {
    let p = crate::synth::fake_config(dir, "voices", base_url);
    let mut text = std::fs::read_to_string(&p).unwrap();
    text.push_str("[synth.style]\nprofile = \"concise\"\n[synth.mix]\npartial = 0.0\nunanswerable = 0.0\nconversational = 0.0\ntwo_passage = 0.0\n");
    std::fs::write(&p, text).unwrap();
    p
}

fn synth(config: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpora/en");
    Command::cargo_bin("mtr")
        .unwrap()
        .arg("--config")
        .arg(config)
        .arg("--quiet")
        .arg("synth")
        .arg("--corpus")
        .arg(corpus)
        .arg("-o")
        .arg(out)
        .args(["--dialogues", "4", "--turns", "2", "--seed", "5"])
        .args(extra)
        .output()
        .unwrap()
}

const PERSONAS: &str = r#"# who asks
[[persona]]
name = "Night-shift nurse"
description = "Works nights, knows the rules only from colleagues, types short questions on her phone."

[[persona]]
name = "New hire"
description = "Started last week, careful, writes complete and polite questions."

[[persona]]
name = "Team lead"
description = "Manages eight people and asks about their cases, in a hurry."
"#;

/// Off-topic seeds (sports and taxes): their wording never occurs in the HR corpus.
const SEEDS: &str = "# real questions\nhow many teams play in the nfl playoffs?\nwhen is the deadline for filing my state tax return?\nwhich team has won the most super bowls?\ncan i deduct my home office from federal taxes?\n";

fn dialogues(out: &Path) -> Vec<Value> {
    std::fs::read_to_string(out.join("dialogues.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn fingerprint(out: &Path) -> String {
    let t: toml::Table = std::fs::read_to_string(out.join("benchmark.toml"))
        .unwrap()
        .parse()
        .unwrap();
    t["extra"]["synth"]["fingerprint"].to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn personas_and_seeds_shape_the_user_and_a_copied_seed_is_rejected() {
    let tmp = tempfile::tempdir().unwrap();
    let agents = FakeAgents {
        copy_seed: true,
        ..Default::default()
    };
    let (fake, seen) = serve(agents).await;
    let cfg = config(tmp.path(), fake.base_url());
    let personas = tmp.path().join("personas.toml");
    std::fs::write(&personas, PERSONAS).unwrap();
    let seeds = tmp.path().join("seeds.txt");
    std::fs::write(&seeds, SEEDS).unwrap();
    let out = tmp.path().join("bench");
    let args = [
        "--personas",
        personas.to_str().unwrap(),
        "--seed-questions",
        seeds.to_str().unwrap(),
    ];

    let dry = synth(&cfg, &out, &[&args[..], &["--dry-run"]].concat());
    assert!(
        dry.status.success(),
        "{}",
        String::from_utf8_lossy(&dry.stderr)
    );
    assert_eq!(fake.chat_calls(), 0);

    let o = synth(&cfg, &out, &args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let names = ["Night-shift nurse", "New hire", "Team lead"];
    let ds = dialogues(&out);
    assert!(!ds.is_empty());
    for d in &ds {
        let p = d["meta"]["persona"].as_str().unwrap_or_default();
        assert!(names.contains(&p), "{d}");
    }
    // the user agent was shown a persona and seed questions, after the passages
    let prompts = seen.lock().unwrap().clone();
    let user: Vec<&String> = prompts
        .iter()
        .filter(|p| p.contains("## Passages"))
        .collect();
    assert!(!user.is_empty());
    for p in &user {
        let at = |s: &str| p.find(s).unwrap_or_else(|| panic!("no {s}: {p}"));
        assert!(at("## Who you are") > at("## Passages"), "{p}");
        assert!(at("## How real users ask") > at("## Who you are"), "{p}");
    }
    // every first attempt copied a seed: rejected, fed back, the retry accepted
    let seed_lines: Vec<&str> = SEEDS.lines().filter(|l| !l.starts_with('#')).collect();
    let mut turns = 0;
    for d in &ds {
        for t in d["turns"].as_array().unwrap() {
            turns += 1;
            let q = t["user"].as_str().unwrap().to_lowercase();
            assert!(
                !seed_lines
                    .iter()
                    .any(|s| q.contains(s.trim_end_matches('?'))),
                "{t}"
            );
            assert_eq!(t["tags"]["attempts"], 2, "{t}");
        }
    }
    assert!(turns > 0);
    assert!(
        prompts
            .iter()
            .any(|p| p.contains("nearly copied one of the real users' questions")),
        "the rejection was not fed back"
    );
    let report = std::fs::read_to_string(out.join("synth_report.md")).unwrap();
    assert!(
        report.contains("## Personas and seed questions"),
        "{report}"
    );
    assert!(
        report.contains(&format!(
            "Attempts rejected as near copies of a seed question: {turns}"
        )),
        "{report}"
    );
    assert!(report.contains("| user | near_copy_seed |"), "{report}");
    assert!(
        report.contains("Seed questions: 4 from seeds.txt"),
        "{report}"
    );
    // recorded by file name, never the local path
    let manifest = std::fs::read_to_string(out.join("benchmark.toml")).unwrap();
    assert!(manifest.contains("personas.toml"), "{manifest}");
    assert!(!manifest.contains(personas.to_str().unwrap()), "{manifest}");

    // a rerun resumes: no new call, the same bytes
    let calls = fake.chat_calls();
    let before = std::fs::read(out.join("dialogues.jsonl")).unwrap();
    let fp = fingerprint(&out);
    let again = synth(&cfg, &out, &args);
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert_eq!(fake.chat_calls(), calls, "a rerun paid for calls");
    assert_eq!(std::fs::read(out.join("dialogues.jsonl")).unwrap(), before);
    assert_eq!(fingerprint(&out), fp);

    // another persona file: another fingerprint
    std::fs::write(&personas, PERSONAS.replace("in a hurry", "calmly")).unwrap();
    let changed = synth(&cfg, &out, &args);
    assert!(
        changed.status.success(),
        "{}",
        String::from_utf8_lossy(&changed.stderr)
    );
    assert_ne!(fingerprint(&out), fp);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn personas_drawn_from_topics_are_written_once_and_a_failed_one_is_counted() {
    let tmp = tempfile::tempdir().unwrap();
    let (fake, _) = serve(FakeAgents::default()).await;
    let cfg = config(tmp.path(), fake.base_url());
    let out = tmp.path().join("bench");
    let dry = synth(&cfg, &out, &["--personas", "topics", "--dry-run"]);
    let plan = String::from_utf8_lossy(&dry.stdout).to_string();
    assert!(
        dry.status.success(),
        "{}",
        String::from_utf8_lossy(&dry.stderr)
    );
    assert!(plan.contains("persona"), "{plan}");
    let o = synth(&cfg, &out, &["--personas", "topics"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for d in dialogues(&out) {
        assert!(
            d["meta"]["persona"]
                .as_str()
                .unwrap()
                .starts_with("reader of"),
            "{d}"
        );
    }
    let report = std::fs::read_to_string(out.join("synth_report.md")).unwrap();
    assert!(report.contains("Personas from topics"), "{report}");
    assert!(report.contains("| persona |"), "{report}");
    let calls = fake.chat_calls();
    let again = synth(&cfg, &out, &["--personas", "topics"]);
    assert!(again.status.success());
    assert_eq!(fake.chat_calls(), calls, "a rerun paid for calls");

    // unparsable personas: the dialogues ask without one, counted
    let tmp = tempfile::tempdir().unwrap();
    let agents = FakeAgents {
        persona_unparsable: true,
        ..Default::default()
    };
    let (fake, _) = serve(agents).await;
    let cfg = config(tmp.path(), fake.base_url());
    let out = tmp.path().join("bench");
    let o = synth(&cfg, &out, &["--personas", "topics"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for d in dialogues(&out) {
        assert!(d["meta"].get("persona").is_none(), "{d}");
    }
    let report = std::fs::read_to_string(out.join("synth_report.md")).unwrap();
    assert!(
        report.contains("Topics whose persona call failed or could not be parsed"),
        "{report}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_persona_or_seed_file_exits_2_naming_its_line_and_field() {
    let tmp = tempfile::tempdir().unwrap();
    let (fake, _) = serve(FakeAgents::default()).await;
    let cfg = config(tmp.path(), fake.base_url());
    let out = tmp.path().join("bench");
    let cases = [
        (
            "--personas",
            "dup.txt",
            "Nurse: nights\nLead: days\nNurse: again\n",
            "dup.txt:3: field `name`",
        ),
        (
            "--personas",
            "p.jsonl",
            "{\"name\": \"A\", \"description\": \"x\"}\n{\"name\": \"B\"}\n",
            "p.jsonl:2: field `description`",
        ),
        (
            "--personas",
            "empty.toml",
            "# nothing\n",
            "empty.toml: the persona file is empty",
        ),
        (
            "--seed-questions",
            "s.jsonl",
            "{\"question\": \"a?\"}\n{\"title\": \"b\"}\n",
            "s.jsonl:2: field `question`",
        ),
        (
            "--seed-questions",
            "s.tsv",
            "q1\tone?\nno tab\n",
            "s.tsv:2: field `text`",
        ),
    ];
    for (flag, name, text, want) in cases {
        let f = tmp.path().join(name);
        std::fs::write(&f, text).unwrap();
        for dry in [false, true] {
            let mut extra = vec![flag, f.to_str().unwrap()];
            if dry {
                extra.push("--dry-run");
            }
            let o = synth(&cfg, &out, &extra);
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{name} (dry run {dry}): {err}");
            assert!(err.contains(want), "{name}: {err}");
        }
    }
    let o = synth(&cfg, &out, &["--seed-questions", "/no/such/seeds.txt"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("seeds.txt"));
    assert_eq!(fake.chat_calls(), 0);
}
