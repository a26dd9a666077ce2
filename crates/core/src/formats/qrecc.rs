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
use super::topiocqa::{SortKey, scalar, turn_key};
use super::{ImportOptions, dataset_file, walk};
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

pub fn sniff(path: &Path) -> bool {
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

pub fn import(
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

    // Ground truth merged by turn id.
    let mut truth: HashMap<String, (Record, u64)> = HashMap::new();
    if let Some(tf) = &truth_file {
        let doc = JsonDoc::read(tf)?;
        for rec in doc.array_records()? {
            match doc.parse::<Record>(&rec) {
                Ok(r) => {
                    if let (Some(c), Some(t)) = (scalar(&r.conversation_no), scalar(&r.turn_no)) {
                        truth.insert(format!("{c}_{t}"), (r, rec.line));
                    }
                }
                Err(e) => b.diag.problem("malformed-record", e)?,
            }
        }
    }

    let doc = JsonDoc::read(&data)?;
    let mut convs: BTreeMap<SortKey, BTreeMap<SortKey, Turn>> = BTreeMap::new();
    for rec in doc.array_records()? {
        let r: Record = match doc.parse(&rec) {
            Ok(r) => r,
            Err(e) => {
                b.diag.problem("malformed-record", e)?;
                continue;
            }
        };
        let (Some(conv), Some(turn_no)) = (scalar(&r.conversation_no), scalar(&r.turn_no)) else {
            b.diag.problem(
                "malformed-record",
                InputError::new(
                    &data,
                    "`Conversation_no` and `Turn_no` must be numbers or strings",
                )
                .line(rec.line)
                .field("Conversation_no"),
            )?;
            continue;
        };
        let Some(question) = nonempty(&r.question) else {
            b.diag.problem(
                "empty-query",
                InputError::new(&data, "empty question")
                    .line(rec.line)
                    .field("Question"),
            )?;
            continue;
        };
        let id = format!("{conv}_{turn_no}");
        let gt = truth.remove(&id);
        let (gt_rec, gt_line) = match &gt {
            Some((r, l)) => (Some(r), Some(*l)),
            None => (None, None),
        };
        let passages = gt_rec
            .and_then(|g| g.truth_passages.clone())
            .or_else(|| r.truth_passages.clone())
            .unwrap_or_default();
        let (gold_file, gold_line) = match (gt_line, &truth_file) {
            (Some(l), Some(f)) => (f.clone(), l),
            _ => (data.clone(), rec.line),
        };
        let mut gold = Vec::new();
        for p in passages {
            if gold.iter().any(|g: &Gold| g.passage_id == p) {
                continue;
            }
            b.gold_origin(
                &id,
                &p,
                Origin::new(&gold_file, Some(gold_line), "Truth_passages"),
            );
            gold.push(Gold {
                passage_id: p,
                grade: 1,
            });
        }
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
        let turn = Turn {
            id: id.clone(),
            user: question,
            rewrite,
            answer,
            gold,
            tags,
        };
        if convs
            .entry(turn_key(&conv))
            .or_default()
            .insert(turn_key(&turn_no), turn)
            .is_some()
        {
            b.diag.problem(
                "duplicate-turn",
                InputError::new(&data, format!("turn `{id}` appears twice"))
                    .line(rec.line)
                    .field("Turn_no"),
            )?;
        }
    }
    if let Some(tf) = &truth_file {
        let mut left: Vec<(&String, u64)> = truth.iter().map(|(k, (_, l))| (k, *l)).collect();
        left.sort_by_key(|(_, l)| *l);
        for (id, line) in left {
            b.diag.problem(
                "unmatched-qrels",
                InputError::new(
                    tf,
                    format!(
                        "ground truth for `{id}` matches no question in {}",
                        walk::file_name(&data)
                    ),
                )
                .line(line)
                .field("Turn_no"),
            )?;
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/formats")
            .join(name)
    }

    fn load(src: &Path, opts: &ImportOptions) -> (ImportReport, crate::Benchmark) {
        let tmp = tempfile::tempdir().unwrap().keep();
        let out = tmp.join("b");
        let r = import(src, &out, opts, &crate::progress::NoProgress).unwrap();
        (r, crate::BenchmarkDir::open(&out).unwrap().load().unwrap())
    }

    #[test]
    fn fixture_rewrites_truth_passages_and_collection_dir() {
        let (r, b) = load(&fixture("qrecc"), &ImportOptions::default());
        assert_eq!(
            (
                r.dialogues,
                r.turns,
                r.judged_turns,
                r.passages,
                r.qrels_pairs
            ),
            (2, 3, 2, 4, 3)
        );
        let (d, i) = b.find_turn("74_2").unwrap();
        assert_eq!(
            d.turns[i].rewrite.as_deref(),
            Some("Tell me more about Tesla the car company.")
        );
        assert_eq!(d.turns[i].tags.get("source").as_deref(), Some("trec"));
        assert!(b.find_turn("2775_1").unwrap().0.turns[0].is_unanswerable());
    }
}
