//! Whole audits against the fake OpenAI-compatible server on the real MTRAG clapnq data:
//! a full run (outputs validate against the JSON Schemas in `docs/`, a rerun changes nothing
//! and calls nothing), dry run, budget stop and resume, failure accounting, and the
//! planted-defect test with a scripted oracle judge.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use mtr_core::{Benchmark, Dialogue, Passage};
use mtr_llm::fake::{FakeReply, FakeRequest, FakeServer};
use rand::seq::{IndexedRandom, SliceRandom};

use crate::config::AuditSettings;
use crate::dimension::Dimension;
use crate::job::Outcome;
use crate::judges::prompts::passage_display;
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
pub fn validate_folder(dir: &Path) {
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

fn read_items(dir: &Path) -> Vec<Judgement> {
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
        s.plan.skipped[&Dimension::Alignment][&crate::items::plan::SkipReason::NoGold] > 0,
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

/// What the planted-defect test planted.
struct Planted {
    bench: Benchmark,
    /// Turns whose gold was replaced by a random passage (the true gold stays in the corpus).
    swapped: BTreeSet<String>,
    /// Turns that lost one of their golds (at least one stays).
    deleted: BTreeSet<String>,
    /// Turns whose only gold was replaced by an irrelevant passage of another document, the
    /// true gold (and any passage with its text) removed from the corpus: no relevant passage
    /// can be left in the pool.
    replaced: BTreeSet<String>,
    /// question -> display texts of its original (true) gold passages
    truth: HashMap<String, HashSet<String>>,
    /// (turn, passage) of every original gold
    true_pairs: HashSet<(String, String)>,
    /// Golds a turn lost (swapped out or deleted) that are still in the corpus.
    missing: BTreeMap<String, Vec<String>>,
}

fn plant(src: &Benchmark, dir: &Path, seed: u64) -> Planted {
    let mut corpus: Vec<Passage> = Vec::new();
    src.dir
        .for_each_passage(|_, p| {
            corpus.push(p);
            Ok(())
        })
        .unwrap();
    let by_id: HashMap<&str, &Passage> = corpus.iter().map(|p| (p.id.as_str(), p)).collect();
    let mut truth: HashMap<String, HashSet<String>> = HashMap::new();
    let mut true_pairs = HashSet::new();
    let mut gold_uses: HashMap<&str, usize> = HashMap::new();
    let mut pairs: Vec<(usize, usize, usize)> = Vec::new();
    for (di, d) in src.dialogues.iter().enumerate() {
        for (ti, t) in d.turns.iter().enumerate() {
            for (gi, g) in t.gold.iter().enumerate() {
                *gold_uses.entry(g.passage_id.as_str()).or_default() += 1;
                if g.grade > 0 {
                    truth
                        .entry(t.user.clone())
                        .or_default()
                        .insert(passage_display(by_id[g.passage_id.as_str()]));
                    true_pairs.insert((t.id.clone(), g.passage_id.clone()));
                    pairs.push((di, ti, gi));
                }
            }
        }
    }
    let n = pairs.len() / 10;
    let mut rng = crate::seed::rng(seed, &["plant"]);
    pairs.shuffle(&mut rng);
    let mut dialogues: Vec<Dialogue> = src.dialogues.clone();
    let mut swapped = BTreeSet::new();
    let mut missing: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut touched: HashSet<(usize, usize)> = HashSet::new();
    for &(di, ti, gi) in pairs.iter().take(n) {
        let turn = &mut dialogues[di].turns[ti];
        let own: HashSet<String> = turn.gold.iter().map(|g| g.passage_id.clone()).collect();
        let p = loop {
            let p = corpus.choose(&mut rng).unwrap();
            if !own.contains(&p.id) {
                break p.id.clone();
            }
        };
        let old = std::mem::replace(&mut turn.gold[gi].passage_id, p);
        missing.entry(turn.id.clone()).or_default().push(old);
        swapped.insert(turn.id.clone());
        touched.insert((di, ti));
    }
    // deletions: golds of turns that keep at least one gold
    let mut to_delete: HashMap<(usize, usize), Vec<usize>> = HashMap::new();
    let mut deleted = BTreeSet::new();
    let mut count = 0;
    for &(di, ti, gi) in pairs.iter().skip(n) {
        if count == n {
            break;
        }
        let t = &dialogues[di].turns[ti];
        let planned = to_delete.get(&(di, ti)).map_or(0, Vec::len);
        if touched.contains(&(di, ti)) || t.gold.len() - planned < 2 {
            continue;
        }
        to_delete.entry((di, ti)).or_default().push(gi);
        missing
            .entry(t.id.clone())
            .or_default()
            .push(t.gold[gi].passage_id.clone());
        deleted.insert(t.id.clone());
        count += 1;
    }
    // replacements with nothing relevant left: single-gold turns whose gold is no other
    // turn's gold; the gold leaves the corpus
    let mut replaced = BTreeSet::new();
    let mut removed_ids: HashSet<String> = HashSet::new();
    let mut removed_texts: HashSet<String> = HashSet::new();
    for &(di, ti, gi) in pairs.iter().skip(n) {
        if replaced.len() == n / 2 {
            break;
        }
        let t = &dialogues[di].turns[ti];
        let gold = t.gold[gi].passage_id.clone();
        if touched.contains(&(di, ti))
            || to_delete.contains_key(&(di, ti))
            || t.gold.len() != 1
            || gold_uses[gold.as_str()] != 1
        {
            continue;
        }
        let doc = by_id[gold.as_str()].doc_id.clone();
        let rel = &truth[&t.user];
        let p = loop {
            let p = corpus.choose(&mut rng).unwrap();
            if p.doc_id != doc && !rel.contains(&passage_display(p)) && p.id != gold {
                break p.id.clone();
            }
        };
        removed_texts.insert(passage_display(by_id[gold.as_str()]));
        removed_ids.insert(gold);
        let t = &mut dialogues[di].turns[ti];
        t.gold[gi].passage_id = p;
        replaced.insert(t.id.clone());
        touched.insert((di, ti));
    }
    for ((di, ti), mut gis) in to_delete {
        gis.sort_unstable_by(|a, b| b.cmp(a));
        for gi in gis {
            dialogues[di].turns[ti].gold.remove(gi);
        }
    }
    let corpus: Vec<Passage> = corpus
        .into_iter()
        .filter(|p| !removed_ids.contains(&p.id) && !removed_texts.contains(&passage_display(p)))
        .collect();
    let mut manifest = src.manifest.clone();
    manifest.name = format!("{}-planted", manifest.name);
    let out =
        mtr_core::benchmark::write_benchmark(dir, manifest, &dialogues, corpus.into_iter().map(Ok))
            .unwrap();
    Planted {
        bench: out.load().unwrap(),
        swapped,
        deleted,
        replaced,
        truth,
        true_pairs,
        missing,
    }
}

/// The oracle knows the original labels: it rates a passage 5 when it is a true gold of the
/// question and 1 otherwise; it picks the true gold of a pool (the one with the smallest text
/// hash when several are, a preference that ignores position) and answers "none" when no
/// passage of the pool is a true gold (when the schema forbids abstaining, as before issue 13,
/// it picks the least bad passage, the same in every trial, as a real judge does). Answers
/// get 5.
fn oracle(
    truth: Arc<HashMap<String, HashSet<String>>>,
) -> impl Fn(&FakeRequest) -> FakeReply + Send + Sync + 'static {
    move |r: &FakeRequest| {
        let sec = sections(&r.last_user);
        let q = sec
            .get("Current question")
            .map(|s| s.trim_start_matches("User: ").to_string())
            .unwrap_or_default();
        let rel = truth.get(&q);
        let is_rel = |t: &str| rel.is_some_and(|s| s.contains(t.trim()));
        if let Some(pool) = sec.get("Candidate passages") {
            let ps = numbered(pool);
            let may_abstain = r
                .schema
                .as_ref()
                .is_some_and(|x| x.to_string().contains("\"none\""));
            let choice = ps
                .iter()
                .enumerate()
                .filter(|(_, t)| is_rel(t))
                .min_by_key(|(_, t)| blake3::hash(t.as_bytes()).to_hex().to_string())
                .map_or_else(
                    || {
                        if may_abstain {
                            serde_json::json!("none")
                        } else {
                            // forced to pick: the least bad passage, the same in every trial
                            let least_bad = ps
                                .iter()
                                .enumerate()
                                .min_by_key(|(_, t)| {
                                    blake3::hash(t.as_bytes()).to_hex().to_string()
                                })
                                .map_or(1, |(i, _)| i + 1);
                            serde_json::json!(least_bad)
                        }
                    },
                    |(i, _)| serde_json::json!(i + 1),
                );
            return FakeReply::json(
                serde_json::json!({"justification": "oracle", "choice": choice}),
            );
        }
        let rating = match sec.get("Passage") {
            Some(p) => {
                if is_rel(p) {
                    5
                } else {
                    1
                }
            }
            None => 5,
        };
        FakeReply::json(serde_json::json!({"justification": "oracle", "rating": rating}))
    }
}

/// Precision of missing-gold suggestions: (true golds, suggestions).
fn precision(xs: &[&crate::items::aggregate::Suggestion], p: &Planted) -> (usize, usize) {
    let ok = xs
        .iter()
        .filter(|x| {
            p.true_pairs
                .contains(&(x.turn_id.clone(), x.passage_id.clone()))
        })
        .count();
    (ok, xs.len())
}

fn ratio((a, b): (usize, usize)) -> String {
    if b == 0 {
        "- (0/0)".to_string()
    } else {
        format!("{:.3} ({a}/{b})", a as f64 / b as f64)
    }
}

/// What a planted-defect audit found, measured against what was planted.
struct Measured {
    flag_precision: f64,
    recall_swapped: f64,
    recall_deleted: f64,
    recall_replaced: f64,
    /// (class, true golds, probable-missing-gold suggestions) per planted class.
    precision_by_class: Vec<(&'static str, usize, usize)>,
    /// (true golds, probable-missing-gold suggestions) over all classes.
    precision_all: (usize, usize),
    /// Per tag (`same_document`, `other`): golds a turn lost, those a pool held, those
    /// suggested as probable missing golds.
    lost_golds: BTreeMap<&'static str, [usize; 3]>,
}

/// Measures (and prints) flag precision and recall per planted class, the precision of
/// probable-missing-gold suggestions per class and per tag (`same_document` or not), and
/// the recall of lost golds; `judges` is the ensemble size (for the flag rule).
fn measure_planted(
    p: &Planted,
    s: &crate::summary::Summary,
    items: &[Judgement],
    settings: &AuditSettings,
    judges: usize,
    who: &str,
) -> Measured {
    use crate::items::aggregate::SuggestionVerdict;
    let flagged = flagged_turns(items, settings, judges, 1);
    // recall is over the audited turns (a sampled audit sees only some)
    let audited: BTreeSet<String> = items.iter().map(|j| j.turn_id.clone()).collect();
    let seen = |set: &BTreeSet<String>| -> BTreeSet<String> {
        set.intersection(&audited).cloned().collect()
    };
    let defective: BTreeSet<String> = seen(&p.swapped)
        .into_iter()
        .chain(seen(&p.deleted))
        .chain(seen(&p.replaced))
        .collect();
    let tp = flagged.intersection(&defective).count();
    let flag_precision = tp as f64 / flagged.len().max(1) as f64;
    let recall_of = |set: &BTreeSet<String>| {
        let set = seen(set);
        flagged.intersection(&set).count() as f64 / set.len().max(1) as f64
    };
    let (r_swap, r_del, r_rep) = (
        recall_of(&p.swapped),
        recall_of(&p.deleted),
        recall_of(&p.replaced),
    );
    // which golds of each turn's pools were there to be found
    let mut pooled: HashMap<&str, HashSet<&str>> = HashMap::new();
    for j in items
        .iter()
        .filter(|j| j.dimension == Dimension::Completeness)
    {
        pooled
            .entry(j.turn_id.as_str())
            .or_default()
            .extend(j.pool.iter().flatten().map(String::as_str));
    }
    // no relevant passage was left in the pools of the new class
    for t in &p.replaced {
        let rel: Vec<&&str> = pooled
            .get(t.as_str())
            .into_iter()
            .flatten()
            .filter(|x| p.true_pairs.contains(&(t.clone(), x.to_string())))
            .collect();
        assert!(rel.is_empty(), "{t}: {rel:?}");
    }
    // precision of suggestions per planted class, and per tag
    let class = |t: &str| {
        if p.swapped.contains(t) {
            "swapped gold"
        } else if p.deleted.contains(t) {
            "deleted gold"
        } else if p.replaced.contains(t) {
            "replaced, nothing relevant in the pool"
        } else {
            "no defect"
        }
    };
    // the same per dimension, so a reader sees which one flags
    for d in settings.dimensions() {
        let one = AuditSettings {
            dimensions: vec![d],
            ..settings.clone()
        };
        let f = flagged_turns(items, &one, judges, 1);
        let hit = f.intersection(&defective).count();
        let r = |set: &BTreeSet<String>| {
            let set = seen(set);
            f.intersection(&set).count() as f64 / set.len().max(1) as f64
        };
        println!(
            "  flags from {} alone: {} flagged; precision {:.3}, recall swapped {:.3}, deleted {:.3}, replaced {:.3}",
            d.name(),
            f.len(),
            hit as f64 / f.len().max(1) as f64,
            r(&p.swapped),
            r(&p.deleted),
            r(&p.replaced),
        );
    }
    // how well alignment ratings alone tell a planted (wrong) gold from a true one: mean of
    // each and the AUC (probability that a true gold is rated above a planted one)
    let (mut truthful, mut planted) = (Vec::new(), Vec::new());
    for j in items.iter().filter(|j| j.dimension == Dimension::Alignment) {
        if let (Some(pid), Some(x)) = (&j.passage_id, j.score) {
            if p.true_pairs.contains(&(j.turn_id.clone(), pid.clone())) {
                truthful.push(x);
            } else {
                planted.push(x);
            }
        }
    }
    if !truthful.is_empty() && !planted.is_empty() {
        let wins: f64 = truthful
            .iter()
            .flat_map(|t| planted.iter().map(move |q| (t, q)))
            .map(|(t, q)| match t.partial_cmp(q) {
                Some(std::cmp::Ordering::Greater) => 1.0,
                Some(std::cmp::Ordering::Equal) => 0.5,
                _ => 0.0,
            })
            .sum();
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        println!(
            "  alignment ratings: true golds {} (mean {:.2}), planted golds {} (mean {:.2}); AUC {:.3}",
            truthful.len(),
            mean(&truthful),
            planted.len(),
            mean(&planted),
            wins / (truthful.len() * planted.len()) as f64,
        );
    }
    let mut precision_by_class = Vec::new();
    let probable: Vec<&crate::items::aggregate::Suggestion> = s
        .suggested_qrels
        .iter()
        .filter(|x| x.verdict == SuggestionVerdict::ProbableMissingGold)
        .collect();
    println!(
        "planted defects ({who}): {} audited turns, {} with a swapped gold, {} with a deleted gold, {} replaced (nothing relevant in the pool); {} flagged; flag precision {flag_precision:.3}, recall swapped {r_swap:.3}, deleted {r_del:.3}, replaced {r_rep:.3}; {} candidates, {} probable missing gold",
        audited.len(),
        seen(&p.swapped).len(),
        seen(&p.deleted).len(),
        seen(&p.replaced).len(),
        flagged.len(),
        s.suggested_qrels.len(),
        probable.len(),
    );
    for c in [
        "swapped gold",
        "deleted gold",
        "replaced, nothing relevant in the pool",
        "no defect",
    ] {
        let mine: Vec<&crate::items::aggregate::Suggestion> = probable
            .iter()
            .copied()
            .filter(|x| class(&x.turn_id) == c)
            .collect();
        let cands = s
            .suggested_qrels
            .iter()
            .filter(|x| class(&x.turn_id) == c)
            .count();
        let (ok, n) = precision(&mine, p);
        let same: Vec<_> = mine.iter().copied().filter(|x| x.same_document).collect();
        let other: Vec<_> = mine.iter().copied().filter(|x| !x.same_document).collect();
        println!(
            "  {c}: {cands} candidates; probable missing gold precision {} (same_document {}, other {})",
            ratio((ok, n)),
            ratio(precision(&same, p)),
            ratio(precision(&other, p))
        );
        precision_by_class.push((c, ok, n));
    }
    // recall of the golds a turn lost, per tag (same document as a remaining gold or not),
    // over those a pool held and over all
    let labelled_docs = |t: &str| -> HashSet<Option<String>> {
        p.bench
            .find_turn(t)
            .map(|(d, ti)| {
                d.turns[ti]
                    .gold
                    .iter()
                    .map(|g| mtr_core::formats::mtrag::passage_doc_id(&g.passage_id))
                    .collect()
            })
            .unwrap_or_default()
    };
    let found: HashSet<(&str, &str)> = probable
        .iter()
        .map(|x| (x.turn_id.as_str(), x.passage_id.as_str()))
        .collect();
    let mut tally: BTreeMap<&'static str, [usize; 3]> = BTreeMap::new();
    for (t, lost) in p.missing.iter().filter(|(t, _)| audited.contains(*t)) {
        let docs = labelled_docs(t);
        for g in lost {
            let doc = mtr_core::formats::mtrag::passage_doc_id(g);
            let tag = if doc.is_some() && docs.contains(&doc) {
                "same_document"
            } else {
                "other"
            };
            let e = tally.entry(tag).or_default();
            e[0] += 1;
            e[1] += usize::from(
                pooled
                    .get(t.as_str())
                    .is_some_and(|x| x.contains(g.as_str())),
            );
            e[2] += usize::from(found.contains(&(t.as_str(), g.as_str())));
        }
    }
    for (tag, [all, in_pool, hit]) in &tally {
        println!(
            "  lost golds, {tag}: {all}, {in_pool} in a pool, {hit} suggested as probable missing gold: recall {} of those in a pool, {} of all",
            ratio((*hit, *in_pool)),
            ratio((*hit, *all))
        );
    }
    if let Some(d) = s.discriminability.as_ref() {
        println!(
            "  abstentions {:?}; none-majority items {}; pool negatives from the gold's document {}/{}; candidates by tag {:?}",
            d.abstentions,
            d.none_majority_items,
            d.pool_negatives_same_document,
            d.pool_negatives,
            d.candidates_by_tag
        );
    }
    Measured {
        flag_precision,
        recall_swapped: r_swap,
        recall_deleted: r_del,
        recall_replaced: r_rep,
        precision_by_class,
        precision_all: precision(&probable, p),
        lost_golds: tally,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planted_defects_are_flagged_by_an_oracle_judge() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(src) = clapnq(tmp.path()) else {
        return;
    };
    let p = plant(&src, &tmp.path().join("planted"), 7);
    assert!(
        p.swapped.len() >= 40 && p.deleted.len() >= 40 && p.replaced.len() >= 10,
        "{} {} {}",
        p.swapped.len(),
        p.deleted.len(),
        p.replaced.len()
    );
    let fake = FakeServer::builder()
        .respond(oracle(Arc::new(p.truth.clone())))
        .start()
        .await
        .unwrap();
    let llm = fake_llm(
        &fake,
        &["oracle-a", "oracle-b"],
        &tmp.path().join("c.sqlite"),
        32,
    )
    .await;
    let settings = AuditSettings {
        dimensions: vec![Dimension::Alignment, Dimension::Completeness],
        resamples: 200,
        ..Default::default()
    };
    let out = tmp.path().join("audit");
    let s = audited(
        &p.bench,
        &llm,
        settings.clone(),
        &out,
        &tmp.path().join("index"),
    )
    .await;
    assert!(s.complete);
    let items = read_items(&out);
    let m = measure_planted(&p, &s, &items, &settings, 2, "oracle judge");
    let (flag_precision, r_swap, r_del, r_rep) = (
        m.flag_precision,
        m.recall_swapped,
        m.recall_deleted,
        m.recall_replaced,
    );
    for (c, ok, n) in &m.precision_by_class {
        assert!(
            *n == 0 || *ok as f64 >= 0.98 * *n as f64,
            "{c}: precision {ok}/{n}"
        );
    }
    // the forced choice suggested a passage on these turns; abstaining suggests none
    assert_eq!(
        s.suggested_qrels
            .iter()
            .filter(|x| p.replaced.contains(&x.turn_id))
            .count(),
        0
    );
    let tally = &m.lost_golds;
    assert!(flag_precision >= 0.95, "precision {flag_precision}");
    assert!(r_swap >= 0.95, "swapped recall {r_swap}");
    assert!(r_rep >= 0.95, "replaced recall {r_rep}");
    // A deleted gold can only be found when BM25 puts it among the M negatives of a remaining
    // gold's pool, and then only when the judge prefers it to that gold (the oracle's
    // preference ignores position: about half the time per pool).
    let retrieved: usize = tally.values().map(|x| x[1]).sum();
    let hits: usize = tally.values().map(|x| x[2]).sum();
    assert!(retrieved >= 10, "retrieved {retrieved}");
    assert!(
        hits as f64 / retrieved as f64 >= 0.4,
        "found {hits} of {retrieved} lost golds in a pool"
    );
    assert!(r_del >= 0.15, "deleted recall {r_del}");
    let (ok, n) = m.precision_all;
    assert!(ok as f64 >= 0.98 * n as f64 && ok > 20, "{ok}/{n}");
    validate_folder(&out);
}

fn job(
    settings: AuditSettings,
    out: &Path,
    human: Option<std::path::PathBuf>,
    human_sample: Option<usize>,
) -> crate::job::AuditJob {
    crate::job::AuditJob {
        settings,
        out_dir: out.to_path_buf(),
        prompts: crate::judges::prompts::AuditPrompts::builtin().unwrap(),
        retrievers: Vec::new(),
        config_hash: "test".into(),
        tool_version: "test".into(),
        git_commit: None,
        human_labels: human,
        human_sample,
        progress: mtr_core::progress::none(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn self_preference_and_shared_family_are_warned() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(mut bench) = clapnq(tmp.path()) else {
        return;
    };
    bench
        .manifest
        .generator
        .insert("answers".into(), "Qwen/Qwen2.5-72B-Instruct".into());
    let fake = FakeServer::builder()
        .respond(hashed_judge)
        .start()
        .await
        .unwrap();
    let endpoints = vec![
        fake.endpoint("q1", "qwen2.5-7b-instruct"),
        fake.endpoint("q2", "qwen3-8b"),
        fake.endpoint("l", "llama-3.1-8b"),
    ];
    let config = mtr_llm::LlmConfig {
        endpoints,
        roles: mtr_llm::Roles {
            judges: vec!["q1".into(), "q2".into(), "l".into()],
            ..Default::default()
        },
        ..Default::default()
    };
    let llm = llm_with_cache(config, &tmp.path().join("c.sqlite")).await;
    let s = AuditSettings {
        sample: Some(2),
        dimensions: vec![Dimension::Quality],
        resamples: 100,
        ..Default::default()
    };
    let Outcome::Audited(s) =
        crate::audit::run(&bench, job(s, &tmp.path().join("a"), None, None), &llm)
            .await
            .unwrap()
    else {
        panic!()
    };
    assert_eq!(
        s.bias.self_preference.len(),
        2,
        "{:?}",
        s.bias.self_preference
    );
    assert!(s.bias.self_preference.iter().all(|w| w.contains("`qwen`")));
    assert!(
        s.warnings
            .iter()
            .any(|w| w.contains("q1, q2") && w.contains("qwen")),
        "{:?}",
        s.warnings
    );
    let md = std::fs::read_to_string(tmp.path().join("a").join(output::REPORT_MD)).unwrap();
    assert!(md.contains("Self-preference"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generic_human_ratings_are_compared_with_item_scores() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(bench) = clapnq(tmp.path()) else {
        return;
    };
    let fake = FakeServer::builder()
        .respond(hashed_judge)
        .start()
        .await
        .unwrap();
    let llm = fake_llm(&fake, &["a", "b"], &tmp.path().join("c.sqlite"), 8).await;
    let settings = AuditSettings {
        sample: Some(6),
        dimensions: vec![Dimension::Quality],
        resamples: 100,
        ..Default::default()
    };
    let first = tmp.path().join("first");
    let Outcome::Audited(_) =
        crate::audit::run(&bench, job(settings.clone(), &first, None, None), &llm)
            .await
            .unwrap()
    else {
        panic!()
    };
    // two annotators: one equal to the ensemble item score (rounded), one off by one on every
    // third item
    let items = crate::items::aggregate::score_items(&read_items(&first), 2, 3);
    let mut lines = String::new();
    for (n, it) in items.iter().filter(|i| i.score.is_some()).enumerate() {
        let x = it.score.unwrap().round();
        let y = if n % 3 == 0 {
            if x < 5.0 { x + 1.0 } else { x - 1.0 }
        } else {
            x
        };
        lines.push_str(&serde_json::json!({"turn_id": it.turn_id, "dimension": "quality", "score": x, "annotator": "h1"}).to_string());
        lines.push('\n');
        lines.push_str(&serde_json::json!({"turn_id": it.turn_id, "dimension": "quality", "score": y, "annotator": "h2"}).to_string());
        lines.push('\n');
    }
    let file = tmp.path().join("human.jsonl");
    std::fs::write(&file, lines).unwrap();
    let Outcome::Audited(s) = crate::audit::run(
        &bench,
        job(settings, &tmp.path().join("second"), Some(file), None),
        &llm,
    )
    .await
    .unwrap() else {
        panic!()
    };
    let h = s.human.as_ref().unwrap();
    assert_eq!(h.kind, "items");
    let c = &h.comparisons[0];
    assert_eq!(c.dimension, Dimension::Quality);
    assert_eq!(c.ensemble.n, items.len());
    assert!(c.ensemble.pearson.unwrap() > 0.9, "{:?}", c.ensemble);
    assert!(c.ensemble.spearman.unwrap() > 0.9);
    assert_eq!(c.ceiling.units, items.len());
    assert_eq!(c.ceiling.annotators_per_unit, 2.0);
    assert!(c.ceiling.pearson_pairwise.unwrap() > 0.8);
    validate_folder(&tmp.path().join("second"));
}

/// A judge that knows the MTRAG annotators' median ratings of each answer (faithfulness for
/// the faithfulness prompt, completeness for the quality prompt) and maps them onto 1-5.
fn human_oracle(
    medians: Arc<HashMap<String, (f64, f64)>>,
) -> impl Fn(&FakeRequest) -> FakeReply + Send + Sync + 'static {
    move |r: &FakeRequest| {
        let sec = sections(&r.last_user);
        let answer = sec
            .get("Reference answer")
            .or_else(|| sec.get("Answer"))
            .map(|a| a.trim_start_matches("Assistant: ").trim().to_string())
            .unwrap_or_default();
        let (faith, comp) = medians.get(&answer).copied().unwrap_or((1.0, 1.0));
        // the answer-completeness prompt (human_completeness.j2) shows passages too
        let completeness = sec
            .get("Task")
            .is_some_and(|t| t.contains("Is the answer complete"));
        let m = if sec.contains_key("Evidence passages") && !completeness {
            faith
        } else {
            comp
        };
        let rating = (1.0 + (m - 1.0) * 4.0 / 3.0).round() as i64;
        FakeReply::json(
            serde_json::json!({"justification": "knows the annotators", "rating": rating}),
        )
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mtrag_human_calibration_on_the_real_file() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(bench) = clapnq(tmp.path()) else {
        return;
    };
    let file = shared().unwrap().join("human_evaluations_clapnq_govt.json");
    let crate::human::agreement::HumanLabels::Mtrag { items, .. } =
        crate::human::agreement::load(&file).unwrap()
    else {
        panic!()
    };
    let medians: HashMap<String, (f64, f64)> = items
        .iter()
        .map(|i| {
            let med = |m: &str| {
                crate::human::agreement::median(
                    &i.ratings
                        .get(m)
                        .map(|r| r.values().copied().collect::<Vec<_>>())
                        .unwrap_or_default(),
                )
                .unwrap_or(1.0)
            };
            (
                i.answer.trim().to_string(),
                (med("faithfulness"), med("completeness")),
            )
        })
        .collect();
    let fake = FakeServer::builder()
        .respond(human_oracle(Arc::new(medians)))
        .start()
        .await
        .unwrap();
    let llm = fake_llm(&fake, &["oracle"], &tmp.path().join("c.sqlite"), 16).await;
    let settings = AuditSettings {
        sample: Some(1),
        dimensions: vec![Dimension::Faithfulness, Dimension::Quality],
        resamples: 100,
        ..Default::default()
    };
    let out = tmp.path().join("audit");
    let Outcome::Audited(s) =
        crate::audit::run(&bench, job(settings, &out, Some(file), None), &llm)
            .await
            .unwrap()
    else {
        panic!()
    };
    let h = s.human.as_ref().unwrap();
    assert_eq!(
        (h.kind.as_str(), h.units, h.failed_judgements),
        ("mtrag", 234, 0)
    );
    for c in &h.comparisons {
        println!(
            "{} vs human {}: oracle judge r={:.3} rho={:.3} kappa={:.3} (n={}); annotators: alpha={:.3} pairwise r={:.3} leave-one-out r={:.3} kappa={:.3} ({:.2} per answer)",
            c.dimension,
            c.human_metric,
            c.ensemble.pearson.unwrap_or(f64::NAN),
            c.ensemble.spearman.unwrap_or(f64::NAN),
            c.ensemble.kappa_quadratic.unwrap_or(f64::NAN),
            c.ensemble.n,
            c.ceiling.krippendorff_alpha_ordinal.unwrap_or(f64::NAN),
            c.ceiling.pearson_pairwise.unwrap_or(f64::NAN),
            c.ceiling.pearson_leave_one_out.unwrap_or(f64::NAN),
            c.ceiling.kappa_quadratic_pairwise.unwrap_or(f64::NAN),
            c.ceiling.annotators_per_unit
        );
    }
    let f = h
        .comparisons
        .iter()
        .find(|c| c.human_metric == "faithfulness")
        .unwrap();
    let q = h
        .comparisons
        .iter()
        .find(|c| c.human_metric == "completeness")
        .unwrap();
    // the oracle reproduces the human median (up to the 1-4 -> 1-5 rounding)
    assert!(f.ensemble.pearson.unwrap() > 0.97 && q.ensemble.pearson.unwrap() > 0.97);
    // answers whose task has no passage text in the file are not judged for faithfulness nor
    // for completeness (judged with the passages shown, its own prompt)
    assert!(
        f.ensemble.n >= 210 && q.ensemble.n == f.ensemble.n,
        "{} {}",
        f.ensemble.n,
        q.ensemble.n
    );
    assert_eq!(q.judged_with.as_deref(), Some("audit/human_completeness@1"));
    // and beats the annotators' own agreement, which is far from perfect
    let ceiling = f.ceiling.pearson_leave_one_out.unwrap();
    assert!(ceiling > 0.2 && ceiling < 0.9, "{ceiling}");
    // the ceiling is computed on the judged units (the file's is kept beside it)
    assert!(f.ceiling.units <= f.ensemble.n && f.ceiling.annotators_per_unit > 2.9);
    assert!(f.ceiling_all_units.as_ref().unwrap().units >= 220);
    assert!(f.ensemble.pearson_ci.is_some() && f.ceiling.kappa_quadratic_pairwise_ci.is_some());
    // the answer sources (reference, GPT-4o, Llama-3.1-405B) each get a residual
    assert_eq!(f.residual_by_source["ensemble"].len(), 3);
    assert!(
        h.comparisons
            .iter()
            .any(|c| c.human_metric == "appropriateness")
            && h.comparisons
                .iter()
                .any(|c| c.human_metric == "naturalness")
    );
    validate_folder(&out);
    let md = std::fs::read_to_string(out.join(output::REPORT_MD)).unwrap();
    assert!(md.contains("Human calibration") && md.contains("annotators (ceiling)"));
    assert!(md.contains("Self-preference: residual by answer source"));
}

/// The planted-defect audit with a real local model as the judge, on a few dialogues and the
/// alignment dimension (which is what catches swapped golds). Slow on CPU: run it by hand,
/// `cargo test -p mtr-audit planted_defects_local -- --ignored --nocapture`
/// (`MTR_AUDIT_LOCAL_JUDGE` picks the model, default `qwen0.5b`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "minutes of CPU inference; run by hand"]
async fn planted_defects_local_model() {
    // MTR_AUDIT_LOCAL_JUDGE: the local model (default qwen0.5b); MTR_AUDIT_LOCAL_RATING:
    // `generated` (default) or `probability`; MTR_AUDIT_LOCAL_SAMPLE: dialogues (default 3);
    // MTR_AUDIT_LOCAL_DIMS: dimensions (default alignment,completeness);
    // MTR_AUDIT_LOCAL_THREADS: threads of the judge's server (default 2)
    let tmp = tempfile::tempdir().unwrap();
    let Some(src) = clapnq(tmp.path()) else {
        return;
    };
    let p = plant(&src, &tmp.path().join("planted"), 7);
    let env = |k: &str, d: &str| std::env::var(k).unwrap_or_else(|_| d.to_string());
    let model = env("MTR_AUDIT_LOCAL_JUDGE", "qwen0.5b");
    let mode: mtr_llm::logprob::RatingMode = serde_json::from_value(serde_json::Value::String(
        env("MTR_AUDIT_LOCAL_RATING", "generated"),
    ))
    .unwrap();
    let sample: usize = env("MTR_AUDIT_LOCAL_SAMPLE", "3").parse().unwrap();
    let dimensions: Vec<Dimension> = env("MTR_AUDIT_LOCAL_DIMS", "alignment,completeness")
        .split(',')
        .map(|d| Dimension::parse(d.trim()).unwrap())
        .collect();
    let mut config = mtr_llm::LlmConfig::default();
    config.local.judges = vec![model.clone()];
    config.local.generator = Some(model.clone());
    config.local.models.insert(
        model.clone(),
        mtr_llm::local::LocalModelOptions {
            rating_mode: Some(mode),
            // the test runs alone: both cores serve the one judge
            threads: Some(env("MTR_AUDIT_LOCAL_THREADS", "2").parse().unwrap()),
            ..Default::default()
        },
    );
    config.sampling.judges.max_tokens = Some(160);
    let llm = match mtr_llm::Llm::new(
        config,
        mtr_llm::LlmOptions {
            cache_path: Some(
                std::env::var_os("MTR_AUDIT_LOCAL_CACHE")
                    .map(Into::into)
                    .unwrap_or_else(|| tmp.path().join("c.sqlite")),
            ),
            ..Default::default()
        },
    )
    .await
    {
        Ok(l) => l,
        Err(e) => {
            eprintln!("skipping: {e}");
            return;
        }
    };
    // seed 5: dialogues holding swapped golds, so the small sample has defects to find
    let settings = AuditSettings {
        sample: Some(sample),
        seed: 5,
        dimensions,
        trials: 1,
        negatives: 3,
        resamples: 200,
        ..Default::default()
    };
    let out = tmp.path().join("audit");
    let t = std::time::Instant::now();
    let s = audited(
        &p.bench,
        &llm,
        settings.clone(),
        &out,
        &tmp.path().join("index"),
    )
    .await;
    let items = read_items(&out);
    println!(
        "local judge {model} ({mode:?} ratings): {} judgements ({} failed) in {:.0} s; mean alignment {:?}",
        items.len(),
        items.iter().filter(|j| !j.ok()).count(),
        t.elapsed().as_secs_f64(),
        s.dimensions.get(&Dimension::Alignment).and_then(|d| d.mean),
    );
    measure_planted(
        &p,
        &s,
        &items,
        &settings,
        1,
        &format!("local judge {model}"),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probability_ratings_are_offered_per_judge_and_recorded_per_judgement() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(bench) = clapnq(tmp.path()) else {
        return;
    };
    // every answer writes 4; asked for logprobs, the grade token is 4 or 3 with equal odds
    let fake = FakeServer::builder()
        .respond(|r: &FakeRequest| {
            if r.body.get("logprobs").is_some() {
                let alt = |t: &str| serde_json::json!({"token": t, "logprob": 0.5f64.ln()});
                FakeReply::WithLogprobs(
                    "4".into(),
                    serde_json::json!({"content": [{"token": "4", "logprob": 0.5f64.ln(), "top_logprobs": [alt("4"), alt("3")]}]}),
                )
            } else {
                FakeReply::json(serde_json::json!({"justification": "ok", "rating": 4}))
            }
        })
        .start()
        .await
        .unwrap();
    let config = |mode| crate::tests::kit::probability_pair_config(&fake, mode);
    let cache = tmp.path().join("c.sqlite");
    let settings = AuditSettings {
        sample: Some(2),
        dimensions: vec![Dimension::Alignment, Dimension::Quality],
        resamples: 100,
        ..Default::default()
    };
    let out = tmp.path().join("audit");
    let llm = llm_with_cache(config(mtr_llm::logprob::RatingMode::Probability), &cache).await;
    let s = audited(
        &bench,
        &llm,
        settings.clone(),
        &out,
        &tmp.path().join("index"),
    )
    .await;
    use mtr_llm::logprob::RatingMode;
    let modes: BTreeMap<&str, RatingMode> = s
        .judges
        .iter()
        .map(|j| (j.name.as_str(), j.rating_mode))
        .collect();
    assert_eq!(modes["p"], RatingMode::Probability);
    assert_eq!(modes["a"], RatingMode::Generated);
    let items = read_items(&out);
    assert!(!items.is_empty());
    for j in &items {
        match j.judge.as_str() {
            "p" => {
                assert_eq!(j.rating_mode, Some(RatingMode::Probability), "{j:?}");
                assert_eq!(j.score, Some(3.5));
                let d = j.rating_distribution.as_ref().unwrap();
                assert_eq!(d.written, Some(4));
            }
            _ => {
                assert_eq!(j.rating_mode, Some(RatingMode::Generated));
                assert_eq!(j.score, Some(4.0));
                assert!(j.rating_distribution.is_none());
            }
        }
    }
    let q = &s.dimensions[&Dimension::Quality];
    assert_eq!(q.per_judge["p"].mean, Some(3.5));
    let report = std::fs::read_to_string(out.join(output::REPORT_MD)).unwrap();
    assert!(report.contains("ratings read from token probabilities"));
    validate_folder(&out);
    // the same judge switched to written grades: its old judgements are not reused
    let calls = fake.chat_calls();
    let llm = llm_with_cache(config(RatingMode::Generated), &cache).await;
    let s = audited(&bench, &llm, settings, &out, &tmp.path().join("index")).await;
    let p_items = read_items(&out)
        .into_iter()
        .filter(|j| j.judge == "p")
        .collect::<Vec<_>>();
    assert_eq!(fake.chat_calls() - calls, p_items.len() as u64);
    assert!(
        p_items
            .iter()
            .all(|j| j.score == Some(4.0) && j.rating_mode == Some(RatingMode::Generated))
    );
    assert_eq!(
        s.dimensions[&Dimension::Quality].per_judge["p"].mean,
        Some(4.0)
    );
}

/// Judges that give every item a 5 and abstain ("none") on every pool.
fn constant_judge(r: &FakeRequest) -> FakeReply {
    let schema = r.schema.clone().unwrap_or_default();
    if crate::judges::record::pick_max(&schema).is_some() {
        FakeReply::json(serde_json::json!({"justification": "constant", "choice": "none"}))
    } else {
        FakeReply::json(serde_json::json!({"justification": "constant", "rating": 5}))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ensemble_of_constant_judges_is_reported_as_unable_to_separate() {
    use crate::statistics::verdict::{Behaviour, Separation};
    let tmp = tempfile::tempdir().unwrap();
    let Some(bench) = clapnq(tmp.path()) else {
        return;
    };
    let fake = FakeServer::builder()
        .respond(constant_judge)
        .start()
        .await
        .unwrap();
    let llm = fake_llm(&fake, &["qwen", "smol"], &tmp.path().join("c.sqlite"), 16).await;
    let settings = AuditSettings {
        sample: Some(3),
        resamples: 100,
        ..Default::default()
    };
    let out = tmp.path().join("audit");
    let s = audited(&bench, &llm, settings, &out, &tmp.path().join("index")).await;
    let v = s.verdict.clone().unwrap();
    assert_eq!(v.separation, Separation::CannotSeparate, "{v:#?}");
    for (d, x) in &v.dimensions {
        assert_eq!(x.separation, Separation::CannotSeparate, "{d}");
        let want = if d.is_rating() {
            Behaviour::Constant
        } else {
            Behaviour::Abstains
        };
        assert!(x.judges.iter().all(|j| j.behaviour == want), "{d}: {x:#?}");
    }
    // the verdict opens the report, and the flags are the judges' failure
    let md = std::fs::read_to_string(out.join(output::REPORT_MD)).unwrap();
    let head: Vec<&str> = md.lines().take(3).collect();
    assert!(
        head[2].starts_with("**The judges cannot separate anything**"),
        "{head:?}"
    );
    assert!(md.contains("## Worst items: the judges' failure, not the benchmark's"));
    assert!(md.contains("## Probable missing gold (the judges' failure, not the benchmark's"));
    insta::assert_snapshot!("constant_judges_report_head", head.join("\n"));
    let html = std::fs::read_to_string(out.join(output::REPORT_HTML)).unwrap();
    let body = html.split("<body>").nth(1).unwrap_or_default();
    let h1 = body.find("<h1>").unwrap();
    let first_para = body.find("<p>").unwrap();
    assert!(h1 < first_para);
    assert!(
        body[first_para..].starts_with("<p><strong>The judges cannot separate anything</strong>")
    );
    // summary.json carries it and validates; `mtr report` re-renders the same head
    validate_folder(&out);
    let back = output::read_summary(&out.join(output::SUMMARY)).unwrap();
    assert_eq!(back.verdict, s.verdict);
    let mut old = back.clone();
    old.verdict = None;
    assert_eq!(
        crate::report::markdown(&old),
        md,
        "a summary written before the verdict gets the same report"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ensemble_that_rates_true_golds_high_is_reported_as_separating() {
    use crate::statistics::verdict::Separation;
    let tmp = tempfile::tempdir().unwrap();
    let Some(src) = clapnq(tmp.path()) else {
        return;
    };
    let p = plant(&src, &tmp.path().join("planted"), 7);
    let fake = FakeServer::builder()
        .respond(oracle(Arc::new(p.truth.clone())))
        .start()
        .await
        .unwrap();
    let llm = fake_llm(
        &fake,
        &["oracle-a", "oracle-b"],
        &tmp.path().join("c.sqlite"),
        16,
    )
    .await;
    let settings = AuditSettings {
        sample: Some(30),
        dimensions: vec![Dimension::Alignment, Dimension::Completeness],
        resamples: 100,
        ..Default::default()
    };
    let out = tmp.path().join("audit");
    let s = audited(&p.bench, &llm, settings, &out, &tmp.path().join("index")).await;
    let v = s.verdict.clone().unwrap();
    assert_eq!(v.separation, Separation::Separates, "{v:#?}");
    assert_eq!(
        v.dimensions[&Dimension::Alignment].separation,
        Separation::Separates,
        "{v:#?}"
    );
    let md = std::fs::read_to_string(out.join(output::REPORT_MD)).unwrap();
    let head: Vec<&str> = md.lines().take(3).collect();
    assert!(
        head[2].starts_with("**The judges separate items** on alignment (α 1.00)"),
        "{head:?}"
    );
    assert!(!md.contains("judges' failure"), "{}", head[2]);
    assert!(md.contains("## Worst items\n"));
}

/// Turn ids the audit flagged in any dimension (for the planted-defect evaluation).
fn flagged_turns(
    items_jsonl: &[crate::judges::record::Judgement],
    settings: &crate::AuditSettings,
    judges: usize,
    samples: usize,
) -> std::collections::BTreeSet<String> {
    let items =
        crate::items::aggregate::score_items(items_jsonl, judges, settings.trials * samples);
    let set: std::collections::HashSet<crate::Dimension> =
        settings.dimensions().into_iter().collect();
    items
        .iter()
        .filter(|i| {
            set.contains(&i.dimension) && crate::statistics::dimensions::is_flagged(i, settings)
        })
        .map(|i| i.turn_id.clone())
        .collect()
}
