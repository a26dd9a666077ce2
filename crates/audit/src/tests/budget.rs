//! `--time-budget` against the fake server on the real MTRAG clapnq data. The endpoints'
//! configured speed makes every call take thousands of expected seconds, so which dialogues
//! fit a budget never depends on how fast this machine prepares or judges: a budget that fits
//! half the plan audits that half and says so, a rerun without a budget judges only the rest,
//! and a budget too small to start anything audits nothing without an error.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mtr_core::Benchmark;
use mtr_llm::fake::FakeServer;
use mtr_llm::{Llm, LlmConfig, LlmOptions};

use crate::budget::{BudgetPlan, TimeBudget};
use crate::config::AuditSettings;
use crate::dimension::Dimension;
use crate::job::Outcome;
use crate::judges::record::Judgement;
use crate::output;
use crate::summary::Summary;
use crate::tests::kit::*;

/// Expected seconds of one call: 100 answer tokens at 0.01 a second over 4 streams.
const CALL_S: f64 = 100.0 / 0.01 / 4.0;

/// What a test runs the audit with.
struct Setup {
    bench: Benchmark,
    fake: FakeServer,
    config: LlmConfig,
    cache: std::path::PathBuf,
    retriever: Arc<dyn mtr_retrieve::Retriever>,
    out: std::path::PathBuf,
    said: Arc<Mutex<Vec<String>>>,
    /// When each chat request was answered by the fake server (after its latency).
    arrivals: Arc<Mutex<Vec<Instant>>>,
}

/// Two judges on the fake server; with `speed` their answers are expected to take [`CALL_S`].
async fn setup(dir: &Path, speed: bool) -> Option<Setup> {
    setup_answering_in(dir, speed, Duration::ZERO).await
}

/// [`setup`] with a fake server that takes `latency` for every answer.
async fn setup_answering_in(dir: &Path, speed: bool, latency: Duration) -> Option<Setup> {
    let bench = clapnq(dir)?;
    let arrivals = Arc::new(Mutex::new(Vec::new()));
    let seen = arrivals.clone();
    let fake = FakeServer::builder()
        .respond(move |r| {
            seen.lock().unwrap().push(Instant::now());
            hashed_judge(r)
        })
        .latency(latency)
        .start()
        .await
        .unwrap();
    let cache = dir.join("c.sqlite");
    let mut config = fake_llm(&fake, &["a", "b"], &cache, 4)
        .await
        .config()
        .clone();
    for e in &mut config.endpoints {
        e.expected_completion_tokens = Some(100);
        if speed {
            e.output_tokens_per_s = Some(0.01);
        }
    }
    let bm25 = crate::items::materials::bm25_index(
        &bench,
        &dir.join("index"),
        &mtr_core::progress::NoProgress,
    )
    .unwrap();
    Some(Setup {
        bench,
        fake,
        config,
        cache,
        retriever: Arc::new(bm25),
        out: dir.join("audit"),
        said: Arc::default(),
        arrivals,
    })
}

fn settings() -> AuditSettings {
    AuditSettings {
        sample: Some(6),
        dimensions: vec![
            Dimension::Alignment,
            Dimension::Completeness,
            Dimension::Quality,
        ],
        negatives: 3,
        trials: 1,
        resamples: 100,
        ..Default::default()
    }
}

impl Setup {
    async fn llm(&self, dry_run: bool) -> Llm {
        let o = LlmOptions {
            cache_path: Some(self.cache.clone()),
            dry_run,
            ..Default::default()
        };
        Llm::new(self.config.clone(), o).await.unwrap()
    }

