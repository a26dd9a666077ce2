//! CORAL (Cheng et al. 2024): conversations (`test/new_test_conversation.json`, a JSON array or
//! JSON lines of `{conv_id, turns: [{turn_id, question, response, golden_rewrite?,
//! golden_docs_pids, golden_docs_text?}]}`) and a passage file (`passage_corpus.json`, JSON
//! lines or an array of `{ref_id, ref_string, title?}`).
//!
//! A conversation is a dialogue (`conv_id`, or `coral-<n>` without one), each turn a turn with
//! id `<conv_id>_<turn_id>` (the id of CORAL's qrels): `question` the user's question,
//! `response` the answer, `golden_rewrite` the rewrite, `golden_docs_pids` the gold (grade 1).
//! Passages are `ref_id` with `ref_string` as text. Without the passage file (or `--corpus`)
//! the corpus is made of the turns' `golden_docs_text`, with a warning.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

use super::builder::{self, Builder, ImportReport, Origin};
use super::dataset_file;
use super::json_doc::JsonDoc;
use super::options::ImportOptions;
use super::scalar::{id_token, scalar};
use crate::error::{InputError, Result};
use crate::model::{Dialogue, Gold, Passage, Tags, Turn};
use crate::progress::Progress;

fn looks(head: &str) -> bool {
    head.contains("\"turns\"") && head.contains("\"golden_docs_pids\"")
}

fn looks_corpus(head: &str) -> bool {
    head.contains("\"ref_id\"") && head.contains("\"ref_string\"")
}

pub(super) fn sniff(path: &Path) -> bool {
    !dataset_file::candidates(path, looks).is_empty()
}

#[derive(Debug, Deserialize)]
struct Conversation {
    #[serde(default)]
    conv_id: Value,
    turns: Vec<CoralTurn>,
}

