//! QReCC (Apple; SCAI-QReCC-21): a JSON array of turns
//! `{Conversation_no, Turn_no, Question, Rewrite, Answer, Answer_URL, Context,
//! Conversation_source, Truth_passages, Truth_rewrite, Truth_answer}`.
//!
//! Turns are grouped by `Conversation_no`, ordered by `Turn_no`, with id
//! `<Conversation_no>_<Turn_no>` (the id QReCC's evaluation uses). `Rewrite` (or
//! `Truth_rewrite`) is the human rewrite, `Answer` (or `Truth_answer`) the answer,
//! `Truth_passages` the gold passages (grade 1). A separate SCAI ground-truth file (`Truth_*`
//! fields only) next to a questions file is merged by turn. The passage collection (JSON lines
//! `{id, contents}`, a folder of them or `passages.zip`) is read when found next to the data or
//! given with `--corpus`; without it the corpus is empty and gold ids cannot be checked.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

use super::builder::{self, Builder, ImportReport, Origin};
use super::corpus::{self, CorpusOptions};
use super::json_doc::JsonDoc;
use super::options::ImportOptions;
use super::scalar::{SortKey, conversation_turn, scalar, turn_key};
use super::{dataset_file, walk};
use crate::error::{InputError, Result};
use crate::model::{Dialogue, Gold, Tags, Turn};
use crate::progress::Progress;

fn looks(head: &str) -> bool {
    head.contains("\"Conversation_no\"")
        && head.contains("\"Question\"")
        && !head.contains("\"Topic\"")
        && [
            "\"Rewrite\"",
            "\"Truth_passages\"",
            "\"Conversation_source\"",
            "\"Answer_URL\"",
            "\"Truth_rewrite\"",
        ]
        .iter()
        .any(|k| head.contains(k))
}

fn looks_ground_truth(head: &str) -> bool {
    head.contains("\"Conversation_no\"")
        && head.contains("\"Truth_")
        && !head.contains("\"Question\"")
}

pub(super) fn sniff(path: &Path) -> bool {
    !dataset_file::candidates(path, looks).is_empty()
}

#[derive(Debug, Deserialize)]
struct Record {
    #[serde(rename = "Conversation_no")]
    conversation_no: Value,
    #[serde(rename = "Turn_no")]
    turn_no: Value,
    #[serde(rename = "Question", default)]
    question: Option<String>,
    #[serde(rename = "Rewrite", default)]
    rewrite: Option<String>,
    #[serde(rename = "Answer", default)]
    answer: Option<String>,
    #[serde(rename = "Answer_URL", default)]
    answer_url: Option<String>,
    #[serde(rename = "Conversation_source", default)]
    source: Option<String>,
    #[serde(rename = "Truth_passages", default)]
    truth_passages: Option<Vec<String>>,
    #[serde(rename = "Truth_rewrite", default)]
    truth_rewrite: Option<String>,
    #[serde(rename = "Truth_answer", default)]
    truth_answer: Option<String>,
}

fn nonempty(s: &Option<String>) -> Option<String> {
    s.as_ref()
        .map(|x| x.trim().to_string())
        .filter(|x| !x.is_empty())
}

fn find_corpus(src: &Path, data: &Path) -> Option<PathBuf> {
    let dir = if src.is_dir() {
        src.to_path_buf()
    } else {
        src.parent()?.to_path_buf()
    };
    for d in ["passages", "collection-paragraph", "collection"] {
        if dir.join(d).is_dir() {
            return Some(dir.join(d));
        }
    }
    dataset_file::sibling_corpus(src, data, &["passages", "collection", "corpus"])
        .filter(|p| corpus::is_corpus_file(p))
}

pub(super) fn import(
    src: &Path,
    out: &Path,
    opts: &ImportOptions,
    progress: &dyn Progress,
) -> Result<ImportReport> {
    let data = dataset_file::pick(src, looks, opts.split.as_deref(), "QReCC")?;
    let truth_file = if src.is_dir() {
        let c = dataset_file::candidates(src, looks_ground_truth);
        if c.len() == 1 {
            c.into_iter().next()
        } else {
            None
        }
    } else {
        None
    };
    let corpus_path = opts.corpus.clone().or_else(|| find_corpus(src, &data));
    let mut b = Builder::create(out, opts.lenient)?;
    match &corpus_path {
        Some(c) => corpus::read_into(c, &mut b, CorpusOptions::default(), progress)?,
        None => b.diag.warn(format!(
            "{}: no QReCC passage collection found: the corpus is empty (give --corpus)",
            data.display()
        )),
    }
    let mut truth = match &truth_file {
        Some(tf) => read_truth(tf, &mut b)?,
        None => HashMap::new(),
    };
    let convs = read_turns(&data, truth_file.as_deref(), &mut truth, &mut b)?;
    if let Some(tf) = &truth_file {
        unmatched_truth(tf, &data, &truth, &mut b)?;
    }
    let dialogues = convs
        .into_iter()
        .map(|((_, conv), turns)| Dialogue {
            id: conv,
            turns: turns.into_values().collect(),
            meta: Map::new(),
        })
        .collect();
    let manifest = builder::manifest(
        "qrecc",
        builder::name_from_path(&data),
        "CC BY-SA 3.0",
        opts,
        src,
    );
    b.finish(manifest, dialogues)
}

/// Ground-truth records by turn id, with their lines.
type Truth = HashMap<String, (Record, u64)>;

