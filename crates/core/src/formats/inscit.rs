//! INSCIT (Wu et al. 2022): a JSON object of dialogues keyed by id,
//! `{"<id>": {seedArticle: {title, topic, level}, turns: [{context: [..], prevEvidence: [..],
//! labels: [{responseType, response, evidence: [{passage_id, passage_text, passage_titles}]}]}]}}`.
//!
//! Each element of `turns` is one user turn: its question is the last utterance of `context`
//! (alternating user/agent, oldest first), its id `<dialogue id>_<1-based index>`. The answer is
//! the agent response the conversation actually continued with (the next turn's context), or
//! the first label's response for the last turn. Gold is the union of all labels' evidence
//! passages (grade 1). `responseType`s become the `response_type` tag, and a turn whose labels
//! are all `noAnswer` is tagged unanswerable. The corpus (the processed Wikipedia folder of
//! article JSON files, or its DPR TSV) is read when found or given with `--corpus`; otherwise it
//! is made of the evidence passages, with a warning.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

use super::builder::{self, Builder, ImportReport, Origin};
use super::corpus::{self, CorpusOptions};
use super::dataset_file;
use super::json_doc::JsonDoc;
use super::options::ImportOptions;
use crate::error::{InputError, Result};
use crate::model::{Dialogue, Gold, Passage, Tags, Turn};
use crate::progress::Progress;

fn looks(head: &str) -> bool {
    let t = head.trim_start();
    t.starts_with('{')
        && head.contains("\"turns\"")
        && head.contains("\"context\"")
        && (head.contains("\"labels\"") || head.contains("\"prevEvidence\""))
}

pub(super) fn sniff(path: &Path) -> bool {
    !dataset_file::candidates(path, looks).is_empty()
}

#[derive(Debug, Deserialize)]
struct Dialog {
    #[serde(rename = "seedArticle", default)]
    seed_article: Option<Map<String, Value>>,
    turns: Vec<InscitTurn>,
}

#[derive(Debug, Deserialize)]
struct InscitTurn {
    context: Vec<String>,
    #[serde(rename = "prevEvidence", default)]
    prev_evidence: Vec<Vec<Evidence>>,
    #[serde(default)]
    labels: Vec<Label>,
}

#[derive(Debug, Deserialize)]
struct Label {
    #[serde(rename = "responseType", default)]
    response_type: Option<String>,
    #[serde(default)]
    response: Option<String>,
    #[serde(default)]
    evidence: Vec<Evidence>,
}

#[derive(Debug, Deserialize)]
struct Evidence {
    passage_id: String,
    #[serde(default)]
    passage_text: Option<String>,
    #[serde(default)]
    passage_titles: Vec<String>,
}

fn find_corpus(src: &Path, data: &Path) -> Option<PathBuf> {
    let dir = if src.is_dir() {
        src.to_path_buf()
    } else {
        src.parent()?.to_path_buf()
    };
    for d in ["text_0420_processed", "corpus", "wiki_corpus"] {
        if dir.join(d).is_dir() {
            return Some(dir.join(d));
        }
    }
    dataset_file::sibling_corpus(src, data, &["full_wiki_segments", "corpus"])
        .filter(|p| corpus::is_corpus_file(p) && !looks(&dataset_file::head(p, 1 << 16)))
}

pub(super) fn import(
    src: &Path,
    out: &Path,
    opts: &ImportOptions,
    progress: &dyn Progress,
) -> Result<ImportReport> {
    let data = dataset_file::pick(src, looks, opts.split.as_deref(), "INSCIT")?;
    let corpus_path = opts.corpus.clone().or_else(|| find_corpus(src, &data));
    let mut b = Builder::create(out, opts.lenient)?;
    if let Some(c) = &corpus_path {
        corpus::read_into(c, &mut b, CorpusOptions::default(), progress)?;
    }
    let gold_only = corpus_path.is_none();
    let doc = JsonDoc::read(&data)?;
    let mut dialogues = Vec::new();
    for rec in doc.object_records()? {
        let did = rec.key.clone().unwrap_or_default();
        let Some(d) = b.diag.parsed::<Dialog>(&doc, &rec)? else {
            continue;
        };
        let at = At {
            data: &data,
            line: rec.line,
            did: &did,
        };
        let mut turns = Vec::with_capacity(d.turns.len());
        for i in 0..d.turns.len() {
            if let Some(t) = dialogue_turn(&at, &d, i, gold_only, &mut b)? {
                turns.push(t);
            }
        }
        let mut meta = Map::new();
        if let Some(s) = d.seed_article {
            meta.insert("seed_article".into(), Value::Object(s));
        }
        dialogues.push(Dialogue {
            id: did,
            turns,
            meta,
        });
    }
    if gold_only {
        b.diag.warn(format!(
            "{}: no INSCIT corpus found: the corpus holds only the evidence passages; give --corpus for real retrieval",
            data.display()
        ));
    }
    let mut manifest = builder::manifest(
        "inscit",
        builder::name_from_path(&data),
        "CC BY-SA 4.0",
        opts,
        src,
    );
    if gold_only {
        builder::mark_gold_only(&mut manifest);
    }
    b.finish(manifest, dialogues)
}

