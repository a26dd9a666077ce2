//! `--time-budget` on the fake server: a budget that fits half the planned dialogues starts
//! only those, and a rerun with more time finishes the plan without repeating a call. The
//! endpoints' configured speeds are slow (hours per dialogue), so the plan decides and the
//! run-time deadline, which budgets of hours never reach, does not. The fake server answers
//! at once, far ahead of that plan: a run that may start dialogues ahead of the plan
//! (`SynthJob::start_ahead`, the default) starts more than the plan took.

use std::path::Path;
use std::time::Duration;

use mtr_llm::fake::FakeServer;
use mtr_llm::{Llm, LlmConfig, LlmOptions, Roles};

use crate::config::VectorSource;
use crate::fake_agents::FakeAgents;
use crate::{SynthConfig, SynthJob, SynthPrompts};

async fn llm(fake: &FakeServer, cache: &Path) -> Llm {
    llm_with_slots(fake, cache, None).await
}

/// The endpoints of [`llm`]; `slots`: each keeps the last prompt of that many slots
/// (`prefix_cache_slots`, as the embedded llama.cpp servers do).
async fn llm_with_slots(fake: &FakeServer, cache: &Path, slots: Option<u32>) -> Llm {
    let slow = |name: &str| {
        let mut e = fake.endpoint(name, &format!("fake-{name}"));
        e.prompt_tokens_per_s = Some(5.0);
        e.output_tokens_per_s = Some(0.05);
        e.prefix_cache_slots = slots;
        e
    };
    let cfg = LlmConfig {
        endpoints: vec![slow("gen"), slow("judge"), fake.endpoint("emb", "fake-emb")],
        roles: Roles {
            judges: vec!["judge".into()],
            generator: vec!["gen".into()],
            embedder: vec!["emb".into()],
        },
        ..Default::default()
    };
    let opts = LlmOptions {
        cache_path: Some(cache.to_path_buf()),
        ..Default::default()
    };
    Llm::new(cfg, opts).await.unwrap()
}

