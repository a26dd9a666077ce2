//! The planted-defect audit on the real MTRAG clapnq data: swapped, deleted and replaced
//! golds planted with a seed, judged by a scripted oracle on the fake server (and, by hand,
//! by a real local model), and what the audit flagged measured against what was planted.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use mtr_core::{Benchmark, Dialogue, Passage};
use mtr_llm::fake::{FakeReply, FakeRequest, FakeServer};
use rand::seq::{IndexedRandom, SliceRandom};

use crate::config::AuditSettings;
use crate::dimension::Dimension;
use crate::judges::prompts::passage_display;
use crate::judges::record::Judgement;
use crate::tests::fake::{read_items, validate_folder};
use crate::tests::kit::*;
/// What the planted-defect test planted.
pub(super) struct Planted {
    pub(super) bench: Benchmark,
    /// Turns whose gold was replaced by a random passage (the true gold stays in the corpus).
    swapped: BTreeSet<String>,
    /// Turns that lost one of their golds (at least one stays).
    deleted: BTreeSet<String>,
    /// Turns whose only gold was replaced by an irrelevant passage of another document, the
    /// true gold (and any passage with its text) removed from the corpus: no relevant passage
    /// can be left in the pool.
    replaced: BTreeSet<String>,
    /// question -> display texts of its original (true) gold passages
    pub(super) truth: HashMap<String, HashSet<String>>,
    /// (turn, passage) of every original gold
    true_pairs: HashSet<(String, String)>,
    /// Golds a turn lost (swapped out or deleted) that are still in the corpus.
    missing: BTreeMap<String, Vec<String>>,
}

pub(super) fn plant(src: &Benchmark, dir: &Path, seed: u64) -> Planted {
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
pub(super) fn oracle(
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
                    .map(|g| mtr_core::formats::passage_doc_id(&g.passage_id))
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
            let doc = mtr_core::formats::passage_doc_id(g);
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
