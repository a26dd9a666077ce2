//! QuAC (Choi et al. 2018), the native release (`train_v0.2.json`, `val_v0.2.json`):
//! `{data: [{title, section_title, background, paragraphs: [{id, context, qas: [{id, question,
//! answers: [{text, answer_start}], orig_answer: {text, answer_start}, followup, yesno}]}]}]}`.
//!
//! Each section (a paragraph: one dialogue was held over it) is one passage, id the paragraph's
//! `id`, title `<title> - <section_title>`, text its `context` without the `CANNOTANSWER` that
//! QuAC appends. Each paragraph's `qas` is one dialogue with the same id, each question a turn
//! with its own `id`: `orig_answer` (else the first of `answers`) is the answer, and a turn with
//! an answer span has its section as gold (grade 1), the span's offset in the `answer_start`
//! tag; `CANNOTANSWER` tags the turn unanswerable, with no gold. `followup` and `yesno` become
//! tags.

use std::path::Path;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::builder::{self, Builder, ImportReport, Origin};
use super::options::ImportOptions;
use super::scalar::id_token;
use super::{dataset_file, typed_doc};
use crate::error::Result;
use crate::model::{Dialogue, Gold, Passage, Tags, Turn};
use crate::progress::Progress;

const CANNOTANSWER: &str = "CANNOTANSWER";

fn looks(head: &str) -> bool {
    head.contains("\"paragraphs\"")
        && head.contains("\"qas\"")
        && ["\"followup\"", "\"yesno\"", "\"orig_answer\""]
            .iter()
            .any(|k| head.contains(k))
}

pub(super) fn sniff(path: &Path) -> bool {
    !dataset_file::candidates(path, looks).is_empty()
}

#[derive(Debug, Deserialize)]
struct QuacFile {
    data: Vec<Section>,
}

#[derive(Debug, Deserialize)]
struct Section {
    #[serde(default)]
    title: String,
    #[serde(default)]
    section_title: String,
    paragraphs: Vec<Paragraph>,
}

#[derive(Debug, Deserialize)]
struct Paragraph {
    id: String,
    context: String,
    qas: Vec<Qa>,
}

#[derive(Debug, Deserialize)]
struct Qa {
    id: String,
    question: String,
    #[serde(default)]
    answers: Vec<Answer>,
    #[serde(default)]
    orig_answer: Option<Answer>,
    #[serde(default)]
    followup: Option<String>,
    #[serde(default)]
    yesno: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
struct Answer {
    text: String,
    #[serde(default)]
    answer_start: Option<u64>,
}

fn turn_of(qa: Qa, passage: &str, data: &Path, at: &str, b: &mut Builder) -> Turn {
    let id = id_token(&qa.id);
    let answer = qa.orig_answer.or_else(|| qa.answers.first().cloned());
    let mut tags = Tags::default();
    for (k, v) in [("followup", &qa.followup), ("yesno", &qa.yesno)] {
        if let Some(v) = v {
            tags.extra.insert(k.into(), Value::String(v.clone()));
        }
    }
    let answered = answer
        .as_ref()
        .filter(|a| !a.text.trim().is_empty() && a.text.trim() != CANNOTANSWER);
    let mut gold = Vec::new();
    match answered {
        Some(a) => {
            if let Some(s) = a.answer_start {
                tags.extra.insert("answer_start".into(), Value::from(s));
            }
            b.gold_origin(&id, passage, Origin::new(data, None, at));
            gold.push(Gold {
                passage_id: passage.to_string(),
                grade: 1,
            });
        }
        None => tags.answerability = Some("unanswerable".into()),
    }
    Turn {
        id,
        user: qa.question.trim().to_string(),
        rewrite: None,
        answer: answered.map(|a| a.text.trim().to_string()),
        gold,
        tags,
    }
}

pub(super) fn import(
    src: &Path,
    out: &Path,
    opts: &ImportOptions,
    _progress: &dyn Progress,
) -> Result<ImportReport> {
    // QuAC names its splits train and val: val unless told otherwise
    let split = opts.split.as_deref().unwrap_or("val");
    let data = dataset_file::pick(src, looks, Some(split), "QuAC")?;
    let mut b = Builder::create(out, opts.lenient)?;
    let file: QuacFile = typed_doc::read(&data)?;
    let mut dialogues = Vec::new();
    for (i, section) in file.data.into_iter().enumerate() {
        for (j, mut para) in section.paragraphs.into_iter().enumerate() {
            para.id = id_token(&para.id);
            let text = para.context.trim();
            let text = text.strip_suffix(CANNOTANSWER).unwrap_or(text).trim();
            let title = [section.title.trim(), section.section_title.trim()]
                .into_iter()
                .filter(|t| !t.is_empty())
                .collect::<Vec<_>>()
                .join(" - ");
            let p = Passage {
                id: para.id.clone(),
                title,
                text: text.to_string(),
                doc_id: Some(section.title.clone()).filter(|t| !t.is_empty()),
                meta: Map::new(),
            };
            b.passage(p, &data, 0)?;
            let at = format!("data[{i}].paragraphs[{j}].qas.orig_answer");
            let turns = para
                .qas
                .into_iter()
                .map(|qa| turn_of(qa, &para.id, &data, &at, &mut b))
                .collect();
            dialogues.push(Dialogue {
                id: para.id,
                turns,
                meta: Map::new(),
            });
        }
    }
    let manifest = builder::manifest(
        "quac",
        builder::name_from_path(&data),
        "CC BY-SA 4.0",
        opts,
        src,
    );
    b.finish(manifest, dialogues)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{counts, fixture, load};
    use super::*;

    #[test]
    fn sections_are_passages_and_cannotanswer_is_unanswerable() {
        let (r, b) = load(import, &fixture("quac"), &ImportOptions::default());
        assert_eq!(counts(&r), (2, 4, 3, 2, 3));
        let (d, i) = b.find_turn("C_aa11_1_q#2").unwrap();
        assert!(d.turns[i].is_unanswerable());
        assert!(d.turns[i].gold.is_empty());
        let (d, i) = b.find_turn("C_aa11_1_q#1").unwrap();
        assert_eq!(d.turns[i].gold[0].passage_id, "C_aa11_1");
        assert_eq!(d.turns[i].tags.get("followup").as_deref(), Some("m"));
    }

    #[test]
    fn a_question_that_is_not_text_names_line_and_path() {
        let tmp = tempfile::tempdir().unwrap();
        let f = tmp.path().join("val_v0.2.json");
        std::fs::write(
            &f,
            "{\"data\": [{\"title\": \"t\", \"paragraphs\": [{\"id\": \"C_1\", \"context\": \"c\",\n \"qas\": [{\"id\": \"C_1_q#0\", \"followup\": \"y\",\n   \"question\": 7}]}]}]}\n",
        )
        .unwrap();
        let e = import(
            &f,
            &tmp.path().join("o"),
            &ImportOptions::default(),
            &crate::progress::NoProgress,
        )
        .unwrap_err();
        let s = e.to_string();
        assert!(e.is_user_error(), "{s}");
        assert!(s.contains("val_v0.2.json:3"), "{s}");
        assert!(s.contains("data[0].paragraphs[0].qas[0].question"), "{s}");
    }
}