fn job(out: &Path, budget: Option<Duration>) -> SynthJob {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpora/en");
    let cfg = SynthConfig {
        dialogues: 6,
        turns: 2,
        seed: 5,
        // the dry run's topic paths are lexical: the run's are the same, so are its prompts
        vectors: VectorSource::Lexical,
        // the concise style these plans were measured for (a fake endpoint gets production)
        style: crate::style::StyleOptions {
            profile: Some("concise".into()),
        },
        // the answerable single-passage turns these plans were measured for: an unanswerable
        // turn's two calls put more of a dialogue's time on the judge, whose prompts share
        // less (`the_plan_counts_on_the_prompt_caches_where_the_servers_keep_them`)
        mix: crate::MixOptions {
            partial: 0.0,
            unanswerable: 0.0,
            conversational: 0.0,
            two_passage: 0.0,
        },
        ..Default::default()
    };
    let mut job = SynthJob::new(corpus, out, cfg, SynthPrompts::builtin().unwrap());
    job.time_budget = budget;
    job
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The fake server answering as the scripted agents.
async fn fake_server() -> FakeServer {
    let agents = FakeAgents::default();
    FakeServer::builder()
        .respond(move |r| agents.reply(r))
        .dims(64)
        .start()
        .await
        .unwrap()
}

/// The dry run's plan under a budget that fits everything, on `llm`, in `tmp/dry`.
async fn plan_of_all(tmp: &Path, llm: &Llm) -> crate::dryrun::budget::BudgetPlan {
    let all = Some(Duration::from_secs(1000 * 3600));
    let progress = mtr_core::progress::NoProgress;
    let dry = crate::dry_run(&job(&tmp.join("dry"), all), llm, &progress)
        .await
        .unwrap();
    dry.budget.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_for_half_the_dialogues_starts_half_and_a_rerun_finishes() {
    let tmp = tempfile::tempdir().unwrap();
    let fake = fake_server().await;
    let progress = mtr_core::progress::NoProgress;

    // the dry run's plan: every dialogue's expected time
    let cache = tmp.path().join("cache.sqlite");
    let out = tmp.path().join("bench");
    let all = Some(Duration::from_secs(1000 * 3600));
    let plan = plan_of_all(tmp.path(), &llm(&fake, &cache).await).await;
    assert_eq!((plan.planned, plan.start, plan.left), (6, 6, 0));
    let secs: Vec<f64> = plan.seconds.iter().map(|s| s.unwrap()).collect();
    assert!(secs.iter().all(|s| *s > 600.0), "{secs:?}");
    assert_eq!(fake.chat_calls(), 0, "a dry run calls nothing");
    // three dialogues and half the fourth, with a minute for the preparation
    let half = 60.0 + secs[..3].iter().sum::<f64>() + secs[3] / 2.0;
    let half = Some(Duration::from_secs_f64(half));
    let dry = crate::dry_run(
        &job(&tmp.path().join("dry"), half),
        &llm(&fake, &cache).await,
        &progress,
    )
    .await
    .unwrap();
    assert_eq!(dry.budget.as_ref().map(|b| b.start), Some(3));
    assert!(
        dry.to_text()
            .contains("would start 3 of 6 planned dialogues"),
        "{}",
        dry.to_text()
    );

    // the budgeted run starts those three, says so and reports them as done
    let said = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let mut j = job(&out, half);
    // to the plan only: the fake server's instant answers would start more (tested below)
    j.start_ahead = false;
    let lines = said.clone();
    j.announce = Some(Box::new(move |l: &str| {
        lines.lock().unwrap().push(l.to_string())
    }));
    let first = crate::synthesize(&j, &llm(&fake, &cache).await, &progress)
        .await
        .unwrap();
    let calls_first = fake.chat_calls();
    let b = first.time_budget.clone().unwrap();
    assert_eq!((b.start, b.left, b.refused_at_run_time), (3, 3, 0), "{b:?}");
    assert_eq!(first.dialogues, 3);
    let line = said.lock().unwrap().join("\n");
    assert!(
        line.contains("starting 3 of 6 planned dialogues") && line.contains("rerun with more time"),
        "{line}"
    );
    let report = read(&out.join("synth_report.md"));
    assert!(
        report.contains("start 3 of 6 planned dialogues"),
        "{report}"
    );
    let manifest: toml::Table = toml::from_str(&read(&out.join("benchmark.toml"))).unwrap();
    assert_eq!(
        manifest["extra"]["synth"]["time_budget"]["left"].as_integer(),
        Some(3)
    );

    // a rerun with more time starts the other three, repeating no call
    let second = crate::synthesize(&job(&out, all), &llm(&fake, &cache).await, &progress)
        .await
        .unwrap();
    let calls_second = fake.chat_calls() - calls_first;
    let b = second.time_budget.clone().unwrap();
    assert_eq!((b.done_before, b.start, b.left), (3, 3, 0), "{b:?}");
    assert_eq!(second.dialogues, 6);

    // the same as one run without a budget, which makes as many calls as both together
    let whole = tmp.path().join("whole");
    let before = fake.chat_calls();
    let reference = crate::synthesize(
        &job(&whole, None),
        &llm(&fake, &tmp.path().join("other.sqlite")).await,
        &progress,
    )
    .await
    .unwrap();
    let calls_whole = fake.chat_calls() - before;
    assert!(reference.time_budget.is_none());
    assert_eq!(
        read(&whole.join("dialogues.jsonl")),
        read(&out.join("dialogues.jsonl"))
    );
    assert_eq!(
        (calls_first, calls_second, calls_first + calls_second),
        (calls_first, calls_second, calls_whole),
        "no call repeated"
    );
}

/// The same budget for three and a half of six planned dialogues of hours each, on the fake
/// server that answers at once: the first turns finish in a fraction of their planned time,
/// so dialogues the plan left start too, the run says so, and they are the same dialogues a
/// run without a budget writes. (Whatever the machine's load, the run takes seconds against
/// a plan of hours: the pace never gets near the budget.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dialogues_start_beyond_the_plan_when_the_turns_run_ahead_of_it() {
    let tmp = tempfile::tempdir().unwrap();
    let fake = fake_server().await;
    let progress = mtr_core::progress::NoProgress;
    let cache = tmp.path().join("cache.sqlite");
    let secs: Vec<f64> = plan_of_all(tmp.path(), &llm(&fake, &cache).await)
        .await
        .seconds
        .iter()
        .map(|s| s.unwrap())
        .collect();
    let half = 60.0 + secs[..3].iter().sum::<f64>() + secs[3] / 2.0;
    let out = tmp.path().join("bench");
    let run = crate::synthesize(
        &job(&out, Some(Duration::from_secs_f64(half))),
        &llm(&fake, &cache).await,
        &progress,
    )
    .await
    .unwrap();
    let b = run.time_budget.clone().unwrap();
    assert!(b.started_ahead >= 1, "{b:?}");
    assert_eq!(b.start, 3 + b.started_ahead, "{b:?}");
    assert_eq!(b.left, 6 - b.start, "{b:?}");
    assert_eq!(run.dialogues, b.start);
    let report = read(&out.join("synth_report.md"));
    assert!(
        report.contains(&format!(
            "{} started ({} of them not in the plan",
            b.start, b.started_ahead
        )),
        "{report}"
    );
    // the dialogues are those of a run without a budget
    let whole = tmp.path().join("whole");
    crate::synthesize(&job(&whole, None), &llm(&fake, &cache).await, &progress)
        .await
        .unwrap();
    let lines = |p: &Path| {
        read(&p.join("dialogues.jsonl"))
            .lines()
            .map(String::from)
            .collect::<Vec<_>>()
    };
    let (ahead, reference) = (lines(&out), lines(&whole));
    assert_eq!(ahead.len(), b.start);
    for l in &ahead {
        assert!(reference.contains(l), "{l}");
    }
}

/// The plan expects what the servers' prompt caches hold of each call's prompt where the
/// endpoints keep them (llama.cpp slots): the same dialogues are planned shorter, the more so
/// with more slots, and not at all shorter without a prompt cache.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plan_counts_on_the_prompt_caches_where_the_servers_keep_them() {
    let tmp = tempfile::tempdir().unwrap();
    let fake = fake_server().await;
    let mut planned = Vec::new();
    for slots in [None, Some(1), Some(6)] {
        let cache = tmp.path().join(format!("cache-{slots:?}.sqlite"));
        let plan = plan_of_all(tmp.path(), &llm_with_slots(&fake, &cache, slots).await).await;
        let secs: f64 = plan.seconds.iter().map(|s| s.unwrap()).sum();
        planned.push(secs);
    }
    assert_eq!(fake.chat_calls(), 0, "a dry run calls nothing");
    let [none, one, six] = planned[..] else {
        panic!("{planned:?}")
    };
    assert!(six < one && one < none, "{planned:?}");
    // the instructions and the conversation are shared, the passages and questions are not
    assert!(six > 0.3 * none, "{planned:?}");
}

