//! The rerank APIs' wire formats, and [`crate::Llm::rerank`] against the fake server: each
//! API's request and response shape, the cache, retries and the ledger.

use serde_json::json;

use super::*;
use crate::Llm;
use crate::config::{EndpointConfig, LlmConfig, LlmOptions, RetryConfig};
use crate::fake::FakeServer;

fn docs() -> Vec<String> {
    vec!["cats purr".into(), "dogs bark".into(), "fish swim".into()]
}

#[test]
fn each_api_normalises_its_own_scale() {
    let llama = RerankConfig::new(RerankApi::Llamacpp);
    assert!((llama.normalise(0.0) - 0.5).abs() < 1e-12);
    assert!(llama.normalise(6.0) > 0.99 && llama.normalise(-6.0) < 0.01);
    for api in [RerankApi::Tei, RerankApi::Vllm, RerankApi::Cohere] {
        let c = RerankConfig::new(api);
        assert_eq!(c.normalise(0.3), 0.3);
        assert_eq!(c.normalise(1.7), 1.0);
    }
    let e = RerankConfig::new(RerankApi::Embeddings);
    let [lo, hi] = DEFAULT_COSINE_RANGE;
    assert_eq!(e.normalise(lo - 0.1), 0.0);
    assert_eq!(e.normalise(hi + 0.1), 1.0);
    assert!((e.normalise((lo + hi) / 2.0) - 0.5).abs() < 1e-9);
    let mut ranged = RerankConfig::new(RerankApi::Llamacpp);
    ranged.score_range = Some([-2.0, 2.0]);
    assert!((ranged.normalise(1.0) - 0.75).abs() < 1e-12);
    assert_eq!(ranged.normalise(f64::NAN), 0.0);
}

#[test]
fn bodies_follow_each_api() {
    let mut c = RerankConfig::new(RerankApi::Tei);
    c.query_prefix = "query: ".into();
    c.passage_prefix = "passage: ".into();
    let d = docs();
    assert_eq!(
        c.body("m", "q", &d[..1]),
        json!({"query": "query: q", "texts": ["passage: cats purr"], "raw_scores": false})
    );
    c.api = RerankApi::Vllm;
    assert_eq!(
        c.body("m", "q", &d[..1]),
        json!({"model": "m", "text_1": "query: q", "text_2": ["passage: cats purr"]})
    );
    c.api = RerankApi::Cohere;
    assert_eq!(
        c.body("m", "q", &d[..1]),
        json!({"model": "m", "query": "query: q", "documents": ["passage: cats purr"], "top_n": 1})
    );
    c.api = RerankApi::Embeddings;
    assert_eq!(
        c.body("m", "q", &d[..1])["input"],
        json!(["query: q", "passage: cats purr"])
    );
}

#[test]
fn answers_are_read_back_into_input_order_and_gaps_are_errors() {
    let c = RerankConfig::new(RerankApi::Cohere);
    let resp = json!({"results": [{"index": 2, "relevance_score": 0.9}, {"index": 0, "relevance_score": 0.1}, {"index": 1, "relevance_score": 0.5}]});
    assert_eq!(c.parse(&resp, 3).unwrap(), vec![0.1, 0.5, 0.9]);
    let short = json!({"results": [{"index": 2, "relevance_score": 0.9}]});
    assert!(c.parse(&short, 3).unwrap_err().contains("passage 0"));
    assert!(
        c.parse(&json!({"error": "x"}), 3)
            .unwrap_err()
            .contains("cohere")
    );
    let tei = RerankConfig::new(RerankApi::Tei);
    assert_eq!(
        tei.parse(
            &json!([{"index": 1, "score": 0.2}, {"index": 0, "score": 0.7}]),
            2
        )
        .unwrap(),
        vec![0.7, 0.2]
    );
    let e = RerankConfig::new(RerankApi::Embeddings);
    let emb = json!({"data": [{"index": 0, "embedding": [1.0, 0.0]}, {"index": 1, "embedding": [1.0, 1.0]}, {"index": 2, "embedding": [0.0, 2.0]}]});
    let s = e.parse(&emb, 2).unwrap();
    assert!((s[0] - std::f64::consts::FRAC_1_SQRT_2).abs() < 1e-12 && s[1].abs() < 1e-12);
}

