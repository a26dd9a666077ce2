//! Doc2Dial (Feng et al. 2020), the native release: dialogue files
//! (`doc2dial_dial_{train,validation}.json`: `{dial_data: {<domain>: {<doc_id>: [{dial_id,
//! doc_id, turns: [{turn_id, role, da, references: [{sp_id, label}], utterance}]}]}}}`) and the
//! documents (`doc2dial_doc_data.json`: `{doc_data: {<domain>: {<doc_id>: {title, doc_text,
//! spans: {<sp_id>: {text_sp, title, id_sec, start_sec, text_sec, ...}}}}}}`).
//!
//! Passages are the documents' sections, as the release cuts them and as the DialDoc shared task
//! retrieves them: every span with the same `id_sec` is one section, id `<doc_id>#<id_sec>`
//! (whitespace as `_`, which TREC files cannot hold),
//! text its `text_sec` (the spans' `text_sp` joined when absent), title its spans' `title`.
//! A user turn (consecutive user utterances joined) is a turn with id `<dial_id>_<turn_id>`;
//! the agent utterances that follow are its answer and the sections of their `references` its
//! gold (the user turn's own references when the agent cites none). The `da` of the user turn
//! and the domain become tags.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

use super::builder::{self, Builder, ImportReport, Origin};
use super::options::ImportOptions;
use super::scalar::{id_token, scalar};
use super::{dataset_file, typed_doc};
use crate::error::{InputError, Result};
use crate::model::{Dialogue, Gold, Passage, Tags, Turn};
use crate::progress::Progress;

fn looks(head: &str) -> bool {
    head.contains("\"dial_data\"")
}

fn looks_documents(head: &str) -> bool {
    head.contains("\"doc_data\"")
}

pub(super) fn sniff(path: &Path) -> bool {
    !dataset_file::candidates(path, looks).is_empty()
}

#[derive(Debug, Deserialize)]
struct DialFile {
    dial_data: BTreeMap<String, BTreeMap<String, Vec<Dial>>>,
}

#[derive(Debug, Deserialize)]
struct Dial {
    dial_id: String,
    turns: Vec<DialTurn>,
}

#[derive(Debug, Deserialize)]
struct DialTurn {
    turn_id: Value,
    role: String,
    #[serde(default)]
    da: Option<String>,
    #[serde(default)]
    references: Vec<Reference>,
    utterance: String,
}

#[derive(Debug, Deserialize)]
struct Reference {
    sp_id: Value,
}

#[derive(Debug, Deserialize)]
struct DocFile {
    doc_data: BTreeMap<String, BTreeMap<String, Doc>>,
}

#[derive(Debug, Deserialize)]
struct Doc {
    #[serde(default)]
    title: Option<String>,
    spans: BTreeMap<String, Span>,
}

#[derive(Debug, Deserialize)]
struct Span {
    #[serde(default)]
    text_sp: String,
    #[serde(default)]
    title: Option<String>,
    id_sec: String,
    #[serde(default)]
    start_sec: Option<u64>,
    #[serde(default)]
    start_sp: Option<u64>,
    #[serde(default)]
    text_sec: Option<String>,
}

/// Each document's span ids mapped to their section's passage id.
type SectionOf = HashMap<(String, String), String>;

fn find_documents(src: &Path) -> Option<PathBuf> {
    let dir = if src.is_dir() { src } else { src.parent()? };
    dataset_file::candidates(dir, looks_documents)
        .into_iter()
        .next()
}

/// A section's passage id: `<doc_id>#<id_sec>`, whitespace as `_`.
fn section_id(doc_id: &str, id_sec: &str) -> String {
    id_token(&format!("{doc_id}#{id_sec}"))
}

/// The sections of every document as passages, and the section of each span.
fn read_documents(file: &Path, b: &mut Builder) -> Result<SectionOf> {
    let docs: DocFile = typed_doc::read(file)?;
    let mut section_of = SectionOf::new();
    for (_, by_id) in docs.doc_data {
        for (doc_id, doc) in by_id {
            // sections in document order, each with its spans in order
            let mut sections: BTreeMap<(u64, String), Vec<&Span>> = BTreeMap::new();
            for (sp_id, span) in &doc.spans {
                let key = (span.start_sec.unwrap_or(u64::MAX), span.id_sec.clone());
                sections.entry(key).or_default().push(span);
                section_of.insert(
                    (doc_id.clone(), sp_id.clone()),
                    section_id(&doc_id, &span.id_sec),
                );
            }
            for ((_, id_sec), mut spans) in sections {
                spans.sort_by_key(|s| s.start_sp.unwrap_or(u64::MAX));
                let text = spans
                    .iter()
                    .find_map(|s| s.text_sec.clone())
                    .unwrap_or_else(|| spans.iter().map(|s| s.text_sp.as_str()).collect());
                let title = spans
                    .iter()
                    .find_map(|s| s.title.clone().filter(|t| !t.trim().is_empty()))
                    .or_else(|| doc.title.clone())
                    .unwrap_or_default();
                let p = Passage {
                    id: section_id(&doc_id, &id_sec),
                    title: title.trim().to_string(),
                    text: text.trim().to_string(),
                    doc_id: Some(doc_id.clone()),
                    meta: Map::new(),
                };
                b.passage(p, file, 0)?;
            }
        }
    }
    Ok(section_of)
}

