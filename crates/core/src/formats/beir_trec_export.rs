//! Export of a native benchmark to formats other tools read: BEIR (`corpus.jsonl`,
//! `queries.jsonl`, `qrels/test.tsv`) and TREC (`topics.tsv`, `qrels.txt`, `collection.tsv`).
//! The corpus is streamed; every file is written atomically. Every turn becomes one query;
//! which text stands for it is chosen by [`QueryField`].

use std::io::Write;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::atomic::{AtomicFile, StagedDir};
use crate::benchmark::BenchmarkDir;
use crate::error::{Error, Result};
use crate::jsonl::JsonlWriter;
use crate::model::{Dialogue, Qrels};

/// The text that stands for a turn in an exported query file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum QueryField {
    /// The user's question as asked.
    #[default]
    Last,
    /// The standalone rewrite where there is one, else the question.
    Rewrite,
    /// Every user question so far, oldest first (MTRAG's `questions` variant).
    Full,
}

impl FromStr for QueryField {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "last" | "lastturn" => Ok(QueryField::Last),
            "rewrite" => Ok(QueryField::Rewrite),
            "full" | "questions" => Ok(QueryField::Full),
            _ => Err(format!(
                "unknown query field `{s}` (expected last, rewrite or full)"
            )),
        }
    }
}

/// `(query id, text)` of every turn, in dialogue order; `sep` joins questions for `Full`.
pub(super) fn queries(
    dialogues: &[Dialogue],
    field: QueryField,
    sep: &str,
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for d in dialogues {
        for (i, t) in d.turns.iter().enumerate() {
            let text = match field {
                QueryField::Last => t.user.clone(),
                QueryField::Rewrite => t.rewrite.clone().unwrap_or_else(|| t.user.clone()),
                QueryField::Full => d.turns[..=i]
                    .iter()
                    .map(|x| x.user.as_str())
                    .collect::<Vec<_>>()
                    .join(sep),
            };
            out.push((t.id.clone(), text));
        }
    }
    out
}

/// What an export wrote.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ExportReport {
    /// Queries written.
    pub queries: usize,
    /// Passages written.
    pub passages: u64,
    /// Judgements written.
    pub qrels_pairs: usize,
    /// The files written.
    pub files: Vec<PathBuf>,
    /// What the user should know (turns without gold, rewritten ids, ...).
    pub warnings: Vec<String>,
}

#[derive(Serialize)]
struct BeirDoc<'a> {
    #[serde(rename = "_id")]
    id: &'a str,
    title: &'a str,
    text: &'a str,
    #[serde(skip_serializing_if = "Map::is_empty")]
    metadata: Map<String, Value>,
}

#[derive(Serialize)]
struct BeirQuery<'a> {
    #[serde(rename = "_id")]
    id: &'a str,
    text: &'a str,
}

fn pairs(q: &Qrels) -> usize {
    q.values().map(|m| m.len()).sum()
}

/// Writes `out/corpus.jsonl`, `out/queries.jsonl`, `out/qrels/test.tsv`: all of them or, when
/// the export fails, none (they are staged beside `out` and moved in at the end).
pub fn export_beir(dir: &BenchmarkDir, out: &Path, field: QueryField) -> Result<ExportReport> {
    let files = ["corpus.jsonl", "queries.jsonl", "qrels/test.tsv"];
    staged(out, &files, |stage| write_beir(dir, stage, field))
}

/// Runs `write` into a stage beside `out` and moves what it wrote into `out` when it succeeds;
/// the report names `files` at their final place.
pub(super) fn staged(
    out: &Path,
    files: &[&str],
    write: impl FnOnce(&Path) -> Result<ExportReport>,
) -> Result<ExportReport> {
    let stage = StagedDir::create(out)?;
    let mut report = write(stage.path())?;
    stage.commit_merging()?;
    report.files = files.iter().map(|f| out.join(f)).collect();
    Ok(report)
}

