//! IBM MTRAG: human multi-turn RAG conversations with BEIR-style retrieval tasks.
//!
//! Two layouts are accepted and may be mixed:
//! - per domain: `conversations_<domain>.jsonl`, `corpus_<domain>.jsonl`,
//!   `tasks_<domain>/<domain>_{questions,lastturn,rewrite}.jsonl` + `tasks_<domain>/qrels/dev.tsv`;
//! - upstream: `conversations/conversations.json` (one JSON array, all domains),
//!   `.../retrieval_tasks/<domain>/<domain>_*.jsonl` + `qrels/dev.tsv`, and
//!   `corpora/[passage_level/]<domain>.jsonl.zip` (read streaming).
//!
//! Mapping (checked against the real data): the task id `<conversation_id><::><N>` is the N-th
//! *user* message of the conversation (1-based; agent messages are not counted), so every user
//! message becomes a turn with that id, and the agent message that follows is its `answer`.
//! Tasks exist only for answerable and partially answerable turns; unanswerable and
//! conversational turns are kept, tagged, and have no gold. Gold comes from the qrels file,
//! the human rewrite from `*_rewrite.jsonl`, and the enrichments become tags: `Question Type`
//! -> `question_type` (several values joined with `,`), `Multi-Turn` -> `multi_turn_type`,
//! `Answerability` -> `answerability` (lower case), others -> snake_case extra tags; every turn
//! also gets a `domain` tag.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

use super::builder::{self, Builder, ImportReport, Origin};
use super::corpus::{self, CorpusOptions};
use super::json_doc::JsonDoc;
use super::{ImportOptions, judgements, walk};
use crate::error::{InputError, Result};
use crate::jsonl;
use crate::model::{Dialogue, Gold, Tags, Turn};
use crate::progress::Progress;

/// The separator of conversation id and turn number in MTRAG task ids.
pub const TASK_SEP: &str = "<::>";

/// Domains of the MTRAG release, used to recognise a conversation's domain string.
const KNOWN_DOMAINS: [&str; 4] = ["clapnq", "cloud", "fiqa", "govt"];

/// True for a folder that holds MTRAG conversations.
pub fn sniff(path: &Path) -> bool {
    if !path.is_dir() {
        return false;
    }
    let Ok(files) = walk::files(path, 6) else {
        return false;
    };
    files.iter().any(|f| conversation_file_domain(f).is_some())
}

/// `Some(Some(domain))` for `conversations_<domain>.jsonl`, `Some(None)` for the all-domain
/// `conversations.json[l]`, `None` for anything else.
fn conversation_file_domain(p: &Path) -> Option<Option<String>> {
    let name = walk::file_name(p);
    if name == "conversations.json" || name == "conversations.jsonl" {
        return Some(None);
    }
    let rest = name.strip_prefix("conversations_")?;
    let dom = rest
        .strip_suffix(".jsonl")
        .or_else(|| rest.strip_suffix(".json"))?;
    Some(Some(dom.to_string()))
}

/// The files of one domain's retrieval tasks.
#[derive(Debug, Default, Clone)]
struct TaskFiles {
    rewrite: Option<PathBuf>,
    lastturn: Option<PathBuf>,
    questions: Option<PathBuf>,
    qrels: Option<PathBuf>,
}

/// What was found in the source folder.
#[derive(Debug, Default)]
struct Layout {
    conversations: Vec<(PathBuf, Option<String>)>,
    tasks: BTreeMap<String, TaskFiles>,
    corpora: BTreeMap<String, PathBuf>,
}

