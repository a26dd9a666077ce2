//! The Batch API path against the fake server: two passes, and a resume by batch id.

use super::*;

#[tokio::test]
async fn batch_api_two_passes_and_resume_by_id() {
    let (fake, dir) = grading_server().await;
    let mut e = fake.endpoint("a", "gpt-4o-mini");
    e.price_in_per_mtok = 1.0;
    e.price_out_per_mtok = 1.0;
    let mut cfg = config(vec![e]);
    cfg.batch_poll_s = 0.01;
    let llm = client(cfg.clone(), &dir, |o| o.batch = true).await;
    // pass 1: everything is queued
    for i in 0..10 {
        assert!(matches!(
            llm.chat("a", &req(i)).await,
            Err(LlmError::Batched)
        ));
    }
    assert!(matches!(
        llm.chat("a", &req(0)).await,
        Err(LlmError::Batched)
    ));
    assert_eq!(llm.batch_queued(), 10, "duplicates queued once");
    assert_eq!(fake.chat_calls(), 0);
    let rep = llm.run_batches().await.unwrap();
    assert_eq!((rep.submitted.len(), rep.answered, rep.failed), (1, 10, 0));
    assert_eq!(fake.chat_calls(), 10);
    // pass 2: answers come from the cache, at the batch price
    for i in 0..10 {
        let r = llm.chat("a", &req(i)).await.unwrap();
        assert!(r.cached);
        assert_eq!(r.value, Some(json!({"grade": (i % 4) as i64})));
    }
    let l = llm.ledger();
    let full = l.endpoints["a"].prompt_tokens as f64 / 1e6
        + l.endpoints["a"].completion_tokens as f64 / 1e6;
    assert!(
        (l.total_cost_usd - full * 0.5).abs() < 1e-12,
        "half price: {} vs {}",
        l.total_cost_usd,
        full
    );

    // a job submitted by a run that was killed before collecting is resumed by id, not resubmitted
    let llm = client(cfg.clone(), &dir, |o| o.batch = true).await;
    for i in 10..15 {
        let _ = llm.chat("a", &req(i)).await;
    }
    let cache = llm.cache().unwrap();
    let key = llm.estimate("a", &req(10)).map(|_| ()).ok();
    assert!(key.is_some());
    // submit without collecting: emulate the kill by submitting through a client whose poll never ends
    let q: std::collections::BTreeMap<String, Vec<provider_batch::Queued>> =
        std::mem::take(&mut *llm.inner.batch_queue.lock().unwrap());
    let items = &q["a"];
    let ep = llm.endpoint("a").unwrap().clone();
    let replica = ep.replicas().await.unwrap()[0].clone();
    let mut jsonl = Vec::new();
    for it in items {
        jsonl.extend_from_slice(json!({"custom_id": it.key, "method": "POST", "url": "/v1/chat/completions", "body": it.body}).to_string().as_bytes());
        jsonl.push(b'\n');
    }
    let file = replica.upload_batch_file(jsonl).await.unwrap();
    let b = replica.create_batch(&json!({"input_file_id": file, "endpoint": "/v1/chat/completions", "completion_window": "24h"})).await.unwrap();
    let id = b["id"].as_str().unwrap().to_string();
    let rows: Vec<crate::cache::BatchItem> = items
        .iter()
        .map(|it| crate::cache::BatchItem {
            key: it.key.clone(),
            prompt_id: None,
            output: serde_json::to_string(&it.output).unwrap(),
            sample: 0,
        })
        .collect();
    cache
        .insert_batch(
            &crate::cache::BatchJob {
                batch_id: id.clone(),
                endpoint: "a".into(),
                model: "gpt-4o-mini".into(),
                status: "submitted".into(),
            },
            &rows,
        )
        .unwrap();
    let calls = fake.chat_calls();
    // the next run queues nothing twice and collects the old job
    let llm = client(cfg, &dir, |o| o.batch = true).await;
    for i in 10..15 {
        assert!(matches!(
            llm.chat("a", &req(i)).await,
            Err(LlmError::Batched)
        ));
    }
    assert_eq!(
        llm.batch_queued(),
        0,
        "items waiting in a submitted batch are not queued again"
    );
    let rep = llm.run_batches().await.unwrap();
    assert_eq!(rep.resumed, vec![id]);
    assert_eq!(rep.answered, 5);
    assert_eq!(fake.chat_calls(), calls);
    assert!(llm.chat("a", &req(12)).await.unwrap().cached);
}
