//! Synthesis end to end on the LLM layer's fake server with scripted agents: the verifier's
//! uniqueness decisions (extra gold, regeneration, drop), language guards, and resuming an
//! interrupted run without repeating calls.

#![cfg(test)]

use std::path::{Path, PathBuf};

use mtr_core::BenchmarkDir;
use mtr_llm::fake::FakeServer;
use mtr_llm::{Llm, LlmConfig, LlmOptions, Roles};
use mtr_pipeline::StyleOptions;
use mtr_pipeline::fake_agents::{FakeAgents, RepeatScript, UniquenessScript};
use mtr_pipeline::{SynthConfig, SynthJob, SynthPrompts};

mod resume;
mod style;

fn corpora() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpora")
}

async fn fake(agents: FakeAgents) -> FakeServer {
    FakeServer::builder()
        .respond(move |r| agents.reply(r))
        .dims(64)
        .start()
        .await
        .unwrap()
}

async fn llm(fake: &FakeServer, cache: &Path) -> Llm {
    llm_with_budget(fake, cache, None).await
}

async fn llm_with_budget(fake: &FakeServer, cache: &Path, max_cost: Option<f64>) -> Llm {
    llm_configured(fake, cache, max_cost, false).await
}

/// The fake endpoints; `verdict_first` on the judge as on the embedded local endpoints.
async fn llm_configured(
    fake: &FakeServer,
    cache: &Path,
    max_cost: Option<f64>,
    verdict_first: bool,
) -> Llm {
    let mut gen_ep = fake.endpoint("gen", "fake-gen");
    gen_ep.price_in_per_mtok = 1.0;
    gen_ep.price_out_per_mtok = 2.0;
    let mut judge = fake.endpoint("judge", "fake-judge");
    judge.price_in_per_mtok = 0.5;
    judge.price_out_per_mtok = 1.0;
    judge.verdict_first = verdict_first;
    let cfg = LlmConfig {
        endpoints: vec![gen_ep, judge, fake.endpoint("emb", "fake-emb")],
        roles: Roles {
            judges: vec!["judge".into()],
            generator: vec!["gen".into()],
            embedder: vec!["emb".into()],
        },
        ..Default::default()
    };
    Llm::new(
        cfg,
        LlmOptions {
            cache_path: Some(cache.to_path_buf()),
            max_cost,
            ..Default::default()
        },
    )
    .await
    .unwrap()
}

/// The mix these tests were written for: answerable single-passage turns only (the default
/// mix draws some turns unanswerable, with no gold: `tests/e2e/synth_kinds.rs`).
fn answerable_only() -> mtr_pipeline::MixOptions {
    mtr_pipeline::MixOptions {
        partial: 0.0,
        unanswerable: 0.0,
        conversational: 0.0,
        two_passage: 0.0,
    }
}

/// The style these tests were written for: today's (a fake endpoint would get `production`).
fn concise() -> StyleOptions {
    StyleOptions {
        profile: Some("concise".into()),
    }
}

fn job(corpus: &Path, out: &Path, dialogues: usize, turns: usize) -> SynthJob {
    let cfg = SynthConfig {
        dialogues,
        turns,
        seed: 7,
        style: concise(),
        mix: answerable_only(),
        ..Default::default()
    };
    SynthJob::new(corpus, out, cfg, SynthPrompts::builtin().unwrap())
}

async fn run(
    agents: FakeAgents,
    corpus: &Path,
    dialogues: usize,
    turns: usize,
) -> (tempfile::TempDir, mtr_pipeline::SynthOutcome) {
    let tmp = tempfile::tempdir().unwrap();
    let server = fake(agents).await;
    let llm = llm(&server, &tmp.path().join("cache.sqlite")).await;
    let out = mtr_pipeline::synthesize(
        &job(corpus, &tmp.path().join("bench"), dialogues, turns),
        &llm,
        &mtr_core::progress::NoProgress,
    )
    .await
    .unwrap();
    (tmp, out)
}

