//! Loading the documents to synthesize from: a JSONL file (`{id, title, text}` like the shared
//! corpora, BEIR's `{_id, ...}` also accepted), a folder of `.md`/`.txt` files, or a native
//! benchmark folder (its `corpus.jsonl`). Documents come back in a stable order (file order,
//! or sorted relative paths) so that everything downstream is reproducible.

use std::path::{Path, PathBuf};

use mtr_core::{BenchmarkDir, Error as CoreError, InputError, jsonl};
use serde::{Deserialize, Serialize};

use crate::error::Result;

/// One source document before curation and chunking.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Document {
    pub id: String,
    #[serde(default)]
    pub title: String,
    pub text: String,
}

/// What kind of source a corpus path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    Jsonl,
    Folder,
    Benchmark,
}

/// Detects the kind of source at `path`.
pub fn detect(path: &Path) -> Result<SourceKind> {
    if path.is_dir() {
        if BenchmarkDir::is_native(path) {
            return Ok(SourceKind::Benchmark);
        }
        return Ok(SourceKind::Folder);
    }
    if path.is_file() {
        return Ok(SourceKind::Jsonl);
    }
    Err(CoreError::from(
        InputError::new(path, "no such file or folder")
            .hint("--corpus takes a JSONL file ({id,title,text} per line), a folder of .md/.txt files or a benchmark folder"),
    )
    .into())
}

/// Extensions a corpus file's name may end in, stripped from its name.
const CORPUS_EXTENSIONS: &[&str] = &[
    "gz", "bz2", "zst", "xz", "jsonl", "json", "ndjson", "parquet", "zip", "txt", "md",
];

/// The name of a corpus, for the default output folder (`synth-<name>`): the folder's name
/// (`.` names the current folder), or the file's name without its extensions
/// (`dump.jsonl.gz` is `dump`).
pub fn corpus_name(path: &Path) -> String {
    let mut name = mtr_core::formats::builder::source_name(path);
    if !path.is_dir() {
        while let Some((stem, ext)) = name.rsplit_once('.') {
            if stem.is_empty() || !CORPUS_EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str()) {
                break;
            }
            name = stem.to_string();
        }
    }
    name
}

/// Loads all documents of a corpus path, in a stable order. Documents with empty text are
/// kept (curation counts and removes them) but duplicate ids are an input error.
pub fn load(path: &Path) -> Result<Vec<Document>> {
    let docs = match detect(path)? {
        SourceKind::Jsonl => load_jsonl(path)?,
        SourceKind::Folder => load_folder(path)?,
        SourceKind::Benchmark => load_jsonl(&BenchmarkDir::new(path).corpus_path())?,
    };
    if docs.is_empty() {
        return Err(CoreError::from(InputError::new(path, "the corpus has no documents")).into());
    }
    Ok(docs)
}

/// Reads `{id|_id|doc_id, title?, text|contents|body}` records.
pub fn load_jsonl(path: &Path) -> Result<Vec<Document>> {
    let mut out = Vec::new();
    let mut seen = std::collections::HashMap::new();
    jsonl::for_each(path, |line, v: serde_json::Value| {
        let obj = v
            .as_object()
            .ok_or_else(|| InputError::new(path, "expected a JSON object").line(line))?;
        let id = ["id", "_id", "doc_id", "docid"]
            .iter()
            .find_map(|k| obj.get(*k))
            .and_then(scalar_string)
            .ok_or_else(|| {
                InputError::new(path, "missing document id")
                    .line(line)
                    .field("id")
                    .hint("each line needs an `id` (or `_id`)")
            })?;
        let text = ["text", "contents", "body"]
            .iter()
            .find_map(|k| obj.get(*k))
            .ok_or_else(|| {
                InputError::new(path, "missing document text")
                    .line(line)
                    .field("text")
            })?;
        let text = text
            .as_str()
            .ok_or_else(|| {
                InputError::new(path, "`text` must be a string")
                    .line(line)
                    .field("text")
            })?
            .to_string();
        let title = obj
            .get("title")
            .and_then(|t| t.as_str())
            .unwrap_or_default()
            .to_string();
        if let Some(first) = seen.insert(id.clone(), line) {
            return Err(InputError::new(
                path,
                format!("duplicate document id `{id}` (first on line {first})"),
            )
            .line(line)
            .field("id")
            .into());
        }
        out.push(Document { id, title, text });
        Ok(())
    })?;
    Ok(out)
}

