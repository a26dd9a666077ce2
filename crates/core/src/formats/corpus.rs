//! Corpus readers shared by the importers. Corpora come as JSON lines (`_id`/`id`, `title`,
//! `text`/`contents`, anything else kept as `meta`), TSV (`id<TAB>text[<TAB>title]`, with or
//! without a header, DPR-style quoting), INSCIT-style JSON arrays of articles with passages,
//! zip archives of those (read streaming, never unpacked to disk), or folders of them. Every
//! passage goes straight into the [`Builder`]; nothing but ids is kept in memory.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use serde_json::{Map, Value};

use super::builder::Builder;
use super::json_doc::JsonDoc;
use super::walk;
use crate::error::{Error, InputError, Result};
use crate::jsonl::{self, Lines};
use crate::model::Passage;
use crate::progress::Progress;

/// Per-format adjustments to how passages are read.
#[derive(Clone, Copy, Default)]
pub struct CorpusOptions {
    /// Derives a passage's source document id from its id when the record has no `doc_id`.
    pub derive_doc_id: Option<fn(&str) -> Option<String>>,
}

/// True when `p` is a file mtr can read a corpus from.
pub(super) fn is_corpus_file(p: &Path) -> bool {
    let n = walk::file_name(p).to_ascii_lowercase();
    n.ends_with(".jsonl") || n.ends_with(".tsv") || n.ends_with(".zip") || n.ends_with(".json")
}

/// Reads every passage of a corpus file, zip archive or folder into `b`.
pub(super) fn read_into(
    path: &Path,
    b: &mut Builder,
    opts: CorpusOptions,
    progress: &dyn Progress,
) -> Result<()> {
    progress.stage("corpus", 0);
    let files = if path.is_dir() {
        walk::files(path, 4)?
            .into_iter()
            .filter(|p| is_corpus_file(p))
            .collect()
    } else {
        vec![path.to_path_buf()]
    };
    if files.is_empty() {
        return Err(InputError::new(
            path,
            "no corpus files (.jsonl, .tsv, .json, .zip) in this folder",
        )
        .into());
    }
    for f in files {
        let name = walk::file_name(&f).to_ascii_lowercase();
        if name.ends_with(".zip") {
            read_zip(&f, b, opts, progress)?;
        } else if name.ends_with(".json") {
            read_json_articles(&f, b, opts)?;
        } else {
            let file = File::open(&f).map_err(|e| Error::io(&f, e))?;
            read_stream(
                BufReader::with_capacity(1 << 16, file),
                &f,
                &name,
                b,
                opts,
                progress,
            )?;
        }
    }
    progress.finish_stage();
    Ok(())
}

fn read_zip(
    path: &Path,
    b: &mut Builder,
    opts: CorpusOptions,
    progress: &dyn Progress,
) -> Result<()> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut zip = zip::ZipArchive::new(file).map_err(|e| {
        InputError::new(path, format!("not a readable zip archive: {e}"))
            .hint("re-download or unzip it")
    })?;
    let mut found = false;
    for i in 0..zip.len() {
        let entry = zip
            .by_index(i)
            .map_err(|e| InputError::new(path, format!("zip entry {i}: {e}")))?;
        let name = entry.name().to_string();
        let lower = name.to_ascii_lowercase();
        if entry.is_dir()
            || lower.contains("__macosx/")
            || walk::file_name(Path::new(&lower)).starts_with('.')
        {
            continue;
        }
        let label = path.join(&name);
        if lower.ends_with(".jsonl") || lower.ends_with(".tsv") {
            found = true;
            read_stream(
                BufReader::with_capacity(1 << 16, entry),
                &label,
                &lower,
                b,
                opts,
                progress,
            )?;
        } else if lower.ends_with(".json") {
            found = true;
            let mut text = String::new();
            let mut entry = entry;
            std::io::Read::read_to_string(&mut entry, &mut text).map_err(|e| {
                InputError::new(&label, format!("cannot read zip entry as UTF-8 text: {e}"))
            })?;
            let doc = JsonDoc::from_text(&label, text.trim_start_matches('\u{feff}').to_string());
            read_json_doc(&doc, b, opts)?;
        }
    }
    if !found {
        return Err(
            InputError::new(path, "the zip archive holds no .jsonl, .json or .tsv file").into(),
        );
    }
    Ok(())
}

