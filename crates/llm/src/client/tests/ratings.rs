//! Probability ratings from log-probabilities: a prefilled answer, a whole structured answer,
//! an endpoint without log-probabilities, and what a dry run plans for them.

use super::*;

/// `{"content": [...]}` of a response whose tokens are `tokens`, each `(token, [(alt, p)])`
/// with the token's own probability first among its alternatives.
fn logprobs(tokens: &[(&str, &[(&str, f64)])]) -> serde_json::Value {
    json!({"content": tokens.iter().map(|(t, alts)| json!({
        "token": t,
        "logprob": alts.first().map_or(-0.01, |(_, p)| p.ln()),
        "top_logprobs": alts.iter().map(|(a, p)| json!({"token": a, "logprob": p.ln()})).collect::<Vec<_>>(),
    })).collect::<Vec<_>>()})
}

fn rating_req() -> ChatRequest {
    ChatRequest::new(vec![
        ChatMessage::system("Rate 1-5."),
        ChatMessage::user("item"),
    ])
    .with_schema(JsonSchema::new(
        "audit_rating",
        json!({"type": "object", "properties": {"rating": {"type": "integer"}, "justification": {"type": "string"}}, "required": ["rating", "justification"], "additionalProperties": false}),
    ))
    .with_rating("rating", 1, 5)
}

#[tokio::test]
async fn probability_ratings_from_a_prefilled_answer() {
    // a server that continues the prefilled `{"rating": ` with one token: P(4) = 0.5,
    // P(3) = 0.3, P(5) = 0.1, and 0.1 on a token that is no grade
    let fake = FakeServer::builder()
        .respond(|_| {
            FakeReply::WithLogprobs(
                "4".into(),
                logprobs(&[("4", &[("4", 0.5), ("3", 0.3), ("5", 0.1), ("x", 0.1)])]),
            )
        })
        .record(true)
        .start()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut ep = fake.endpoint("a", "m");
    ep.rating_mode = crate::logprob::RatingMode::Probability;
    ep.continues_assistant = true;
    let llm = client(config(vec![ep]), &dir, |_| {}).await;
    let r = llm.chat("a", &rating_req()).await.unwrap();
    assert_eq!(r.status, ParseStatus::Ok);
    let d = r.rating.clone().expect("a rating read from probabilities");
    let expected = (4.0 * 0.5 + 3.0 * 0.3 + 5.0 * 0.1) / 0.9;
    assert!((d.mean - expected).abs() < 1e-6, "{} vs {expected}", d.mean);
    assert_eq!(d.written, Some(4));
    assert!((d.mass - 0.9).abs() < 1e-6);
    assert_eq!(r.value, Some(json!({"rating": 4})));
    assert_eq!(r.text, "{\"rating\": 4");
    // one token after the prefill, no grammar around it, logprobs asked for
    let body = &fake.requests()[0];
    let msgs = body["messages"].as_array().unwrap();
    assert_eq!(msgs.last().unwrap()["role"], "assistant");
    assert_eq!(msgs.last().unwrap()["content"], "{\"rating\": ");
    assert_eq!(body["max_tokens"], 1);
    assert_eq!(body["logprobs"], true);
    assert!(body["top_logprobs"].as_u64().unwrap() >= 5);
    assert!(body.get("response_format").is_none());
    // the distribution comes back from the cache with the answer
    let again = llm.chat("a", &rating_req()).await.unwrap();
    assert!(again.cached);
    assert_eq!(again.rating, r.rating);
    assert_eq!(fake.chat_calls(), 1);
}

#[tokio::test]
async fn a_server_that_echoes_the_prefill_does_not_get_it_twice_in_the_text() {
    // the embedded llama.cpp server answers a prefilled `{"rating": ` with the whole value
    let echo = FakeServer::builder().respond(|_| {
        FakeReply::WithLogprobs(
            "{\"rating\": 4".into(),
            logprobs(&[("4", &[("4", 0.9), ("3", 0.1)])]),
        )
    });
    let fake = echo.start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let endpoint = crate::config::EndpointConfig {
        rating_mode: crate::logprob::RatingMode::Probability,
        continues_assistant: true,
        ..fake.endpoint("echo", "m")
    };
    let answer = client(config(vec![endpoint]), &dir, |_| {})
        .await
        .chat("echo", &rating_req())
        .await
        .unwrap();
    assert_eq!(answer.status, ParseStatus::Ok);
    assert_eq!(answer.value, Some(json!({"rating": 4})));
    assert_eq!(answer.text, "{\"rating\": 4", "the prefill once");
}

