//! TREC-style benchmark folders: a topics file (`qid<TAB>query` lines, or classic SGML
//! `<top><num>..<title>..</top>`), a qrels file (`qid iter docid grade`), and optionally a
//! collection (`collection.tsv` as `id<TAB>text`, or JSON lines with `id`/`contents`). Run files
//! in the folder are not part of a benchmark and are ignored (evaluate them with `mtr eval` or
//! `mtr bench --run`). Conversational topic ids (`31_4`, `31-4`) are grouped into dialogues.

use std::path::{Path, PathBuf};

use super::builder::{self, Builder, Diag, ImportReport};
use super::corpus::{self, CorpusOptions};
use super::options::ImportOptions;
use super::{beir, judgements, walk};
use crate::error::{Error, InputError, Result};
use crate::jsonl::{self, Lines};
use crate::progress::Progress;

/// The parts of a TREC folder.
#[derive(Debug, Default)]
struct Parts {
    topics: Option<PathBuf>,
    qrels: Option<PathBuf>,
    collection: Option<PathBuf>,
}

fn is_qrels_name(n: &str) -> bool {
    n.contains("qrel")
}

fn is_topics_name(n: &str) -> bool {
    (n.contains("topic") || n.contains("queries") || n.contains("query"))
        && !n.ends_with(".json")
        && !n.ends_with(".jsonl")
}

fn is_collection_name(n: &str) -> bool {
    n.starts_with("collection")
        || n.starts_with("corpus")
        || n.starts_with("docs")
        || n.starts_with("passages")
}

fn find_parts(src: &Path, opts: &ImportOptions) -> Result<Parts> {
    let mut parts = Parts::default();
    if src.is_file() {
        parts.topics = Some(src.to_path_buf());
    } else {
        for f in walk::files(src, 1)? {
            let n = walk::file_name(&f).to_ascii_lowercase();
            if is_qrels_name(&n) {
                parts.qrels.get_or_insert(f);
            } else if is_topics_name(&n) {
                parts.topics.get_or_insert(f);
            } else if is_collection_name(&n) && corpus::is_corpus_file(&f) {
                parts.collection.get_or_insert(f);
            }
        }
        for dir in ["collection", "corpus"] {
            if parts.collection.is_none() && src.join(dir).is_dir() {
                parts.collection = Some(src.join(dir));
            }
        }
    }
    if let Some(q) = &opts.qrels {
        parts.qrels = Some(q.clone());
    }
    if let Some(c) = &opts.corpus {
        parts.collection = Some(c.clone());
    }
    Ok(parts)
}

/// True for a folder with a topics file and a qrels file.
pub(super) fn sniff(path: &Path) -> bool {
    path.is_dir()
        && find_parts(path, &ImportOptions::default())
            .is_ok_and(|p| p.topics.is_some() && p.qrels.is_some())
}

/// Reads a topics file: TSV `qid<TAB>text` or SGML `<top>` blocks.
fn read_topics(path: &Path, diag: &mut Diag) -> Result<Vec<beir::Query>> {
    let text = jsonl::read_text(path)?;
    if text.contains("<top>") {
        return read_sgml_topics(path, &text, diag);
    }
    let mut out = Vec::new();
    let mut lines = Lines::new(text.as_bytes(), path);
    while let Some(next) = lines.next_line() {
        let (no, line) = match next {
            Ok(x) => x,
            Err(Error::Input(e)) => {
                diag.problem("malformed-record", *e)?;
                continue;
            }
            Err(e) => return Err(e),
        };
        let Some((id, q)) = line.split_once('\t') else {
            diag.problem(
                "malformed-record",
                InputError::new(path, "expected `qid<TAB>query`")
                    .line(no)
                    .hint("topics files are tab-separated"),
            )?;
            continue;
        };
        out.push(beir::Query {
            id: id.trim().to_string(),
            text: q.trim().to_string(),
            line: no,
        });
    }
    Ok(out)
}