/// Where a dialogue was read: the data file, its line and the dialogue's id.
struct At<'a> {
    data: &'a Path,
    line: u64,
    did: &'a str,
}

/// Turn `i` of dialogue `d`; `None` when its context is empty and the import is lenient. With
/// `gold_only` its evidence passages go into the corpus.
fn dialogue_turn(
    at: &At<'_>,
    d: &Dialog,
    i: usize,
    gold_only: bool,
    b: &mut Builder,
) -> Result<Option<Turn>> {
    let t = &d.turns[i];
    let id = format!("{}_{}", at.did, i + 1);
    let Some(question) = t.context.last().map(|s| s.trim().to_string()) else {
        b.diag.problem(
            "malformed-record",
            InputError::new(
                at.data,
                format!(
                    "turn {} of dialogue `{}` has an empty context",
                    i + 1,
                    at.did
                ),
            )
            .line(at.line)
            .field(format!("turns[{i}].context")),
        )?;
        return Ok(None);
    };
    if gold_only {
        add_evidence_passages(t, at, b)?;
    }
    let gold = gold_of(&id, t, i, at, b);
    let answer = d
        .turns
        .get(i + 1)
        .and_then(|next| next.context.get(2 * i + 1))
        .or_else(|| t.labels.first().and_then(|l| l.response.as_ref()))
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    Ok(Some(Turn {
        id,
        user: question,
        rewrite: None,
        answer,
        gold,
        tags: tags_of(d, t),
    }))
}

/// The evidence passages of a turn's labels and earlier evidence, into the corpus (once each).
fn add_evidence_passages(t: &InscitTurn, at: &At<'_>, b: &mut Builder) -> Result<()> {
    for ev in t
        .labels
        .iter()
        .flat_map(|l| l.evidence.iter())
        .chain(t.prev_evidence.iter().flatten())
    {
        if let Some(text) = &ev.passage_text
            && !b.contains(&ev.passage_id)
        {
            let p = Passage {
                id: ev.passage_id.clone(),
                title: ev.passage_titles.join(" [SEP] "),
                text: text.clone(),
                doc_id: ev.passage_titles.first().cloned(),
                meta: Map::new(),
            };
            b.passage(p, at.data, at.line)?;
        }
    }
    Ok(())
}

/// The union of all labels' evidence passages (grade 1), each once.
fn gold_of(id: &str, t: &InscitTurn, i: usize, at: &At<'_>, b: &mut Builder) -> Vec<Gold> {
    let mut gold: Vec<Gold> = Vec::new();
    for (li, l) in t.labels.iter().enumerate() {
        for (ei, ev) in l.evidence.iter().enumerate() {
            if gold.iter().any(|g| g.passage_id == ev.passage_id) {
                continue;
            }
            b.gold_origin(
                id,
                &ev.passage_id,
                Origin::new(
                    at.data,
                    Some(at.line),
                    format!("turns[{i}].labels[{li}].evidence[{ei}].passage_id"),
                ),
            );
            gold.push(Gold {
                passage_id: ev.passage_id.clone(),
                grade: 1,
            });
        }
    }
    gold
}

/// Answerability (unanswerable when every label is `noAnswer`), the response types and the
/// seed article's title as topic.
fn tags_of(d: &Dialog, t: &InscitTurn) -> Tags {
    let mut types: Vec<String> = Vec::new();
    for l in &t.labels {
        if let Some(rt) = &l.response_type
            && !types.contains(rt)
        {
            types.push(rt.clone());
        }
    }
    let mut tags = Tags::default();
    let no_answer = !t.labels.is_empty()
        && t.labels.iter().all(|l| {
            l.response_type
                .as_deref()
                .is_some_and(|r| r.to_ascii_lowercase().replace(['_', '-', ' '], "") == "noanswer")
        });
    tags.answerability = Some(
        if no_answer {
            "unanswerable"
        } else {
            "answerable"
        }
        .into(),
    );
    if !types.is_empty() {
        tags.extra
            .insert("response_type".into(), Value::String(types.join(",")));
    }
    if let Some(title) = d
        .seed_article
        .as_ref()
        .and_then(|s| s.get("title"))
        .and_then(Value::as_str)
    {
        tags.topic = Some(title.to_string());
    }
    tags
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{fixture, load};
    use super::*;

    #[test]
    fn fixture_context_labels_and_answers() {
        let (r, b) = load(import, &fixture("inscit"), &ImportOptions::default());
        assert_eq!((r.dialogues, r.turns, r.judged_turns), (2, 4, 3));
        assert_eq!(r.passages, 4, "gold-only corpus from the evidence passages");
        let d = &b.dialogues[0];
        assert_eq!(d.turns[1].id, "food_level1_dial24_2");
        assert_eq!(d.turns[1].user, "Can cheese be made from soy milk?");
        assert_eq!(d.turns[0].gold.len(), 2, "evidence of both labels");
        assert_eq!(
            d.turns[0].answer.as_deref(),
            Some("Other sources of milk for cheese include goats and sheep's milk.")
        );
        assert!(d.turns[2].is_unanswerable());
        assert_eq!(
            b.dialogues[1].turns[0].tags.get("response_type").as_deref(),
            Some("clarification")
        );
    }
}
