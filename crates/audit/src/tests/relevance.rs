//! Does the embedded default's relevance judge tell a gold from a wrong passage? Real MTRAG
//! clapnq turns, some golds swapped for a passage that answers another dialogue's question,
//! audited with the shipped default (no `mtr.toml`). Slow (local models): run by hand,
//! `cargo test -p mtr-audit swapped_golds_local_default -- --ignored --nocapture`
//! (`MTR_RELEVANCE_SEED`, default 1; `MTR_RELEVANCE_TURNS`, default 12; `MTR_RELEVANCE_SWAPS`,
//! default 5; `MTR_RELEVANCE_CONFIG`, an mtr.toml instead of the default, whose `[audit]`
//! may set `dimensions` and `letter_picks`; `MTR_RELEVANCE_OUT`, a folder that keeps the audit
//! and `swapped.json`; `MTR_RELEVANCE_CACHE`, the LLM cache). The table is in
//! docs/audit.md.

use std::collections::{BTreeMap, BTreeSet};

use rand::seq::{IndexedRandom, SliceRandom};

use crate::config::AuditSettings;
use crate::dimension::Dimension;
use crate::judges::record::Judgement;
use crate::tests::kit::{audited, clapnq};

/// Area under the ROC curve of `pos` above `neg` (ties count half).
fn auc(pos: &[f64], neg: &[f64]) -> f64 {
    let mut wins = 0.0;
    for p in pos {
        for n in neg {
            wins += if p > n {
                1.0
            } else if p == n {
                0.5
            } else {
                0.0
            };
        }
    }
    wins / (pos.len() * neg.len()).max(1) as f64
}

#[test]
fn auc_counts_ties_half() {
    assert_eq!(auc(&[3.0, 5.0], &[1.0]), 1.0);
    assert_eq!(auc(&[3.0], &[3.0, 4.0]), 0.25);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "minutes of CPU inference; run by hand"]