fn discover(src: &Path, opts: &ImportOptions) -> Result<Layout> {
    let files = walk::files(src, 6)?;
    let mut layout = Layout::default();
    let mut corpus_candidates: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for f in &files {
        let name = walk::file_name(f);
        if let Some(dom) = conversation_file_domain(f) {
            layout.conversations.push((f.clone(), dom));
            continue;
        }
        for (suffix, kind) in [
            ("_rewrite.jsonl", 0),
            ("_lastturn.jsonl", 1),
            ("_questions.jsonl", 2),
        ] {
            if let Some(dom) = name.strip_suffix(suffix) {
                let t = layout.tasks.entry(dom.to_string()).or_default();
                match kind {
                    0 => t.rewrite = Some(f.clone()),
                    1 => t.lastturn = Some(f.clone()),
                    _ => t.questions = Some(f.clone()),
                }
            }
        }
        if let Some(dom) = name.strip_prefix("corpus_").and_then(|r| {
            r.strip_suffix(".jsonl")
                .or_else(|| r.strip_suffix(".jsonl.zip"))
        }) {
            corpus_candidates
                .entry(dom.to_string())
                .or_default()
                .push(f.clone());
        } else if f.components().any(|c| c.as_os_str() == "corpora") {
            let lower = name.to_ascii_lowercase();
            for ext in [".jsonl.zip", ".json.zip", ".jsonl", ".zip"] {
                if let Some(dom) = lower.strip_suffix(ext) {
                    corpus_candidates
                        .entry(dom.to_string())
                        .or_default()
                        .push(f.clone());
                    break;
                }
            }
        }
    }
    // qrels: `<task dir>/qrels/<split>.tsv`
    for t in layout.tasks.values_mut() {
        let Some(dir) = t
            .rewrite
            .as_ref()
            .or(t.lastturn.as_ref())
            .or(t.questions.as_ref())
            .and_then(|p| p.parent())
        else {
            continue;
        };
        let qdir = dir.join("qrels");
        let mut tsvs: Vec<PathBuf> = files
            .iter()
            .filter(|f| f.parent() == Some(qdir.as_path()) && walk::file_name(f).ends_with(".tsv"))
            .cloned()
            .collect();
        tsvs.sort_by_key(|p| {
            let n = walk::file_name(p);
            let want = opts.split.as_deref().map(|s| format!("{s}.tsv"));
            (Some(n.clone()) != want, n != "dev.tsv", n != "test.tsv", n)
        });
        t.qrels = tsvs.into_iter().next();
    }
    for (dom, mut cands) in corpus_candidates {
        // passage_level beats document_level; unzipped beats zipped.
        cands.sort_by_key(|p| {
            let s = p.to_string_lossy();
            (
                s.contains("document_level"),
                !s.contains("passage_level"),
                s.ends_with(".zip"),
                s.into_owned(),
            )
        });
        if let Some(best) = cands.into_iter().next() {
            layout.corpora.insert(dom, best);
        }
    }
    Ok(layout)
}

#[derive(Debug, Deserialize)]
struct Conversation {
    conversation_id: String,
    #[serde(default)]
    domain: Option<String>,
    messages: Vec<Message>,
    #[serde(flatten)]
    other: Map<String, Value>,
}

#[derive(Debug, Deserialize)]
struct Message {
    speaker: String,
    text: String,
    #[serde(default)]
    enrichments: Option<Map<String, Value>>,
}

/// A BEIR query line of a task file.
#[derive(Debug, Deserialize)]
struct TaskQuery {
    #[serde(rename = "_id")]
    id: String,
    text: String,
}

/// The domain a conversation belongs to: the file's, else a known domain named in its
/// `domain` string (`mt-rag-clapnq-elser-512-100-20240503` -> `clapnq`).
fn conversation_domain(
    file_domain: &Option<String>,
    conv: &Conversation,
    known: &BTreeSet<String>,
) -> String {
    if let Some(d) = file_domain {
        return d.clone();
    }
    let raw = conv.domain.clone().unwrap_or_default();
    let lower = raw.to_ascii_lowercase();
    for tok in lower.split(|c: char| !c.is_ascii_alphanumeric()) {
        if known.contains(tok) {
            return tok.to_string();
        }
    }
    if raw.is_empty() {
        "unknown".into()
    } else {
        raw
    }
}

