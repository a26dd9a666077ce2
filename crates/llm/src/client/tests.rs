//! Client tests against the fake server: exact control of errors, latency and output.

use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::json;

use super::*;
use crate::chat::{ChatMessage, ChatRequest, JsonSchema, ParseStatus};
use crate::config::{EndpointConfig, RetryConfig};
use crate::fake::{FakeReply, FakeServer, Faults};
use crate::tokens;

mod batch_api;
mod ratings;

fn schema() -> JsonSchema {
    JsonSchema::new(
        "grade",
        json!({"type": "object", "properties": {"grade": {"type": "integer", "minimum": 0, "maximum": 3}}, "required": ["grade"], "additionalProperties": false}),
    )
}

fn req(i: usize) -> ChatRequest {
    ChatRequest::new(vec![
        ChatMessage::system("Grade relevance 0-3."),
        ChatMessage::user(format!("item {i}")),
    ])
    .with_schema(schema())
}

fn fast_retry() -> RetryConfig {
    RetryConfig {
        max_attempts: 6,
        base_delay_ms: 1,
        max_delay_s: 0.05,
        max_retry_after_s: 5.0,
        parse_retries: 2,
    }
}

fn config(endpoints: Vec<EndpointConfig>) -> LlmConfig {
    let names: Vec<String> = endpoints.iter().map(|e| e.name.clone()).collect();
    let mut c = LlmConfig {
        endpoints,
        retry: fast_retry(),
        ..Default::default()
    };
    c.roles.judges = names.clone();
    c.roles.generator = names.clone();
    c.roles.embedder = names;
    c
}

/// A fake server that grades every request ([`grade_of`]) and a folder for the cache.
async fn grading_server() -> (FakeServer, tempfile::TempDir) {
    let fake = FakeServer::builder()
        .respond(grade_of)
        .start()
        .await
        .unwrap();
    (fake, tempfile::tempdir().unwrap())
}

async fn client(
    cfg: LlmConfig,
    dir: &tempfile::TempDir,
    tweak: impl FnOnce(&mut LlmOptions),
) -> Llm {
    let mut o = LlmOptions {
        cache_path: Some(dir.path().join("cache.sqlite")),
        ..Default::default()
    };
    tweak(&mut o);
    Llm::new(cfg, o).await.unwrap()
}

fn grade_of(r: &FakeRequest) -> FakeReply {
    // the item's own message (after a parse retry the last user message is the feedback)
    let item = r.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .find(|c| c.starts_with("item "));
    let n: i64 = item
        .unwrap_or_default()
        .trim_start_matches("item ")
        .parse()
        .unwrap_or(0);
    FakeReply::json(json!({"grade": n % 4}))
}
use crate::fake::FakeRequest;

#[tokio::test]
async fn schema_call_then_cache_hit() {
    let fake = FakeServer::builder()
        .respond(grade_of)
        .record(true)
        .start()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let llm = client(config(vec![fake.endpoint("a", "m")]), &dir, |_| {}).await;
    let r = llm.chat("a", &req(6)).await.unwrap();
    assert_eq!(r.value, Some(json!({"grade": 2})));
    assert_eq!(r.status, ParseStatus::Ok);
    assert!(!r.cached && r.attempts == 1 && r.usage.prompt_tokens > 0);
    let body = &fake.requests()[0];
    assert_eq!(body["response_format"]["type"], "json_schema");
    assert_eq!(body["response_format"]["json_schema"]["strict"], true);
    assert_eq!(body["temperature"], 0.0);
    let again = llm.chat("a", &req(6)).await.unwrap();
    assert!(again.cached);
    assert_eq!(again.value, r.value);
    assert_eq!(fake.chat_calls(), 1);
    // another sample index is another call
    llm.chat("a", &req(6).with_sample(1)).await.unwrap();
    assert_eq!(fake.chat_calls(), 2);
    let l = llm.ledger();
    assert_eq!(
        (l.endpoints["a"].calls, l.endpoints["a"].cache_hits),
        (2, 1)
    );
    // a new client on the same file pays nothing, once the first client's writer thread has
    // committed (put_chat returns before the row is on disk: flush, do not race the writer)
    llm.cache().unwrap().flush().unwrap();
    let llm2 = client(config(vec![fake.endpoint("a", "m")]), &dir, |_| {}).await;
    assert!(llm2.chat("a", &req(6)).await.unwrap().cached);
    // --refresh asks again, --no-cache never reads
    let fresh = client(config(vec![fake.endpoint("a", "m")]), &dir, |o| {
        o.refresh = true
    })
    .await;
    assert!(!fresh.chat("a", &req(6)).await.unwrap().cached);
    let none = client(config(vec![fake.endpoint("a", "m")]), &dir, |o| {
        o.no_cache = true
    })
    .await;
    assert!(!none.chat("a", &req(6)).await.unwrap().cached);
    assert_eq!(fake.chat_calls(), 4);
}