fn write_beir(dir: &BenchmarkDir, out: &Path, field: QueryField) -> Result<ExportReport> {
    let dialogues = dir.dialogues()?;
    let qrels = dir.qrels()?;
    std::fs::create_dir_all(out.join("qrels")).map_err(|e| Error::io(out, e))?;
    let mut report = ExportReport::default();

    let corpus_path = out.join("corpus.jsonl");
    let mut w = JsonlWriter::create(&corpus_path)?;
    dir.for_each_passage(|_, p| {
        let mut metadata = p.meta.clone();
        if let Some(d) = &p.doc_id {
            metadata.insert("doc_id".into(), Value::String(d.clone()));
        }
        w.write(&BeirDoc {
            id: &p.id,
            title: &p.title,
            text: &p.text,
            metadata,
        })
    })?;
    report.passages = w.commit()?;

    let queries_path = out.join("queries.jsonl");
    let mut w = JsonlWriter::create(&queries_path)?;
    let qs = queries(&dialogues, field, "\n");
    for (id, text) in &qs {
        w.write(&BeirQuery { id, text })?;
    }
    w.commit()?;
    report.queries = qs.len();

    let qrels_path = out.join("qrels").join("test.tsv");
    let mut f = AtomicFile::create(&qrels_path)?;
    writeln!(f, "query-id\tcorpus-id\tscore").map_err(|e| Error::io(&qrels_path, e))?;
    for (q, docs) in &qrels {
        for (d, g) in docs {
            writeln!(f, "{q}\t{d}\t{g}").map_err(|e| Error::io(&qrels_path, e))?;
        }
    }
    f.commit()?;
    report.qrels_pairs = pairs(&qrels);
    Ok(report)
}

/// A field of a TSV line: tabs and line breaks become spaces.
fn tsv_field(s: &str) -> String {
    s.replace(['\t', '\n', '\r'], " ")
}

/// Writes `out/topics.tsv` (`qid<TAB>query`), `out/qrels.txt` (`qid 0 docid grade`) and
/// `out/collection.tsv` (`id<TAB>text<TAB>title` with a header line): all of them or, when the
/// export fails, none.
pub fn export_trec(dir: &BenchmarkDir, out: &Path, field: QueryField) -> Result<ExportReport> {
    let files = ["topics.tsv", "qrels.txt", "collection.tsv"];
    staged(out, &files, |stage| write_trec(dir, stage, field))
}

fn write_trec(dir: &BenchmarkDir, out: &Path, field: QueryField) -> Result<ExportReport> {
    let dialogues = dir.dialogues()?;
    let qrels = dir.qrels()?;
    std::fs::create_dir_all(out).map_err(|e| Error::io(out, e))?;
    let mut report = ExportReport::default();

    let topics_path = out.join("topics.tsv");
    let mut f = AtomicFile::create(&topics_path)?;
    let qs = queries(&dialogues, field, " ");
    for (id, text) in &qs {
        writeln!(f, "{}\t{}", tsv_field(id), tsv_field(text))
            .map_err(|e| Error::io(&topics_path, e))?;
    }
    f.commit()?;
    report.queries = qs.len();

    let qrels_path = out.join("qrels.txt");
    crate::trec::write_qrels(&qrels_path, &qrels)?;
    report.qrels_pairs = pairs(&qrels);
    let spaced = qrels
        .iter()
        .flat_map(|(q, docs)| std::iter::once(q).chain(docs.keys()))
        .filter(|id| id.chars().any(char::is_whitespace))
        .count();
    if spaced > 0 {
        report.warnings.push(format!(
            "{spaced} query or passage id(s) contain spaces: the files are tab-separated, but trec_eval splits on any whitespace and will misread them"
        ));
    }

    let coll_path = out.join("collection.tsv");
    let mut f = AtomicFile::create(&coll_path)?;
    writeln!(f, "id\ttext\ttitle").map_err(|e| Error::io(&coll_path, e))?;
    let mut n = 0u64;
    dir.for_each_passage(|_, p| {
        n += 1;
        writeln!(
            f,
            "{}\t{}\t{}",
            tsv_field(&p.id),
            tsv_field(&p.text),
            tsv_field(&p.title)
        )
        .map_err(|e| Error::io(&coll_path, e))
    })?;
    f.commit()?;
    report.passages = n;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Tags, Turn};

    #[test]
    fn query_fields() {
        let t = |id: &str, u: &str, r: Option<&str>| Turn {
            id: id.into(),
            user: u.into(),
            rewrite: r.map(Into::into),
            answer: None,
            gold: vec![],
            tags: Tags::default(),
        };
        let d = Dialogue {
            id: "d".into(),
            turns: vec![t("d_1", "a?", None), t("d_2", "b?", Some("b of a?"))],
            meta: Default::default(),
        };
        let ds = std::slice::from_ref(&d);
        assert_eq!(queries(ds, QueryField::Last, "\n")[1].1, "b?");
        assert_eq!(queries(ds, QueryField::Rewrite, "\n")[0].1, "a?");
        assert_eq!(queries(ds, QueryField::Rewrite, "\n")[1].1, "b of a?");
        assert_eq!(queries(ds, QueryField::Full, " ")[1].1, "a? b?");
    }
}
