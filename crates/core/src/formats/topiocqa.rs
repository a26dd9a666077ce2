//! TopiOCQA (McGill-NLP): a JSON array of turns, each
//! `{Conversation_no, Turn_no, Question, Answer, Topic, Topic_section, Rationale, is_nq,
//! Context, Additional_answers, Gold_passage: {id, title, text}}`.
//!
//! Turns are grouped by `Conversation_no` and ordered by `Turn_no`; the turn id is
//! `<Conversation_no>_<Turn_no>`. `Topic` becomes the `topic` tag and `topic_switch` is true when
//! it differs from the previous turn's; an `UNANSWERABLE` answer tags the turn unanswerable.
//! `Context` (the history) is not stored: it is derived. The gold passage's DPR id prefix
//! `wiki:` is dropped so that it equals the id column of `full_wiki_segments.tsv`. The corpus is
//! that TSV (`id text title`) when found next to the data or given with `--corpus`; otherwise it
//! is made of the gold passages themselves, with a warning (retrieval over it is trivial).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::ImportOptions;
use super::builder::{self, Builder, ImportReport, Origin};
use super::corpus::{self, CorpusOptions};
use super::dataset_file;
use super::json_doc::JsonDoc;
use crate::error::{InputError, Result};
use crate::model::{Dialogue, Gold, Passage, Tags, Turn};
use crate::progress::Progress;

fn looks(head: &str) -> bool {
    head.contains("\"Conversation_no\"")
        && (head.contains("\"Topic\"") || head.contains("\"Topic_section\""))
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
    #[serde(rename = "Question")]
    question: String,
    #[serde(rename = "Answer", default)]
    answer: Option<String>,
    #[serde(rename = "Topic", default)]
    topic: Option<String>,
    #[serde(rename = "Topic_section", default)]
    topic_section: Option<String>,
    #[serde(rename = "is_nq", default)]
    is_nq: Option<bool>,
    #[serde(rename = "Gold_passage", default)]
    gold_passage: Option<GoldPassage>,
}

#[derive(Debug, Deserialize)]
struct GoldPassage {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    title: String,
    #[serde(default)]
    text: String,
}

/// A JSON number or string as text (`1` and `"1"` are the same conversation).
pub(crate) fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Orders conversation and turn numbers numerically when they are numbers.
pub(crate) type SortKey = (u64, String);

/// Sort key of a turn number: numeric when it is a number.
pub(crate) fn turn_key(s: &str) -> SortKey {
    (s.parse::<u64>().unwrap_or(u64::MAX), s.to_string())
}

