//! Letter picks (`[audit.letter_picks]`) end to end on the fake server: the named judge's
//! pools are sent prefilled up to the choice and answered by one token's probabilities, read
//! into picks and abstentions by the configured rule; the other judge writes its picks; a dry
//! run plans one completion token per letter pick; a misconfigured judge is an error.

use mtr_llm::fake::{FakeReply, FakeRequest, FakeServer};
use mtr_llm::logprob::RatingMode;

use crate::config::{AuditSettings, LetterPicks};
use crate::dimension::Dimension;
use crate::job::Outcome;
use crate::judges::letters::{Reading, choose};
use crate::judges::record::{Abstention, Judgement};
use crate::tests::fake::validate_folder;
use crate::tests::kit::probability_pair_config as config;
use crate::tests::kit::*;

/// The number of passages a completeness prompt shows (`[k] ` lines).
fn labels(prompt: &str) -> usize {
    prompt
        .lines()
        .filter(|l| {
            l.strip_prefix('[')
                .and_then(|r| r.split_once(']'))
                .is_some_and(|(k, _)| k.parse::<usize>().is_ok())
        })
        .count()
}

/// A letter-pick answer: by a hash of the prompt, a clear label (3 in 5), the `"` of an
/// abstention with little on the labels (1 in 5), or two labels tied (1 in 5).
fn letter_reply(r: &FakeRequest) -> FakeReply {
    let n = labels(&r.last_user).max(2);
    let h = blake3::hash(r.last_user.as_bytes()).as_bytes()[0] as usize;
    let best = 1 + h % n;
    let other = 1 + (best % n);
    let alt = |t: &str, p: f64| serde_json::json!({"token": t, "logprob": p.ln()});
    let (written, lp, top) = match h % 5 {
        0 => (
            "\"".to_string(),
            0.7,
            vec![alt("\"", 0.7), alt(&best.to_string(), 0.15)],
        ),
        1 => (
            best.to_string(),
            0.45,
            vec![alt(&best.to_string(), 0.45), alt(&other.to_string(), 0.44)],
        ),
        _ => (
            best.to_string(),
            0.8,
            vec![alt(&best.to_string(), 0.8), alt(&other.to_string(), 0.1)],
        ),
    };
    FakeReply::WithLogprobs(
        written.clone(),
        serde_json::json!({"content": [{"token": written, "logprob": f64::ln(lp), "top_logprobs": top}]}),
    )
}

/// Letter picks for prefilled pools with logprobs, a rating token for ratings read from
/// probabilities, written JSON answers otherwise.
fn judge(r: &FakeRequest) -> FakeReply {
    let prefill = r
        .body
        .pointer("/messages")
        .and_then(|m| m.as_array())
        .and_then(|m| m.last())
        .filter(|m| m["role"] == "assistant")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string();
    if prefill.starts_with("{\"choice\"") {
        return letter_reply(r);
    }
    if prefill.starts_with("{\"rating\"") {
        let alt = |t: &str| serde_json::json!({"token": t, "logprob": 0.5f64.ln()});
        return FakeReply::WithLogprobs(
            "4".into(),
            serde_json::json!({"content": [{"token": "4", "logprob": 0.5f64.ln(), "top_logprobs": [alt("4"), alt("3")]}]}),
        );
    }
    hashed_judge(r)
}

