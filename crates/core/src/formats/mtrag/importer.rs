//! The MTRAG importer proper: finds the domains of a source folder, reads each domain's corpus,
//! then its conversations and tasks, and writes the native benchmark.

use std::collections::BTreeSet;
use std::path::Path;

use super::super::builder::{self, Builder, ImportReport, Origin};
use super::super::corpus::{self, CorpusOptions};
use super::super::options::ImportOptions;
use super::super::walk;
use super::conversation::{self, Conversation};
use super::source_files::{self, Layout};
use super::tasks;
use crate::error::{Error, InputError, Result};
use crate::model::Dialogue;
use crate::progress::Progress;

/// Domains of the MTRAG release, used to recognise a conversation's domain string.
const KNOWN_DOMAINS: [&str; 4] = ["clapnq", "cloud", "fiqa", "govt"];

/// True for a folder that holds MTRAG conversations.
pub(crate) fn sniff(path: &Path) -> bool {
    if !path.is_dir() {
        return false;
    }
    let Ok(files) = walk::files(path, 6) else {
        return false;
    };
    files
        .iter()
        .any(|f| source_files::conversation_file_domain(f).is_some())
}

/// Imports an MTRAG folder.
pub(crate) fn import(
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
    let layout = source_files::discover(src, opts)?;
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
    let by_domain = conversation::read_conversations(
        &layout.conversations,
        opts.domain.as_ref(),
        &known,
        &mut b,
    )?;
    if let Some(want) = &opts.domain
        && !by_domain.contains_key(want)
    {
        return Err(no_such_domain(src, want, &layout));
    }
    let mut dialogues = Vec::new();
    for (dom, convs) in by_domain {
        let mut d = import_domain(src, &dom, convs, &layout, opts, progress, &mut b)?;
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

/// `--domain` names a domain with no conversations: the error lists those found.
fn no_such_domain(src: &Path, want: &str, layout: &Layout) -> Error {
    let mut avail: BTreeSet<String> = layout.tasks.keys().cloned().collect();
    avail.extend(layout.conversations.iter().filter_map(|(_, d)| d.clone()));
    InputError::new(src, format!("no MTRAG conversations for domain `{want}`"))
        .field("--domain")
        .hint(format!(
            "domains found: {}",
            avail.into_iter().collect::<Vec<_>>().join(", ")
        ))
        .into()
}

/// One domain: its corpus first (gold ids are checked against it), then its dialogues with
/// the rewrites and gold of its tasks.
fn import_domain(
    src: &Path,
    dom: &str,
    convs: Vec<(Conversation, Origin)>,
    layout: &Layout,
    opts: &ImportOptions,
    progress: &dyn Progress,
    b: &mut Builder,
) -> Result<Vec<Dialogue>> {
    let corpus_path = match (&opts.corpus, layout.corpora.get(dom)) {
        (Some(c), _) => Some(c.clone()),
        (None, Some(c)) => Some(c.clone()),
        (None, None) => None,
    };
    match corpus_path {
        Some(c) => corpus::read_into(
            &c,
            b,
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
    let tasks = layout.tasks.get(dom).cloned().unwrap_or_default();
    if tasks.qrels.is_none() {
        b.diag.warn(format!(
            "{}: no retrieval tasks (qrels) for domain `{dom}`: its turns have no gold",
            src.display()
        ));
    }
    tasks::build_domain(dom, convs, &tasks, b)
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