fn read_sgml_topics(path: &Path, text: &str, diag: &mut Diag) -> Result<Vec<beir::Query>> {
    let mut out = Vec::new();
    let mut rest = text;
    let mut offset = 0usize;
    while let Some(start) = rest.find("<top>") {
        let end = rest[start..]
            .find("</top>")
            .map(|e| start + e)
            .unwrap_or(rest.len());
        let block = &rest[start..end];
        let line = text[..offset + start].matches('\n').count() as u64 + 1;
        let num = tag(block, "num").map(|s| s.trim_start_matches("Number:").trim().to_string());
        let title = tag(block, "title").map(|s| s.trim_start_matches("Topic:").trim().to_string());
        match (num, title) {
            (Some(id), Some(t)) if !id.is_empty() => out.push(beir::Query { id, text: t, line }),
            _ => diag.problem(
                "malformed-record",
                InputError::new(path, "topic without <num> or <title>")
                    .line(line)
                    .field("num"),
            )?,
        }
        let adv = (end + 6).min(rest.len());
        offset += adv;
        rest = &rest[adv..];
    }
    Ok(out)
}

/// The text after `<name>` up to the next tag.
fn tag<'a>(block: &'a str, name: &str) -> Option<&'a str> {
    let open = format!("<{name}>");
    let i = block.find(&open)? + open.len();
    let rest = &block[i..];
    let end = rest.find('<').unwrap_or(rest.len());
    Some(rest[..end].trim())
}

pub(super) fn import(
    src: &Path,
    out: &Path,
    opts: &ImportOptions,
    progress: &dyn Progress,
) -> Result<ImportReport> {
    let parts = find_parts(src, opts)?;
    let Some(topics) = parts.topics else {
        return Err(InputError::new(
            src,
            "no topics file (`topics.tsv`, `queries.tsv` or SGML topics) found",
        )
        .hint("a TREC benchmark needs its queries; a run alone is evaluated with `mtr eval`")
        .into());
    };
    let mut b = Builder::create(out, opts.lenient)?;
    match &parts.collection {
        Some(c) => corpus::read_into(c, &mut b, CorpusOptions::default(), progress)?,
        None => b.diag.warn(format!(
            "{}: no collection found: the benchmark has an empty corpus",
            src.display()
        )),
    }
    let queries = read_topics(&topics, &mut b.diag)?;
    let (judgements, qrels_path) = match &parts.qrels {
        Some(q) => (judgements::read(q, &mut b.diag)?, q.clone()),
        None => {
            b.diag.warn(format!(
                "{}: no qrels file: the turns have no gold",
                src.display()
            ));
            (Vec::new(), PathBuf::new())
        }
    };
    let dialogues =
        beir::dialogues_from_queries(queries, &topics, judgements, &qrels_path, opts, &mut b)?;
    let manifest = builder::manifest("trec", builder::name_from_path(src), "", opts, src);
    b.finish(manifest, dialogues)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{counts, fixture, load};
    use super::*;

    #[test]
    fn sgml_topics() {
        let text = "<top>\n<num> Number: 301\n<title> Topic: international crime\n<desc> x\n</top>\n\n<top>\n<num> 302\n<title> poliomyelitis\n</top>\n";
        let q = read_sgml_topics(Path::new("t.txt"), text, &mut Diag::new(false)).unwrap();
        assert_eq!(q.len(), 2);
        assert_eq!(
            (q[0].id.as_str(), q[0].text.as_str(), q[0].line),
            ("301", "international crime", 1)
        );
        assert_eq!((q[1].id.as_str(), q[1].line), ("302", 7));
    }

    #[test]
    fn fixture_with_crlf_topics_and_collection() {
        let (r, b) = load(import, &fixture("trec"), &ImportOptions::default());
        assert_eq!(counts(&r), (2, 4, 4, 4, 5));
        assert_eq!(
            b.dialogues[1].turns[1].user,
            "how does it differ from a traditional database"
        );
        assert!(sniff(&fixture("trec")));
    }
}