#[test]
fn the_table_parses_and_bad_ranges_are_config_errors() {
    let c = LlmConfig::from_toml_section(
        "[llm]\n[[llm.endpoints]]\nname='r'\nbase_url='http://x/v1'\nmodel='bge'\n[llm.endpoints.rerank]\napi='llamacpp'\nscore_range=[-4.0, 4.0]\n",
    )
    .unwrap();
    c.validate().unwrap();
    assert_eq!(
        c.endpoints[0].rerank.as_ref().map(|r| r.api),
        Some(RerankApi::Llamacpp)
    );
    let bad = LlmConfig::from_toml_section(
        "[llm]\n[[llm.endpoints]]\nname='r'\nbase_url='http://x/v1'\nmodel='bge'\n[llm.endpoints.rerank]\napi='tei'\nscore_range=[1.0, 0.0]\n",
    )
    .unwrap();
    let e = bad.validate().unwrap_err().to_string();
    assert!(e.contains("`r`") && e.contains("score_range"), "{e}");
}

async fn client(ep: EndpointConfig, dir: &tempfile::TempDir) -> Llm {
    let cfg = LlmConfig {
        roles: crate::config::Roles {
            judges: vec![ep.name.clone()],
            ..Default::default()
        },
        endpoints: vec![ep],
        retry: RetryConfig {
            max_attempts: 4,
            base_delay_ms: 1,
            max_delay_s: 0.01,
            ..Default::default()
        },
        ..Default::default()
    };
    Llm::new(
        cfg,
        LlmOptions {
            cache_path: Some(dir.path().join("cache.sqlite")),
            ..Default::default()
        },
    )
    .await
    .unwrap()
}

/// Scores the fake gives: passage `i` scores `i / 10` (prefix and text ignored).
fn by_position(_q: &str, docs: &[String]) -> Vec<f64> {
    (0..docs.len()).map(|i| i as f64 / 10.0).collect()
}

#[tokio::test]
async fn every_api_round_trips_through_the_fake_server() {
    let fake = FakeServer::builder()
        .rerank(by_position)
        .start()
        .await
        .unwrap();
    for (api, route, base) in [
        (RerankApi::Llamacpp, "rerank", fake.base_url().to_string()),
        (RerankApi::Cohere, "rerank", fake.base_url().to_string()),
        // TEI and vLLM are often served at the root, without `/v1`
        (
            RerankApi::Tei,
            "rerank",
            fake.base_url().trim_end_matches("/v1").to_string(),
        ),
        (RerankApi::Vllm, "score", fake.base_url().to_string()),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut ep = EndpointConfig::new("r", base, "bge-reranker");
        ep.rerank = Some(RerankConfig::new(api));
        let llm = client(ep, &dir).await;
        let before = fake.rerank_calls();
        let got = llm.rerank("r", "what purrs?", &docs()).await.unwrap();
        assert_eq!(fake.rerank_calls(), before + 1, "{api:?}");
        assert_eq!(got.raw, vec![0.0, 0.1, 0.2], "{api:?}");
        assert_eq!(
            got.scores,
            got.raw
                .iter()
                .map(|r| RerankConfig::new(api).normalise(*r))
                .collect::<Vec<_>>()
        );
        let sent = fake.rerank_requests().pop().unwrap();
        assert_eq!(sent.route, route, "{api:?}");
        assert_eq!(
            sent.body,
            RerankConfig::new(api).body("bge-reranker", "what purrs?", &docs())
        );
        assert!(got.prompt_tokens > 0 && !got.cached);
    }
}

