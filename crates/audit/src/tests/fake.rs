//! Whole audits against the fake OpenAI-compatible server on the real MTRAG clapnq data:
//! a full run (outputs validate against the JSON Schemas in `docs/`, a rerun changes nothing
//! and calls nothing), dry run, budget stop and resume, failure accounting and dense
//! negatives. The planted-defect test is in `planted.rs`, what the audit says about its
//! judges in `ensemble.rs`.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use mtr_llm::fake::{FakeReply, FakeRequest, FakeServer};

use crate::config::AuditSettings;
use crate::dimension::Dimension;
use crate::job::Outcome;
use crate::judges::record::Judgement;
use crate::output;
use crate::tests::kit::*;

fn schema(name: &str) -> serde_json::Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/schema")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// Validates an audit folder against the JSON Schemas in docs/schema.
pub(crate) fn validate_folder(dir: &Path) {
    let item = jsonschema::validator_for(&schema(crate::schema::ITEM_SCHEMA_FILE)).unwrap();
    let summary = jsonschema::validator_for(&schema(crate::schema::SUMMARY_SCHEMA_FILE)).unwrap();
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(output::SUMMARY)).unwrap()).unwrap();
    let errs: Vec<String> = summary
        .iter_errors(&s)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errs.is_empty(), "summary.json: {errs:?}");
    for name in [output::ITEMS, output::HUMAN_ITEMS, output::VERIFY_ITEMS] {
        let p = dir.join(name);
        if !p.exists() {
            continue;
        }
        for (i, line) in std::fs::read_to_string(&p).unwrap().lines().enumerate() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            let errs: Vec<String> = item.iter_errors(&v).map(|e| e.to_string()).collect();
            assert!(errs.is_empty(), "{name} line {}: {errs:?}", i + 1);
        }
    }
    let html = std::fs::read_to_string(dir.join(output::REPORT_HTML)).unwrap();
    assert!(
        html.starts_with("<!DOCTYPE html>")
            && html.contains("<svg")
            && !html.contains("<script")
            && !html.contains("http-equiv")
    );
    assert!(
        !html.contains("src=\"http") && !html.contains("href=\"http"),
        "self-contained"
    );
    let tsv = std::fs::read_to_string(dir.join(output::SUGGESTED_QRELS)).unwrap();
    assert!(tsv.starts_with(output::SUGGESTIONS_HEADER));
}

fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    [
        output::ITEMS,
        output::SUMMARY,
        output::REPORT_MD,
        output::REPORT_HTML,
        output::SUGGESTED_QRELS,
        output::VERIFY_ITEMS,
    ]
    .iter()
    .map(|n| (n.to_string(), std::fs::read(dir.join(n)).unwrap()))
    .collect()
}