fn settings(judges: &[&str]) -> AuditSettings {
    AuditSettings {
        sample: Some(3),
        dimensions: vec![Dimension::Completeness],
        trials: 2,
        negatives: 3,
        resamples: 100,
        letter_picks: Some(LetterPicks {
            judges: judges.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn letter_picks_are_read_from_one_token_and_abstain_by_the_rule() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(bench) = clapnq(tmp.path()) else {
        return;
    };
    let fake = FakeServer::builder()
        .respond(judge)
        .record(true)
        .start()
        .await
        .unwrap();
    let cache = tmp.path().join("c.sqlite");
    let llm = llm_with_cache(config(&fake, RatingMode::Probability), &cache).await;
    let s = settings(&["p"]);
    let out = tmp.path().join("audit");
    audited(&bench, &llm, s.clone(), &out, &tmp.path().join("index")).await;
    // the letter judge's requests: prefilled, one token, logprobs, no grammar
    let letter_requests: Vec<serde_json::Value> = fake
        .requests()
        .into_iter()
        .filter(|b| {
            b["model"] == "p-model"
                && b["messages"][1]["content"]
                    .as_str()
                    .is_some_and(|u| u.contains("## Candidate passages"))
        })
        .collect();
    assert!(!letter_requests.is_empty());
    for b in &letter_requests {
        let last = b["messages"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(last["role"], "assistant");
        assert_eq!(last["content"], "{\"choice\": ");
        assert_eq!(b["max_tokens"], 1);
        assert_eq!(b["logprobs"], true);
        assert!(b.get("response_format").is_none(), "{b}");
    }
    let items: Vec<Judgement> = mtr_core::jsonl::read_all(out.join(crate::output::ITEMS)).unwrap();
    let rule = s.letter_picks.clone().unwrap();
    let (mut picks, mut none, mut several) = (0, 0, 0);
    for j in items.iter().filter(|j| j.judge == "p") {
        assert!(j.ok(), "{j:?}");
        assert_eq!(j.rating_mode, Some(RatingMode::Probability));
        assert_eq!(j.completion_tokens, 1);
        let d = j.rating_distribution.as_ref().unwrap();
        let n = j.pool.as_ref().unwrap().len();
        let probs: Vec<f64> = (1..=n as i64)
            .map(|k| {
                d.probs
                    .iter()
                    .find(|(l, _)| *l == k)
                    .map_or(0.0, |(_, p)| *p)
            })
            .collect();
        match choose(&probs, d.mass, &rule) {
            Reading::Pick(pos) => {
                picks += 1;
                assert_eq!(j.pick_position, Some(pos));
                assert_eq!(
                    j.pick_passage_id.as_deref(),
                    Some(j.pool.as_ref().unwrap()[pos - 1].as_str())
                );
                assert_eq!(
                    j.score,
                    Some(f64::from(u8::from(j.gold_position == Some(pos))))
                );
            }
            Reading::Abstain(a) => {
                none += usize::from(a == Abstention::None);
                several += usize::from(a == Abstention::Several);
                assert_eq!((j.abstention, j.score), (Some(a), None));
                if a == Abstention::None {
                    // the judge wrote the `"` of an abstention
                    assert_eq!(d.written, None);
                }
            }
        }
    }
    assert!(
        picks > 0 && none > 0 && several > 0,
        "{picks} {none} {several}"
    );
    // the other judge writes its picks as before
    for j in items.iter().filter(|j| j.judge == "a") {
        assert!(j.rating_mode.is_none() && j.rating_distribution.is_none());
    }
    assert!(
        fake.requests()
            .iter()
            .filter(|b| b["model"] == "a-model")
            .all(|b| b["response_format"]["type"] == "json_schema")
    );
    validate_folder(&out);
    // a rerun with other thresholds reads the same distributions again, calling nothing
    let calls = fake.chat_calls();
    let mut strict = s.clone();
    strict.letter_picks.as_mut().unwrap().none_below = 0.99;
    let out2 = tmp.path().join("audit2");
    audited(&bench, &llm, strict, &out2, &tmp.path().join("index")).await;
    assert_eq!(fake.chat_calls(), calls);
    let again: Vec<Judgement> = mtr_core::jsonl::read_all(out2.join(crate::output::ITEMS)).unwrap();
    assert!(
        again
            .iter()
            .filter(|j| j.judge == "p")
            .all(|j| j.abstention == Some(Abstention::None))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dry_run_plans_one_completion_token_per_letter_pick() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(bench) = clapnq(tmp.path()) else {
        return;
    };
    let fake = FakeServer::builder().respond(judge).start().await.unwrap();
    let llm = dry_run_llm(
        config(&fake, RatingMode::Probability),
        &tmp.path().join("c.sqlite"),
    )
    .await;
    let Outcome::DryRun { plan, .. } = audit(
        &bench,
        &llm,
        settings(&["p-model"]),
        &tmp.path().join("audit"),
        &tmp.path().join("index"),
    )
    .await
    else {
        panic!("not a dry run")
    };
    assert_eq!(fake.chat_calls(), 0);
    let p = &plan.endpoints["p"];
    assert!(p.calls > 0);
    assert_eq!(p.completion_tokens_max, p.calls);
    assert_eq!(p.completion_tokens_expected, p.calls);
    // the judge that writes its picks is planned a whole answer each
    let a = &plan.endpoints["a"];
    assert!(a.completion_tokens_max > 100 * a.calls, "{a:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn letter_picks_need_a_judge_that_reads_probabilities() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(bench) = clapnq(tmp.path()) else {
        return;
    };
    let fake = FakeServer::builder().respond(judge).start().await.unwrap();
    let llm = llm_with_cache(
        config(&fake, RatingMode::Generated),
        &tmp.path().join("c.sqlite"),
    )
    .await;
    for (names, says) in [(&["p"][..], "rating_mode"), (&["x"][..], "no judge")] {
        let bm25 = crate::items::materials::bm25_index(
            &bench,
            &tmp.path().join("index"),
            &mtr_core::progress::NoProgress,
        )
        .unwrap();
        let job = crate::tests::kit::job(
            settings(names),
            &tmp.path().join("audit"),
            vec![std::sync::Arc::new(bm25)],
        );
        let e = crate::run::run(&bench, job, &llm)
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains(says), "{e}");
    }
    assert_eq!(fake.chat_calls(), 0);
}