/// A JSON-lines or TSV stream of passages (a file or a zip entry named `label`).
fn read_stream<R: BufRead>(
    reader: R,
    label: &Path,
    lower_name: &str,
    b: &mut Builder,
    opts: CorpusOptions,
    progress: &dyn Progress,
) -> Result<()> {
    if lower_name.ends_with(".tsv") {
        read_tsv(reader, label, b, progress)
    } else {
        read_jsonl(reader, label, b, opts, progress)
    }
}

fn read_jsonl<R: BufRead>(
    reader: R,
    label: &Path,
    b: &mut Builder,
    opts: CorpusOptions,
    progress: &dyn Progress,
) -> Result<()> {
    let mut n = 0u64;
    for line in jsonl::records_from(reader, label, jsonl::parse_plain::<Map<String, Value>>) {
        match line? {
            jsonl::Line::Record(no, map) => match passage_from_json(label, no, map, opts) {
                Ok(p) => b.passage(p, label, no)?,
                Err(e) => b.diag.problem("malformed-record", e)?,
            },
            jsonl::Line::Malformed(e) => b.diag.problem("malformed-record", e)?,
        }
        n += 1;
        if n % 10_000 == 0 {
            progress.advance(10_000);
        }
    }
    progress.advance(n % 10_000);
    Ok(())
}

/// `id<TAB>text[<TAB>title]` lines, with or without a header line.
fn read_tsv<R: BufRead>(
    reader: R,
    label: &Path,
    b: &mut Builder,
    progress: &dyn Progress,
) -> Result<()> {
    let mut lines = Lines::new(reader, label);
    let mut header: Option<TsvColumns> = None;
    let mut n = 0u64;
    while let Some(next) = lines.next_line() {
        let (no, line) = match next {
            Ok(x) => x,
            Err(Error::Input(e)) => {
                b.diag.problem("malformed-record", *e)?;
                continue;
            }
            Err(e) => return Err(e),
        };
        if header.is_none()
            && n == 0
            && let Some(h) = TsvColumns::header(line)
        {
            header = Some(h);
            continue;
        }
        match parse_tsv(label, no, line, header.as_ref()) {
            Ok(p) => b.passage(p, label, no)?,
            Err(e) => b.diag.problem("malformed-record", e)?,
        }
        n += 1;
        if n % 10_000 == 0 {
            progress.advance(10_000);
        }
    }
    progress.advance(n % 10_000);
    Ok(())
}

/// A JSON file holding passages: an array of passage objects, or INSCIT-style articles
/// `{title, passages: [{id, text, titles}]}`.
fn read_json_articles(path: &Path, b: &mut Builder, opts: CorpusOptions) -> Result<()> {
    let doc = JsonDoc::read(path)?;
    read_json_doc(&doc, b, opts)
}

fn read_json_doc(doc: &JsonDoc, b: &mut Builder, opts: CorpusOptions) -> Result<()> {
    for rec in doc.array_records()? {
        let map: Map<String, Value> = match doc.parse(&rec) {
            Ok(m) => m,
            Err(e) => {
                b.diag.problem("malformed-record", e)?;
                continue;
            }
        };
        if let Some(Value::Array(passages)) = map.get("passages") {
            let article = map
                .get("title")
                .and_then(Value::as_str)
                .unwrap_or("")
                .trim()
                .to_string();
            for p in passages {
                let Some(obj) = p.as_object() else {
                    b.diag.problem(
                        "malformed-record",
                        InputError::new(doc.path(), "a passage must be a JSON object")
                            .line(rec.line)
                            .field("passages"),
                    )?;
                    continue;
                };
                let mut obj = obj.clone();
                let titles: Vec<String> = obj
                    .remove("titles")
                    .and_then(|t| serde_json::from_value::<Vec<String>>(t).ok())
                    .unwrap_or_default();
                if !obj.contains_key("title") {
                    let title = if titles.is_empty() {
                        article.clone()
                    } else {
                        titles.join(" [SEP] ")
                    };
                    obj.insert("title".into(), Value::String(title));
                }
                if !obj.contains_key("doc_id") && !article.is_empty() {
                    obj.insert("doc_id".into(), Value::String(article.clone()));
                }
                match passage_from_json(doc.path(), rec.line, obj, opts) {
                    Ok(p) => b.passage(p, doc.path(), rec.line)?,
                    Err(e) => b.diag.problem("malformed-record", e)?,
                }
            }
        } else {
            match passage_from_json(doc.path(), rec.line, map, opts) {
                Ok(p) => b.passage(p, doc.path(), rec.line)?,
                Err(e) => b.diag.problem("malformed-record", e)?,
            }
        }
    }
    Ok(())
}