async fn swapped_golds_local_default() {
    let env = |k: &str, d: &str| std::env::var(k).unwrap_or_else(|_| d.to_string());
    let seed: u64 = env("MTR_RELEVANCE_SEED", "1").parse().unwrap();
    let want: usize = env("MTR_RELEVANCE_TURNS", "12").parse().unwrap();
    let swaps: usize = env("MTR_RELEVANCE_SWAPS", "5").parse().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let Some(src) = clapnq(tmp.path()) else {
        return;
    };
    // dialogues in a seeded order until `want` turns with a relevant gold
    let mut rng = crate::seed::rng(seed, &["relevance-measure"]);
    let mut order: Vec<usize> = (0..src.dialogues.len()).collect();
    order.shuffle(&mut rng);
    let mut dialogues = Vec::new();
    let mut turns = 0;
    for &di in &order {
        if turns >= want {
            break;
        }
        let mut d = src.dialogues[di].clone();
        let mut keep = 0;
        for (ti, t) in d.turns.iter().enumerate() {
            if turns >= want {
                break;
            }
            keep = ti + 1;
            turns += usize::from(t.relevant().next().is_some());
        }
        d.turns.truncate(keep);
        dialogues.push(d);
    }
    let chosen: BTreeSet<String> = dialogues.iter().map(|d| d.id.clone()).collect();
    // golds of turns of other dialogues: passages that answer another question
    let others: Vec<String> = src
        .dialogues
        .iter()
        .filter(|d| !chosen.contains(&d.id))
        .flat_map(|d| d.turns.iter())
        .filter_map(|t| t.relevant().next().map(|g| g.passage_id.clone()))
        .collect();
    let mut candidates: Vec<(usize, usize)> = dialogues
        .iter()
        .enumerate()
        .flat_map(|(di, d)| {
            d.turns
                .iter()
                .enumerate()
                .filter(|(_, t)| t.relevant().next().is_some())
                .map(move |(ti, _)| (di, ti))
        })
        .collect();
    candidates.shuffle(&mut rng);
    let mut swapped: BTreeMap<String, String> = BTreeMap::new();
    for &(di, ti) in candidates.iter().take(swaps) {
        let t = &mut dialogues[di].turns[ti];
        let own: BTreeSet<String> = t.gold.iter().map(|g| g.passage_id.clone()).collect();
        let new = loop {
            let p = others.choose(&mut rng).unwrap();
            if !own.contains(p) {
                break p.clone();
            }
        };
        if let Some(g) = t.gold.iter_mut().find(|g| g.grade > 0) {
            g.passage_id = new.clone();
        }
        swapped.insert(t.id.clone(), new);
    }
    let mut corpus = Vec::new();
    src.dir
        .for_each_passage(|_, p| {
            corpus.push(Ok(p));
            Ok(())
        })
        .unwrap();
    let mut manifest = src.manifest.clone();
    manifest.name = format!("{}-swapped", manifest.name);
    let bench = mtr_core::benchmark::write_benchmark(
        tmp.path().join("swapped"),
        manifest,
        &dialogues,
        corpus,
    )
    .unwrap()
    .load()
    .unwrap();
    let cache = std::env::var_os("MTR_RELEVANCE_CACHE")
        .map(Into::into)
        .unwrap_or_else(|| tmp.path().join("c.sqlite"));
    // the shipped default: no [llm] section at all; `MTR_RELEVANCE_CONFIG` names an
    // mtr.toml to measure another ensemble on the same turns (say, the relevance judge alone)
    // its `[audit]` section may set `dimensions` and `letter_picks` (the rest is the test's)
    let (config, audit) = match std::env::var_os("MTR_RELEVANCE_CONFIG") {
        Some(p) => {
            let text = std::fs::read_to_string(p).unwrap();
            let audit = toml::from_str::<toml::Table>(&text)
                .unwrap()
                .remove("audit")
                .map(|a| a.try_into::<AuditSettings>().unwrap());
            (mtr_llm::LlmConfig::from_toml_section(&text).unwrap(), audit)
        }
        None => (mtr_llm::LlmConfig::default(), None),
    };
    let llm = match mtr_llm::Llm::new(
        config,
        mtr_llm::LlmOptions {
            cache_path: Some(cache),
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
    let settings = AuditSettings {
        seed,
        dimensions: audit
            .as_ref()
            .map(|a| a.dimensions.clone())
            .filter(|d| d.len() < Dimension::ALL.len())
            .unwrap_or_else(|| vec![Dimension::Alignment, Dimension::Completeness]),
        trials: 1,
        negatives: 3,
        resamples: 200,
        letter_picks: audit.and_then(|a| a.letter_picks),
        ..Default::default()
    };
    // `MTR_RELEVANCE_OUT`: keep the audit folder (and the swapped golds) there
    let out = std::env::var_os("MTR_RELEVANCE_OUT")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| tmp.path().join("audit"));
    let t = std::time::Instant::now();
    audited(&bench, &llm, settings, &out, &tmp.path().join("index")).await;
    let secs = t.elapsed().as_secs_f64();
    let items: Vec<Judgement> = mtr_core::jsonl::read_all(out.join(crate::output::ITEMS)).unwrap();
    std::fs::write(
        out.join("swapped.json"),
        serde_json::to_string_pretty(&swapped).unwrap(),
    )
    .unwrap();
    let led = llm.ledger();
    println!(
        "{} turns, {} swapped golds, seed {seed}: {} judgements ({} failed) in {secs:.0} s",
        turns,
        swapped.len(),
        items.len(),
        items.iter().filter(|j| !j.ok()).count()
    );
    println!("{}", led.to_markdown());
    let is_swapped = |j: &Judgement| {
        swapped
            .get(&j.turn_id)
            .is_some_and(|p| j.passage_id.as_deref() == Some(p.as_str()))
    };
    let judges: BTreeSet<String> = items.iter().map(|j| j.judge.clone()).collect();
    println!(
        "| judge | alignment AUC true vs swapped | true gold picked | abstentions | swapped gold not picked |"
    );
    println!("|---|---|---|---|---|");
    for judge in &judges {
        let mine: Vec<&Judgement> = items
            .iter()
            .filter(|j| &j.judge == judge && j.ok())
            .collect();
        let (mut pos, mut neg) = (Vec::new(), Vec::new());
        for j in mine.iter().filter(|j| j.dimension == Dimension::Alignment) {
            if let Some(s) = j.score {
                if is_swapped(j) {
                    neg.push(s)
                } else {
                    pos.push(s)
                }
            }
        }
        let comp: Vec<&&Judgement> = mine
            .iter()
            .filter(|j| j.dimension == Dimension::Completeness)
            .collect();
        let (t_all, t_pick, t_abst) =
            comp.iter()
                .filter(|j| !is_swapped(j))
                .fold((0, 0, 0), |(a, p, ab), j| {
                    (
                        a + 1,
                        p + usize::from(j.score == Some(1.0)),
                        ab + usize::from(j.abstention.is_some()),
                    )
                });
        let (s_all, s_not) = comp
            .iter()
            .filter(|j| is_swapped(j))
            .fold((0, 0), |(a, n), j| {
                (a + 1, n + usize::from(j.score != Some(1.0)))
            });
        println!(
            "| {judge} | {:.2} ({} true, {} swapped) | {t_pick}/{t_all} = {:.0}% | {t_abst}/{t_all} = {:.0}% | {s_not}/{s_all} = {:.0}% |",
            auc(&pos, &neg),
            pos.len(),
            neg.len(),
            100.0 * t_pick as f64 / t_all.max(1) as f64,
            100.0 * t_abst as f64 / t_all.max(1) as f64,
            100.0 * s_not as f64 / s_all.max(1) as f64,
        );
        // the scores behind the table, for tuning
        for j in mine.iter().filter(|j| j.dimension == Dimension::Alignment) {
            println!(
                "    {judge} {} {} {:?} {}",
                j.turn_id,
                if is_swapped(j) { "SWAPPED" } else { "true" },
                j.score,
                j.justification.as_deref().unwrap_or_default()
            );
        }
    }
}

/// A relevance judge next to a chat judge: it judges alignment and discriminability only,
/// its ratings are `1 + 4 * score`, its pick the best-scored passage, and its records carry
/// its name and mode like any judge's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relevance_judge_rates_and_picks_from_scores() {
    use mtr_llm::fake::FakeServer;
    use mtr_llm::rerank::{RerankApi, RerankConfig};
    let tmp = tempfile::tempdir().unwrap();
    let Some(bench) = clapnq(tmp.path()) else {
        return;
    };
    // the reranker scores a passage by its length: the longest of a pool wins
    let fake = FakeServer::builder()
        .respond(crate::tests::kit::hashed_judge)
        .rerank(|_q, docs| {
            docs.iter()
                .map(|d| (d.len() % 997) as f64 / 997.0)
                .collect()
        })
        .start()
        .await
        .unwrap();
    let chat = fake.endpoint("chat", "chat-model");
    let mut rel = fake.endpoint("rel", "bge-reranker");
    let mut rc = RerankConfig::new(RerankApi::Tei);
    rc.abstain_below = 0.0;
    rc.tie_margin = 0.0;
    rel.rerank = Some(rc);
    let config = mtr_llm::LlmConfig {
        endpoints: vec![chat, rel],
        roles: mtr_llm::Roles {
            judges: vec!["chat".into(), "rel".into()],
            ..Default::default()
        },
        ..Default::default()
    };
    let llm = crate::tests::kit::llm_with_cache(config, &tmp.path().join("c.sqlite")).await;
    let settings = AuditSettings {
        sample: Some(2),
        resamples: 50,
        ..Default::default()
    };
    let out = tmp.path().join("audit");
    audited(
        &bench,
        &llm,
        settings.clone(),
        &out,
        &tmp.path().join("index"),
    )
    .await;
    let items: Vec<Judgement> = mtr_core::jsonl::read_all(out.join(crate::output::ITEMS)).unwrap();
    let rel: Vec<&Judgement> = items.iter().filter(|j| j.judge == "rel").collect();
    let dims: BTreeSet<Dimension> = rel.iter().map(|j| j.dimension).collect();
    assert_eq!(
        dims,
        BTreeSet::from([Dimension::Alignment, Dimension::Completeness]),
        "faithfulness and quality stay with the chat judges"
    );
    assert!(
        items
            .iter()
            .any(|j| j.judge == "chat" && j.dimension == Dimension::Quality)
    );
    for j in &rel {
        assert!(j.ok(), "{j:?}");
        assert_eq!(j.prompt, crate::judges::relevance::PROMPT_ID);
        if j.dimension == Dimension::Alignment {
            assert_eq!(j.rating_mode, Some(mtr_llm::logprob::RatingMode::Relevance));
            let s = j.score.unwrap();
            assert!((1.0..=5.0).contains(&s));
        } else {
            // the pick is the pool's longest passage (scores are shown in the justification)
            let pos = j.pick_position.unwrap();
            let scores: Vec<f64> = j
                .justification
                .as_deref()
                .unwrap()
                .trim_start_matches("relevance scores ")
                .split(", ")
                .map(|x| x.parse().unwrap())
                .collect();
            let best = scores.iter().cloned().fold(f64::MIN, f64::max);
            assert_eq!(scores[pos - 1], best);
        }
    }
    // a rerun reuses every judgement and calls nothing
    let calls = fake.rerank_calls();
    audited(&bench, &llm, settings, &out, &tmp.path().join("index")).await;
    assert_eq!(fake.rerank_calls(), calls);
}
