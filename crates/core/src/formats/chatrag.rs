//! NVIDIA's ChatRAG-Bench release (Liu et al. 2024, the ChatQA paper): one JSON array per
//! dataset (`data/<subset>/test.json` or `dev.json`, DoQA's `test_<domain>.json`), each sample
//! `{messages: [{role, content}], answers, ground_truth_ctx, ctxs, document?, topic?,
//! rewrite_query?}`, and for Doc2Dial, QuAC and QReCC a `documents.json` of
//! `{document name: [chunk text, ...]}`. The subsets covered: doc2dial, quac, qrecc, topiocqa,
//! inscit, coqa, doqa, hybridial, sqa, convfinqa.
//!
//! - Every context (the chunks of `documents.json`, each sample's `ctxs`, the gold) becomes one
//!   passage, the same text once: its id is the context's `document_idx` when it has one, else
//!   `c` and 16 hex digits of the BLAKE3 hash of its text. A context's text is `text` or `ctx`.
//! - `ground_truth_ctx` (an object or a list of them) is the gold, grade 1; a gold with an
//!   `index` and a sample `document` found in `documents.json` is that chunk.
//! - A sample is one turn: its question is the last user message, its answer the first of
//!   `answers` (all of them in the `answers` tag when there are several), `rewrite_query` its
//!   rewrite, `topic` its topic, `document` the `document` tag. An answer that says it cannot
//!   find the answer (ChatQA's "Sorry. I cannot find the answer ...") tags it unanswerable.
//! - Samples extending one conversation become one dialogue: a sample whose messages are an
//!   earlier sample's messages plus one or more whole exchanges (an assistant reply and a user
//!   message each; a turn without evidence has no sample) continues that earlier sample's
//!   dialogue. Dialogues are `<subset>-<n>`, turns `<dialogue>_<k>`.
//!
//! A source holding several subsets imports them all into one benchmark (one corpus); `--domain`
//! picks one.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

use super::builder::{self, Builder, ImportReport, Origin};
use super::dataset_file;
use super::json_doc::JsonDoc;
use super::options::ImportOptions;
use super::scalar::{id_token, scalar};
use super::walk;
use crate::error::{InputError, Result};
use crate::model::{Dialogue, Gold, Passage, Tags, Turn};
use crate::progress::Progress;

/// ChatQA's answer to a question its document cannot answer.
const CANNOT_ANSWER: &str = "sorry. i cannot find the answer";

fn looks(head: &str) -> bool {
    let t = head.trim_start();
    t.starts_with('[')
        && head.contains("\"messages\"")
        && head.contains("\"role\"")
        && ["\"ctxs\"", "\"ground_truth_ctx\"", "\"answers\""]
            .iter()
            .any(|k| head.contains(k))
}

/// The sample files under `src` (the file itself, a subset folder or the release's root).
fn data_files(src: &Path) -> Vec<PathBuf> {
    if src.is_file() {
        return dataset_file::candidates(src, looks);
    }
    walk::files(src, 3)
        .unwrap_or_default()
        .into_iter()
        .filter(|p| {
            walk::file_name(p).to_ascii_lowercase().ends_with(".json")
                && looks(&dataset_file::head(p, 1 << 16))
        })
        .collect()
}

pub(super) fn sniff(path: &Path) -> bool {
    !data_files(path).is_empty()
}