pub(super) fn read_items(dir: &Path) -> Vec<Judgement> {
    mtr_core::jsonl::read_all(dir.join(output::ITEMS)).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_fake_run_validates_and_rerun_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(bench) = clapnq(tmp.path()) else {
        return;
    };
    let fake = FakeServer::builder()
        .respond(hashed_judge)
        .start()
        .await
        .unwrap();
    let llm = fake_llm(&fake, &["a", "b"], &tmp.path().join("cache.sqlite"), 32).await;
    let out = tmp.path().join("audit");
    let settings = AuditSettings {
        resamples: 300,
        ..Default::default()
    };
    let s = audited(
        &bench,
        &llm,
        settings.clone(),
        &out,
        &tmp.path().join("index"),
    )
    .await;
    assert!(s.complete, "{:?}", s.stopped);
    // every dimension judged, counts consistent with the plan
    assert_eq!(s.plan.turns_audited, bench.turn_count());
    let n_align = s.plan.items[&Dimension::Alignment];
    let n_comp = s.plan.items[&Dimension::Completeness];
    assert!(n_align > 500, "{n_align}");
    let calls = fake.chat_calls();
    let planned = (n_align
        + n_comp * 3
        + s.plan.items[&Dimension::Faithfulness]
        + s.plan.items[&Dimension::Quality])
        * 2;
    assert_eq!(s.plan.judgements_planned, planned);
    // one call per judgement, except identical prompts (e.g. two golds with the same text),
    // which the LLM cache answers within the run; and one per judge and missing-gold
    // candidate, rated pointwise
    let verified: Vec<Judgement> =
        mtr_core::jsonl::read_all(out.join(output::VERIFY_ITEMS)).unwrap();
    assert_eq!(verified.len(), s.suggested_qrels.len() * 2);
    assert!(verified.iter().all(|j| j.dimension == Dimension::Alignment));
    assert_eq!(
        calls as usize + s.cost.total.cache_hits,
        planned + verified.len(),
        "one call per distinct judgement"
    );
    assert!(s.cost.total.cache_hits < 10);
    assert!(
        s.plan.skipped[&Dimension::Alignment][&crate::items::selection::SkipReason::NoGold] > 0,
        "unanswerable turns are counted"
    );
    for d in Dimension::ALL {
        let x = &s.dimensions[&d];
        assert_eq!(x.scored, x.items);
        assert!(x.ci.is_some(), "{d}");
        assert!(x.agreement.krippendorff_alpha_ordinal.is_some(), "{d}");
    }
    assert!(
        s.dimensions[&Dimension::Completeness]
            .agreement
            .fleiss_kappa
            .is_some()
    );
    // balanced gold positions: every position holds the gold equally often (to within one per judge)
    let pb = &s.bias.position[0];
    assert_eq!(pb.pool_size, 8);
    let (lo, hi) = (
        pb.gold_at.iter().min().unwrap(),
        pb.gold_at.iter().max().unwrap(),
    );
    assert!(hi - lo <= 1, "{:?}", pb.gold_at);
    // no passage twice in a pool; the gold is where the record says
    for j in read_items(&out)
        .iter()
        .filter(|j| j.dimension == Dimension::Completeness)
    {
        let pool = j.pool.as_ref().unwrap();
        assert_eq!(pool.iter().collect::<HashSet<_>>().len(), pool.len());
        assert_eq!(
            &pool[j.gold_position.unwrap() - 1],
            j.passage_id.as_ref().unwrap()
        );
    }
    validate_folder(&out);
    // the chance rate 1/P stands beside every completeness share of the report
    let md = std::fs::read_to_string(out.join(output::REPORT_MD)).unwrap();
    assert_eq!(
        s.discriminability.as_ref().unwrap().chance_rate,
        Some(0.125)
    );
    // scores, per judge, and the three means
    let title = Dimension::Completeness.title();
    let share_rows: Vec<&str> = md
        .lines()
        .filter(|l| l.starts_with(&format!("| {title} |")) || l.starts_with("| completeness | 0."))
        .collect();
    assert_eq!(share_rows.len(), 3, "{share_rows:?}");
    assert!(
        share_rows
            .iter()
            .all(|l| l.matches("(chance 0.125)").count() >= if l.contains("(n=") { 3 } else { 1 }),
        "{share_rows:?}"
    );
    let before = files(&out);

    // rerun: nothing called, nothing changed
    audited(
        &bench,
        &llm,
        settings.clone(),
        &out,
        &tmp.path().join("index"),
    )
    .await;
    assert_eq!(fake.chat_calls(), calls, "a rerun calls nothing");
    let after = files(&out);
    for ((n, a), (_, b)) in before.iter().zip(&after) {
        assert!(a == b, "{n} changed on rerun");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn same_inputs_and_seed_give_byte_identical_folders_whatever_the_concurrency() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(bench) = clapnq(tmp.path()) else {
        return;
    };
    let fake = FakeServer::builder()
        .respond(hashed_judge)
        .latency_ms(2)
        .start()
        .await
        .unwrap();
    let settings = AuditSettings {
        sample: Some(5),
        resamples: 300,
        ..Default::default()
    };
    let mut outs = Vec::new();
    for (i, conc) in [(0, 3usize), (1, 32)] {
        let dir = tmp.path().join(format!("run{i}"));
        let llm = fake_llm(&fake, &["a", "b"], &dir.join("cache.sqlite"), conc).await;
        audited(
            &bench,
            &llm,
            settings.clone(),
            &dir.join("audit"),
            &dir.join("index"),
        )
        .await;
        outs.push(dir.join("audit"));
    }
    for f in [
        output::ITEMS,
        output::SUMMARY,
        output::REPORT_MD,
        output::REPORT_HTML,
        output::SUGGESTED_QRELS,
        output::VERIFY_ITEMS,
    ] {
        assert!(
            std::fs::read(outs[0].join(f)).unwrap() == std::fs::read(outs[1].join(f)).unwrap(),
            "{f} differs"
        );
    }
    // a different seed changes the sample and the permutations
    let llm = fake_llm(&fake, &["a", "b"], &tmp.path().join("c3.sqlite"), 8).await;
    let other = AuditSettings {
        seed: 43,
        ..settings
    };
    audited(
        &bench,
        &llm,
        other,
        &tmp.path().join("seed43"),
        &tmp.path().join("index"),
    )
    .await;
    assert_ne!(
        std::fs::read(outs[0].join(output::ITEMS)).unwrap(),
        std::fs::read(tmp.path().join("seed43").join(output::ITEMS)).unwrap()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_calls_nothing_and_counts_the_calls() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(bench) = clapnq(tmp.path()) else {
        return;
    };
    let fake = FakeServer::builder()
        .respond(hashed_judge)
        .start()
        .await
        .unwrap();
    let mut cfg = fake_llm(&fake, &["a"], &tmp.path().join("c.sqlite"), 8)
        .await
        .config()
        .clone();
    cfg.endpoints[0].price_in_per_mtok = 1.0;
    let llm = dry_run_llm(cfg.clone(), &tmp.path().join("c.sqlite")).await;
    let s = AuditSettings {
        sample: Some(3),
        dimensions: vec![Dimension::Alignment, Dimension::Quality],
        ..Default::default()
    };
    let Outcome::DryRun {
        plan,
        judgements,
        reused,
        ..
    } = audit(
        &bench,
        &llm,
        s.clone(),
        &tmp.path().join("audit"),
        &tmp.path().join("index"),
    )
    .await
    else {
        panic!("not a dry run")
    };
    assert_eq!(fake.chat_calls(), 0);
    assert_eq!(reused, 0);
    assert!(judgements > 0);
    assert_eq!(plan.total().calls as usize, judgements);
    assert!(
        plan.total().prompt_tokens > 100 * judgements as u64,
        "prompts are counted"
    );
    assert!(plan.total().cost_max_usd > 0.0);
    assert!(
        !tmp.path().join("audit").join(output::SUMMARY).exists(),
        "a dry run writes nothing"
    );
    assert_eq!(plan.total().prompt_tokens_cached, 0, "no prompt cache kept");

    // servers that keep a prompt cache per slot: the judgements of one turn share their
    // instructions and conversation, so part of the same prompt tokens is planned as held
    cfg.endpoints[0].prefix_cache_slots = Some(2);
    let cached = dry_run_llm(cfg, &tmp.path().join("c.sqlite")).await;
    let Outcome::DryRun { plan: held, .. } = audit(
        &bench,
        &cached,
        s,
        &tmp.path().join("audit"),
        &tmp.path().join("index"),
    )
    .await
    else {
        panic!("not a dry run")
    };
    let (all, held) = (plan.total(), held.total());
    assert_eq!(held.prompt_tokens, all.prompt_tokens);
    assert!(
        held.prompt_tokens_cached > all.prompt_tokens / 10
            && held.prompt_tokens_cached < all.prompt_tokens,
        "{} of {}",
        held.prompt_tokens_cached,
        all.prompt_tokens
    );
    assert_eq!(fake.chat_calls(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn budget_stop_is_clean_and_a_rerun_finishes_without_changing_what_it_had() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(bench) = clapnq(tmp.path()) else {
        return;
    };
    let fake = FakeServer::builder()
        .respond(hashed_judge)
        .start()
        .await
        .unwrap();
    let cache = tmp.path().join("c.sqlite");
    let mut cfg = fake_llm(&fake, &["a"], &cache, 4).await.config().clone();
    cfg.endpoints[0].price_in_per_mtok = 10.0;
    cfg.endpoints[0].price_out_per_mtok = 10.0;
    let settings = AuditSettings {
        sample: Some(4),
        dimensions: vec![Dimension::Alignment, Dimension::Faithfulness],
        resamples: 100,
        ..Default::default()
    };
    let out = tmp.path().join("audit");
    let llm = mtr_llm::Llm::new(
        cfg.clone(),
        mtr_llm::LlmOptions {
            cache_path: Some(cache.clone()),
            max_cost: Some(0.05),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let s = audited(
        &bench,
        &llm,
        settings.clone(),
        &out,
        &tmp.path().join("index"),
    )
    .await;
    assert!(!s.complete, "the budget must stop this audit");
    assert!(s.stopped.is_some());
    assert!(s.plan.judgements_done < s.plan.judgements_planned && s.plan.judgements_done > 0);
    assert!(
        s.cost.total.cost_usd <= 0.05 + 1e-9,
        "{}",
        s.cost.total.cost_usd
    );
    validate_folder(&out);
    let first = read_items(&out);
    let calls = fake.chat_calls();
    let llm = llm_with_cache(cfg, &cache).await;
    let s = audited(&bench, &llm, settings, &out, &tmp.path().join("index")).await;
    assert!(s.complete);
    let second = read_items(&out);
    assert_eq!(second.len(), s.plan.judgements_planned);
    assert_eq!(
        fake.chat_calls() - calls,
        (second.len() - first.len()) as u64,
        "only the missing judgements are paid"
    );
    let by_id: HashMap<&str, &Judgement> = second.iter().map(|j| (j.id.as_str(), j)).collect();
    for j in &first {
        assert_eq!(by_id[j.id.as_str()], j, "kept as it was");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unparsable_judgements_are_counted_never_scored() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(bench) = clapnq(tmp.path()) else {
        return;
    };
    // judge b always answers prose without a rating; judge a answers 4
    let fake = FakeServer::builder()
        .respond(|r: &FakeRequest| {
            if r.model.starts_with('b') {
                FakeReply::Content("I cannot decide.".into())
            } else {
                FakeReply::json(serde_json::json!({"justification": "ok", "rating": 4}))
            }
        })
        .start()
        .await
        .unwrap();
    let llm = fake_llm(&fake, &["a", "b"], &tmp.path().join("c.sqlite"), 8).await;
    let settings = AuditSettings {
        sample: Some(3),
        dimensions: vec![Dimension::Quality],
        resamples: 100,
        ..Default::default()
    };
    let out = tmp.path().join("audit");
    let s = audited(&bench, &llm, settings, &out, &tmp.path().join("index")).await;
    let q = &s.dimensions[&Dimension::Quality];
    assert_eq!(q.mean, Some(4.0), "failures are excluded, not scored");
    assert_eq!(q.per_judge["b"].n, 0);
    assert_eq!(q.per_judge["b"].failed, q.items);
    assert_eq!(s.failures["b"][&Dimension::Quality], q.items);
    assert!(read_items(&out).iter().filter(|j| j.judge == "b").all(
        |j| j.score.is_none() && j.parse_status == crate::judges::record::ParseOutcome::Failed
    ));
    validate_folder(&out);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_are_their_own_status_and_failed_answers_keep_their_text() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(bench) = clapnq(tmp.path()) else {
        return;
    };
    // judge b refuses every request; judge c answers prose; judge a rates 4
    let fake = FakeServer::builder()
        .respond(|r: &FakeRequest| {
            if r.model.starts_with('b') {
                FakeReply::Refusal("I'm sorry, but I can't assist with that request.".into())
            } else if r.model.starts_with('c') {
                FakeReply::Content(format!("Well, {} I would say four.", "hmm, ".repeat(200)))
            } else {
                FakeReply::json(serde_json::json!({"justification": "ok", "rating": 4}))
            }
        })
        .start()
        .await
        .unwrap();
    let llm = fake_llm(&fake, &["a", "b", "c"], &tmp.path().join("c.sqlite"), 8).await;
    let settings = AuditSettings {
        sample: Some(2),
        dimensions: vec![Dimension::Quality],
        resamples: 100,
        max_failed_share: 1.0,
        ..Default::default()
    };
    let out = tmp.path().join("audit");
    let s = audited(&bench, &llm, settings, &out, &tmp.path().join("index")).await;
    let q = &s.dimensions[&Dimension::Quality];
    assert_eq!(q.mean, Some(4.0));
    let items = read_items(&out);
    let b: Vec<&Judgement> = items.iter().filter(|j| j.judge == "b").collect();
    assert_eq!(b.len(), q.items);
    for j in &b {
        assert_eq!(j.parse_status, crate::judges::record::ParseOutcome::Refused);
        assert_eq!(
            j.raw_excerpt.as_deref(),
            Some("I'm sorry, but I can't assist with that request.")
        );
        assert!(!j.parse_detail.as_deref().unwrap().contains("empty answer"));
    }
    for j in items.iter().filter(|j| j.judge == "c") {
        assert_eq!(j.parse_status, crate::judges::record::ParseOutcome::Failed);
        let ex = j.raw_excerpt.as_deref().unwrap();
        assert!(ex.starts_with("Well, hmm,"), "{ex}");
        assert!(ex.chars().count() <= crate::judges::record::RAW_EXCERPT_CHARS + 3);
    }
    // a refusal is not asked again (an unparsable answer is, by the LLM layer's retries)
    let retries = mtr_llm::config::RetryConfig::default().parse_retries as usize;
    assert_eq!(
        fake.chat_calls() as usize,
        q.items * 2 + q.items * (1 + retries)
    );
    validate_folder(&out);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dense_negatives_join_bm25_when_an_embedder_is_configured() {
    use mtr_retrieve::dense::{DenseOptions, DenseRetriever, Embedder};
    let tmp = tempfile::tempdir().unwrap();
    let Some(bench) = clapnq(tmp.path()) else {
        return;
    };
    let fake = FakeServer::builder()
        .respond(hashed_judge)
        .start()
        .await
        .unwrap();
    let mut judge = fake.endpoint("a", "a-model");
    judge.max_concurrency = 16;
    let config = mtr_llm::LlmConfig {
        endpoints: vec![judge, fake.endpoint("emb", "fake-embedder")],
        roles: mtr_llm::Roles {
            judges: vec!["a".into()],
            embedder: vec!["emb".into()],
            ..Default::default()
        },
        ..Default::default()
    };
    let llm = llm_with_cache(config, &tmp.path().join("c.sqlite")).await;
    let idx = crate::items::materials::corpus_index(
        &bench,
        &tmp.path().join("index"),
        &mtr_core::progress::NoProgress,
    )
    .unwrap();
    let embedder: Arc<dyn Embedder> =
        Arc::new(mtr_retrieve::llm::LlmEmbedder::new(llm.clone()).unwrap());
    let src = mtr_retrieve::CorpusSource::Benchmark(bench.dir.clone());
    let opts = DenseOptions {
        batch_size: 64,
        concurrency: 8,
        ..Default::default()
    };
    let dense = mtr_retrieve::ensure_dense(
        &idx,
        &src,
        embedder.as_ref(),
        &opts,
        &mtr_core::progress::NoProgress,
    )
    .await
    .unwrap();
    let dense: Arc<dyn mtr_retrieve::Retriever> =
        Arc::new(DenseRetriever::new(Arc::new(dense), embedder));
    let bm25: Arc<dyn mtr_retrieve::Retriever> = Arc::new(idx.bm25().unwrap());
    let settings = AuditSettings {
        sample: Some(3),
        dimensions: vec![Dimension::Completeness],
        resamples: 100,
        ..Default::default()
    };
    let pools = |dir: &Path| -> BTreeSet<String> {
        read_items(dir)
            .into_iter()
            .flat_map(|j| j.pool.unwrap_or_default())
            .collect()
    };
    let (a, b) = (tmp.path().join("bm25"), tmp.path().join("both"));
    let Outcome::Audited(sa) =
        audit_with(&bench, &llm, settings.clone(), &a, vec![bm25.clone()]).await
    else {
        panic!()
    };
    let Outcome::Audited(sb) = audit_with(&bench, &llm, settings, &b, vec![bm25, dense]).await
    else {
        panic!()
    };
    let (pa, pb) = (pools(&a), pools(&b));
    let only_dense: Vec<&String> = pb.difference(&pa).collect();
    assert!(
        only_dense.len() > 10,
        "dense retrieval added no negatives: {}",
        only_dense.len()
    );
    assert!(
        pa.intersection(&pb).count() > 10,
        "BM25 negatives stay in the interleaved pools"
    );
    assert_eq!(sa.plan.items, sb.plan.items);
    assert_ne!(
        sa.fingerprint.config, sb.fingerprint.config,
        "the retrievers are part of the fingerprint"
    );
}
