//! Stopping a synthesis part-way (killed, or out of budget) and resuming it: the resumed
//! benchmark is byte-identical and no answered call is made again.

use super::*;

/// Calls that may be repeated after a run stops part-way, at most: those in flight
/// (generation concurrency, twice the generator capacity of 16, x 2 of slack).
const IN_FLIGHT: u64 = 2 * 16 * 2;

/// Runs `job` uninterrupted with a fresh cache, then the same job with another fresh cache,
/// killed (its task aborted at whatever await point it is in) once the fake server has
/// received `kill_fraction` of the uninterrupted run's calls, then run again. The resumed
/// benchmark must be byte-identical, and no call answered before the kill may be made again:
/// only calls in flight at the kill can repeat. Returns (calls uninterrupted, calls before
/// the kill, calls after it).
async fn kill_and_resume(
    corpus: &Path,
    dialogues: usize,
    turns: usize,
    reuse_prepared: bool,
) -> (u64, u64, u64) {
    let tmp = tempfile::tempdir().unwrap();
    let server_a = fake(FakeAgents::default()).await;
    let llm_a = llm(&server_a, &tmp.path().join("a.sqlite")).await;
    let job_a = job(corpus, &tmp.path().join("a"), dialogues, turns);
    let t = std::time::Instant::now();
    let out_a = mtr_pipeline::synthesize(&job_a, &llm_a, &mtr_core::progress::NoProgress)
        .await
        .unwrap();
    let calls_a = server_a.chat_calls();
    eprintln!(
        "uninterrupted: {:.1} s, {calls_a} chat calls, {} dialogues, {} turns",
        t.elapsed().as_secs_f64(),
        out_a.dialogues,
        out_a.turns
    );

    let server_b = fake(FakeAgents::default()).await;
    let llm_b = llm(&server_b, &tmp.path().join("b.sqlite")).await;
    let job_b = job(corpus, &tmp.path().join("b"), dialogues, turns);
    if reuse_prepared {
        // the prepared stages are reused from A's work dir (this also exercises stage resume)
        copy_dir(&job_a.work_dir, &job_b.work_dir);
        std::fs::remove_file(job_b.work_dir.join("state.json")).unwrap();
    }
    let kill_at = calls_a * 2 / 5;
    {
        // the server holds every call from the kill_at-th on: the job cannot finish before
        // the kill, however fast or loaded the machine
        server_b.hold_chat_from(kill_at);
        let llm = llm_b.clone();
        let job_b = job(corpus, &tmp.path().join("b"), dialogues, turns);
        let task = tokio::spawn(async move {
            mtr_pipeline::synthesize(&job_b, &llm, &mtr_core::progress::NoProgress)
                .await
                .map(|_| ())
        });
        server_b.wait_held().await;
        task.abort();
        let _ = task.await;
        server_b.release_chat();
    }
    let before = server_b.chat_calls();
    assert!(
        before < calls_a,
        "the kill came before the end ({before} of {calls_a})"
    );
    let out_b = mtr_pipeline::synthesize(&job_b, &llm_b, &mtr_core::progress::NoProgress)
        .await
        .unwrap();
    let after = server_b.chat_calls() - before;
    eprintln!(
        "killed after {before} calls; the resumed run made {after} more (uninterrupted: {calls_a})"
    );
    let in_flight = IN_FLIGHT;
    assert!(
        before + after <= calls_a + in_flight,
        "{} calls vs {calls_a} + at most {in_flight} in flight",
        before + after
    );
    assert_eq!(
        (out_b.dialogues, out_b.turns),
        (out_a.dialogues, out_a.turns)
    );
    for f in ["corpus.jsonl", "dialogues.jsonl", "qrels.tsv"] {
        same_file(&tmp.path().join("a").join(f), &tmp.path().join("b").join(f));
    }
    // a third run finds everything done: no call at all
    let n = server_b.chat_calls();
    mtr_pipeline::synthesize(&job_b, &llm_b, &mtr_core::progress::NoProgress)
        .await
        .unwrap();
    assert_eq!(server_b.chat_calls(), n);
    (calls_a, before, after)
}

