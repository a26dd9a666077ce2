//! An audit against a judge with a small context: late turns are sent with their oldest turns
//! left out, prompts that cannot fit are skipped as `too_long` and never sent, and every
//! prompt the judge receives fits its context.

use std::sync::{Arc, Mutex};

use mtr_llm::ChatMessage;
use mtr_llm::fake::{FakeReply, FakeRequest, FakeServer};
use mtr_llm::{LlmConfig, Roles};

use crate::config::AuditSettings;
use crate::dimension::Dimension;
use crate::items::selection::SkipReason;
use crate::job::Outcome;
use crate::judges::prompts::CONTEXT_MARGIN;
use crate::tests::kit::{clapnq, llm_with_cache};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_context_shortens_history_and_skips_what_cannot_fit() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(bench) = clapnq(tmp.path()) else {
        return;
    };
    let seen: Arc<Mutex<Vec<u64>>> = Arc::new(Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    let fake = FakeServer::builder()
        .respond(move |r: &FakeRequest| {
            let mut msgs = Vec::new();
            if let Some(s) = &r.system {
                msgs.push(ChatMessage::system(s.clone()));
            }
            msgs.push(ChatMessage::user(r.last_user.clone()));
            seen2
                .lock()
                .unwrap()
                .push(mtr_llm::tokens::count_messages("", &msgs));
            FakeReply::json(serde_json::json!({"justification": "ok", "rating": 4}))
        })
        .start()
        .await
        .unwrap();
    let context = 1100u32;
    let mut e = fake.endpoint("small", "small-model");
    e.context_tokens = Some(context);
    let config = LlmConfig {
        endpoints: vec![e],
        roles: Roles {
            judges: vec!["small".into()],
            ..Default::default()
        },
        ..Default::default()
    };
    let llm = llm_with_cache(config, &tmp.path().join("c.sqlite")).await;
    let max_out = u64::from(
        llm.sampling(mtr_llm::Role::Judges)
            .max_tokens
            .unwrap_or(1024),
    );
    let settings = AuditSettings {
        sample: Some(4),
        dimensions: vec![Dimension::Quality],
        resamples: 50,
        ..Default::default()
    };
    let job = crate::tests::kit::job(settings, &tmp.path().join("audit"), Vec::new());
    let Outcome::Audited(s) = crate::run::run(&bench, job, &llm).await.unwrap() else {
        panic!()
    };
    let c = &s.context;
    assert_eq!(c.context_tokens, Some(u64::from(context)));
    let limit = u64::from(context) - max_out;
    assert_eq!(c.prompt_limit, Some(limit));
    let shortened = c.shortened.get(&Dimension::Quality).copied().unwrap_or(0);
    let too_long = c.too_long.get(&Dimension::Quality).copied().unwrap_or(0);
    assert!(shortened > 0, "{c:?}");
    // skipped items are counted in the plan and were never sent
    let skipped = s.plan.skipped[&Dimension::Quality]
        .get(&SkipReason::TooLong)
        .copied()
        .unwrap_or(0);
    assert_eq!(skipped, too_long);
    let sent = seen.lock().unwrap().clone();
    let judged = s.dimensions[&Dimension::Quality].items;
    assert_eq!(sent.len(), judged, "one call per judged item");
    assert_eq!(s.plan.items[&Dimension::Quality], judged);
    // every prompt the judge received fits its context with the margin and the answer's room
    for t in &sent {
        let need = (*t as f64 * (1.0 + CONTEXT_MARGIN)).ceil() as u64;
        assert!(need <= limit, "{need} > {limit}");
    }
    let md = std::fs::read_to_string(tmp.path().join("audit/report.md")).unwrap();
    assert!(
        md.contains("prompts were sent without their oldest turns"),
        "{md}"
    );
}