#[tokio::test]
async fn retries_429_honouring_retry_after_and_500_and_bad_bodies() {
    let fake = FakeServer::builder()
        .script([
            FakeReply::rate_limited(0.3),
            FakeReply::server_error(),
            FakeReply::RawBody("{\"choices\": [{\"mess".into()),
        ])
        .respond(grade_of)
        .start()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let llm = client(config(vec![fake.endpoint("a", "m")]), &dir, |_| {}).await;
    let t = Instant::now();
    let r = llm.chat("a", &req(1)).await.unwrap();
    assert!(
        t.elapsed() >= Duration::from_millis(300),
        "Retry-After honoured: {:?}",
        t.elapsed()
    );
    assert_eq!(r.attempts, 4);
    assert_eq!(r.value, Some(json!({"grade": 1})));
    assert_eq!(llm.ledger().endpoints["a"].retries, 3);
}

#[tokio::test]
async fn timeouts_are_retried() {
    let fake = FakeServer::builder()
        .script([FakeReply::Hang])
        .respond(grade_of)
        .start()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut e = fake.endpoint("a", "m");
    e.timeout_s = 1.0;
    let llm = client(config(vec![e]), &dir, |_| {}).await;
    let r = llm.chat("a", &req(3)).await.unwrap();
    // the hang is retried; on a loaded machine a later attempt may time out too (any number
    // of extra attempts is correct behaviour, so the test does not depend on machine speed)
    assert!(r.attempts >= 2, "{}", r.attempts);
    assert_eq!(u64::from(r.attempts), fake.chat_calls());
    assert_eq!(r.value, Some(json!({"grade": 3})));
}