/// The dry run plans a styled profile's longer messages: the prompts of the user agent and of
/// every call that reads the question grow with the profile (the completion room of each user
/// call follows its draw: `agents::tests::a_styled_message_gets_room_for_its_length`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dry_run_plans_longer_production_questions() {
    let tmp = tempfile::tempdir().unwrap();
    let fake = fake_server().await;
    let llm = llm(&fake, &tmp.path().join("cache.sqlite")).await;
    let progress = mtr_core::progress::NoProgress;
    let plan = |profile: &'static str| {
        let mut j = job(&tmp.path().join(profile), None);
        j.config.style.profile = Some(profile.into());
        j
    };
    let concise = crate::dry_run(&plan("concise"), &llm, &progress)
        .await
        .unwrap();
    let production = crate::dry_run(&plan("production"), &llm, &progress)
        .await
        .unwrap();
    let role = |p: &crate::dryrun::DryRunPlan, r: &str| p.roles[r].plan.clone();
    let (cu, pu) = (role(&concise, "user"), role(&production, "user"));
    assert!(pu.prompt_tokens > cu.prompt_tokens, "{cu:?} {pu:?}");
    for r in ["answerer", "faithfulness", "uniqueness"] {
        assert!(
            role(&production, r).prompt_tokens > role(&concise, r).prompt_tokens,
            "{r}"
        );
    }
    assert_eq!(fake.chat_calls(), 0, "a dry run calls nothing");
}