    /// The audit within `budget_s` seconds (none: no budget).
    async fn run(&self, budget_s: Option<f64>, dry_run: bool) -> Outcome {
        let job = crate::tests::kit::job(settings(), &self.out, vec![self.retriever.clone()]);
        let time = budget_s.map(|b| {
            let mut t = TimeBudget::new(Duration::from_secs_f64(b), Instant::now());
            let said = self.said.clone();
            t.announce = Some(Arc::new(move |l: &str| {
                said.lock().unwrap().push(l.to_string())
            }));
            t
        });
        let llm = self.llm(dry_run).await;
        crate::run::run_within(&self.bench, job, &llm, time)
            .await
            .unwrap()
    }

    async fn audited(&self, budget_s: Option<f64>) -> Box<Summary> {
        match self.run(budget_s, false).await {
            Outcome::Audited(s) => s,
            Outcome::DryRun { .. } => panic!("a dry run"),
        }
    }

    async fn dry_plan(&self, budget_s: f64) -> (BudgetPlan, mtr_llm::Plan) {
        match self.run(Some(budget_s), true).await {
            Outcome::DryRun {
                time_budget: Some(b),
                plan,
                ..
            } => (*b, plan),
            _ => panic!("a dry run with a budget plan"),
        }
    }

    fn last_line(&self) -> String {
        self.said
            .lock()
            .unwrap()
            .last()
            .cloned()
            .unwrap_or_default()
    }
}