pub fn import(
    src: &Path,
    out: &Path,
    opts: &ImportOptions,
    progress: &dyn Progress,
) -> Result<ImportReport> {
    let data = dataset_file::pick(src, looks, opts.split.as_deref(), "TopiOCQA")?;
    let corpus_path = opts.corpus.clone().or_else(|| {
        dataset_file::sibling_corpus(
            src,
            &data,
            &[
                "full_wiki_segments",
                "wiki_segments",
                "corpus",
                "collection",
            ],
        )
    });
    let mut b = Builder::create(out, opts.lenient)?;
    if let Some(c) = &corpus_path {
        corpus::read_into(c, &mut b, CorpusOptions::default(), progress)?;
    }
    let gold_only = corpus_path.is_none();
    let doc = JsonDoc::read(&data)?;
    // conversation -> turn key -> turn
    let mut convs: BTreeMap<SortKey, BTreeMap<SortKey, (Turn, u64)>> = BTreeMap::new();
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
        let id = format!("{conv}_{turn_no}");
        let mut gold = Vec::new();
        if let Some(gp) = &r.gold_passage {
            let pid = match gp.id.as_ref().and_then(scalar) {
                Some(p) => p.strip_prefix("wiki:").unwrap_or(&p).to_string(),
                None if !gp.text.is_empty() => format!(
                    "topiocqa-{}",
                    &crate::fingerprint::hash_bytes(
                        format!("{}\n{}", gp.title, gp.text).as_bytes()
                    )[..16]
                ),
                None => String::new(),
            };
            if !pid.is_empty() {
                if gold_only && !b.contains(&pid) {
                    let p = Passage {
                        id: pid.clone(),
                        title: gp.title.clone(),
                        text: gp.text.clone(),
                        doc_id: r.topic.clone(),
                        meta: Map::new(),
                    };
                    b.passage(p, &data, rec.line)?;
                }
                b.gold_origin(
                    &id,
                    &pid,
                    Origin::new(&data, Some(rec.line), "Gold_passage.id"),
                );
                gold.push(Gold {
                    passage_id: pid,
                    grade: 1,
                });
            }
        }
        let answer = r.answer.clone().filter(|a| !a.trim().is_empty());
        let mut tags = Tags {
            topic: r.topic.clone(),
            answerability: Some(match &answer {
                Some(a) if a.trim().eq_ignore_ascii_case("unanswerable") => "unanswerable".into(),
                Some(_) => "answerable".into(),
                None => "unanswerable".into(),
            }),
            ..Default::default()
        };
        if let Some(s) = &r.topic_section {
            tags.extra
                .insert("topic_section".into(), Value::String(s.clone()));
        }
        if let Some(nq) = r.is_nq {
            tags.extra.insert("is_nq".into(), Value::Bool(nq));
        }
        let turn = Turn {
            id,
            user: r.question.trim().to_string(),
            rewrite: None,
            answer,
            gold,
            tags,
        };
        let slot = convs.entry(turn_key(&conv)).or_default();
        if let Some((prev, prev_line)) = slot.insert(turn_key(&turn_no), (turn, rec.line)) {
            b.diag.problem(
                "duplicate-turn",
                InputError::new(
                    &data,
                    format!(
                        "turn `{}` appears twice (first at line {prev_line})",
                        prev.id
                    ),
                )
                .line(rec.line)
                .field("Turn_no"),
            )?;
        }
    }
    if gold_only {
        b.diag.warn(format!(
            "{}: no TopiOCQA corpus (full_wiki_segments.tsv) found: the corpus holds only the gold passages; give --corpus for real retrieval",
            data.display()
        ));
    }
    let mut dialogues = Vec::with_capacity(convs.len());
    for ((_, conv), turns) in convs {
        let mut prev_topic: Option<String> = None;
        let mut ts = Vec::with_capacity(turns.len());
        for (_, (mut t, _)) in turns {
            t.tags.topic_switch =
                Some(prev_topic.is_some() && t.tags.topic.is_some() && prev_topic != t.tags.topic);
            prev_topic = t.tags.topic.clone();
            ts.push(t);
        }
        dialogues.push(Dialogue {
            id: conv,
            turns: ts,
            meta: Map::new(),
        });
    }
    let mut manifest = builder::manifest(
        "topiocqa",
        builder::name_from_path(&data),
        "CC BY-NC-SA 4.0",
        opts,
        src,
    );
    if gold_only {
        manifest
            .extra
            .insert("corpus".into(), toml::Value::String("gold-only".into()));
    }
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
    fn fixture_topics_switches_and_wiki_ids() {
        let (r, b) = load(&fixture("topiocqa"), &ImportOptions::default());
        assert_eq!(
            (r.dialogues, r.turns, r.judged_turns, r.passages),
            (2, 5, 4, 4)
        );
        let d = &b.dialogues[0];
        assert_eq!(d.turns[1].id, "1_2");
        assert_eq!(
            d.turns[0].gold[0].passage_id, "101",
            "the DPR `wiki:` prefix is dropped"
        );
        let switches: Vec<bool> = d
            .turns
            .iter()
            .map(|t| t.tags.topic_switch.unwrap())
            .collect();
        assert_eq!(switches, [false, false, false, true]);
        assert_eq!(d.turns[3].tags.topic.as_deref(), Some("Los Angeles"));
        assert!(b.dialogues[1].turns[0].is_unanswerable());
        assert_eq!(
            d.history(2).len(),
            4,
            "history is derived from earlier turns"
        );
    }

    #[test]
    fn without_corpus_uses_gold_passages() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::copy(
            fixture("topiocqa/topiocqa_dev.json"),
            tmp.path().join("topiocqa_dev.json"),
        )
        .unwrap();
        let (r, b) = load(
            &tmp.path().join("topiocqa_dev.json"),
            &ImportOptions::default(),
        );
        assert_eq!(r.passages, 3);
        assert!(
            r.warnings
                .iter()
                .any(|w| w.contains("only the gold passages"))
        );
        assert_eq!(
            b.manifest.extra.get("corpus").and_then(|v| v.as_str()),
            Some("gold-only")
        );
    }

    #[test]
    fn duplicate_turn_and_missing_question_are_named() {
        let tmp = tempfile::tempdir().unwrap();
        let f = tmp.path().join("topiocqa_dev.json");
        let rec = |t: u32| {
            format!(
                "{{\"Conversation_no\": 1, \"Turn_no\": {t}, \"Question\": \"q{t}\", \"Answer\": \"a\", \"Topic\": \"T\"}}"
            )
        };
        std::fs::write(&f, format!("[\n{},\n{},\n{}\n]", rec(1), rec(2), rec(2))).unwrap();
        let e = import(
            &f,
            &tmp.path().join("o"),
            &ImportOptions::default(),
            &crate::progress::NoProgress,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("topiocqa_dev.json:4") && e.contains("`Turn_no`") && e.contains("twice"),
            "{e}"
        );
        std::fs::write(
            &f,
            "[\n{\"Conversation_no\": 1, \"Turn_no\": 1,\n \"Answer\": \"a\"}\n]",
        )
        .unwrap();
        let e = import(
            &f,
            &tmp.path().join("o"),
            &ImportOptions::default(),
            &crate::progress::NoProgress,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("topiocqa_dev.json:3") && e.contains("`Question`"),
            "{e}"
        );
    }
}