#[tokio::test]
async fn answers_are_cached_retried_and_counted() {
    let fake = FakeServer::builder()
        .rerank(by_position)
        .rerank_failures(2)
        .start()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut ep = fake.endpoint("r", "bge-reranker");
    ep.rerank = Some(RerankConfig::new(RerankApi::Cohere));
    ep.price_in_per_mtok = 1.0;
    let llm = client(ep.clone(), &dir).await;
    let first = llm.rerank("r", "q", &docs()).await.unwrap();
    assert_eq!((first.attempts, fake.rerank_calls()), (3, 3));
    assert!(first.cost_usd > 0.0);
    let again = llm.rerank("r", "q", &docs()).await.unwrap();
    assert!(again.cached && again.cost_usd == 0.0 && again.answer_cost_usd == first.cost_usd);
    assert_eq!(again.scores, first.scores);
    assert_eq!(
        fake.rerank_calls(),
        3,
        "a cached answer is never paid twice"
    );
    // another passage list is another answer
    llm.rerank("r", "q", &docs()[..2]).await.unwrap();
    assert_eq!(fake.rerank_calls(), 4);
    let led = llm.ledger().total();
    assert_eq!((led.cache_hits, led.retries), (1, 2));
    assert!(led.prompt_tokens >= first.prompt_tokens);
    drop(llm);
    // a new process reads the same cache file
    let reopened = client(ep, &dir).await;
    assert!(reopened.rerank("r", "q", &docs()).await.unwrap().cached);
    assert_eq!(fake.rerank_calls(), 4);
}

#[tokio::test]
async fn hosted_apis_get_the_key_as_a_bearer_token() {
    let fake = FakeServer::builder().start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    // SAFETY: no other test reads or writes this variable
    unsafe { std::env::set_var("MTR_TEST_RERANK_KEY_X1", "sk-rerank-test") };
    let mut ep = fake.endpoint("r", "rerank-v3.5");
    ep.rerank = Some(RerankConfig::new(RerankApi::Cohere));
    ep.api_key_env = Some("MTR_TEST_RERANK_KEY_X1".into());
    let llm = client(ep, &dir).await;
    let got = llm
        .rerank(
            "r",
            "cats purring",
            &["cats purring loudly".into(), "tax law".into()],
        )
        .await
        .unwrap();
    assert!(
        got.raw[0] > got.raw[1],
        "the default fake scorer is word overlap"
    );
    let sent = fake.rerank_requests().pop().unwrap();
    assert_eq!(sent.authorization.as_deref(), Some("Bearer sk-rerank-test"));
}

#[tokio::test]
async fn the_embeddings_variant_scores_by_cosine() {
    let fake = FakeServer::builder().start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut ep = fake.endpoint("e5", "multilingual-e5-small");
    let mut cfg = RerankConfig::new(RerankApi::Embeddings);
    cfg.query_prefix = "query: ".into();
    cfg.passage_prefix = "passage: ".into();
    cfg.score_range = Some([0.0, 1.0]);
    ep.rerank = Some(cfg);
    let llm = client(ep, &dir).await;
    let p = vec!["cats purring loudly".to_string(), "tax law".to_string()];
    let got = llm.rerank("e5", "cats purring", &p).await.unwrap();
    assert_eq!(
        fake.embedding_calls(),
        1,
        "one request for the query and every passage"
    );
    let q = crate::fake::fake_embedding("query: cats purring", 256);
    let v = crate::fake::fake_embedding("passage: cats purring loudly", 256);
    let want = cosine(
        &q.iter().map(|x| f64::from(*x)).collect::<Vec<_>>(),
        &v.iter().map(|x| f64::from(*x)).collect::<Vec<_>>(),
    );
    assert!((got.raw[0] - want).abs() < 1e-6 && got.raw[0] > got.raw[1]);
    // a chat endpoint is not a relevance judge
    assert!(llm.reranker("e5").is_some());
}

#[tokio::test]
async fn a_chat_endpoint_cannot_rerank() {
    let fake = FakeServer::builder().start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let llm = client(fake.endpoint("chat", "m"), &dir).await;
    assert!(llm.reranker("chat").is_none());
    let e = llm.rerank("chat", "q", &docs()).await.unwrap_err();
    assert!(e.to_string().contains("not a relevance judge"), "{e}");
}