/// Imports an MTRAG folder.
pub fn import(
    src: &Path,
    out: &Path,
    opts: &ImportOptions,
    progress: &dyn Progress,
) -> Result<ImportReport> {
    if !src.is_dir() {
        return Err(InputError::new(src, "an MTRAG source must be a folder")
            .hint("point at the folder holding conversations, retrieval tasks and corpora")
            .into());
    }
    let layout = discover(src, opts)?;
    if layout.conversations.is_empty() {
        return Err(InputError::new(src, "no MTRAG conversations found")
            .hint("expected conversations_<domain>.jsonl or conversations/conversations.json")
            .into());
    }
    let mut known: BTreeSet<String> = KNOWN_DOMAINS.iter().map(|s| s.to_string()).collect();
    known.extend(layout.tasks.keys().cloned());
    known.extend(layout.corpora.keys().cloned());
    known.extend(layout.conversations.iter().filter_map(|(_, d)| d.clone()));

    let mut b = Builder::create(out, opts.lenient)?;

    // Conversations, grouped by domain, in file order.
    let mut by_domain: BTreeMap<String, Vec<(Conversation, Origin)>> = BTreeMap::new();
    // conversation id -> where it was first seen, so a duplicate names its own input line
    let mut seen: HashMap<String, (PathBuf, u64)> = HashMap::new();
    for (path, file_dom) in &layout.conversations {
        if let (Some(want), Some(fd)) = (&opts.domain, file_dom)
            && want != fd
        {
            continue;
        }
        let doc = JsonDoc::read(path)?;
        for rec in doc.array_records()? {
            let conv: Conversation = match doc.parse(&rec) {
                Ok(c) => c,
                Err(e) => {
                    b.diag.problem("malformed-record", e)?;
                    continue;
                }
            };
            let dom = conversation_domain(file_dom, &conv, &known);
            if opts.domain.as_ref().is_some_and(|w| *w != dom) {
                continue;
            }
            if let Some((first, first_line)) = seen.get(&conv.conversation_id) {
                b.diag.problem(
                    "duplicate-dialogue",
                    InputError::new(
                        path,
                        format!(
                            "duplicate conversation `{}` (first in {} line {first_line})",
                            conv.conversation_id,
                            first
                                .file_name()
                                .map(|n| n.to_string_lossy().into_owned())
                                .unwrap_or_default()
                        ),
                    )
                    .line(rec.line)
                    .field("conversation_id"),
                )?;
                continue;
            }
            seen.insert(conv.conversation_id.clone(), (path.clone(), rec.line));
            by_domain
                .entry(dom)
                .or_default()
                .push((conv, Origin::new(path, Some(rec.line), "messages")));
        }
    }
    if let Some(want) = &opts.domain
        && !by_domain.contains_key(want)
    {
        let mut avail: BTreeSet<String> = layout.tasks.keys().cloned().collect();
        avail.extend(layout.conversations.iter().filter_map(|(_, d)| d.clone()));
        return Err(
            InputError::new(src, format!("no MTRAG conversations for domain `{want}`"))
                .field("--domain")
                .hint(format!(
                    "domains found: {}",
                    avail.into_iter().collect::<Vec<_>>().join(", ")
                ))
                .into(),
        );
    }

    let mut dialogues = Vec::new();
    for (dom, convs) in by_domain {
        // Corpus first: gold ids are checked against it.
        let corpus_path = match (&opts.corpus, layout.corpora.get(&dom)) {
            (Some(c), _) => Some(c.clone()),
            (None, Some(c)) => Some(c.clone()),
            (None, None) => None,
        };
        match corpus_path {
            Some(c) => corpus::read_into(
                &c,
                &mut b,
                CorpusOptions {
                    derive_doc_id: Some(passage_doc_id),
                },
                progress,
            )?,
            None => b.diag.problem(
                "missing-corpus",
                InputError::new(src, format!("no corpus for domain `{dom}`")).hint(format!(
                    "expected corpus_{dom}.jsonl or corpora/{dom}.jsonl.zip, or give --corpus"
                )),
            )?,
        }
        let tasks = layout.tasks.get(&dom).cloned().unwrap_or_default();
        if tasks.qrels.is_none() {
            b.diag.warn(format!(
                "{}: no retrieval tasks (qrels) for domain `{dom}`: its turns have no gold",
                src.display()
            ));
        }
        let mut d = build_domain(&dom, convs, &tasks, &mut b)?;
        dialogues.append(&mut d);
    }

    let name = match &opts.domain {
        Some(d) => format!("mtrag-{d}"),
        None => "mtrag".into(),
    };
    let mut manifest = builder::manifest("mtrag", name, "Apache-2.0", opts, src);
    manifest.description = "IBM MTRAG human multi-turn RAG conversations (retrieval tasks)".into();
    b.finish(manifest, dialogues)
}

/// The source document of an MTRAG passage id: `822086267_6698-7277-0-579` -> `822086267`,
/// `1aacb62724d27d6f-1676-3870` -> `1aacb62724d27d6f`.
pub fn passage_doc_id(id: &str) -> Option<String> {
    for (i, c) in id.char_indices() {
        if c != '_' && c != '-' || i == 0 {
            continue;
        }
        let rest = &id[i + 1..];
        let parts: Vec<&str> = rest.split('-').collect();
        if (parts.len() == 2 || parts.len() == 4)
            && parts
                .iter()
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        {
            return Some(id[..i].to_string());
        }
    }
    None
}