/// The fields a corpus record's id may be in, most likely first (the pipeline's readers try them too).
pub const ID_FIELDS: [&str; 5] = ["_id", "id", "docid", "pid", "passage_id"];
/// The fields a corpus record's text may be in.
pub const TEXT_FIELDS: [&str; 4] = ["text", "contents", "passage_text", "body"];

/// A passage from a loosely-shaped JSON object.
pub fn passage_from_json(
    file: &Path,
    line: u64,
    mut map: Map<String, Value>,
    opts: CorpusOptions,
) -> std::result::Result<Passage, InputError> {
    let id = take_string(&mut map, &ID_FIELDS).ok_or_else(|| {
        InputError::new(file, "passage has no id")
            .line(line)
            .field("_id")
            .hint("each corpus record needs `_id` (or `id`) and `text`")
    })?;
    let text = take_string(&mut map, &TEXT_FIELDS).ok_or_else(|| {
        InputError::new(file, format!("passage `{id}` has no text"))
            .line(line)
            .field("text")
    })?;
    let title = match map.remove("title") {
        Some(Value::String(s)) => s,
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    };
    // BEIR keeps extra fields under `metadata`: flatten them into `meta`.
    if let Some(Value::Object(md)) = map.remove("metadata") {
        for (k, v) in md {
            map.entry(k).or_insert(v);
        }
    }
    let doc_id = take_string(&mut map, &["doc_id", "document_id"])
        .or_else(|| opts.derive_doc_id.and_then(|f| f(&id)));
    Ok(Passage {
        id,
        title,
        text,
        doc_id,
        meta: map,
    })
}

fn take_string(map: &mut Map<String, Value>, names: &[&str]) -> Option<String> {
    for n in names {
        match map.get(*n) {
            Some(Value::String(_)) => {
                if let Some(Value::String(s)) = map.remove(*n) {
                    return Some(s);
                }
            }
            Some(Value::Number(x)) => {
                let s = x.to_string();
                map.remove(*n);
                return Some(s);
            }
            _ => {}
        }
    }
    None
}

/// Column positions of a corpus TSV.
struct TsvColumns {
    id: usize,
    text: usize,
    title: Option<usize>,
}

impl TsvColumns {
    fn header(line: &str) -> Option<Self> {
        let cols: Vec<String> = line
            .split('\t')
            .map(|c| c.trim().to_ascii_lowercase())
            .collect();
        let id = cols.iter().position(|c| ID_FIELDS.contains(&c.as_str()))?;
        let text = cols
            .iter()
            .position(|c| TEXT_FIELDS.contains(&c.as_str()) || c == "passage")?;
        let title = cols.iter().position(|c| c == "title");
        Some(Self { id, text, title })
    }
}

fn parse_tsv(
    file: &Path,
    line_no: u64,
    line: &str,
    header: Option<&TsvColumns>,
) -> std::result::Result<Passage, InputError> {
    let cols: Vec<&str> = line.split('\t').collect();
    let (id_i, text_i, title_i) = match header {
        Some(h) => (h.id, h.text, h.title),
        None => (0, 1, if cols.len() > 2 { Some(2) } else { None }),
    };
    let get = |i: usize| cols.get(i).map(|c| unquote(c));
    let id = get(id_i).filter(|s| !s.trim().is_empty()).ok_or_else(|| {
        InputError::new(file, "expected `id<TAB>text[<TAB>title]`")
            .line(line_no)
            .field("id")
    })?;
    let text = get(text_i).ok_or_else(|| {
        InputError::new(file, format!("passage `{id}` has no text column"))
            .line(line_no)
            .field("text")
    })?;
    let title = title_i.and_then(get).unwrap_or_default();
    Ok(Passage {
        id: id.trim().to_string(),
        title,
        text,
        doc_id: None,
        meta: Map::new(),
    })
}

