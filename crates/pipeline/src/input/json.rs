//! JSON corpora: JSON lines (one record a line: `.jsonl`, WikiExtractor's `--json` output,
//! BEIR's and mtr's `corpus.jsonl`, `.json` files whose first character is `{`), read line
//! by line; JSON arrays of records (`.json` starting with `[`), read whole, one file at a
//! time; and zip archives of either (MTRAG's passage-level `corpora/passage_level/*.zip`),
//! read entry by entry without unpacking. Lines go through mtr-core's line reader and its JSON
//! error messages, records through [`CorpusFields::document`].

use std::io::BufRead;
use std::path::Path;

use mtr_core::formats::JsonDoc;
use mtr_core::{Error as CoreError, InputError, jsonl};
use serde_json::{Map, Value};

use super::collect::Collector;
use super::fields::CorpusFields;
use crate::error::Result;

/// Reads a JSON-lines stream (`label` names it in errors).
pub fn read_lines(
    reader: impl BufRead,
    label: &Path,
    fields: &CorpusFields,
    out: &mut Collector,
) -> Result<()> {
    for line in jsonl::records_from(reader, label, jsonl::parse_plain::<Map<String, Value>>) {
        match line? {
            jsonl::Line::Record(no, map) => record(label, no, map, fields, out),
            jsonl::Line::Malformed(e) => out.malformed(e),
        }
    }
    Ok(())
}

fn record(
    label: &Path,
    line: u64,
    map: Map<String, Value>,
    fields: &CorpusFields,
    out: &mut Collector,
) {
    match fields.document(label, line, map) {
        Ok(doc) => out.document(doc, || InputError::new(label, "").line(line)),
        Err(e) => out.malformed(e),
    }
}

/// Reads a JSON document: an array of records, or JSON lines (`text` is the whole file).
pub fn read_document(
    text: String,
    label: &Path,
    fields: &CorpusFields,
    out: &mut Collector,
) -> Result<()> {
    let doc = JsonDoc::from_text(label, text);
    for rec in doc.array_records()? {
        match doc.parse::<Map<String, Value>>(&rec) {
            Ok(map) => record(label, rec.line, map, fields, out),
            Err(e) => out.malformed(e),
        }
    }
    Ok(())
}

/// Reads every `.jsonl`/`.json` entry of a zip archive (MTRAG's passage-level corpora).
pub fn read_zip(path: &Path, fields: &CorpusFields, out: &mut Collector) -> Result<()> {
    let file = std::fs::File::open(path).map_err(|e| CoreError::io(path, e))?;
    let mut zip = zip::ZipArchive::new(file).map_err(|e| {
        CoreError::from(
            InputError::new(path, format!("not a readable zip archive: {e}"))
                .hint("re-download or unzip it"),
        )
    })?;
    let mut found = false;
    for i in 0..zip.len() {
        let entry = zip
            .by_index(i)
            .map_err(|e| CoreError::from(InputError::new(path, format!("zip entry {i}: {e}"))))?;
        let name = entry.name().to_string();
        let lower = name.to_ascii_lowercase();
        let hidden = lower.contains("__macosx/")
            || lower.rsplit('/').next().is_some_and(|n| n.starts_with('.'));
        if entry.is_dir() || hidden {
            continue;
        }
        let label = path.join(&name);
        if lower.ends_with(".jsonl") {
            found = true;
            read_lines(
                std::io::BufReader::with_capacity(1 << 18, entry),
                &label,
                fields,
                out,
            )?;
        } else if lower.ends_with(".json") {
            found = true;
            let mut text = String::new();
            let mut entry = entry;
            std::io::Read::read_to_string(&mut entry, &mut text).map_err(|e| {
                CoreError::from(InputError::new(
                    &label,
                    format!("cannot read zip entry as UTF-8 text: {e}"),
                ))
            })?;
            read_document(
                text.trim_start_matches('\u{feff}').to_string(),
                &label,
                fields,
                out,
            )?;
        }
    }
    if !found {
        return Err(CoreError::from(InputError::new(
            path,
            "the zip archive holds no .jsonl or .json file",
        ))
        .into());
    }
    Ok(())
}