/// One qrels judgement with its line.
struct Judgement {
    qid: String,
    pid: String,
    grade: i32,
    line: u64,
}

/// Reads a BEIR queries JSONL into `id -> (text, line)`.
fn read_task_queries(path: &Path, b: &mut Builder) -> Result<HashMap<String, (String, u64)>> {
    let mut out = HashMap::new();
    for line in jsonl::records::<TaskQuery>(path)? {
        match line? {
            jsonl::Line::Record(no, q) => {
                if out
                    .insert(q.id.clone(), (strip_user_prefix(&q.text), no))
                    .is_some()
                {
                    b.diag.problem(
                        "duplicate-task",
                        InputError::new(path, format!("duplicate task id `{}`", q.id))
                            .line(no)
                            .field("_id"),
                    )?;
                }
            }
            jsonl::Line::Malformed(e) => b.diag.problem("malformed-record", e)?,
        }
    }
    Ok(out)
}

/// `|user|: question` -> `question` (the MTRAG task files prefix every utterance).
fn strip_user_prefix(s: &str) -> String {
    let t = s.trim();
    t.strip_prefix("|user|:")
        .map(str::trim)
        .unwrap_or(t)
        .to_string()
}

fn build_domain(
    dom: &str,
    convs: Vec<(Conversation, Origin)>,
    tasks: &TaskFiles,
    b: &mut Builder,
) -> Result<Vec<Dialogue>> {
    let rewrites = match &tasks.rewrite {
        Some(p) => read_task_queries(p, b)?,
        None => HashMap::new(),
    };
    let lastturns = match &tasks.lastturn {
        Some(p) => read_task_queries(p, b)?,
        None => HashMap::new(),
    };
    let judgements: Vec<Judgement> = match &tasks.qrels {
        Some(p) => judgements::read(p, &mut b.diag)?
            .into_iter()
            .map(|(qid, pid, grade, line)| Judgement {
                qid,
                pid,
                grade,
                line,
            })
            .collect(),
        None => Vec::new(),
    };

    let mut dialogues = Vec::with_capacity(convs.len());
    let mut turn_ids: HashSet<String> = HashSet::new();
    for (conv, origin) in convs {
        let mut turns: Vec<Turn> = Vec::new();
        let mut n = 0usize;
        for (i, m) in conv.messages.iter().enumerate() {
            match m.speaker.to_ascii_lowercase().as_str() {
                "user" => {
                    n += 1;
                    let id = format!("{}{TASK_SEP}{n}", conv.conversation_id);
                    let mut tags = enrichment_tags(m.enrichments.as_ref());
                    tags.extra.insert("domain".into(), Value::String(dom.to_string()));
                    turns.push(Turn {
                        id: id.clone(),
                        user: m.text.trim().to_string(),
                        rewrite: rewrites.get(&id).map(|(t, _)| t.clone()).filter(|t| !t.is_empty()),
                        answer: None,
                        gold: Vec::new(),
                        tags,
                    });
                    turn_ids.insert(id);
                }
                "agent" | "assistant" | "system" => {
                    match turns.last_mut() {
                        Some(t) if t.answer.is_none() => t.answer = Some(m.text.trim().to_string()),
                        _ => b.diag.warn(format!(
                            "{}: conversation `{}` message {i}: an agent message without a preceding user question was ignored",
                            origin.file.display(),
                            conv.conversation_id
                        )),
                    }
                }
                other => {
                    let mut e = InputError::new(&origin.file, format!("unknown speaker `{other}` (expected user or agent)"))
                        .field(format!("messages[{i}].speaker"));
                    if let Some(l) = origin.line {
                        e = e.line(l);
                    }
                    b.diag.problem("malformed-record", e)?;
                }
            }
        }
        let mut meta = Map::new();
        for (k, v) in &conv.other {
            if matches!(v, Value::String(_) | Value::Number(_) | Value::Bool(_)) {
                meta.insert(k.clone(), v.clone());
            }
        }
        if let Some(d) = &conv.domain {
            meta.insert("domain".into(), Value::String(d.clone()));
        }
        dialogues.push(Dialogue {
            id: conv.conversation_id.clone(),
            turns,
            meta,
        });
    }

    // Gold from the qrels, in file order.
    let qrels_path = tasks.qrels.clone().unwrap_or_default();
    let mut gold: HashMap<String, Vec<Gold>> = HashMap::new();
    for j in judgements {
        if !turn_ids.contains(&j.qid) {
            b.diag.problem(
                "unmatched-qrels",
                InputError::new(
                    &qrels_path,
                    format!(
                        "query `{}` matches no turn of the {dom} conversations",
                        j.qid
                    ),
                )
                .line(j.line)
                .field("query-id")
                .hint("task ids are `<conversation_id><::><N>` where N counts the user messages"),
            )?;
            continue;
        }
        b.gold_origin(
            &j.qid,
            &j.pid,
            Origin::new(&qrels_path, Some(j.line), "corpus-id"),
        );
        gold.entry(j.qid).or_default().push(Gold {
            passage_id: j.pid,
            grade: j.grade,
        });
    }
    let mut mismatches = 0usize;
    let mut first_mismatch = None;
    for d in &mut dialogues {
        for t in &mut d.turns {
            if let Some(g) = gold.remove(&t.id) {
                t.gold = g;
            }
            if let Some((text, line)) = lastturns.get(&t.id)
                && normalize(text) != normalize(&t.user)
            {
                mismatches += 1;
                first_mismatch.get_or_insert((t.id.clone(), *line));
            }
        }
    }
    if let (Some((id, line)), Some(p)) = (first_mismatch, &tasks.lastturn) {
        b.diag.warn(format!(
            "{}:{line}: {mismatches} task text(s) differ from the conversation's user message (first: `{id}`); the conversation's text is used",
            p.display()
        ));
    }
    for (path, map, what) in [
        (&tasks.rewrite, &rewrites, "rewrite"),
        (&tasks.lastturn, &lastturns, "last-turn"),
    ] {
        let Some(path) = path else { continue };
        let mut unmatched: Vec<(&String, u64)> = map
            .iter()
            .filter(|(id, _)| !turn_ids.contains(*id))
            .map(|(id, (_, l))| (id, *l))
            .collect();
        unmatched.sort_by_key(|(_, l)| *l);
        for (id, line) in unmatched {
            b.diag.problem(
                "unmatched-task",
                InputError::new(
                    path,
                    format!("{what} task `{id}` matches no turn of the {dom} conversations"),
                )
                .line(line)
                .field("_id"),
            )?;
        }
    }
    Ok(dialogues)
}