fn scalar_string(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Reads every `.md`, `.markdown` and `.txt` file below `root` (hidden entries skipped), sorted
/// by relative path. The id is the relative path without extension (`/` separated); the title
/// is the first level-1 Markdown heading (removed from the text) or else the file stem.
pub fn load_folder(root: &Path) -> Result<Vec<Document>> {
    let mut files = Vec::new();
    walk(root, &mut files)?;
    files.sort();
    let mut out = Vec::with_capacity(files.len());
    for f in files {
        let rel = f.strip_prefix(root).unwrap_or(&f);
        let id = rel
            .with_extension("")
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        let raw = jsonl::read_text(&f)?;
        let raw = raw.replace("\r\n", "\n");
        let (title, text) = split_title(&raw);
        let title = title.unwrap_or_else(|| {
            f.file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()
        });
        out.push(Document { id, title, text });
    }
    if out.is_empty() {
        return Err(CoreError::from(
            InputError::new(root, "the folder has no .md or .txt files")
                .hint("point --corpus at a JSONL file or a folder of documents"),
        )
        .into());
    }
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let entries = std::fs::read_dir(dir).map_err(|e| CoreError::io(dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| CoreError::io(dir, e))?;
        let p = entry.path();
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        if p.is_dir() {
            walk(&p, out)?;
        } else if matches!(
            p.extension()
                .and_then(|e| e.to_str())
                .map(str::to_ascii_lowercase)
                .as_deref(),
            Some("md" | "markdown" | "txt")
        ) {
            out.push(p);
        }
    }
    Ok(())
}

/// Splits a leading `# Title` line off a Markdown text (leading blank lines skipped).
fn split_title(raw: &str) -> (Option<String>, String) {
    let trimmed = raw.trim_start_matches(['\n', ' ', '\t']);
    if let Some(rest) = trimmed.strip_prefix("# ") {
        let (line, body) = rest.split_once('\n').unwrap_or((rest, ""));
        return (
            Some(line.trim().to_string()),
            body.trim_start_matches('\n').to_string(),
        );
    }
    (None, raw.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corpus_names_drop_folders_slashes_and_file_extensions() {
        let dir = tempfile::tempdir().unwrap();
        let wiki = dir.path().join("wiki");
        std::fs::create_dir_all(&wiki).unwrap();
        assert_eq!(corpus_name(&dir.path().join("wiki/")), "wiki");
        assert_eq!(corpus_name(&wiki.join("..").join("wiki")), "wiki");
        assert_eq!(corpus_name(&dir.path().join("dump.jsonl.gz")), "dump");
        assert_eq!(
            corpus_name(&dir.path().join("enwiki.v2.parquet")),
            "enwiki.v2"
        );
    }

    #[test]
    fn folder_ids_titles_and_order() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("b.md"), "# Bee\n\nBody b.\n").unwrap();
        std::fs::write(dir.path().join("a.txt"), "Plain a.").unwrap();
        std::fs::write(dir.path().join("sub/c.md"), "\u{feff}# 标题\r\n正文。\r\n").unwrap();
        std::fs::write(dir.path().join("ignored.json"), "{}").unwrap();
        let docs = load(dir.path()).unwrap();
        let ids: Vec<_> = docs.iter().map(|d| d.id.as_str()).collect();
        assert_eq!(ids, ["a", "b", "sub/c"]);
        assert_eq!(docs[0].title, "a");
        assert_eq!(docs[1].title, "Bee");
        assert_eq!(docs[1].text, "Body b.\n");
        assert_eq!(docs[2].title, "标题");
        assert_eq!(docs[2].text, "正文。\n");
    }

    #[test]
    fn jsonl_fields_and_errors() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.jsonl");
        std::fs::write(
            &p,
            "{\"_id\":\"x\",\"text\":\"hello\"}\n{\"id\":7,\"title\":\"t\",\"text\":\"seven\"}\n",
        )
        .unwrap();
        let docs = load(&p).unwrap();
        assert_eq!(docs[0].id, "x");
        assert_eq!(docs[1].id, "7");
        std::fs::write(
            &p,
            "{\"id\":\"x\",\"text\":\"a\"}\n{\"id\":\"x\",\"text\":\"b\"}\n",
        )
        .unwrap();
        let e = load(&p).unwrap_err().to_string();
        assert!(e.contains("c.jsonl:2") && e.contains("duplicate"), "{e}");
        std::fs::write(&p, "{\"id\":\"x\"}\n").unwrap();
        let e = load(&p).unwrap_err().to_string();
        assert!(e.contains("c.jsonl:1") && e.contains("`text`"), "{e}");
    }

    #[test]
    fn shipped_corpora_load() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpora");
        for lang in ["en", "zh"] {
            let docs = load(&root.join(lang)).unwrap();
            assert!((8..=15).contains(&docs.len()), "{lang}: {}", docs.len());
            assert!(
                docs.iter()
                    .all(|d| !d.title.is_empty() && d.text.len() > 1000)
            );
        }
    }
}