/// The dry run plans a partial turn's own calls: no humanizer, the unanswerable verifier on
/// its missing part beside an answerable turn's answerability, answer, faithfulness and
/// uniqueness calls on its answered part; the user agent's prompt is the partial one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dry_run_plans_the_calls_of_partial_turns() {
    let tmp = tempfile::tempdir().unwrap();
    let fake = fake_server().await;
    let llm = llm(&fake, &tmp.path().join("cache.sqlite")).await;
    let progress = mtr_core::progress::NoProgress;
    let mut partial = job(&tmp.path().join("partial"), None);
    partial.config.mix.partial = 1.0;
    let answerable = job(&tmp.path().join("answerable"), None);
    let planned = crate::dry_run(&partial, &llm, &progress).await.unwrap();
    let baseline = crate::dry_run(&answerable, &llm, &progress).await.unwrap();
    let calls = |p: &crate::dryrun::DryRunPlan| -> Vec<(String, u64)> {
        p.roles
            .iter()
            .filter(|(r, _)| r.as_str() != "embedder")
            .map(|(r, rp)| (r.clone(), rp.plan.calls))
            .collect()
    };
    // 6 dialogues x 2 turns, every one drawn partial
    let want: Vec<(String, u64)> = [
        "answerability",
        "answerer",
        "faithfulness",
        "unanswerable",
        "uniqueness",
        "user",
    ]
    .iter()
    .map(|r| (r.to_string(), 12))
    .collect();
    assert_eq!(calls(&planned), want);
    assert!(calls(&baseline).contains(&("humanizer".to_string(), 6)));
    // the partial prompt and its two extra fields are longer than the answerable one
    let user = |p: &crate::dryrun::DryRunPlan| p.roles["user"].plan.clone();
    assert!(user(&planned).prompt_tokens > user(&baseline).prompt_tokens);
    assert!(user(&planned).completion_tokens_max > user(&baseline).completion_tokens_max);
    assert_eq!(fake.chat_calls(), 0, "a dry run calls nothing");
}

/// The endpoints of [`llm`] at an unknown speed (the plan cannot time a dialogue), with
/// their own cache.
async fn llm_of_unknown_speed(fake: &FakeServer, cache: &Path) -> Llm {
    let cfg = LlmConfig {
        endpoints: vec![
            fake.endpoint("gen", "fake-gen"),
            fake.endpoint("judge", "fake-judge"),
            fake.endpoint("emb", "fake-emb"),
        ],
        roles: Roles {
            judges: vec!["judge".into()],
            generator: vec!["gen".into()],
            embedder: vec!["emb".into()],
        },
        ..Default::default()
    };
    let opts = LlmOptions {
        cache_path: Some(cache.to_path_buf()),
        ..Default::default()
    };
    Llm::new(cfg, opts).await.unwrap()
}

/// A job of one dialogue at a time on a clock that moves one second per chat call: what the
/// budget decides depends on the calls made, never on the machine's speed.
fn clocked_job(out: &Path, budget: Option<Duration>, time: &crate::ManualTime) -> SynthJob {
    let mut j = job(out, budget);
    j.config.dialogues = 3;
    j.config.turns = 5;
    j.config.generation.concurrency = 1;
    j.clock = crate::JobClock::manual(time);
    j
}

/// The fake server answering as the scripted agents, each chat call one second on `time`.
async fn clocked_fake_server(time: &crate::ManualTime) -> FakeServer {
    let agents = FakeAgents::default();
    let time = time.clone();
    FakeServer::builder()
        .respond(move |r| {
            time.advance_ms(1000);
            agents.reply(r)
        })
        .dims(64)
        .start()
        .await
        .unwrap()
}

/// The clocked job run whole, without a budget, into `dir/a`: its outcome, the server that
/// answered it and the seconds a turn took on the clock.
async fn unbudgeted_clocked(dir: &Path) -> (crate::SynthOutcome, FakeServer, f64) {
    let time = crate::ManualTime::default();
    let fake = clocked_fake_server(&time).await;
    let llm = llm_of_unknown_speed(&fake, &dir.join("a.sqlite")).await;
    let job = clocked_job(&dir.join("a"), None, &time);
    let all = crate::synthesize(&job, &llm, &mtr_core::progress::NoProgress)
        .await
        .unwrap();
    let per_turn = crate::JobClock::manual(&time).elapsed_s() / all.turns as f64;
    (all, fake, per_turn)
}

/// The clocked job under a budget of `budget_s` seconds, into `dir/b`, on a clock, server and
/// cache of its own.
struct BudgetedRun {
    run: crate::SynthOutcome,
    /// The clock's seconds when the run ended.
    end: f64,
    time: crate::ManualTime,
    fake: FakeServer,
    llm: Llm,
    out: std::path::PathBuf,
}

async fn budgeted_clocked(dir: &Path, budget_s: f64) -> BudgetedRun {
    let time = crate::ManualTime::default();
    let fake = clocked_fake_server(&time).await;
    let llm = llm_of_unknown_speed(&fake, &dir.join("b.sqlite")).await;
    let out = dir.join("b");
    let j = clocked_job(&out, Some(Duration::from_secs_f64(budget_s)), &time);
    let run = crate::synthesize(&j, &llm, &mtr_core::progress::NoProgress)
        .await
        .unwrap();
    let end = crate::JobClock::manual(&time).elapsed_s();
    BudgetedRun {
        run,
        end,
        time,
        fake,
        llm,
        out,
    }
}