fn normalize(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// MTRAG enrichments -> tags.
fn enrichment_tags(enrichments: Option<&Map<String, Value>>) -> Tags {
    let mut tags = Tags::default();
    let Some(e) = enrichments else { return tags };
    for (k, v) in e {
        let values: Vec<String> = match v {
            Value::Array(a) => a
                .iter()
                .filter_map(|x| x.as_str().map(str::trim).map(String::from))
                .filter(|s| !s.is_empty())
                .collect(),
            Value::String(s) if !s.trim().is_empty() => vec![s.trim().to_string()],
            _ => Vec::new(),
        };
        if values.is_empty() {
            continue;
        }
        let joined = values.join(",");
        match k.as_str() {
            "Question Type" => tags.question_type = Some(joined),
            "Multi-Turn" => tags.multi_turn_type = Some(joined),
            "Answerability" => tags.answerability = Some(joined.to_lowercase()),
            other => {
                tags.extra.insert(snake_case(other), Value::String(joined));
            }
        }
    }
    tags
}

fn snake_case(s: &str) -> String {
    let mut out = String::new();
    for c in s.trim().chars() {
        if c.is_alphanumeric() {
            out.extend(c.to_lowercase());
        } else if !out.ends_with('_') && !out.is_empty() {
            out.push('_');
        }
    }
    out.trim_end_matches('_').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doc_ids_of_real_passage_ids() {
        assert_eq!(
            passage_doc_id("822086267_6698-7277-0-579").as_deref(),
            Some("822086267")
        );
        assert_eq!(
            passage_doc_id("1aacb62724d27d6f-1676-3870").as_deref(),
            Some("1aacb62724d27d6f")
        );
        assert_eq!(passage_doc_id("plain"), None);
    }

    #[test]
    fn enrichments_become_tags() {
        let e: Map<String, Value> = serde_json::from_str(
            r#"{"Question Type":["Factoid","Summarization"],"Multi-Turn":["N/A"],"Answerability":["UNANSWERABLE"],"Standalone Type":["Non-standalone"]}"#,
        )
        .unwrap();
        let t = enrichment_tags(Some(&e));
        assert_eq!(t.question_type.as_deref(), Some("Factoid,Summarization"));
        assert_eq!(t.multi_turn_type.as_deref(), Some("N/A"));
        assert_eq!(t.answerability.as_deref(), Some("unanswerable"));
        assert_eq!(t.get("standalone_type").as_deref(), Some("Non-standalone"));
    }

    #[test]
    fn rewrite_prefix_is_stripped() {
        assert_eq!(strip_user_prefix("|user|: What is X?"), "What is X?");
        assert_eq!(strip_user_prefix("plain"), "plain");
    }

    fn shared() -> Option<PathBuf> {
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/mtrag");
        if p.is_dir() {
            Some(p)
        } else {
            eprintln!("skipping: {} absent", p.display());
            None
        }
    }

    /// The source qrels of a domain, exactly as written.
    fn source_qrels(src: &Path, dom: &str) -> crate::model::Qrels {
        crate::trec::read_qrels(src.join(format!("tasks_{dom}/qrels/dev.tsv"))).unwrap()
    }

    #[test]
    fn real_clapnq_import_matches_the_source() {
        let Some(src) = shared() else { return };
        let tmp = tempfile::tempdir().unwrap();
        let opts = ImportOptions {
            domain: Some("clapnq".into()),
            ..Default::default()
        };
        let r = import(
            &src,
            &tmp.path().join("b"),
            &opts,
            &crate::progress::NoProgress,
        )
        .unwrap();
        assert_eq!(
            (
                r.dialogues,
                r.turns,
                r.judged_turns,
                r.passages,
                r.qrels_pairs
            ),
            (29, 224, 208, 6315, 578)
        );
        assert_eq!(r.warning_count, 0, "{:?}", r.warnings);
        let dir = crate::BenchmarkDir::open(tmp.path().join("b")).unwrap();
        assert_eq!(dir.qrels().unwrap(), source_qrels(&src, "clapnq"));
        let b = dir.load().unwrap();
        assert_eq!(b.manifest.language, "en");
        // Turn 2 of the first conversation: the 2nd user message, its rewrite and its answer.
        let (d, i) = b
            .find_turn("dd6b6ffd177f2b311abe676261279d2f<::>2")
            .unwrap();
        let t = &d.turns[i];
        assert_eq!(t.user, "Do the Arizona Cardinals play outside the US?");
        assert_eq!(
            t.rewrite.as_deref(),
            Some("Where do the Arizona Cardinals play, regardless of location, this week?")
        );
        assert!(
            t.answer
                .as_deref()
                .unwrap()
                .starts_with("The Arizona Cardinals do play outside the United States.")
        );
        assert_eq!(t.tags.multi_turn_type.as_deref(), Some("Clarification"));
        assert_eq!(t.tags.get("domain").as_deref(), Some("clapnq"));
        // Turn 1 is unanswerable: kept, tagged, no gold, no task.
        let t1 = &d.turns[0];
        assert!(t1.is_unanswerable() && t1.gold.is_empty() && t1.rewrite.is_none());
        let unanswerable = b
            .dialogues
            .iter()
            .flat_map(|d| &d.turns)
            .filter(|t| t.is_unanswerable())
            .count();
        assert_eq!(unanswerable, 16);
        assert!(
            crate::validate::validate(&dir, &Default::default())
                .unwrap()
                .is_ok()
        );
    }

    #[test]
    fn real_all_domains_import() {
        let Some(src) = shared() else { return };
        let tmp = tempfile::tempdir().unwrap();
        let r = import(
            &src,
            &tmp.path().join("b"),
            &ImportOptions::default(),
            &crate::progress::NoProgress,
        )
        .unwrap();
        assert_eq!(
            (r.dialogues, r.turns, r.judged_turns, r.passages),
            (57, 438, 409, 6315 + 833)
        );
        let dir = crate::BenchmarkDir::open(tmp.path().join("b")).unwrap();
        let mut want = source_qrels(&src, "clapnq");
        want.extend(source_qrels(&src, "govt"));
        assert_eq!(dir.qrels().unwrap(), want);
        let b = dir.load().unwrap();
        let govt = b
            .dialogues
            .iter()
            .flat_map(|d| &d.turns)
            .filter(|t| t.tags.get("domain").as_deref() == Some("govt"))
            .count();
        assert_eq!(govt, 214);
    }

    #[test]
    fn upstream_layout_with_zipped_corpus() {
        use std::io::Write;
        let Some(src) = shared() else { return };
        let tmp = tempfile::tempdir().unwrap();
        let up = tmp.path().join("mt-rag-benchmark");
        // conversations/conversations.json: one JSON array of all domains' conversations.
        let mut convs = Vec::new();
        for dom in ["clapnq", "govt"] {
            for l in std::fs::read_to_string(src.join(format!("conversations_{dom}.jsonl")))
                .unwrap()
                .lines()
            {
                convs.push(serde_json::from_str::<Value>(l).unwrap());
            }
        }
        std::fs::create_dir_all(up.join("conversations")).unwrap();
        std::fs::write(
            up.join("conversations/conversations.json"),
            serde_json::to_string_pretty(&convs).unwrap(),
        )
        .unwrap();
        for dom in ["clapnq", "govt"] {
            let tdir = up.join(format!("mtrag-human/retrieval_tasks/{dom}"));
            std::fs::create_dir_all(tdir.join("qrels")).unwrap();
            for v in ["questions", "lastturn", "rewrite"] {
                std::fs::copy(
                    src.join(format!("tasks_{dom}/{dom}_{v}.jsonl")),
                    tdir.join(format!("{dom}_{v}.jsonl")),
                )
                .unwrap();
            }
            std::fs::copy(
                src.join(format!("tasks_{dom}/qrels/dev.tsv")),
                tdir.join("qrels/dev.tsv"),
            )
            .unwrap();
            let cdir = up.join("corpora/passage_level");
            std::fs::create_dir_all(&cdir).unwrap();
            let f = std::fs::File::create(cdir.join(format!("{dom}.jsonl.zip"))).unwrap();
            let mut z = zip::ZipWriter::new(f);
            z.start_file(
                format!("{dom}.jsonl"),
                zip::write::SimpleFileOptions::default(),
            )
            .unwrap();
            z.write_all(&std::fs::read(src.join(format!("corpus_{dom}.jsonl"))).unwrap())
                .unwrap();
            z.finish().unwrap();
        }
        assert!(sniff(&up));
        let opts = ImportOptions {
            domain: Some("govt".into()),
            ..Default::default()
        };
        let r = import(
            &up,
            &tmp.path().join("b"),
            &opts,
            &crate::progress::NoProgress,
        )
        .unwrap();
        assert_eq!(
            (r.dialogues, r.turns, r.judged_turns, r.passages),
            (28, 214, 201, 833)
        );
        assert_eq!(
            crate::BenchmarkDir::open(tmp.path().join("b"))
                .unwrap()
                .qrels()
                .unwrap(),
            source_qrels(&src, "govt")
        );
        let e = import(
            &up,
            &tmp.path().join("c"),
            &ImportOptions {
                domain: Some("fiqa".into()),
                ..Default::default()
            },
            &crate::progress::NoProgress,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("fiqa") && e.contains("clapnq"), "{e}");
    }

    #[test]
    fn beir_export_roundtrips_real_qrels() {
        let Some(src) = shared() else { return };
        let tmp = tempfile::tempdir().unwrap();
        let opts = ImportOptions {
            domain: Some("clapnq".into()),
            ..Default::default()
        };
        import(
            &src,
            &tmp.path().join("b"),
            &opts,
            &crate::progress::NoProgress,
        )
        .unwrap();
        let dir = crate::BenchmarkDir::open(tmp.path().join("b")).unwrap();
        super::super::export::export_beir(&dir, &tmp.path().join("beir"), Default::default())
            .unwrap();
        // The exported qrels file equals the source's judgements exactly.
        assert_eq!(
            crate::trec::read_qrels(tmp.path().join("beir/qrels/test.tsv")).unwrap(),
            source_qrels(&src, "clapnq")
        );
        // And importing the export gives back the same benchmark.
        let r = super::super::beir::import(
            &tmp.path().join("beir"),
            &tmp.path().join("b2"),
            &ImportOptions::default(),
            &crate::progress::NoProgress,
        )
        .unwrap();
        assert_eq!(
            (r.dialogues, r.turns, r.judged_turns, r.passages),
            (29, 224, 208, 6315)
        );
        let again = crate::BenchmarkDir::open(tmp.path().join("b2")).unwrap();
        assert_eq!(again.qrels().unwrap(), source_qrels(&src, "clapnq"));
        assert_eq!(
            std::fs::read(again.corpus_path()).unwrap(),
            std::fs::read(dir.corpus_path()).unwrap(),
            "corpus round-trips byte for byte"
        );
    }

    #[test]
    fn mini_fixture_maps_turn_numbers_to_user_messages() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/formats/mtrag");
        let tmp = tempfile::tempdir().unwrap();
        let r = import(
            &src,
            &tmp.path().join("b"),
            &ImportOptions::default(),
            &crate::progress::NoProgress,
        )
        .unwrap();
        assert_eq!(
            (
                r.dialogues,
                r.turns,
                r.judged_turns,
                r.passages,
                r.qrels_pairs
            ),
            (2, 5, 3, 4, 4)
        );
        let b = crate::BenchmarkDir::open(tmp.path().join("b"))
            .unwrap()
            .load()
            .unwrap();
        let t = &b.dialogues[0].turns[2];
        assert_eq!(t.id, "aaa111<::>3");
        assert_eq!(t.user, "How many teams are in the NFL?");
        assert_eq!(t.answer.as_deref(), Some("There are 32 teams in the NFL."));
        assert_eq!(t.tags.answerability.as_deref(), Some("partial"));
        assert_eq!(
            b.dialogues[1].turns[1].tags.answerability.as_deref(),
            Some("conversational")
        );
        assert_eq!(
            b.dialogues[0].turns[1].rewrite.as_deref(),
            Some("Do the Arizona Cardinals play games outside the United States?")
        );
    }

    fn copy_dir(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let p = e.unwrap().path();
            let dst = to.join(p.file_name().unwrap());
            if p.is_dir() {
                copy_dir(&p, &dst);
            } else {
                std::fs::copy(&p, &dst).unwrap();
            }
        }
    }

    #[test]
    fn duplicate_conversation_names_its_input_line_and_the_manifest_no_local_path() {
        let fixture =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/formats/mtrag");
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("mtrag-src");
        copy_dir(&fixture, &src);
        // the manifest records the source's name, not where it sits on this machine
        let out = tmp.path().join("ok");
        import(
            &src,
            &out,
            &ImportOptions::default(),
            &crate::progress::NoProgress,
        )
        .unwrap();
        let manifest = std::fs::read_to_string(out.join("benchmark.toml")).unwrap();
        let tmp_path = tmp.path().display().to_string();
        assert!(!manifest.contains(&tmp_path), "{manifest}");
        assert!(manifest.contains("source = \"mtrag-src\""), "{manifest}");

        let conv = src.join("conversations_mini.jsonl");
        let text = std::fs::read_to_string(&conv).unwrap();
        let first = text.lines().next().unwrap().to_string();
        std::fs::write(&conv, format!("{}\n{first}\n", text.trim_end())).unwrap();
        let out = tmp.path().join("dup");
        let e = import(
            &src,
            &out,
            &ImportOptions::default(),
            &crate::progress::NoProgress,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("conversations_mini.jsonl:3") && e.contains("conversation_id"),
            "{e}"
        );
        assert!(e.contains("duplicate conversation `aaa111`"), "{e}");
        assert!(!out.join("dialogues.jsonl").exists());
    }

    #[test]
    fn real_runs_match_the_imported_turn_ids() {
        let Some(src) = shared() else { return };
        let tmp = tempfile::tempdir().unwrap();
        let opts = ImportOptions {
            domain: Some("clapnq".into()),
            ..Default::default()
        };
        import(
            &src,
            &tmp.path().join("b"),
            &opts,
            &crate::progress::NoProgress,
        )
        .unwrap();
        let qrels = crate::BenchmarkDir::open(tmp.path().join("b"))
            .unwrap()
            .qrels()
            .unwrap();
        let mut runs = 0;
        for f in std::fs::read_dir(src.join("runs_clapnq")).unwrap() {
            let run = super::super::runs::read_run_any(&f.unwrap().path()).unwrap();
            assert!(run.len() >= 207);
            assert!(
                run.keys().all(|q| qrels.contains_key(q)),
                "every run task is a judged turn"
            );
            runs += 1;
        }
        assert_eq!(runs, 12);
    }
}