/// `--max-cost` stops generation cleanly part of the way (what is done is written and
/// checkpointed); the same job rerun without the budget finishes from there, pays only for
/// what was left, and writes the same benchmark as an uninterrupted run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn budget_stop_then_resume_matches_an_uninterrupted_run() {
    let corpus = corpora().join("en");
    let tmp = tempfile::tempdir().unwrap();
    let server_a = fake(FakeAgents::default()).await;
    let llm_a = llm(&server_a, &tmp.path().join("a.sqlite")).await;
    let out_a = mtr_pipeline::synthesize(
        &job(&corpus, &tmp.path().join("a"), 12, 3),
        &llm_a,
        &mtr_core::progress::NoProgress,
    )
    .await
    .unwrap();
    let (calls_a, cost_a) = (server_a.chat_calls(), llm_a.ledger().total_cost_usd);
    assert!(!out_a.budget_stopped && cost_a > 0.0);

    let server_b = fake(FakeAgents::default()).await;
    let cache_b = tmp.path().join("b.sqlite");
    let llm_b = llm_with_budget(&server_b, &cache_b, Some(cost_a / 3.0)).await;
    let job_b = job(&corpus, &tmp.path().join("b"), 12, 3);
    let stopped = mtr_pipeline::synthesize(&job_b, &llm_b, &mtr_core::progress::NoProgress)
        .await
        .unwrap();
    assert!(stopped.budget_stopped);
    assert!(stopped.turns < out_a.turns, "{} turns", stopped.turns);
    assert!(llm_b.ledger().total_cost_usd <= cost_a / 3.0 + 1e-12);
    let report = std::fs::read_to_string(tmp.path().join("b/synth_report.md")).unwrap();
    assert!(report.contains("**Incomplete:**"), "{report}");
    let calls_stopped = server_b.chat_calls();
    assert!(calls_stopped < calls_a);

    let llm_b = llm(&server_b, &cache_b).await;
    let out_b = mtr_pipeline::synthesize(&job_b, &llm_b, &mtr_core::progress::NoProgress)
        .await
        .unwrap();
    assert!(!out_b.budget_stopped);
    // only calls refused by the budget (never sent) or in flight at the stop are made again
    assert!(
        server_b.chat_calls() <= calls_a + IN_FLIGHT,
        "{} calls vs {calls_a}",
        server_b.chat_calls()
    );
    assert_eq!(
        (out_b.dialogues, out_b.turns),
        (out_a.dialogues, out_a.turns)
    );
    for f in ["corpus.jsonl", "dialogues.jsonl", "qrels.tsv"] {
        same_file(&tmp.path().join("a").join(f), &tmp.path().join("b").join(f));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_after_kill_repeats_no_call() {
    kill_and_resume(&corpora().join("en"), 30, 4, false).await;
}

/// The full-size check: 200 dialogues x 8 turns over the 10k-document English Wikipedia
/// corpus. About 10,000 chat calls: minutes in a debug build, so it is not in the default
/// suite; run it with `cargo test -p mtr-pipeline --test fake_synth -- --ignored --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "slow (about 10,000 fake LLM calls); run with --ignored"]
async fn full_corpus_200_dialogues_8_turns_resume_after_kill() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/corpora/en_wiki_vital_summaries.jsonl");
    if !corpus.exists() {
        eprintln!("skipped: {} is absent", corpus.display());
        return;
    }
    let (calls, _, _) = kill_and_resume(&corpus, 200, 8, true).await;
    assert!(calls > 8000, "{calls}");
}

/// Asserts two files are byte-identical, showing where the first differing line differs.
fn same_file(a: &Path, b: &Path) {
    let (ta, tb) = (
        std::fs::read_to_string(a).unwrap(),
        std::fs::read_to_string(b).unwrap(),
    );
    if ta == tb {
        return;
    }
    for (n, (la, lb)) in ta.lines().zip(tb.lines()).enumerate() {
        if la != lb {
            let (ca, cb): (Vec<char>, Vec<char>) = (la.chars().collect(), lb.chars().collect());
            let at = ca.iter().zip(&cb).take_while(|(x, y)| x == y).count();
            let around = |c: &[char]| {
                c[at.saturating_sub(200)..(at + 200).min(c.len())]
                    .iter()
                    .collect::<String>()
            };
            panic!(
                "{} line {} differs at char {at}:\n  {}\n  {}",
                a.display(),
                n + 1,
                around(&ca),
                around(&cb)
            );
        }
    }
    panic!("{} and {} differ in length", a.display(), b.display());
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}