fn items(dir: &Path) -> Vec<Judgement> {
    std::fs::read_to_string(dir.join(output::ITEMS))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn dialogues(items: &[Judgement]) -> BTreeSet<String> {
    items.iter().map(|j| j.dialogue_id.clone()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_audits_the_dialogues_that_fit_and_a_rerun_the_rest() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(t) = setup(tmp.path(), true).await else {
        return;
    };
    // the dry run plans every dialogue, and its wall time is the budget's
    let (all, plan) = t.dry_plan(1e9).await;
    assert_eq!(t.fake.chat_calls(), 0);
    assert_eq!(all.selected, [true; 6]);
    let total = plan.total().seconds_expected.unwrap();
    let expected = all.info.expected_s.unwrap();
    assert!((expected - total).abs() < 1e-6, "{expected} vs {total}");
    let secs: Vec<f64> = all.seconds.iter().map(|s| s.unwrap()).collect();
    assert!(secs[3] >= 10.0 * CALL_S, "{secs:?}");
    // a budget that fits the first three and half the fourth: thousands of seconds to spare
    // either way, whatever the preparation takes
    let budget = secs[..3].iter().sum::<f64>() + secs[3] / 2.0;
    let (half, _) = t.dry_plan(budget).await;
    assert_eq!(half.selected, [true, true, true, false, false, false]);
    assert!(
        t.last_line()
            .contains("would audit 3 of 6 planned dialogues")
    );
    assert_eq!(t.fake.chat_calls(), 0, "a dry run calls nothing");

    let s = t.audited(Some(budget)).await;
    let line = t.last_line();
    assert!(
        line.starts_with(&format!(
            "time budget {}: auditing 3 of 6 planned dialogues",
            crate::budget::budget_text(budget)
        )),
        "{line}"
    );
    assert!(line.contains("3 left for a rerun"), "{line}");
    let tb = s.time_budget.clone().unwrap();
    assert_eq!(
        (
            tb.dialogues_planned,
            tb.dialogues_started,
            tb.dialogues_audited,
            tb.dialogues_left
        ),
        (6, 3, 3, 3)
    );
    assert!(!tb.deadline_stopped);
    assert!(!s.complete && s.stopped.as_deref().unwrap().contains("time budget"));
    let first = items(&t.out);
    let started: BTreeSet<String> = half.dialogues[..3].iter().cloned().collect();
    assert_eq!(dialogues(&first), started);
    let calls = t.fake.chat_calls();
    assert_eq!(calls, first.len() as u64);
    let report = std::fs::read_to_string(t.out.join(output::REPORT_MD)).unwrap();
    assert!(report.contains("Time budget") && report.contains("3 left for a rerun"));
    crate::tests::fake::validate_folder(&t.out);

    // no budget: only the other three are judged, and the fingerprint is the same
    let again = t.audited(None).await;
    assert!(again.complete && again.time_budget.is_none());
    assert_eq!(again.fingerprint, s.fingerprint);
    let second = items(&t.out);
    assert_eq!(second.len(), again.plan.judgements_planned);
    // the new dialogues' judgements, and the missing-gold check of a complete audit
    let verify = std::fs::read_to_string(t.out.join(output::VERIFY_ITEMS)).unwrap_or_default();
    assert_eq!(
        t.fake.chat_calls() - calls,
        (second.len() - first.len() + verify.lines().count()) as u64
    );
    let by_id: HashMap<&str, &Judgement> = second.iter().map(|j| (j.id.as_str(), j)).collect();
    for j in &first {
        assert_eq!(by_id[j.id.as_str()], j, "kept as it was");
    }
    assert_eq!(dialogues(&second).len(), 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_too_small_audits_nothing_and_a_larger_one_everything() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(t) = setup(tmp.path(), true).await else {
        return;
    };
    let s = t.audited(Some(0.0)).await;
    assert_eq!(t.fake.chat_calls(), 0);
    assert!(t.last_line().contains("auditing 0 of 6 planned dialogues"));
    let tb = s.time_budget.clone().unwrap();
    assert_eq!((tb.dialogues_audited, tb.dialogues_left), (0, 6));
    assert!(!s.complete);
    assert!(items(&t.out).is_empty());
    // a budget that fits everything: complete, and nothing is left
    let s = t.audited(Some(1e9)).await;
    assert!(s.complete, "{:?}", s.stopped);
    let tb = s.time_budget.clone().unwrap();
    assert_eq!(
        (
            tb.dialogues_started,
            tb.dialogues_audited,
            tb.dialogues_left
        ),
        (6, 6, 0)
    );
    assert!(!t.last_line().contains("rerun"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_speed_leaves_the_deadline_which_stops_the_run_cleanly() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(t) = setup(tmp.path(), false).await else {
        return;
    };
    // no speed: nothing is cut, but a budget already spent starts no call
    let s = t.audited(Some(0.0)).await;
    let line = t.last_line();
    assert!(
        line.starts_with("warning: time budget 0s") && line.contains("cannot be planned"),
        "{line}"
    );
    assert_eq!(t.fake.chat_calls(), 0);
    let tb = s.time_budget.clone().unwrap();
    assert!(tb.deadline_stopped && tb.expected_s.is_none());
    assert_eq!((tb.dialogues_started, tb.dialogues_left), (6, 6));
    assert!(!s.complete && s.stopped.as_deref() == Some("the time budget was spent"));
    // an hour is plenty: the rerun finishes the audit
    let s = t.audited(Some(3600.0)).await;
    assert!(s.complete, "{:?}", s.stopped);
    assert_eq!(s.time_budget.unwrap().dialogues_audited, 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_waiting_for_a_slot_when_the_deadline_passes_is_never_sent() {
    let tmp = tempfile::tempdir().unwrap();
    // every answer takes 6 s; the budget (no speed: a deadline only) ends after 2 s, while the
    // first calls are still out and the calls admitted behind them (two judging runs share
    // each judge's four server slots) wait for a slot
    let Some(t) = setup_answering_in(tmp.path(), false, Duration::from_secs(6)).await else {
        return;
    };
    let s = t.audited(Some(2.0)).await;
    // only the first calls (two judges, four slots each) can be sent before the deadline,
    // since none ends before it; a slow machine sends fewer, never more. Before, the calls
    // waiting for a slot were sent when the first answers came, 4 s past the deadline
    let sent = t.arrivals.lock().unwrap().len();
    assert!(
        sent <= 8,
        "{sent} calls were sent; at most 8 could be before the deadline"
    );
    assert!(!s.complete);
    assert_eq!(s.stopped.as_deref(), Some("the time budget was spent"));
}