/// Removes CSV-style quotes (`"a ""b"""` -> `a "b"`).
fn unquote(s: &str) -> String {
    if s.len() >= 2 && s.starts_with('"') && s.ends_with('"') {
        s[1..s.len() - 1].replace("\"\"", "\"")
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::benchmark::Manifest;
    use crate::progress::NoProgress;

    fn build(
        files: &[(&str, &[u8])],
        lenient: bool,
    ) -> Result<super::super::builder::ImportReport> {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("src");
        std::fs::create_dir_all(&src).unwrap();
        for (n, c) in files {
            std::fs::write(src.join(n), c).unwrap();
        }
        let mut b = Builder::create(&tmp.path().join("out"), lenient)?;
        read_into(&src, &mut b, CorpusOptions::default(), &NoProgress)?;
        b.finish(Manifest::default(), Vec::new())
    }

    #[test]
    fn jsonl_tsv_and_articles() {
        let r = build(
            &[
                ("a.jsonl", "\u{feff}{\"_id\":\"p1\",\"title\":\"T\",\"text\":\"x\",\"url\":\"u\"}\r\n{\"id\":7,\"contents\":\"中文\"}\r\n".as_bytes()),
                ("b.tsv", b"id\ttext\ttitle\nw1\t\"say \"\"hi\"\"\"\tA [SEP] B\n"),
                ("c.json", br#"[{"title":"Cheese","passages":[{"id":"Cheese:1","text":"t","titles":["Cheese"]}]}]"#),
            ],
            false,
        )
        .unwrap();
        assert_eq!(r.passages, 4);
    }

    #[test]
    fn malformed_line_strict_and_lenient() {
        let bad: &[u8] = b"{\"_id\":\"p1\",\"text\":\"x\"}\n{\"_id\":\"p2\"}\n{\"_id\":\"p3\",\"text\":\"\xff\"}\n";
        let e = build(&[("a.jsonl", bad)], false).unwrap_err().to_string();
        assert!(e.contains("a.jsonl:2") && e.contains("`text`"), "{e}");
        let r = build(&[("a.jsonl", bad)], true).unwrap();
        assert_eq!(r.passages, 1);
        assert_eq!(r.skipped["malformed-record"], 2);
    }

    #[test]
    fn zip_is_streamed() {
        use std::io::Write;
        let mut buf = std::io::Cursor::new(Vec::new());
        {
            let mut z = zip::ZipWriter::new(&mut buf);
            z.start_file("clapnq.jsonl", zip::write::SimpleFileOptions::default())
                .unwrap();
            z.write_all(b"{\"_id\":\"a\",\"text\":\"x\"}\n{\"_id\":\"b\",\"text\":\"y\"}\n")
                .unwrap();
            z.finish().unwrap();
        }
        let r = build(&[("clapnq.jsonl.zip", buf.get_ref())], false).unwrap();
        assert_eq!(r.passages, 2);
    }

    #[test]
    fn a_corrupt_zip_entry_names_the_entry_and_line() {
        use std::io::Write;
        let mut buf = std::io::Cursor::new(Vec::new());
        let mut lines = String::new();
        for i in 0..2000 {
            lines.push_str(&format!(
                "{{\"_id\":\"p{i}\",\"text\":\"passage {i} {}\"}}\n",
                i * 7919 % 104729
            ));
        }
        {
            let mut z = zip::ZipWriter::new(&mut buf);
            let opts = zip::write::SimpleFileOptions::default()
                .compression_method(zip::CompressionMethod::Stored);
            z.start_file("clapnq.jsonl", opts).unwrap();
            z.write_all(lines.as_bytes()).unwrap();
            z.finish().unwrap();
        }
        let mut bytes = buf.into_inner();
        // one letter changed in the middle: every line still parses, the entry's checksum fails
        let mid = bytes.len() / 2;
        let at = mid
            + bytes[mid..]
                .windows(7)
                .position(|w| w == b"passage")
                .unwrap();
        bytes[at + 1] = b'A';
        let e = build(&[("clapnq.jsonl.zip", &bytes)], false).unwrap_err();
        assert!(e.is_user_error(), "{e}");
        let e = e.to_string();
        assert!(
            e.contains("clapnq.jsonl.zip/clapnq.jsonl:") && e.contains("corrupt"),
            "{e}"
        );
        // a zip cut short has no central directory: named, refused
        let e = build(&[("clapnq.jsonl.zip", &bytes[..mid])], false).unwrap_err();
        assert!(
            e.is_user_error() && e.to_string().contains("clapnq.jsonl.zip"),
            "{e}"
        );
    }
}