/// The sections a turn's references point to, each once, in order.
fn sections_of(
    doc_id: &str,
    refs: &[&Reference],
    section_of: &SectionOf,
    at: &str,
    data: &Path,
    b: &mut Builder,
) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for r in refs {
        let Some(sp) = scalar(&r.sp_id) else { continue };
        match section_of.get(&(doc_id.to_string(), sp.clone())) {
            Some(s) if !out.contains(s) => out.push(s.clone()),
            Some(_) => {}
            None if section_of.is_empty() => {}
            None => b.diag.problem(
                "missing-gold-passage",
                InputError::new(
                    data,
                    format!("span `{sp}` is not a span of document `{doc_id}`"),
                )
                .field(format!("{at}.references.sp_id")),
            )?,
        }
    }
    Ok(out)
}

fn dialogue_of(
    doc_id: &str,
    domain: &str,
    (i, dial): (usize, Dial),
    section_of: &SectionOf,
    data: &Path,
    b: &mut Builder,
) -> Result<Dialogue> {
    let at = format!("dial_data.{domain}.{doc_id}[{i}]");
    let mut turns = Vec::new();
    let mut k = 0;
    while k < dial.turns.len() {
        if dial.turns[k].role != "user" {
            k += 1;
            continue;
        }
        let first = &dial.turns[k];
        let mut question = Vec::new();
        let mut user_refs = Vec::new();
        while k < dial.turns.len() && dial.turns[k].role == "user" {
            question.push(dial.turns[k].utterance.trim());
            user_refs.extend(dial.turns[k].references.iter());
            k += 1;
        }
        let mut answer = Vec::new();
        let mut agent_refs = Vec::new();
        while k < dial.turns.len() && dial.turns[k].role != "user" {
            answer.push(dial.turns[k].utterance.trim());
            agent_refs.extend(dial.turns[k].references.iter());
            k += 1;
        }
        let refs = if agent_refs.is_empty() {
            user_refs
        } else {
            agent_refs
        };
        let number = scalar(&first.turn_id).unwrap_or_else(|| (turns.len() + 1).to_string());
        let id = id_token(&format!("{}_{number}", dial.dial_id));
        let turn_at = format!("{at}.turns");
        let mut gold = Vec::new();
        for s in sections_of(doc_id, &refs, section_of, &turn_at, data, b)? {
            b.gold_origin(
                &id,
                &s,
                Origin::new(data, None, format!("{turn_at}.references")),
            );
            gold.push(Gold {
                passage_id: s,
                grade: 1,
            });
        }
        let mut tags = Tags::default();
        if let Some(da) = &first.da {
            tags.extra.insert("da".into(), Value::String(da.clone()));
        }
        tags.extra
            .insert("domain".into(), Value::String(domain.to_string()));
        turns.push(Turn {
            id,
            user: question.join(" "),
            rewrite: None,
            answer: (!answer.is_empty()).then(|| answer.join(" ")),
            gold,
            tags,
        });
    }
    let mut meta = Map::new();
    meta.insert("doc_id".into(), Value::String(doc_id.to_string()));
    Ok(Dialogue {
        id: id_token(&dial.dial_id),
        turns,
        meta,
    })
}

pub(super) fn import(
    src: &Path,
    out: &Path,
    opts: &ImportOptions,
    _progress: &dyn Progress,
) -> Result<ImportReport> {
    let data = dataset_file::pick(src, looks, opts.split.as_deref(), "Doc2Dial dialogue")?;
    let documents = opts.corpus.clone().or_else(|| find_documents(src));
    let mut b = Builder::create(out, opts.lenient)?;
    let section_of = match &documents {
        Some(d) => read_documents(d, &mut b)?,
        None => {
            b.diag.warn(format!(
                "{}: no doc2dial_doc_data.json found: the corpus is empty (give --corpus)",
                data.display()
            ));
            SectionOf::new()
        }
    };
    let dials: DialFile = typed_doc::read(&data)?;
    let mut dialogues = Vec::new();
    for (domain, by_doc) in dials.dial_data {
        for (doc_id, list) in by_doc {
            for entry in list.into_iter().enumerate() {
                dialogues.push(dialogue_of(
                    &doc_id,
                    &domain,
                    entry,
                    &section_of,
                    &data,
                    &mut b,
                )?);
            }
        }
    }
    let manifest = builder::manifest(
        "doc2dial",
        builder::name_from_path(&data),
        "CC BY 3.0",
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
    fn sections_are_passages_and_agent_references_the_gold() {
        let (r, b) = load(import, &fixture("doc2dial"), &ImportOptions::default());
        assert_eq!(counts(&r), (1, 2, 2, 2, 2));
        let d = &b.dialogues[0];
        assert_eq!(d.turns[0].id, "8df07b7a98990db27c395cb1f68a962e_1");
        assert_eq!(
            d.turns[0].gold[0].passage_id,
            "Benefits_Planner:_Retirement_|_Online_Calculator#1_0#t_0"
        );
        // two user utterances in a row are one question, answered by the next agent turn
        assert_eq!(d.turns[1].user, "Where do I get my earnings? Is it online?");
        assert!(d.turns[1].answer.as_deref().unwrap().starts_with("Sign in"));
        assert_eq!(d.turns[1].tags.get("da").as_deref(), Some("query_solution"));
    }

    #[test]
    fn a_turn_without_utterance_names_its_path() {
        let tmp = tempfile::tempdir().unwrap();
        let f = tmp.path().join("doc2dial_dial_validation.json");
        std::fs::write(
            &f,
            "{\"dial_data\": {\"ssa\": {\"d#1\": [\n {\"dial_id\": \"x\", \"turns\": [\n  {\"turn_id\": 1, \"role\": \"user\"}\n ]}\n]}}}\n",
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
        assert!(s.contains("doc2dial_dial_validation.json:3"), "{s}");
        assert!(s.contains("dial_data.ssa.d#1[0].turns[0]"), "{s}");
        assert!(s.contains("utterance"), "{s}");
    }
}