#[tokio::test]
async fn a_server_adding_the_prefixes_gets_query_and_passages_by_input_type() {
    let fake = FakeServer::builder().record(true).start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut ep = fake.endpoint("e5", "multilingual-e5-small");
    ep.rerank = Some(RerankConfig {
        score_range: Some([0.0, 1.0]),
        ..local_e5()
    });
    ep.prefix_as_input_type = true;
    let llm = client(ep, &dir).await;
    let p = vec!["cats purring loudly".to_string(), "tax law".to_string()];
    let got = llm.rerank("e5", "cats purring", &p).await.unwrap();
    let f = "float";
    assert_eq!(
        fake.embedding_requests(),
        vec![
            json!({"model": "multilingual-e5-small", "input": ["cats purring"], "encoding_format": f, "input_type": "query"}),
            json!({"model": "multilingual-e5-small", "input": p, "encoding_format": f, "input_type": "passage"}),
        ]
    );
    let vec64 = |t: &str| {
        crate::fake::fake_embedding(t, 256)
            .iter()
            .map(|x| f64::from(*x))
            .collect::<Vec<_>>()
    };
    let q = vec64("cats purring");
    for (i, text) in p.iter().enumerate() {
        assert!((got.raw[i] - cosine(&q, &vec64(text))).abs() < 1e-6);
    }
    assert!(got.raw[0] > got.raw[1]);
    // cached under a key of its own: never the answer of doubled prefixes
    let cfg = llm.reranker("e5").unwrap();
    let key = |typed| cache_key(cfg, "multilingual-e5-small", "cats purring", &p, typed);
    assert_eq!(got.key, key(true));
    assert_ne!(key(true), key(false));
    let again = llm.rerank("e5", "cats purring", &p).await.unwrap();
    assert!(again.cached);
    assert!(
        again
            .raw
            .iter()
            .zip(&got.raw)
            .all(|(a, b)| (a - b).abs() < 1e-9)
    );
    assert_eq!(fake.embedding_calls(), 2);
}

#[test]
fn split_answers_merge_with_the_query_first() {
    let q = json!({"data": [{"index": 0, "embedding": [1.0, 0.0]}], "usage": {"prompt_tokens": 3}});
    let p = json!({"data": [{"index": 1, "embedding": [0.0, 1.0]}, {"index": 0, "embedding": [1.0, 0.0]}], "usage": {"prompt_tokens": 5}});
    let m = merge_split(&q, &p);
    assert_eq!(reported_tokens(&m), Some(8));
    let cfg = RerankConfig::new(RerankApi::Embeddings);
    assert_eq!(cfg.parse(&m, 2).unwrap(), vec![1.0, 0.0]);
}

#[tokio::test]
async fn asking_every_judge_asks_the_chat_judges_only() {
    let fake = FakeServer::builder().start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut e5 = fake.endpoint("e5", "multilingual-e5-small");
    e5.rerank = Some(local_e5());
    let chat = fake.endpoint("chat", "m");
    let cfg = LlmConfig {
        roles: crate::config::Roles {
            judges: vec!["chat".into(), "e5".into()],
            ..Default::default()
        },
        endpoints: vec![chat, e5],
        ..Default::default()
    };
    let opts = LlmOptions {
        cache_path: Some(dir.path().join("c.sqlite")),
        ..Default::default()
    };
    let llm = Llm::new(cfg, opts).await.unwrap();
    let req = crate::ChatRequest::new(vec![crate::ChatMessage::user("hello")]);
    let v = llm.judge_all(&req).await;
    // the relevance judge is not sent a chat request it cannot answer (a llama.cpp embedding
    // server answers /chat/completions with 404)
    assert_eq!(v.len(), 1);
    assert_eq!(v[0].judge, "chat");
    assert!(v[0].samples.iter().all(Result::is_ok));
    assert_eq!(fake.chat_calls(), 1);
}