#[tokio::test]
async fn persistent_and_client_errors_fail_loudly() {
    let fake = FakeServer::builder()
        .respond(|_| FakeReply::server_error())
        .start()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let llm = client(config(vec![fake.endpoint("a", "m")]), &dir, |_| {}).await;
    match llm.chat("a", &req(1)).await {
        Err(LlmError::Provider {
            status: Some(500),
            attempts: 6,
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
    assert_eq!(fake.chat_calls(), 6);
    assert_eq!(llm.ledger().endpoints["a"].provider_failed, 1);

    let bad = FakeServer::builder()
        .respond(|_| FakeReply::Status {
            status: 400,
            retry_after_s: None,
            message: "schema not supported".into(),
        })
        .start()
        .await
        .unwrap();
    let llm = client(config(vec![bad.endpoint("b", "m")]), &dir, |_| {}).await;
    let e = llm.chat("b", &req(1)).await.unwrap_err().to_string();
    assert!(
        e.contains("schema not supported") && e.contains("400"),
        "{e}"
    );
    assert_eq!(bad.chat_calls(), 1, "4xx other than 429 is not retried");
}

#[tokio::test]
async fn parse_errors_are_fed_back_then_recorded_as_failed() {
    let fake = FakeServer::builder()
        .script([FakeReply::Content("I think it's quite relevant".into())])
        .respond(grade_of)
        .record(true)
        .start()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let llm = client(config(vec![fake.endpoint("a", "m")]), &dir, |_| {}).await;
    let r = llm.chat("a", &req(2)).await.unwrap();
    assert_eq!(
        (r.status.clone(), r.value.clone()),
        (ParseStatus::Ok, Some(json!({"grade": 2})))
    );
    let second = &fake.requests()[1];
    let msgs = second["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 4);
    assert_eq!(msgs[2]["content"], "I think it's quite relevant");
    assert!(
        msgs[3]["content"]
            .as_str()
            .unwrap()
            .contains("could not be used")
    );
    assert_eq!(llm.ledger().endpoints["a"].parse_retries, 1);

    // a storm of broken JSON: reported as failed, no value, not cached
    let storm = FakeServer::builder()
        .respond(|_| FakeReply::Truncated("{\"grade\": 2, \"reas".into()))
        .start()
        .await
        .unwrap();
    let llm = client(config(vec![storm.endpoint("s", "m2")]), &dir, |_| {}).await;
    for i in 0..5 {
        let r = llm.chat("s", &req(i)).await.unwrap();
        assert!(r.value.is_none());
        match &r.status {
            ParseStatus::Failed { error } => {
                assert!(error.contains("cut at max_tokens"), "{error}")
            }
            s => panic!("{s:?}"),
        }
        assert!(r.into_value().is_err());
    }
    assert_eq!(storm.chat_calls(), 15, "1 + 2 parse retries each");
    let l = llm.ledger();
    assert_eq!(
        (l.endpoints["s"].parse_failed, l.endpoints["s"].calls),
        (5, 5)
    );
    llm.chat("s", &req(0)).await.unwrap();
    assert_eq!(storm.chat_calls(), 18, "failures are not cached");
}

#[tokio::test]
async fn extractor_path_without_json_schema() {
    let fake = FakeServer::builder()
        .respond(|_| FakeReply::Content("Here you go:\n```json\n{\"grade\": 3}\n```".into()))
        .record(true)
        .start()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut e = fake.endpoint("a", "m");
    e.supports_json_schema = false;
    let llm = client(config(vec![e]), &dir, |_| {}).await;
    let r = llm.chat("a", &req(0)).await.unwrap();
    assert_eq!(
        r.status,
        ParseStatus::Extracted {
            method: "fenced_block".into()
        }
    );
    assert_eq!(r.parse::<serde_json::Value>().unwrap(), json!({"grade": 3}));
    assert!(fake.requests()[0].get("response_format").is_none());
    assert_eq!(llm.ledger().endpoints["a"].parse_extracted, 1);
}

#[tokio::test]
async fn budget_stop_is_clean_and_resumable() {
    let (fake, dir) = grading_server().await;
    let mut e = fake.endpoint("a", "gpt-4o-mini");
    e.price_in_per_mtok = 1000.0; // ~ $0.03 per call
    e.price_out_per_mtok = 1000.0;
    e.max_concurrency = 1;
    let mut cfg = config(vec![e]);
    cfg.sampling.judges.max_tokens = Some(10);
    let llm = client(cfg.clone(), &dir, |o| o.max_cost = Some(0.2)).await;
    let mut done = 0;
    let mut stopped = 0;
    for i in 0..20 {
        match llm.chat("a", &req(i)).await {
            Ok(_) => done += 1,
            Err(e) if e.is_budget_stop() => stopped += 1,
            Err(e) => panic!("{e}"),
        }
    }
    let l = llm.ledger();
    assert!(done > 0 && stopped > 0, "{done} {stopped}");
    assert!(l.budget_stopped && l.total_cost_usd <= 0.2, "{l:?}");
    assert_eq!(fake.chat_calls(), done);
    // the first client's writer thread may not have committed yet: a second client reading
    // the file must not race it (a flake on a loaded machine)
    llm.cache().unwrap().flush().unwrap();
    // resume with a higher budget: only the missing items are paid
    let llm = client(cfg, &dir, |o| o.max_cost = Some(100.0)).await;
    for i in 0..20 {
        llm.chat("a", &req(i)).await.unwrap();
    }
    assert_eq!(fake.chat_calls(), 20);
    assert_eq!(llm.ledger().endpoints["a"].cache_hits, done);
}

#[tokio::test]
async fn a_call_past_its_start_deadline_is_never_sent_and_nothing_failed() {
    let (fake, dir) = grading_server().await;
    let llm = client(
        config(vec![fake.endpoint("a", "gpt-4o-mini")]),
        &dir,
        |_| {},
    )
    .await;
    // the deadline has passed when the call has its slot: not sent, not a failure
    let late = req(1).start_by(Some(Instant::now()));
    let err = llm.chat("a", &late).await.unwrap_err();
    assert!(matches!(err, LlmError::NotStarted), "{err}");
    assert_eq!(fake.chat_calls(), 0);
    let l = llm.ledger();
    assert_eq!(l.endpoints.get("a").map_or(0, |e| e.provider_failed), 0);
    // a deadline still ahead lets the call go
    let early = req(2).start_by(Some(Instant::now() + Duration::from_secs(3600)));
    llm.chat("a", &early).await.unwrap();
    assert_eq!(fake.chat_calls(), 1);
}

#[tokio::test]
async fn dry_run_plans_without_calling() {
    let (fake, dir) = grading_server().await;
    let mut e = fake.endpoint("a", "gpt-4o-mini");
    e.price_in_per_mtok = 0.15;
    e.price_out_per_mtok = 0.6;
    let cfg = config(vec![e]);
    client(cfg.clone(), &dir, |_| {})
        .await
        .chat("a", &req(0))
        .await
        .unwrap();
    let llm = client(cfg, &dir, |o| o.dry_run = true).await;
    for i in 0..10 {
        assert!(matches!(
            llm.chat("a", &req(i)).await,
            Err(LlmError::DryRun)
        ));
    }
    let p = llm.plan();
    let a = &p.endpoints["a"];
    assert_eq!((a.calls, a.cached), (9, 1));
    assert_eq!(
        a.prompt_tokens,
        9 * tokens::count_messages("gpt-4o-mini", &req(1).messages)
    );
    assert_eq!(a.completion_tokens_max, 9 * 512);
    assert!(
        a.completion_tokens_expected < a.completion_tokens_max,
        "history-based expectation"
    );
    assert!(a.cost_max_usd > a.cost_expected_usd && a.cost_expected_usd > 0.0);
    assert_eq!(fake.chat_calls(), 1);
    assert!(p.to_table().contains("total"));
}

#[tokio::test]
async fn ensemble_samples_and_load_balancing() {
    let f1 = FakeServer::builder()
        .respond(grade_of)
        .record(true)
        .start()
        .await
        .unwrap();
    let f2 = FakeServer::builder()
        .respond(grade_of)
        .start()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut fleet = f1.endpoint("fleet", "qwen");
    fleet.base_urls = vec![f2.base_url().to_string()];
    fleet.max_concurrency = 4;
    let mut other = f1.endpoint("other", "llama");
    other.family = Some("llama".into());
    let mut cfg = config(vec![fleet, other]);
    cfg.sampling.judges.n = 3;
    cfg.sampling.judges.seed = Some(10);
    let llm = client(cfg, &dir, |_| {}).await;
    let v = llm.judge_all(&req(5)).await;
    assert_eq!(v.len(), 2);
    assert_eq!(v[1].family.as_deref(), Some("llama"));
    for j in &v {
        assert_eq!(j.samples.len(), 3);
        assert!(
            j.samples
                .iter()
                .all(|s| s.as_ref().unwrap().value == Some(json!({"grade": 1})))
        );
    }
    let seeds: std::collections::BTreeSet<u64> = f1
        .requests()
        .iter()
        .filter_map(|b| b["seed"].as_u64())
        .collect();
    assert!(
        seeds.is_subset(&[10, 11, 12].into()) && seeds.len() == 3,
        "{seeds:?}"
    );
    // the fleet's two replicas share the work
    let before = (f1.chat_calls(), f2.chat_calls());
    let results: Vec<_> = llm
        .chat_many(Target::Endpoint("fleet".into()), (100..140).map(req))
        .collect()
        .await;
    assert!(results.iter().all(|(_, r)| r.is_ok()));
    let (a, b) = (f1.chat_calls() - before.0, f2.chat_calls() - before.1);
    assert_eq!(a + b, 40);
    assert!(a >= 10 && b >= 10, "{a} {b}");
}

#[tokio::test]
async fn twenty_percent_faults_every_item_completes() {
    let faults = Faults {
        rate_429: 0.1,
        rate_500: 0.1,
        retry_after_s: 0.01,
        seed: 42,
        ..Default::default()
    };
    let fake = FakeServer::builder()
        .respond(grade_of)
        .faults(faults)
        .latency_ms(2)
        .start()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(vec![fake.endpoint("a", "m")]);
    cfg.retry.max_attempts = 10;
    let llm = client(cfg, &dir, |_| {}).await;
    let mut out: Vec<_> = llm
        .chat_many(Target::Role(Role::Judges), (0..300).map(req))
        .collect()
        .await;
    out.sort_by_key(|(i, _)| *i);
    for (i, r) in &out {
        assert_eq!(
            r.as_ref().unwrap().value,
            Some(json!({"grade": i % 4})),
            "item {i}"
        );
    }
    let l = llm.ledger();
    assert_eq!(l.endpoints["a"].calls, 300);
    assert_eq!(l.endpoints["a"].retries, fake.injected_faults());
    assert!(fake.injected_faults() > 30, "{}", fake.injected_faults());
}

#[tokio::test]
async fn killed_run_resumes_with_zero_repeated_calls() {
    // Items from 100 on hang until the "kill", so the first run cannot finish whatever the
    // machine's speed: the kill always lands mid-run (no race with the poll below).
    let gate = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let g = gate.clone();
    let fake = FakeServer::builder()
        .respond(move |r| {
            let reply = grade_of(r);
            let item: usize = r.last_user.trim_start_matches("item ").parse().unwrap_or(0);
            if g.load(std::sync::atomic::Ordering::SeqCst) && item >= 100 {
                FakeReply::Delay(Duration::from_secs(3600), Box::new(reply))
            } else {
                reply
            }
        })
        .latency_ms(5)
        .record(true)
        .start()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut e = fake.endpoint("a", "m");
    e.max_concurrency = 8;
    let cfg = config(vec![e]);
    let llm = client(cfg.clone(), &dir, |_| {}).await;
    let first = llm.clone();
    let finished = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let f2 = finished.clone();
    let job = tokio::spawn(async move {
        let mut s = llm.chat_many(Target::Endpoint("a".into()), (0..400).map(req));
        while let Some((i, r)) = s.next().await {
            r.unwrap();
            f2.lock().unwrap().push(i);
        }
    });
    let t = Instant::now();
    while finished.lock().unwrap().len() < 50 && t.elapsed() < Duration::from_secs(60) {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    job.abort(); // the "kill": in-flight calls are lost mid-way
    let _ = job.await;
    gate.store(false, std::sync::atomic::Ordering::SeqCst);
    // aborted call tasks may still hold the first client (and its cache writer) for a moment:
    // commit what it received before the second client reads the file
    first.cache().unwrap().flush().unwrap();
    drop(first);
    let done: std::collections::BTreeSet<usize> =
        finished.lock().unwrap().iter().copied().collect();
    assert!(!done.is_empty() && done.len() < 400, "{}", done.len());
    let first_run_calls = fake.requests().len();

    let llm = client(cfg, &dir, |_| {}).await;
    let out: Vec<_> = llm
        .chat_many(Target::Endpoint("a".into()), (0..400).map(req))
        .collect()
        .await;
    assert!(out.iter().all(|(_, r)| r.is_ok()));
    let second: Vec<String> = fake.requests()[first_run_calls..]
        .iter()
        .map(|b| b["messages"][1]["content"].as_str().unwrap().to_string())
        .collect();
    for i in &done {
        assert!(
            !second.contains(&format!("item {i}")),
            "item {i} finished in run 1 but was asked again"
        );
    }
    let l = llm.ledger();
    assert_eq!(l.endpoints["a"].cache_hits as usize, 400 - second.len());
    assert!(l.endpoints["a"].cache_hits as usize >= done.len());
}

#[tokio::test]
async fn embeddings_keep_order_batch_and_cache() {
    let fake = FakeServer::builder().dims(64).start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let llm = client(config(vec![fake.endpoint("e", "fake-embed")]), &dir, |_| {}).await;
    let texts: Vec<String> = (0..150)
        .map(|i| format!("passage: text number {i} about cats"))
        .collect();
    let v = llm.embed(&texts).await.unwrap();
    assert_eq!(v.len(), 150);
    assert_eq!(v[7], crate::fake::fake_embedding(&texts[7], 64));
    assert_eq!(fake.embedding_calls(), 3);
    let again = llm.embed(&texts[..10]).await.unwrap();
    assert_eq!(again[..], v[..10]);
    assert_eq!(fake.embedding_calls(), 3);
    assert_eq!(llm.embedding_model().as_deref(), Some("fake-embed"));
}

#[tokio::test]
async fn config_errors_name_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(vec![EndpointConfig::new("a", "http://127.0.0.1:9/v1", "m")]);
    cfg.roles.judges = vec!["nope".into()];
    let e = Llm::new(
        cfg,
        LlmOptions {
            cache_path: Some(dir.path().join("c")),
            ..Default::default()
        },
    )
    .await
    .unwrap_err();
    assert!(e.is_user_error() && e.to_string().contains("nope"), "{e}");
}

/// An endpoint echoing the request's headers: 401 with them in the error body for `fail`
/// items, else 200 with them in the answer.
async fn echo_headers_server() -> (String, tokio::task::JoinHandle<()>) {
    use axum::http::HeaderMap;
    async fn handle(headers: HeaderMap, body: axum::body::Bytes) -> axum::response::Response {
        use axum::response::IntoResponse;
        let echo: Vec<String> = headers
            .iter()
            .map(|(k, v)| format!("{k}: {}", v.to_str().unwrap_or_default()))
            .collect();
        let echo = echo.join("; ");
        if String::from_utf8_lossy(&body).contains("fail") {
            let b = json!({"error": {"message": format!("bad credentials, you sent {echo}")}});
            return (axum::http::StatusCode::UNAUTHORIZED, axum::Json(b)).into_response();
        }
        axum::Json(json!({"choices": [{"message": {"role": "assistant", "content": format!("you sent {echo}")}, "finish_reason": "stop"}]})).into_response()
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let app = axum::Router::new().route("/v1/chat/completions", axum::routing::post(handle));
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://127.0.0.1:{port}/v1"), task)
}

#[tokio::test]
async fn an_echoed_key_is_masked_in_errors_answers_and_the_cache() {
    const KEY: &str = "sk-unit-echoed-key-2b7e91";
    const VAR: &str = "MTR_UNIT_TEST_ECHO_KEY_2B7E91";
    // SAFETY: a variable only this test reads, set before any client reads it
    unsafe { std::env::set_var(VAR, KEY) };
    let (url, _task) = echo_headers_server().await;
    let url = url.replace("http://", "http://bob:url-pass-unit-77@");
    let dir = tempfile::tempdir().unwrap();
    let mut e = EndpointConfig::new("echo", &url, "m");
    e.api_key_env = Some(VAR.into());
    let llm = client(config(vec![e]), &dir, |_| {}).await;
    let err = llm
        .chat(
            "echo",
            &ChatRequest::new(vec![ChatMessage::user("fail please")]),
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(!err.contains(KEY) && err.contains("Bearer ***"), "{err}");
    assert!(!err.contains("url-pass-unit-77"), "{err}");
    let ok = llm
        .chat("echo", &ChatRequest::new(vec![ChatMessage::user("hello")]))
        .await
        .unwrap();
    assert!(
        !ok.text.contains(KEY) && ok.text.contains("Bearer ***"),
        "{}",
        ok.text
    );
    llm.cache().unwrap().flush().unwrap();
    let hit = llm.cache().unwrap().get_chat(&ok.key).unwrap().unwrap();
    assert!(hit.text.contains("Bearer ***") && !hit.text.contains(KEY));
    let needle = KEY.as_bytes();
    for f in std::fs::read_dir(dir.path()).unwrap() {
        let f = f.unwrap().path();
        let raw = std::fs::read(&f).unwrap();
        assert!(
            !raw.windows(needle.len()).any(|w| w == needle),
            "the key is in {}",
            f.display()
        );
    }
}
