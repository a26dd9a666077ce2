//! Checks on real data from `../shared` (skipped with a note when it is absent): BM25 on the
//! MTRAG clapnq rewrite queries against MTRAG's own BM25 run, and Chinese retrieval on
//! CMRC2018/DRCD paragraphs with their own questions.

use std::collections::BTreeMap;
use std::path::PathBuf;

use mtr_core::progress::NoProgress;
use mtr_core::{Qrels, Run};
use mtr_metrics::{EvalOptions, MeasureSet, MissingQueries, evaluate};

use crate::{CorpusSource, IndexBuilder, IndexOptions, Language};

fn shared() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared");
    if p.join("data/mtrag").is_dir() {
        Some(p)
    } else {
        eprintln!("note: ../shared is absent; skipping the real-data retrieval checks");
        None
    }
}

fn ndcg10(qrels: &Qrels, run: &Run) -> f64 {
    let opts = EvalOptions {
        measures: MeasureSet::parse(["ndcg_cut.10"]).unwrap(),
        missing: MissingQueries::Complete,
        ..Default::default()
    };
    evaluate(qrels, run, &opts)
        .unwrap()
        .mean("ndcg_cut_10")
        .unwrap()
}

/// BEIR-style `{_id, text}` query lines; MTRAG prefixes each utterance with `|user|: `.
fn read_queries(path: &std::path::Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    mtr_core::jsonl::for_each(path, |_, v: serde_json::Value| {
        let text = v["text"]
            .as_str()
            .unwrap()
            .replace("|user|: ", "")
            .replace("|user|:", "");
        out.push((v["_id"].as_str().unwrap().to_string(), text));
        Ok(())
    })
    .unwrap();
    out
}

#[test]
fn clapnq_bm25_rewrite_is_near_mtrag_bm25() {
    let Some(shared) = shared() else { return };
    let m = shared.join("data/mtrag");
    let tmp = tempfile::tempdir().unwrap();
    let src = CorpusSource::detect(m.join("corpus_clapnq.jsonl")).unwrap();
    let opts = IndexOptions {
        language: Language::Auto,
        store_text: false,
        ..Default::default()
    };
    let idx = IndexBuilder::new(tmp.path().join("idx"), opts)
        .build(&src, &NoProgress)
        .unwrap();
    assert_eq!(idx.meta().num_passages, 6315);
    assert_eq!(idx.meta().analyzer, crate::Analyzer::English);
    let bm25 = idx.bm25().unwrap();
    let qrels = mtr_core::trec::read_qrels(m.join("tasks_clapnq/qrels/dev.tsv")).unwrap();
    let real: Run =
        mtr_metrics::run_from_mtrag_jsonl(m.join("runs_clapnq/bm25__bm25_clapnq_rewrite.jsonl"))
            .unwrap();

    let mut run = Run::new();
    for (qid, text) in read_queries(&m.join("tasks_clapnq/clapnq_rewrite.jsonl")) {
        let hits = bm25.search(&text, 10).unwrap();
        run.insert(qid, hits.into_iter().map(|h| (h.id, h.score)).collect());
    }
    let (ours, theirs) = (ndcg10(&qrels, &run), ndcg10(&qrels, &real));
    let mut overlaps = Vec::new();
    for (qid, docs) in &real {
        let a: std::collections::BTreeSet<&str> =
            docs.iter().take(10).map(|d| d.0.as_str()).collect();
        let b = run
            .get(qid)
            .map(|v| {
                v.iter()
                    .take(10)
                    .filter(|d| a.contains(d.0.as_str()))
                    .count()
            })
            .unwrap_or(0);
        overlaps.push(b as f64 / a.len().max(1) as f64);
    }
    let overlap = overlaps.iter().sum::<f64>() / overlaps.len() as f64;
    eprintln!(
        "clapnq rewrite BM25 nDCG@10: mtr {ours:.4}, MTRAG bm25 {theirs:.4}, overlap@10 {overlap:.3}"
    );
    assert!(
        (theirs - 0.2937).abs() < 1e-4,
        "the metric itself must match trec_eval's 0.2937, got {theirs}"
    );
    assert!(
        (ours - theirs).abs() < 0.06,
        "mtr BM25 {ours:.4} vs MTRAG BM25 {theirs:.4}"
    );
    assert!(overlap > 0.5, "overlap@10 {overlap:.3}");
}

#[test]
fn chinese_questions_find_their_paragraph() {
    let Some(shared) = shared() else { return };
    let path = shared.join("corpora/zh_wiki_cmrc2018_drcd.jsonl");
    let tmp = tempfile::tempdir().unwrap();
    let src = CorpusSource::detect(&path).unwrap();
    let idx = IndexBuilder::new(tmp.path().join("zh"), IndexOptions::default())
        .build(&src, &NoProgress)
        .unwrap();
    assert_eq!(
        idx.meta().analyzer,
        crate::Analyzer::Chinese,
        "auto-detected from the corpus"
    );
    let bm25 = idx.bm25().unwrap();

    // The first paragraph's first question, asked verbatim.
    let hits = bm25
        .search("《战国无双3》是由哪两个公司合作开发的？", 5)
        .unwrap();
    assert_eq!(hits[0].id, "zhwiki-cmrc2018-dev-00000", "{hits:?}");
    let top = bm25.passage(&hits[0].id).unwrap().unwrap();
    assert!(top.text.contains("光荣和ω-force"));

    // Every 25th paragraph's first question: simplified (CMRC2018) and traditional (DRCD).
    let mut by_source: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut i = 0usize;
    mtr_core::jsonl::for_each(&path, |_, v: serde_json::Value| {
        i += 1;
        if i % 25 != 1 {
            return Ok(());
        }
        let Some(q) = v["questions"]
            .get(0)
            .and_then(|q| q.as_str())
            .map(str::to_string)
        else {
            return Ok(());
        };
        let id = v["id"].as_str().unwrap();
        let top = bm25.search(&q, 1).unwrap();
        let e = by_source
            .entry(v["source"].as_str().unwrap_or("?").to_string())
            .or_default();
        e.0 += usize::from(top.first().is_some_and(|h| h.id == id));
        e.1 += 1;
        Ok(())
    })
    .unwrap();
    for (source, (hit, n)) in &by_source {
        eprintln!("zh top-1 accuracy on {source}: {hit}/{n}");
        assert!(*hit as f64 >= 0.8 * *n as f64, "{source}: {hit}/{n}");
    }
    assert!(by_source.len() >= 2, "{by_source:?}");
}