/// Reads a SCAI ground-truth file, to be merged by turn id.
fn read_truth(tf: &Path, b: &mut Builder) -> Result<Truth> {
    let mut truth = HashMap::new();
    let doc = JsonDoc::read(tf)?;
    for rec in doc.array_records()? {
        let Some(r) = b.diag.parsed::<Record>(&doc, &rec)? else {
            continue;
        };
        if let (Some(c), Some(t)) = (scalar(&r.conversation_no), scalar(&r.turn_no)) {
            truth.insert(format!("{c}_{t}"), (r, rec.line));
        }
    }
    Ok(truth)
}

/// Reads the turns of the data file grouped by conversation, taking each turn's ground truth
/// out of `truth`.
fn read_turns(
    data: &Path,
    truth_file: Option<&Path>,
    truth: &mut Truth,
    b: &mut Builder,
) -> Result<BTreeMap<SortKey, BTreeMap<SortKey, Turn>>> {
    let doc = JsonDoc::read(data)?;
    let mut convs: BTreeMap<SortKey, BTreeMap<SortKey, Turn>> = BTreeMap::new();
    for rec in doc.array_records()? {
        let Some(r) = b.diag.parsed::<Record>(&doc, &rec)? else {
            continue;
        };
        let Some((conv, turn_no)) =
            conversation_turn(&r.conversation_no, &r.turn_no, data, rec.line, &mut b.diag)?
        else {
            continue;
        };
        let Some(question) = nonempty(&r.question) else {
            b.diag.problem(
                "empty-query",
                InputError::new(data, "empty question")
                    .line(rec.line)
                    .field("Question"),
            )?;
            continue;
        };
        let id = format!("{conv}_{turn_no}");
        let gt = truth.remove(&id);
        let gold_at = match (&gt, truth_file) {
            (Some((_, l)), Some(f)) => Origin::new(f, Some(*l), "Truth_passages"),
            _ => Origin::new(data, Some(rec.line), "Truth_passages"),
        };
        let gt_rec = gt.as_ref().map(|(g, _)| g);
        let gold = gold_of(&id, &r, gt_rec, &gold_at, b);
        let turn = turn_of(id.clone(), question, &r, gt_rec, gold);
        if convs
            .entry(turn_key(&conv))
            .or_default()
            .insert(turn_key(&turn_no), turn)
            .is_some()
        {
            b.diag.problem(
                "duplicate-turn",
                InputError::new(data, format!("turn `{id}` appears twice"))
                    .line(rec.line)
                    .field("Turn_no"),
            )?;
        }
    }
    Ok(convs)
}

/// The turn's `Truth_passages` (the ground truth's first), each once, with grade 1.
fn gold_of(
    id: &str,
    r: &Record,
    gt_rec: Option<&Record>,
    origin: &Origin,
    b: &mut Builder,
) -> Vec<Gold> {
    let passages = gt_rec
        .and_then(|g| g.truth_passages.clone())
        .or_else(|| r.truth_passages.clone())
        .unwrap_or_default();
    let mut gold = Vec::new();
    for p in passages {
        if gold.iter().any(|g: &Gold| g.passage_id == p) {
            continue;
        }
        b.gold_origin(id, &p, origin.clone());
        gold.push(Gold {
            passage_id: p,
            grade: 1,
        });
    }
    gold
}

/// A turn with its rewrite, answer (none: unanswerable), source and answer URL.
fn turn_of(
    id: String,
    question: String,
    r: &Record,
    gt_rec: Option<&Record>,
    gold: Vec<Gold>,
) -> Turn {
    let rewrite = nonempty(&r.rewrite)
        .or_else(|| nonempty(&r.truth_rewrite))
        .or_else(|| gt_rec.and_then(|g| nonempty(&g.truth_rewrite)));
    let answer = nonempty(&r.answer)
        .or_else(|| nonempty(&r.truth_answer))
        .or_else(|| gt_rec.and_then(|g| nonempty(&g.truth_answer)));
    let mut tags = Tags::default();
    if answer.is_none() {
        tags.answerability = Some("unanswerable".into());
    }
    if let Some(s) = nonempty(&r.source) {
        tags.extra.insert("source".into(), Value::String(s));
    }
    if let Some(u) = nonempty(&r.answer_url) {
        tags.extra.insert("answer_url".into(), Value::String(u));
    }
    Turn {
        id,
        user: question,
        rewrite,
        answer,
        gold,
        tags,
    }
}

/// Ground truth left over (no question of the data file has its id), in file order.
fn unmatched_truth(tf: &Path, data: &Path, truth: &Truth, b: &mut Builder) -> Result<()> {
    let mut left: Vec<(&String, u64)> = truth.iter().map(|(k, (_, l))| (k, *l)).collect();
    left.sort_by_key(|(_, l)| *l);
    for (id, line) in left {
        b.diag.problem(
            "unmatched-qrels",
            InputError::new(
                tf,
                format!(
                    "ground truth for `{id}` matches no question in {}",
                    walk::file_name(data)
                ),
            )
            .line(line)
            .field("Turn_no"),
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{counts, fixture, load};
    use super::*;

    #[test]
    fn fixture_rewrites_truth_passages_and_collection_dir() {
        let (r, b) = load(import, &fixture("qrecc"), &ImportOptions::default());
        assert_eq!(counts(&r), (2, 3, 2, 4, 3));
        let (d, i) = b.find_turn("74_2").unwrap();
        assert_eq!(
            d.turns[i].rewrite.as_deref(),
            Some("Tell me more about Tesla the car company.")
        );
        assert_eq!(d.turns[i].tags.get("source").as_deref(), Some("trec"));
        assert!(b.find_turn("2775_1").unwrap().0.turns[0].is_unanswerable());
    }
}