#[tokio::test]
async fn a_dry_run_plans_one_completion_token_per_prefilled_probability_rating() {
    let (fake, dir) = grading_server().await;
    let mut ep = fake.endpoint("a", "m");
    ep.rating_mode = crate::logprob::RatingMode::Probability;
    ep.continues_assistant = true;
    let mut generated = fake.endpoint("b", "m");
    generated.continues_assistant = true;
    let llm = client(config(vec![ep, generated]), &dir, |o| o.dry_run = true).await;
    for name in ["a", "b"] {
        assert!(matches!(
            llm.chat(name, &rating_req()).await,
            Err(LlmError::DryRun)
        ));
    }
    let p = llm.plan();
    // the prefilled answer is continued by one token (the grade), not by max_tokens
    assert_eq!(p.endpoints["a"].completion_tokens_max, 1);
    assert_eq!(p.endpoints["a"].completion_tokens_expected, 1);
    assert_eq!(p.endpoints["b"].completion_tokens_max, 512);
    assert_eq!(fake.chat_calls(), 0);
}

#[tokio::test]
async fn probability_ratings_from_a_whole_structured_answer() {
    // an endpoint that does not continue a prefilled answer (OpenAI): the whole JSON answer
    // is generated with logprobs, and the grade read where `rating` is written
    let fake = FakeServer::builder()
        .respond(|_| {
            FakeReply::WithLogprobs(
                r#"{"rating": 2, "justification": "off topic"}"#.into(),
                logprobs(&[
                    ("{\"", &[]),
                    ("rating", &[]),
                    ("\":", &[]),
                    (" 2", &[(" 2", 0.6), (" 1", 0.4)]),
                    (",", &[]),
                ]),
            )
        })
        .record(true)
        .start()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut ep = fake.endpoint("a", "m");
    ep.rating_mode = crate::logprob::RatingMode::Probability;
    let llm = client(config(vec![ep]), &dir, |_| {}).await;
    let r = llm.chat("a", &rating_req()).await.unwrap();
    assert!((r.rating.as_ref().unwrap().mean - 1.6).abs() < 1e-6);
    assert_eq!(r.value.as_ref().unwrap()["justification"], "off topic");
    let body = &fake.requests()[0];
    assert_eq!(body["response_format"]["type"], "json_schema");
    assert_eq!(body["logprobs"], true);
    assert_eq!(body["messages"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn probability_ratings_fail_without_logprobs_and_generated_mode_asks_for_none() {
    let fake = FakeServer::builder()
        .respond(|_| FakeReply::json(json!({"rating": 3, "justification": "ok"})))
        .record(true)
        .start()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut prob = fake.endpoint("p", "m");
    prob.rating_mode = crate::logprob::RatingMode::Probability;
    let generated = fake.endpoint("g", "m2");
    let llm = client(config(vec![prob, generated]), &dir, |_| {}).await;
    // an endpoint that returns no logprobs: a failure that says why, never the written grade
    let r = llm.chat("p", &rating_req()).await.unwrap();
    let ParseStatus::Failed { error } = &r.status else {
        panic!("{:?}", r.status)
    };
    assert!(error.contains("logprobs"), "{error}");
    assert!(r.rating.is_none());
    // the generated mode ignores the rating spec: the request is as it always was
    let r = llm.chat("g", &rating_req()).await.unwrap();
    assert_eq!(r.value.as_ref().unwrap()["rating"], 3);
    assert!(r.rating.is_none());
    let body = &fake.requests()[1];
    assert!(body.get("logprobs").is_none() && body.get("top_logprobs").is_none());
    assert_eq!(body["response_format"]["type"], "json_schema");
    assert_eq!(body["messages"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn a_dry_run_counts_the_prompt_tokens_a_prompt_cache_would_hold_only_where_one_is_kept() {
    let (fake, dir) = grading_server().await;
    let mut kept = fake.endpoint("a", "m");
    kept.prefix_cache_slots = Some(1);
    let none = fake.endpoint("b", "m");
    let llm = client(config(vec![kept, none]), &dir, |o| o.dry_run = true).await;
    assert!(
        llm.prompt_cache_model("b").is_none(),
        "no prompt cache configured"
    );
    let mut model = llm.prompt_cache_model("a").unwrap();
    for i in 0..2 {
        for name in ["a", "b"] {
            let mut r = req(i);
            r.planned_cached_share = Some(if name == "a" {
                model.next_request(&r)
            } else {
                0.9
            });
            assert!(matches!(llm.chat(name, &r).await, Err(LlmError::DryRun)));
        }
    }
    let p = llm.plan();
    let (a, b) = (&p.endpoints["a"], &p.endpoints["b"]);
    assert_eq!(a.prompt_tokens, b.prompt_tokens);
    // the second request shares the system message and the start of the user message
    assert!(a.prompt_tokens_cached > 0 && a.prompt_tokens_cached < a.prompt_tokens / 2);
    assert_eq!(
        b.prompt_tokens_cached, 0,
        "a share is ignored without a prompt cache"
    );
    assert_eq!(fake.chat_calls(), 0);
}