#[derive(Debug, Deserialize)]
struct CoralTurn {
    #[serde(default)]
    turn_id: Value,
    question: String,
    #[serde(default)]
    response: Option<String>,
    #[serde(default)]
    golden_rewrite: Option<String>,
    golden_docs_pids: Vec<Value>,
    #[serde(default)]
    golden_docs_text: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct Reference {
    ref_id: Value,
    ref_string: String,
    #[serde(default)]
    title: Option<String>,
}

fn nonempty(s: &Option<String>) -> Option<String> {
    s.as_ref()
        .map(|x| x.trim().to_string())
        .filter(|x| !x.is_empty())
}

/// The passage file in the source folder, or beside the conversation file or one folder up
/// (`passage_corpus.json` beside `test/`).
fn find_corpus(src: &Path) -> Option<PathBuf> {
    let dir = if src.is_dir() { src } else { src.parent()? };
    std::iter::once(dir)
        .chain(dir.parent().filter(|_| src.is_file()))
        .find_map(|d| dataset_file::candidates(d, looks_corpus).into_iter().next())
}

fn read_corpus(file: &Path, b: &mut Builder) -> Result<()> {
    let doc = JsonDoc::read(file)?;
    for rec in doc.array_records()? {
        let Some(r) = b.diag.parsed::<Reference>(&doc, &rec)? else {
            continue;
        };
        let Some(id) = scalar(&r.ref_id).map(|i| id_token(&i)) else {
            b.diag.problem(
                "malformed-record",
                InputError::new(file, "`ref_id` must be a number or a string")
                    .line(rec.line)
                    .field("ref_id"),
            )?;
            continue;
        };
        let p = Passage {
            id,
            title: r.title.unwrap_or_default(),
            text: r.ref_string,
            doc_id: None,
            meta: Map::new(),
        };
        b.passage(p, file, rec.line)?;
    }
    Ok(())
}

/// The gold texts of the turns as the corpus, each id once.
fn gold_text_corpus(convs: &[(Conversation, u64)], data: &Path, b: &mut Builder) -> Result<()> {
    let mut seen = HashSet::new();
    for (c, line) in convs {
        for t in &c.turns {
            for (pid, text) in t.golden_docs_pids.iter().zip(&t.golden_docs_text) {
                let Some(id) = scalar(pid).map(|i| id_token(&i)) else {
                    continue;
                };
                if seen.insert(id.clone()) {
                    let p = Passage {
                        id,
                        title: String::new(),
                        text: text.clone(),
                        doc_id: None,
                        meta: Map::new(),
                    };
                    b.passage(p, data, *line)?;
                }
            }
        }
    }
    Ok(())
}

fn dialogue_of(n: usize, c: Conversation, data: &Path, line: u64, b: &mut Builder) -> Dialogue {
    let id = scalar(&c.conv_id)
        .map(|i| id_token(&i))
        .unwrap_or_else(|| format!("coral-{}", n + 1));
    let turns = c
        .turns
        .into_iter()
        .enumerate()
        .map(|(k, t)| {
            let number = scalar(&t.turn_id).unwrap_or_else(|| (k + 1).to_string());
            let tid = id_token(&format!("{id}_{number}"));
            let mut gold: Vec<Gold> = Vec::new();
            for pid in t
                .golden_docs_pids
                .iter()
                .filter_map(scalar)
                .map(|p| id_token(&p))
            {
                if gold.iter().any(|g| g.passage_id == pid) {
                    continue;
                }
                b.gold_origin(
                    &tid,
                    &pid,
                    Origin::new(data, Some(line), "golden_docs_pids"),
                );
                gold.push(Gold {
                    passage_id: pid,
                    grade: 1,
                });
            }
            Turn {
                id: tid,
                user: t.question.trim().to_string(),
                rewrite: nonempty(&t.golden_rewrite),
                answer: nonempty(&t.response),
                gold,
                tags: Tags::default(),
            }
        })
        .collect();
    Dialogue {
        id,
        turns,
        meta: Map::new(),
    }
}

pub(super) fn import(
    src: &Path,
    out: &Path,
    opts: &ImportOptions,
    _progress: &dyn Progress,
) -> Result<ImportReport> {
    let data = dataset_file::pick(src, looks, opts.split.as_deref(), "CORAL conversation")?;
    let corpus_path = opts.corpus.clone().or_else(|| find_corpus(src));
    let mut b = Builder::create(out, opts.lenient)?;
    let doc = JsonDoc::read(&data)?;
    let mut convs = Vec::new();
    for rec in doc.array_records()? {
        if let Some(c) = b.diag.parsed::<Conversation>(&doc, &rec)? {
            convs.push((c, rec.line));
        }
    }
    match &corpus_path {
        Some(c) => read_corpus(c, &mut b)?,
        None => {
            b.diag.warn(format!(
                "{}: no CORAL passage file (`ref_id`, `ref_string`) found: the corpus is the turns' golden_docs_text (give --corpus)",
                data.display()
            ));
            gold_text_corpus(&convs, &data, &mut b)?;
        }
    }
    let dialogues = convs
        .into_iter()
        .enumerate()
        .map(|(n, (c, line))| dialogue_of(n, c, &data, line, &mut b))
        .collect();
    let mut manifest = builder::manifest(
        "coral",
        builder::name_from_path(&data),
        "CC BY-NC-SA 4.0",
        opts,
        src,
    );
    if corpus_path.is_none() {
        builder::mark_gold_only(&mut manifest);
    }
    b.finish(manifest, dialogues)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{counts, fixture, load};
    use super::*;

    #[test]
    fn fixture_turns_gold_and_corpus() {
        let (r, b) = load(import, &fixture("coral"), &ImportOptions::default());
        assert_eq!(counts(&r), (2, 3, 3, 4, 4));
        let (d, i) = b.find_turn("Test_wiki_1_2").unwrap();
        assert_eq!(d.turns[i].gold.len(), 2);
        assert!(d.turns[i].rewrite.as_deref().unwrap().contains("Amazon"));
        assert!(
            d.turns[i]
                .answer
                .as_deref()
                .unwrap()
                .contains("390 billion")
        );
    }

    #[test]
    fn without_the_passage_file_the_gold_texts_are_the_corpus() {
        let src = fixture("coral/test/new_test_conversation.json");
        let tmp = tempfile::tempdir().unwrap();
        let f = tmp.path().join("conv.json");
        std::fs::copy(src, &f).unwrap();
        let (r, _) = load(import, &f, &ImportOptions::default());
        assert_eq!(counts(&r), (2, 3, 3, 4, 4));
    }

    #[test]
    fn a_turn_without_question_is_named() {
        let tmp = tempfile::tempdir().unwrap();
        let f = tmp.path().join("conv.json");
        std::fs::write(
            &f,
            "[\n{\"conv_id\": \"a\", \"turns\": [\n  {\"turn_id\": 1, \"golden_docs_pids\": [1]}\n]}\n]\n",
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
        assert!(e.is_user_error() && s.contains("conv.json:"), "{s}");
        assert!(s.contains("question"), "{s}");
    }
}
