//! Where the files of an MTRAG source are: conversations, each domain's retrieval tasks and
//! qrels, and its corpus, in either layout (per-domain files or the upstream repository) or a
//! mix of both. Only file names and folders are looked at; nothing is read.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::super::options::ImportOptions;
use super::super::walk;
use crate::error::Result;

/// `Some(Some(domain))` for `conversations_<domain>.jsonl`, `Some(None)` for the all-domain
/// `conversations.json[l]`, `None` for anything else.
pub(super) fn conversation_file_domain(p: &Path) -> Option<Option<String>> {
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
pub(super) struct TaskFiles {
    pub rewrite: Option<PathBuf>,
    pub lastturn: Option<PathBuf>,
    pub questions: Option<PathBuf>,
    pub qrels: Option<PathBuf>,
}

/// What was found in the source folder.
#[derive(Debug, Default)]
pub(super) struct Layout {
    pub conversations: Vec<(PathBuf, Option<String>)>,
    pub tasks: BTreeMap<String, TaskFiles>,
    pub corpora: BTreeMap<String, PathBuf>,
}

/// Finds the conversations, task files, qrels (the `--split` one, else `dev`, else `test`) and
/// corpora (passage level and unzipped first) under `src`.
pub(super) fn discover(src: &Path, opts: &ImportOptions) -> Result<Layout> {
    let files = walk::files(src, 6)?;
    let mut layout = Layout::default();
    let mut corpus_candidates: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for f in &files {
        if let Some(dom) = conversation_file_domain(f) {
            layout.conversations.push((f.clone(), dom));
            continue;
        }
        note_task_file(f, &mut layout);
        if let Some(dom) = corpus_file_domain(f) {
            corpus_candidates.entry(dom).or_default().push(f.clone());
        }
    }
    for t in layout.tasks.values_mut() {
        t.qrels = pick_qrels(t, &files, opts);
    }
    for (dom, cands) in corpus_candidates {
        if let Some(best) = best_corpus(cands) {
            layout.corpora.insert(dom, best);
        }
    }
    Ok(layout)
}

/// Records `f` as its domain's rewrite, last-turn or questions file when its name says so.
fn note_task_file(f: &Path, layout: &mut Layout) {
    let name = walk::file_name(f);
    if let Some(dom) = name.strip_suffix("_rewrite.jsonl") {
        layout.tasks.entry(dom.to_string()).or_default().rewrite = Some(f.to_path_buf());
    } else if let Some(dom) = name.strip_suffix("_lastturn.jsonl") {
        layout.tasks.entry(dom.to_string()).or_default().lastturn = Some(f.to_path_buf());
    } else if let Some(dom) = name.strip_suffix("_questions.jsonl") {
        layout.tasks.entry(dom.to_string()).or_default().questions = Some(f.to_path_buf());
    }
}

/// The domain of a corpus file: `corpus_<domain>.jsonl[.zip]`, or `<domain>.<ext>` under a
/// `corpora` folder.
fn corpus_file_domain(f: &Path) -> Option<String> {
    let name = walk::file_name(f);
    if let Some(dom) = name.strip_prefix("corpus_").and_then(|r| {
        r.strip_suffix(".jsonl")
            .or_else(|| r.strip_suffix(".jsonl.zip"))
    }) {
        return Some(dom.to_string());
    }
    if !f.components().any(|c| c.as_os_str() == "corpora") {
        return None;
    }
    let lower = name.to_ascii_lowercase();
    [".jsonl.zip", ".json.zip", ".jsonl", ".zip"]
        .into_iter()
        .find_map(|ext| lower.strip_suffix(ext).map(str::to_string))
}

/// The qrels of a task folder: `<task dir>/qrels/<split>.tsv`, else `dev.tsv`, else `test.tsv`.
fn pick_qrels(t: &TaskFiles, files: &[PathBuf], opts: &ImportOptions) -> Option<PathBuf> {
    let dir = t
        .rewrite
        .as_ref()
        .or(t.lastturn.as_ref())
        .or(t.questions.as_ref())
        .and_then(|p| p.parent())?;
    let qdir = dir.join("qrels");
    let mut tsvs: Vec<PathBuf> = files
        .iter()
        .filter(|f| f.parent() == Some(qdir.as_path()) && walk::file_name(f).ends_with(".tsv"))
        .cloned()
        .collect();
    let want = opts.split.as_deref().map(|s| format!("{s}.tsv"));
    tsvs.sort_by_key(|p| {
        let n = walk::file_name(p);
        (Some(n.clone()) != want, n != "dev.tsv", n != "test.tsv", n)
    });
    tsvs.into_iter().next()
}

/// passage_level beats document_level; unzipped beats zipped.
fn best_corpus(mut cands: Vec<PathBuf>) -> Option<PathBuf> {
    cands.sort_by_key(|p| {
        let s = p.to_string_lossy();
        (
            s.contains("document_level"),
            !s.contains("passage_level"),
            s.ends_with(".zip"),
            s.into_owned(),
        )
    });
    cands.into_iter().next()
}
