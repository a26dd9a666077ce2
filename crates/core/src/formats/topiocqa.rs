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

use super::builder::{self, Builder, ImportReport, Origin};
use super::corpus::{self, CorpusOptions};
use super::dataset_file;
use super::json_doc::JsonDoc;
use super::options::ImportOptions;
use super::scalar::{SortKey, conversation_turn, scalar, turn_key};
use crate::error::{InputError, Result};
use crate::model::{Dialogue, Gold, Passage, Tags, Turn};
use crate::progress::Progress;

fn looks(head: &str) -> bool {
    head.contains("\"Conversation_no\"")
        && (head.contains("\"Topic\"") || head.contains("\"Topic_section\""))
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

pub(super) fn import(
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
    let convs = read_turns(&data, gold_only, &mut b)?;
    if gold_only {
        b.diag.warn(format!(
            "{}: no TopiOCQA corpus (full_wiki_segments.tsv) found: the corpus holds only the gold passages; give --corpus for real retrieval",
            data.display()
        ));
    }
    let dialogues = dialogues_of(convs);
    let mut manifest = builder::manifest(
        "topiocqa",
        builder::name_from_path(&data),
        "CC BY-NC-SA 4.0",
        opts,
        src,
    );
    if gold_only {
        builder::mark_gold_only(&mut manifest);
    }
    b.finish(manifest, dialogues)
}

/// conversation -> turn key -> (turn, line)
type Convs = BTreeMap<SortKey, BTreeMap<SortKey, (Turn, u64)>>;

/// Reads the turns of the data file, grouped by conversation; with `gold_only` the gold
/// passages become the corpus.
fn read_turns(data: &Path, gold_only: bool, b: &mut Builder) -> Result<Convs> {
    let doc = JsonDoc::read(data)?;
    let mut convs: Convs = BTreeMap::new();
    for rec in doc.array_records()? {
        let Some(r) = b.diag.parsed::<Record>(&doc, &rec)? else {
            continue;
        };
        let Some((conv, turn_no)) =
            conversation_turn(&r.conversation_no, &r.turn_no, data, rec.line, &mut b.diag)?
        else {
            continue;
        };
        let id = format!("{conv}_{turn_no}");
        let gold = gold_of(&id, &r, data, rec.line, gold_only, b)?;
        let answer = r.answer.clone().filter(|a| !a.trim().is_empty());
        let turn = Turn {
            id,
            user: r.question.trim().to_string(),
            rewrite: None,
            tags: tags_of(&r, &answer),
            answer,
            gold,
        };
        let slot = convs.entry(turn_key(&conv)).or_default();
        if let Some((prev, prev_line)) = slot.insert(turn_key(&turn_no), (turn, rec.line)) {
            b.diag.problem(
                "duplicate-turn",
                InputError::new(
                    data,
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
    Ok(convs)
}

/// The gold passage of a turn (its DPR `wiki:` prefix dropped, or a content hash when it has
/// no id); with `gold_only` it is also added to the corpus.
fn gold_of(
    id: &str,
    r: &Record,
    data: &Path,
    line: u64,
    gold_only: bool,
    b: &mut Builder,
) -> Result<Vec<Gold>> {
    let Some(gp) = &r.gold_passage else {
        return Ok(Vec::new());
    };
    let pid = match gp.id.as_ref().and_then(scalar) {
        Some(p) => p.strip_prefix("wiki:").unwrap_or(&p).to_string(),
        None if !gp.text.is_empty() => format!(
            "topiocqa-{}",
            &crate::fingerprint::hash_bytes(format!("{}\n{}", gp.title, gp.text).as_bytes())[..16]
        ),
        None => String::new(),
    };
    if pid.is_empty() {
        return Ok(Vec::new());
    }
    if gold_only && !b.contains(&pid) {
        let p = Passage {
            id: pid.clone(),
            title: gp.title.clone(),
            text: gp.text.clone(),
            doc_id: r.topic.clone(),
            meta: Map::new(),
        };
        b.passage(p, data, line)?;
    }
    b.gold_origin(id, &pid, Origin::new(data, Some(line), "Gold_passage.id"));
    Ok(vec![Gold {
        passage_id: pid,
        grade: 1,
    }])
}

/// Topic, answerability (an `UNANSWERABLE` or missing answer), topic section and `is_nq`.
fn tags_of(r: &Record, answer: &Option<String>) -> Tags {
    let mut tags = Tags {
        topic: r.topic.clone(),
        answerability: Some(match answer {
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
    tags
}

/// The dialogues in conversation order, each turn's `topic_switch` set against the previous
/// turn's topic.
fn dialogues_of(convs: Convs) -> Vec<Dialogue> {
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
    dialogues
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{fixture, load};
    use super::*;

    #[test]
    fn fixture_topics_switches_and_wiki_ids() {
        let (r, b) = load(import, &fixture("topiocqa"), &ImportOptions::default());
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
            import,
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