fn golds_of(dir: &Path) -> Vec<Vec<(String, i32)>> {
    let b = BenchmarkDir::open(dir).unwrap().load().unwrap();
    b.dialogues
        .iter()
        .flat_map(|d| d.turns.iter())
        .map(|t| {
            t.gold
                .iter()
                .map(|g| (g.passage_id.clone(), g.grade))
                .collect()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unique_questions_keep_one_gold() {
    let (tmp, out) = run(FakeAgents::default(), &corpora().join("en"), 3, 3).await;
    assert_eq!(out.turns, 9, "{:?}", out.stats.events);
    assert!(
        golds_of(&tmp.path().join("bench"))
            .iter()
            .all(|g| g.len() == 1 && g[0].1 == 2)
    );
    assert_eq!(out.stats.events.get("uniqueness/unique"), Some(&9));
    let report = std::fs::read_to_string(tmp.path().join("bench/synth_report.md")).unwrap();
    assert!(
        report.contains("| turns | 9 of 9 planned (0 dropped"),
        "{report}"
    );
    // the realism section, with the history gap under the uniqueness check's index
    for want in [
        "## Realism",
        "### Realism: language `en`",
        "| dialogues / turns | 3 / 9 |",
        "history gap (recall@10 whole - alone) | +",
        "turns switching topic",
    ] {
        assert!(report.contains(want), "`{want}` missing from {report}");
    }
    assert!(out.stats.cost_total_usd > 0.0);
    // two of three dialogues switch topic (share 0.5, rounded), at a turn after the first
    let b = BenchmarkDir::open(tmp.path().join("bench"))
        .unwrap()
        .load()
        .unwrap();
    let switched: Vec<_> = b
        .dialogues
        .iter()
        .filter(|d| d.turns.iter().any(|t| t.tags.topic_switch == Some(true)))
        .collect();
    assert_eq!(switched.len(), 2);
    for d in &switched {
        assert_ne!(d.turns[0].tags.topic_switch, Some(true));
        let i = d
            .turns
            .iter()
            .position(|t| t.tags.topic_switch == Some(true))
            .unwrap();
        assert_ne!(
            d.turns[i].tags.topic,
            d.turns[i - 1].tags.topic,
            "a switch moves to another coarse topic"
        );
    }
    // every turn carries MTRAG's three turn tags, in MTRAG's spelling
    for d in &b.dialogues {
        for (n, t) in d.turns.iter().enumerate() {
            let tags = &t.tags;
            assert_eq!(tags.answerability.as_deref(), Some("answerable"));
            let follow_up = n > 0 && tags.topic_switch != Some(true);
            let want = if follow_up { "Follow-up" } else { "N/A" };
            assert_eq!(tags.multi_turn_type.as_deref(), Some(want), "{}", t.id);
            assert!(tags.question_type.is_some(), "{}", t.id);
        }
    }
    // the report puts the mix beside MTRAG's, and what each verified turn cost in calls
    for want in [
        "## Turn types",
        "| answerability | answerable | 9 | 100.0% | 84.2% |",
        "| answerability | unanswerable | 0 | 0.0% | 6.4% |",
        "| multi_turn_type | Follow-up |",
        "- per verified turn (rejected attempts and dropped turns included): ",
        "## Turn mix",
        "| kind | asked | drawn | obtained | obtained share | MTRAG share |",
        // asked: this job's answerable-only mix
        "| answerable | 100.0% | 9 | 9 |",
        "| unanswerable | 0.0% | 0 | 0 |",
        "| two-passage | 0.0% | 0 | 0 |",
    ] {
        assert!(report.contains(want), "`{want}` missing from {report}");
    }
    // the mix drew a kind for each of the 9 planned turns; all 9 kept turns are answerable
    let mix = &out.stats.mix;
    assert_eq!(mix.drawn.values().sum::<usize>(), 9, "{mix:?}");
    assert_eq!(mix.obtained.get("answerable"), Some(&9), "{mix:?}");
    assert_eq!(mix.two_passage_obtained, 0);
    let m = b.manifest;
    assert_eq!(m.source, "mtr-synth");
    assert_eq!(
        m.generator.get("verifier").map(String::as_str),
        Some("fake-judge")
    );
    assert_eq!(
        m.generator.get("generator").map(String::as_str),
        Some("fake-gen")
    );
    assert!(
        m.extra
            .get("synth")
            .and_then(|s| s.get("prompts"))
            .is_some()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uniqueness_judge_adds_an_extra_gold() {
    let agents = FakeAgents {
        uniqueness: UniquenessScript::FirstAnswers,
        ..Default::default()
    };
    let (tmp, out) = run(agents, &corpora().join("en"), 2, 3).await;
    assert_eq!(out.turns, 6);
    for g in golds_of(&tmp.path().join("bench")) {
        assert_eq!(g.len(), 2, "{g:?}");
        assert_eq!(g[1].1, 2);
        assert_ne!(g[0].0, g[1].0);
    }
    assert_eq!(
        out.stats.events.get("uniqueness/extra_gold_added"),
        Some(&6)
    );
    let qrels = BenchmarkDir::open(tmp.path().join("bench"))
        .unwrap()
        .qrels()
        .unwrap();
    assert!(qrels.values().all(|q| q.len() == 2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generic_questions_are_regenerated() {
    let agents = FakeAgents {
        uniqueness: UniquenessScript::GenericUntilFeedback,
        ..Default::default()
    };
    let (tmp, out) = run(agents, &corpora().join("en"), 2, 3).await;
    assert_eq!(out.turns, 6);
    assert_eq!(out.stats.events.get("uniqueness/not_unique"), Some(&6));
    let b = BenchmarkDir::open(tmp.path().join("bench"))
        .unwrap()
        .load()
        .unwrap();
    for t in b.dialogues.iter().flat_map(|d| d.turns.iter()) {
        assert_eq!(t.tags.extra["attempts"], 2);
        assert_eq!(t.gold.len(), 1);
        let asked = t
            .tags
            .extra
            .get("original_question")
            .and_then(|v| v.as_str())
            .unwrap_or(&t.user);
        assert!(asked.starts_with("More specifically"), "{asked}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_that_never_verify_are_dropped_not_faked() {
    let agents = FakeAgents {
        uniqueness: UniquenessScript::AlwaysGeneric,
        ..Default::default()
    };
    let (tmp, out) = run(agents, &corpora().join("en"), 2, 2).await;
    assert_eq!(out.turns, 0);
    assert_eq!(out.dialogues, 0);
    assert_eq!(out.stats.events.get("dropped/uniqueness"), Some(&4));
    assert_eq!(
        out.stats.events.get("uniqueness/not_unique"),
        Some(&12),
        "3 attempts per turn"
    );
    let text = std::fs::read_to_string(tmp.path().join("bench/dialogues.jsonl")).unwrap();
    assert!(text.trim().is_empty(), "no placeholder dialogues: {text}");
    let report = std::fs::read_to_string(tmp.path().join("bench/synth_report.md")).unwrap();
    assert!(report.contains("| dropped | uniqueness | 4 |"), "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chinese_corpus_gives_chinese_dialogues() {
    let agents = FakeAgents {
        chinese: true,
        ..Default::default()
    };
    let (tmp, out) = run(agents, &corpora().join("zh"), 2, 3).await;
    assert_eq!(out.turns, 6, "{:?}", out.stats.events);
    let b = BenchmarkDir::open(tmp.path().join("bench"))
        .unwrap()
        .load()
        .unwrap();
    assert_eq!(b.manifest.language, "zh");
    for t in b.dialogues.iter().flat_map(|d| d.turns.iter()) {
        assert!(
            mtr_pipeline::in_language(&t.user, &mtr_pipeline::Language::from_code("zh")),
            "{}",
            t.user
        );
        assert!(t.answer.as_deref().unwrap().starts_with("根据手册"));
    }
    // a model that answers a Chinese corpus in English gets every turn rejected
    let (_tmp, out) = run(FakeAgents::default(), &corpora().join("zh"), 2, 2).await;
    assert_eq!(out.turns, 0);
    assert_eq!(out.stats.events.get("user/wrong_language"), Some(&12));
}

/// Asserts that no turn of any dialogue nearly repeats an earlier one (question, rewrite or
/// answer), by the default rule.
fn assert_turns_distinct(dir: &Path) {
    let rule = mtr_pipeline::RepetitionOptions::default();
    let b = BenchmarkDir::open(dir).unwrap().load().unwrap();
    for d in &b.dialogues {
        for (i, t) in d.turns.iter().enumerate() {
            for e in &d.turns[..i] {
                for (new, old) in [
                    (t.user.as_str(), e.user.as_str()),
                    (
                        t.rewrite.as_deref().unwrap_or(""),
                        e.rewrite.as_deref().unwrap_or(""),
                    ),
                    (
                        t.answer.as_deref().unwrap_or(""),
                        e.answer.as_deref().unwrap_or(""),
                    ),
                ] {
                    assert_eq!(
                        rule.repeats(new, [old]),
                        None,
                        "{}: {new:?} repeats {old:?}",
                        t.id
                    );
                }
                let standalone = t.rewrite.as_deref().unwrap_or(&t.user);
                for old in [Some(e.user.as_str()), e.rewrite.as_deref()]
                    .into_iter()
                    .flatten()
                {
                    assert_eq!(
                        rule.restates(standalone, [old]),
                        None,
                        "{}: {standalone:?} restates {old:?}",
                        t.id
                    );
                }
            }
        }
    }
}

/// Two English dialogues of three turns whose user agent follows `script`: every follow-up
/// (turns 2 and 3 of both) is rejected once as a near-repeat, the regenerated one is kept,
/// and no turn of the written benchmark repeats an earlier one of its dialogue.
async fn follow_ups_rejected_once_as_near_repeats(
    script: RepeatScript,
) -> (tempfile::TempDir, mtr_pipeline::SynthOutcome) {
    let agents = FakeAgents {
        repeat: script,
        ..Default::default()
    };
    let (tmp, out) = run(agents, &corpora().join("en"), 2, 3).await;
    assert_eq!(out.turns, 6, "{:?}", out.stats.events);
    assert_eq!(
        out.stats.events.get("user/near_duplicate"),
        Some(&4),
        "turns 2 and 3 of both dialogues: {:?}",
        out.stats.events
    );
    assert_turns_distinct(&tmp.path().join("bench"));
    (tmp, out)
}

/// A user agent that asks the previous question again with a word added ("So, ...") slips
/// past an exact comparison; the shingle rule rejects it, tells the agent why, and the
/// regenerated follow-up asks for something new.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reworded_repeat_question_is_rejected_and_regenerated() {
    let (tmp, out) = follow_ups_rejected_once_as_near_repeats(RepeatScript::Questions).await;
    assert_eq!(out.stats.events.get("user/repeated_question"), None);
    let b = BenchmarkDir::open(tmp.path().join("bench"))
        .unwrap()
        .load()
        .unwrap();
    for t in b.dialogues.iter().flat_map(|d| d.turns.iter().skip(1)) {
        assert_eq!(t.tags.extra["attempts"], 2, "{}", t.user);
    }
    let report = std::fs::read_to_string(tmp.path().join("bench/synth_report.md")).unwrap();
    assert!(report.contains("near_duplicate"), "{report}");
}

/// A follow-up that asks the previous question again, shorter, has a low Jaccard similarity
/// with it (seen in a main-job run: "年金是多少？" after "员工福利中的年金是多少？"); its
/// standalone form adds nothing, so containment rejects it and the regenerated follow-up asks
/// for something new.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shorter_restatement_is_rejected_and_regenerated() {
    follow_ups_rejected_once_as_near_repeats(RepeatScript::Restatements).await;
}

/// An answerer that gives the same answer every time: later turns never get a new answer, so
/// they are dropped with the reason counted, never written as repeats.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_answer_is_rejected_and_counted() {
    let agents = FakeAgents {
        repeat: RepeatScript::Answers,
        ..Default::default()
    };
    let (tmp, out) = run(agents, &corpora().join("en"), 2, 2).await;
    assert_eq!(out.turns, 2, "{:?}", out.stats.events);
    // 3 question attempts x 2 answer attempts, in the second turn of both dialogues
    assert_eq!(out.stats.events.get("answerer/near_duplicate"), Some(&12));
    assert_eq!(out.stats.events.get("dropped/near_duplicate"), Some(&2));
    assert_turns_distinct(&tmp.path().join("bench"));
}

/// An answerer that asks the question back (seen in a main-job run, where the verifier's
/// small judge still rated the "answer" faithful): no such turn is accepted, and the reason
/// is counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_that_asks_the_question_back_is_rejected() {
    let agents = FakeAgents {
        repeat: RepeatScript::EchoQuestion,
        ..Default::default()
    };
    let (_tmp, out) = run(agents, &corpora().join("en"), 2, 2).await;
    assert_eq!(out.turns, 0, "{:?}", out.stats.events);
    // 2 dialogues x 2 turns x 3 question attempts x 2 answer attempts
    assert_eq!(out.stats.events.get("answerer/echoed_question"), Some(&24));
    assert_eq!(out.stats.events.get("dropped/faithfulness"), Some(&4));
}

/// An answerer that finds nothing in the evidence: the question does not fit its gold
/// passage, so no turn is accepted however faithful a judge finds the refusal, and the
/// uniqueness judge is never paid for such an attempt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_that_found_nothing_rejects_the_question() {
    let agents = FakeAgents {
        answer_not_found: true,
        ..Default::default()
    };
    let (_tmp, out) = run(agents, &corpora().join("en"), 2, 2).await;
    assert_eq!(out.turns, 0, "{:?}", out.stats.events);
    assert_eq!(out.stats.events.get("answerer/not_found"), Some(&12));
    assert_eq!(out.stats.events.get("dropped/answerability"), Some(&4));
    // the uniqueness judge, the check that reads the most passages, comes after the answer:
    // attempts that the answer rejects do not pay for it
    assert_eq!(out.stats.calls.roles.get("uniqueness"), None);
}

/// An answerer that answers with the passage's heading line ("账号与密码安全 / 账号锁定与重置 /
/// 权限申请", seen on the Chinese corpus, rated faithful by the small judge): no such turn is
/// accepted, and the faithfulness judge is not paid for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_that_only_names_the_headings_is_rejected() {
    let agents = FakeAgents {
        chinese: true,
        answer_heading: true,
        ..Default::default()
    };
    let (_tmp, out) = run(agents, &corpora().join("zh"), 2, 2).await;
    assert_eq!(out.turns, 0, "{:?}", out.stats.events);
    // 2 dialogues x 2 turns x 3 question attempts x 2 answer attempts
    assert_eq!(out.stats.events.get("answerer/heading_only"), Some(&24));
    assert_eq!(out.stats.events.get("dropped/faithfulness"), Some(&4));
    assert_eq!(out.stats.calls.roles.get("faithfulness"), None);
}

/// A judge that writes its verdict first is asked for no justification (written after the
/// score it could not inform it, and synthesis keeps none): the verifier's requests hold no
/// justification field and their prompts ask for none; the same benchmark comes out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_verdict_first_judge_writes_no_justification() {
    let tmp = tempfile::tempdir().unwrap();
    let mut outputs = Vec::new();
    for verdict_first in [false, true] {
        let server = FakeServer::builder()
            .respond(move |r| FakeAgents::default().reply(r))
            .dims(64)
            .record(true)
            .start()
            .await
            .unwrap();
        let name = format!("v{verdict_first}");
        let llm = llm_configured(
            &server,
            &tmp.path().join(format!("{name}.sqlite")),
            None,
            verdict_first,
        )
        .await;
        let out = mtr_pipeline::synthesize(
            &job(&corpora().join("en"), &tmp.path().join(&name), 2, 2),
            &llm,
            &mtr_core::progress::NoProgress,
        )
        .await
        .unwrap();
        let judged: Vec<serde_json::Value> = server
            .requests()
            .into_iter()
            .filter(|r| r["model"] == "fake-judge")
            .collect();
        assert!(judged.len() >= 8, "{} judge requests", judged.len());
        for r in &judged {
            let schema = &r["response_format"]["json_schema"]["schema"];
            let asks_for_one = schema["properties"].get("justification").is_some();
            let prompt: String = r["messages"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m["content"].as_str().unwrap_or_default())
                .collect();
            assert_eq!(asks_for_one, !verdict_first, "{schema}");
            // (the passages themselves may hold the word)
            assert_eq!(
                prompt.contains("\"justification\"")
                    || prompt.contains("one-sentence justification"),
                !verdict_first,
                "{prompt}"
            );
        }
        // the same turns; only the cost differs (fewer tokens)
        let turns: Vec<serde_json::Value> =
            std::fs::read_to_string(tmp.path().join(&name).join("dialogues.jsonl"))
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["turns"].clone())
                .collect();
        outputs.push((out.dialogues, out.turns, turns));
    }
    assert_eq!(outputs[0], outputs[1]);
}

/// Twelve dialogues over the three topic paths of the fake embeddings, every one switching:
/// more dialogues draw from a path than it has chunks to offer each a different pair, so
/// some ask a question an earlier dialogue asked already. The synth report counts them, by
/// the same letters-and-digits rule this test applies to the written benchmark. (That
/// dialogues sharing a path draw from it in different rounds is tested on the schedule, in
/// generate.rs.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn questions_an_earlier_dialogue_asked_are_counted_in_the_report() {
    let tmp = tempfile::tempdir().unwrap();
    let server = fake(FakeAgents::default()).await;
    let llm = llm(&server, &tmp.path().join("cache.sqlite")).await;
    // three policies of the handbook (28 sections): few chunks for twelve dialogues
    let corpus = tmp.path().join("en");
    std::fs::create_dir_all(&corpus).unwrap();
    for f in [
        "01-annual-leave.md",
        "02-sick-leave.md",
        "03-parental-leave.md",
    ] {
        std::fs::copy(corpora().join("en").join(f), corpus.join(f)).unwrap();
    }
    let mut job = job(&corpus, &tmp.path().join("bench"), 12, 2);
    job.config.generation.switch_share = 1.0;
    let out = mtr_pipeline::synthesize(&job, &llm, &mtr_core::progress::NoProgress)
        .await
        .unwrap();
    let b = BenchmarkDir::open(tmp.path().join("bench"))
        .unwrap()
        .load()
        .unwrap();
    let key = |q: &str| -> String {
        q.chars()
            .filter(|c| c.is_alphanumeric())
            .flat_map(char::to_lowercase)
            .collect()
    };
    let mut earlier = std::collections::BTreeSet::new();
    let mut repeated = 0;
    for d in &b.dialogues {
        let asked: Vec<String> = d.turns.iter().map(|t| key(&t.user)).collect();
        repeated += asked.iter().filter(|q| earlier.contains(*q)).count();
        earlier.extend(asked);
    }
    assert!(repeated > 0, "the setting should force repeats");
    assert_eq!(out.stats.questions_seen_in_earlier_dialogues, repeated);
    let report = std::fs::read_to_string(tmp.path().join("bench/synth_report.md")).unwrap();
    assert!(
        report.contains(&format!(
            "| questions an earlier dialogue asked already | {repeated} |"
        )),
        "{report}"
    );
}

/// `rewrites = false` (`mtr synth --no-rewrites`): the user agent is asked for its question
/// alone (no standalone version in its schema or prompt), the turns get no rewrite, and no
/// standalone version is counted as dropped, although the scripted agent still writes one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_rewrites_the_user_agent_writes_the_question_alone() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    for rewrites in [true, false] {
        let agents = FakeAgents {
            chinese: true,
            ..Default::default()
        };
        let (user_calls, asked_standalone) =
            (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let (calls, asked) = (user_calls.clone(), asked_standalone.clone());
        let server = FakeServer::builder()
            .respond(move |r| {
                let props = r.schema.as_ref().map(|s| &s["properties"]);
                if props.is_some_and(|p| p.get("question").is_some()) {
                    calls.fetch_add(1, Ordering::Relaxed);
                    if props.is_some_and(|p| p.get("standalone").is_some())
                        || r.last_user.contains("standalone")
                    {
                        asked.fetch_add(1, Ordering::Relaxed);
                    }
                }
                agents.reply(r)
            })
            .dims(64)
            .start()
            .await
            .unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let llm = llm(&server, &tmp.path().join("cache.sqlite")).await;
        let cfg = SynthConfig {
            dialogues: 2,
            turns: 3,
            seed: 7,
            generation: mtr_pipeline::GenerationOptions {
                rewrites,
                ..Default::default()
            },
            style: concise(),
            ..Default::default()
        };
        let bench = tmp.path().join("bench");
        let job = SynthJob::new(
            corpora().join("zh"),
            &bench,
            cfg,
            SynthPrompts::builtin().unwrap(),
        );
        let out = mtr_pipeline::synthesize(&job, &llm, &mtr_core::progress::NoProgress)
            .await
            .unwrap();
        assert_eq!(out.turns, 6, "{:?}", out.stats.events);
        let calls = user_calls.load(Ordering::Relaxed);
        assert!(calls >= 6, "{calls}");
        let asked = asked_standalone.load(Ordering::Relaxed);
        let b = BenchmarkDir::open(&bench).unwrap().load().unwrap();
        let with_rewrite = b
            .dialogues
            .iter()
            .flat_map(|d| d.turns.iter())
            .filter(|t| t.rewrite.is_some())
            .count();
        if rewrites {
            assert_eq!(asked, calls);
            assert_eq!(with_rewrite, 6);
        } else {
            assert_eq!(asked, 0);
            assert_eq!(with_rewrite, 0);
            assert!(
                !out.stats
                    .events
                    .keys()
                    .any(|k| k.starts_with("user/standalone")),
                "{:?}",
                out.stats.events
            );
        }
    }
}