#[derive(Debug, Deserialize)]
struct Sample {
    messages: Vec<Message>,
    #[serde(default)]
    answers: Value,
    #[serde(default)]
    ground_truth_ctx: Value,
    #[serde(default)]
    ctxs: Vec<Map<String, Value>>,
    #[serde(default)]
    document: Value,
    #[serde(default)]
    topic: Option<String>,
    #[serde(default)]
    rewrite_query: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Message {
    role: String,
    content: String,
}

/// One context as a sample gives it.
struct Context {
    title: String,
    text: String,
    document_idx: Option<String>,
}

fn context_of(m: &Map<String, Value>) -> Option<Context> {
    let text = ["text", "ctx"]
        .iter()
        .find_map(|k| m.get(*k).and_then(Value::as_str))?;
    Some(Context {
        title: m
            .get("title")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .trim()
            .to_string(),
        text: text.trim().to_string(),
        document_idx: m.get("document_idx").and_then(scalar).map(|d| id_token(&d)),
    })
}

/// The contexts seen so far, each text once, in first-seen order.
#[derive(Default)]
struct Contexts {
    by_text: HashMap<blake3::Hash, usize>,
    by_document_idx: HashMap<String, usize>,
    passages: Vec<Passage>,
    /// Where each passage was first seen: file and line.
    origins: Vec<(PathBuf, u64)>,
}

impl Contexts {
    /// The passage of `c` (added when new); `origin` names where it was first seen.
    fn add(&mut self, c: Context, doc: Option<&str>, origin: (&Path, u64)) -> usize {
        let hash = blake3::hash(c.text.as_bytes());
        if let Some(&i) = self.by_text.get(&hash) {
            let p = &mut self.passages[i];
            if p.title.is_empty() && !c.title.is_empty() {
                p.title = c.title;
            }
            return i;
        }
        let id = match &c.document_idx {
            Some(d) if !self.by_document_idx.contains_key(d) => d.clone(),
            _ => format!("c{}", &hash.to_hex()[..16]),
        };
        let i = self.passages.len();
        if let Some(d) = c.document_idx {
            self.by_document_idx.entry(d).or_insert(i);
        }
        self.passages.push(Passage {
            id,
            title: c.title,
            text: c.text,
            doc_id: doc.map(str::to_string),
            meta: Map::new(),
        });
        self.origins.push((origin.0.to_path_buf(), origin.1));
        self.by_text.insert(hash, i);
        i
    }
}

/// The chunks of a subset's `documents.json`, by document name.
type Documents = HashMap<String, Vec<usize>>;

fn read_documents(file: &Path, contexts: &mut Contexts) -> Result<Documents> {
    let doc = JsonDoc::read(file)?;
    let mut out = Documents::new();
    for rec in doc.object_records()? {
        let name = rec.key.clone().unwrap_or_default();
        let chunks: Vec<String> = doc.parse(&rec)?;
        let ids = chunks
            .into_iter()
            .map(|text| {
                let c = Context {
                    title: String::new(),
                    text: text.trim().to_string(),
                    document_idx: None,
                };
                contexts.add(c, Some(&name), (file, rec.line))
            })
            .collect();
        out.insert(name, ids);
    }
    Ok(out)
}

/// One sample read, its contexts registered: what becomes its turn.
struct Read {
    messages: Vec<Message>,
    answers: Vec<String>,
    gold: Vec<usize>,
    document: Option<String>,
    topic: Option<String>,
    rewrite: Option<String>,
    line: u64,
}

fn answers_of(v: &Value) -> Vec<String> {
    match v {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a
            .iter()
            .filter_map(|x| x.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    }
}

fn gold_of(
    s: &Sample,
    documents: &Documents,
    contexts: &mut Contexts,
    at: (&Path, u64),
    b: &mut Builder,
) -> Result<Vec<usize>> {
    let items: Vec<&Map<String, Value>> = match &s.ground_truth_ctx {
        Value::Object(m) => vec![m],
        Value::Array(a) => a.iter().filter_map(Value::as_object).collect(),
        Value::Null => Vec::new(),
        _ => {
            b.diag.problem(
                "malformed-record",
                InputError::new(
                    at.0,
                    "`ground_truth_ctx` must be an object or a list of them",
                )
                .line(at.1)
                .field("ground_truth_ctx"),
            )?;
            return Ok(Vec::new());
        }
    };
    let document = scalar(&s.document);
    let mut gold = Vec::new();
    for m in items {
        let chunk = m
            .get("index")
            .and_then(Value::as_u64)
            .zip(document.as_ref().and_then(|d| documents.get(d)))
            .and_then(|(i, chunks)| chunks.get(i as usize).copied());
        let i = match (chunk, context_of(m)) {
            (Some(i), _) => i,
            (None, Some(c)) => contexts.add(c, document.as_deref(), at),
            (None, None) => {
                b.diag.problem(
                    "malformed-record",
                    InputError::new(at.0, "a gold context has neither `ctx` nor `text`")
                        .line(at.1)
                        .field("ground_truth_ctx.ctx"),
                )?;
                continue;
            }
        };
        if !gold.contains(&i) {
            gold.push(i);
        }
    }
    Ok(gold)
}

/// Reads one sample file, registering its contexts.
fn read_samples(
    file: &Path,
    documents: &Documents,
    contexts: &mut Contexts,
    b: &mut Builder,
) -> Result<Vec<Read>> {
    let doc = JsonDoc::read(file)?;
    let mut out = Vec::new();
    for rec in doc.array_records()? {
        let Some(s) = b.diag.parsed::<Sample>(&doc, &rec)? else {
            continue;
        };
        if s.messages.last().map(|m| m.role.as_str()) != Some("user") {
            b.diag.problem(
                "malformed-record",
                InputError::new(file, "the last message must be the user's question")
                    .line(rec.line)
                    .field("messages.role"),
            )?;
            continue;
        }
        let document = scalar(&s.document);
        for m in &s.ctxs {
            if let Some(c) = context_of(m) {
                contexts.add(c, document.as_deref(), (file, rec.line));
            }
        }
        let gold = gold_of(&s, documents, contexts, (file, rec.line), b)?;
        out.push(Read {
            answers: answers_of(&s.answers),
            gold,
            document,
            topic: s.topic.filter(|t| !t.trim().is_empty()),
            rewrite: s.rewrite_query.filter(|r| !r.trim().is_empty()),
            messages: s.messages,
            line: rec.line,
        });
    }
    Ok(out)
}

/// The key of every prefix of a message history: `keys[k]` stands for `messages[..k]`.
fn prefix_keys(messages: &[Message]) -> Vec<blake3::Hash> {
    let mut h = blake3::Hasher::new();
    let mut keys = Vec::with_capacity(messages.len() + 1);
    keys.push(h.finalize());
    for m in messages {
        h.update(m.role.as_bytes());
        h.update(b"\0");
        h.update(m.content.trim().as_bytes());
        h.update(b"\x01");
        keys.push(h.finalize());
    }
    keys
}

/// Groups a file's samples into dialogues of (sample, turn number) in file order. A sample
/// continues the open dialogue whose latest history is its own history less one or more whole
/// exchanges (an assistant reply and a user message each): a turn without evidence has no
/// sample, so a conversation may skip exchanges. The longest such history wins.
fn conversations(reads: &[Read]) -> Vec<Vec<usize>> {
    let mut dialogues: Vec<Vec<usize>> = Vec::new();
    let mut open: HashMap<blake3::Hash, usize> = HashMap::new();
    for (i, r) in reads.iter().enumerate() {
        let keys = prefix_keys(&r.messages);
        let n = r.messages.len();
        // histories of n - 2, n - 4, ... messages, each ending on a user message
        let earlier = (1..=n.saturating_sub(2))
            .rev()
            .step_by(2)
            .find_map(|k| open.remove(&keys[k]));
        let d = match earlier {
            Some(d) => d,
            None => {
                dialogues.push(Vec::new());
                dialogues.len() - 1
            }
        };
        dialogues[d].push(i);
        open.insert(keys[n], d);
    }
    dialogues
}

fn turn_of(id: String, r: &Read, contexts: &Contexts, file: &Path, b: &mut Builder) -> Turn {
    let mut tags = Tags {
        topic: r.topic.clone(),
        ..Default::default()
    };
    let answer = r.answers.first().map(|a| a.trim().to_string());
    if answer
        .as_deref()
        .is_some_and(|a| a.to_lowercase().starts_with(CANNOT_ANSWER))
    {
        tags.answerability = Some("unanswerable".into());
    }
    if r.answers.len() > 1 {
        tags.extra.insert(
            "answers".into(),
            Value::Array(r.answers.iter().cloned().map(Value::String).collect()),
        );
    }
    if let Some(d) = &r.document {
        tags.extra
            .insert("document".into(), Value::String(d.clone()));
    }
    let mut gold = Vec::new();
    for &g in &r.gold {
        let pid = contexts.passages[g].id.clone();
        b.gold_origin(
            &id,
            &pid,
            Origin::new(file, Some(r.line), "ground_truth_ctx"),
        );
        gold.push(Gold {
            passage_id: pid,
            grade: 1,
        });
    }
    Turn {
        id,
        user: r
            .messages
            .last()
            .map(|m| m.content.trim().to_string())
            .unwrap_or_default(),
        rewrite: r.rewrite.clone(),
        answer,
        gold,
        tags,
    }
}

/// The name a sample file's dialogues carry: its subset folder, and the file's part when the
/// folder holds several (DoQA's `test_cooking.json` -> `doqa-cooking`).
fn part_name(file: &Path, files: &[PathBuf]) -> String {
    let parent = file.parent();
    let subset = parent
        .and_then(Path::file_name)
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "chatrag".into());
    let siblings = files.iter().filter(|f| f.parent() == parent).count();
    if siblings <= 1 {
        return id_token(&subset);
    }
    let stem = builder::name_from_path(file);
    let part = stem
        .trim_start_matches("test_")
        .trim_start_matches("dev_")
        .to_string();
    id_token(&format!("{subset}-{part}"))
}

fn pick_files(src: &Path, opts: &ImportOptions) -> Result<Vec<PathBuf>> {
    let mut files = data_files(src);
    if src.is_file() && files.is_empty() {
        files.push(src.to_path_buf());
    }
    if let Some(subset) = &opts.domain {
        files.retain(|f| {
            f.parent()
                .and_then(Path::file_name)
                .is_some_and(|n| n.to_string_lossy().eq_ignore_ascii_case(subset))
        });
    }
    if files.is_empty() {
        let what = match &opts.domain {
            Some(d) => format!("no ChatRAG-Bench data file of subset `{d}` found"),
            None => "no ChatRAG-Bench data file found".into(),
        };
        return Err(InputError::new(src, what)
            .hint("ChatRAG-Bench files are JSON arrays of samples with `messages` and `ctxs`")
            .into());
    }
    Ok(files)
}

pub(super) fn import(
    src: &Path,
    out: &Path,
    opts: &ImportOptions,
    _progress: &dyn Progress,
) -> Result<ImportReport> {
    let files = pick_files(src, opts)?;
    let mut b = Builder::create(out, opts.lenient)?;
    let mut contexts = Contexts::default();
    let mut read: Vec<(PathBuf, Vec<Read>)> = Vec::new();
    for f in &files {
        let docs_file = f.parent().map(|p| p.join("documents.json"));
        let documents = match docs_file.filter(|p| p.is_file()) {
            Some(p) => read_documents(&p, &mut contexts)?,
            None => Documents::new(),
        };
        let reads = read_samples(f, &documents, &mut contexts, &mut b)?;
        read.push((f.clone(), reads));
    }
    for (p, (file, line)) in contexts.passages.iter().zip(&contexts.origins) {
        b.passage(p.clone(), file, *line)?;
    }
    let mut dialogues = Vec::new();
    for (f, reads) in &read {
        let part = part_name(f, &files);
        for (n, members) in conversations(reads).into_iter().enumerate() {
            let id = format!("{part}-{}", n + 1);
            let turns = members
                .iter()
                .enumerate()
                .map(|(k, &i)| turn_of(format!("{id}_{}", k + 1), &reads[i], &contexts, f, &mut b))
                .collect();
            dialogues.push(Dialogue {
                id,
                turns,
                meta: Map::new(),
            });
        }
    }
    let name = if files.len() == 1 {
        part_name(&files[0], &files)
    } else {
        builder::name_from_path(src)
    };
    let manifest = builder::manifest("chatrag", name, "see each subset's license", opts, src);
    b.finish(manifest, dialogues)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{counts, fixture, load};
    use super::*;

    #[test]
    fn every_subset_variant_reads_into_dialogues() {
        let (r, b) = load(import, &fixture("chatrag"), &ImportOptions::default());
        // coqa 1 dialogue (2 turns), doc2dial 1 (2), inscit 1 (2), topiocqa 2 (2 + 1)
        // doc2dial's 3 chunks, topiocqa's 4 texts, inscit's 3, coqa's 1: each text once
        assert_eq!(counts(&r), (5, 9, 9, 11, 10));
        let (d, i) = b.find_turn("topiocqa-1_2").unwrap();
        assert_eq!(d.turns.len(), 2);
        assert_eq!(d.turns[i].user, "when did it go public");
        assert_eq!(
            d.turns[i].rewrite.as_deref(),
            Some("when did tesla go public")
        );
        assert_eq!(d.turns[i].tags.topic.as_deref(), Some("Tesla, Inc."));
        // a list of gold contexts
        let (d, i) = b.find_turn("inscit-1_2").unwrap();
        assert_eq!(d.turns[i].gold.len(), 2);
        // the gold by `index` into documents.json is the chunk the ctxs also hold
        let (d, i) = b.find_turn("doc2dial-1_1").unwrap();
        let gold = d.turns[i].gold[0].passage_id.clone();
        let mut found = None;
        b.dir
            .for_each_passage(|_, p| {
                if p.id == gold {
                    found = Some(p);
                }
                Ok(())
            })
            .unwrap();
        let p = found.unwrap();
        assert!(p.text.starts_with("Apply online"), "{}", p.text);
        assert_eq!(
            p.doc_id.as_deref(),
            Some("Benefits Planner: Retirement#1_0")
        );
        assert!(d.turns[1].tags.extra.contains_key("answers"));
        // document_idx is the id
        let (d, i) = b.find_turn("coqa-1_2").unwrap();
        assert_eq!(d.turns[i].gold[0].passage_id, "7");
    }

    #[test]
    fn a_history_no_sample_ended_with_starts_a_dialogue_and_parts_are_named() {
        let m = |role: &str, content: &str| Message {
            role: role.into(),
            content: content.into(),
        };
        let read = |messages: Vec<Message>| Read {
            messages,
            answers: Vec::new(),
            gold: Vec::new(),
            document: None,
            topic: None,
            rewrite: None,
            line: 1,
        };
        let reads = vec![
            read(vec![m("user", "a")]),
            read(vec![m("user", "b")]),
            read(vec![m("user", "a"), m("assistant", "x"), m("user", "a2")]),
            // a history truncated by the release: no sample ended with it
            read(vec![m("user", "zz"), m("assistant", "y"), m("user", "b2")]),
            read(vec![
                m("user", "a"),
                m("assistant", "x"),
                m("user", "a2"),
                m("assistant", "any answer"),
                m("user", "a3"),
            ]),
        ];
        assert_eq!(conversations(&reads), vec![vec![0, 2, 4], vec![1], vec![3]]);
        let files = [
            PathBuf::from("data/doqa/test_cooking.json"),
            PathBuf::from("data/doqa/test_movies.json"),
            PathBuf::from("data/coqa/dev.json"),
        ];
        assert_eq!(part_name(&files[0], &files), "doqa-cooking");
        assert_eq!(part_name(&files[2], &files), "coqa");
    }

    #[test]
    fn a_subset_alone_and_a_bad_record() {
        let opts = ImportOptions {
            domain: Some("inscit".into()),
            ..Default::default()
        };
        let (r, _) = load(import, &fixture("chatrag"), &opts);
        assert_eq!((r.dialogues, r.turns), (1, 2));
        let tmp = tempfile::tempdir().unwrap();
        let f = tmp.path().join("dev.json");
        std::fs::write(
            &f,
            "[\n{\"messages\": [{\"role\": \"user\", \"content\": \"q\"}], \"ctxs\": []},\n{\"messages\": [{\"role\": \"user\"}], \"ctxs\": []}\n]\n",
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
        assert!(e.is_user_error());
        assert!(s.contains("dev.json:3") && s.contains("content"), "{s}");
    }

    #[test]
    fn a_sample_that_skips_exchanges_continues_its_conversation() {
        // Turns without evidence have no sample: the first conversation's third exchange and
        // the second's first are missing, as in a held-out subset ChatRAG-Bench writes.
        let (r, b) = load(import, &fixture("chatrag_skips"), &ImportOptions::default());
        assert_eq!((r.dialogues, r.turns), (2, 6), "{:?}", b.dialogues);
        let users: Vec<Vec<&str>> = b
            .dialogues
            .iter()
            .map(|d| d.turns.iter().map(|t| t.user.as_str()).collect())
            .collect();
        assert_eq!(
            users,
            vec![
                vec![
                    "Who wrote Middlemarch?",
                    "Was that her real name?",
                    "Where was she born?",
                    "When did she die?"
                ],
                vec![
                    "What is the tallest mountain in Africa?",
                    "Is it a volcano?"
                ],
            ]
        );
    }
}