impl BudgetedRun {
    /// A rerun with no budget goes on from where this run stopped: the benchmark of the run
    /// without a budget (`whole`, in `dir/a`), with as many calls in both runs together as it
    /// made alone.
    async fn assert_rerun_finishes(&self, dir: &Path, whole: (&crate::SynthOutcome, &FakeServer)) {
        let (all, fake_all) = whole;
        let calls_first = self.fake.chat_calls();
        let j = clocked_job(&self.out, None, &self.time);
        let rerun = crate::synthesize(&j, &self.llm, &mtr_core::progress::NoProgress)
            .await
            .unwrap();
        assert_eq!(rerun.turns, all.turns);
        assert_eq!(
            read(&self.out.join("dialogues.jsonl")),
            read(&dir.join("a").join("dialogues.jsonl"))
        );
        assert_eq!(
            calls_first + (self.fake.chat_calls() - calls_first),
            fake_all.chat_calls(),
            "no call repeated"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_stops_at_a_turn_boundary_before_its_budget_would_be_passed() {
    let tmp = tempfile::tempdir().unwrap();
    // unbudgeted: how long a turn takes on this clock
    let (all, fake_all, per_turn) = unbudgeted_clocked(tmp.path()).await;
    assert!(all.turns >= 8, "{} turns", all.turns);

    // a budget of one and a half turns: the first dialogue, which runs its five turns one
    // after another alone, would pass it by three turns and a half if it ran to its end
    let budget = 1.5 * per_turn;
    let r = budgeted_clocked(tmp.path(), budget).await;
    let (run, end, out) = (&r.run, r.end, &r.out);
    assert!(
        end <= budget + 1.5 * per_turn,
        "ended at {end} s, budget {budget} s, {per_turn} s a turn"
    );
    // the verified turns are kept, and the rest is left for a rerun
    assert!(run.turns >= 1, "{} turns", run.turns);
    assert!(run.turns < all.turns);
    let b = run.time_budget.clone().unwrap();
    assert!(b.left >= 1, "{b:?}");
    let written = read(&out.join("dialogues.jsonl"));
    assert_eq!(written.lines().count(), run.dialogues);
    // the first dialogue stopped between two of its turns, and the run says so
    assert!(b.stopped_at_turn_boundary >= 1, "{b:?}");
    let report = read(&out.join("synth_report.md"));
    assert!(
        report.contains("stopped at a turn boundary, before a turn that would have ended past the budget; their verified turns are kept"),
        "{report}"
    );
    let manifest: toml::Table = toml::from_str(&read(&out.join("benchmark.toml"))).unwrap();
    assert!(
        manifest["extra"]["synth"]["time_budget"]["stopped_at_turn_boundary"]
            .as_integer()
            .is_some_and(|n| n >= 1)
    );

    // a rerun with no budget goes on from that boundary
    r.assert_rerun_finishes(tmp.path(), (&all, &fake_all)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_in_flight_when_the_budget_is_spent_is_cut_within_one_call() {
    let tmp = tempfile::tempdir().unwrap();
    // unbudgeted: how long a turn takes on this clock (one second per call)
    let (all, fake_all, per_turn) = unbudgeted_clocked(tmp.path()).await;
    assert!(per_turn >= 3.0, "{per_turn} s a turn");

    // a budget of half a turn: the first turn starts (no turn has finished to time it) and
    // is still in flight when the budget is spent
    let budget = 0.5 * per_turn;
    let r = budgeted_clocked(tmp.path(), budget).await;
    let (run, end, out) = (&r.run, r.end, &r.out);
    // it is cut: the last call started before the budget was spent ends at most one call
    // (a second) after it
    assert!(
        end <= budget + 1.0,
        "ended at {end} s, budget {budget} s, {per_turn} s a turn"
    );
    assert_eq!(run.turns, 0);
    let b = run.time_budget.clone().unwrap();
    assert_eq!(b.cut_at_deadline, 1, "{b:?}");
    // it started; the other two (one dialogue at a time) never did
    assert_eq!((b.start, b.refused_at_run_time, b.left), (1, 2, 3), "{b:?}");
    let report = read(&out.join("synth_report.md"));
    assert!(
        report.contains("1 of them with a turn left unfinished when the budget was spent"),
        "{report}"
    );

    // a rerun with no budget finishes the plan, the cut turn's calls answered from the cache
    r.assert_rerun_finishes(tmp.path(), (&all, &fake_all)).await;
}
