//! Whole-file JSON documents (a top-level array, a top-level object keyed by id, or JSON lines)
//! split into records that know their line number, so that an error inside record 5,000 of a
//! 100 MB array still names the file, the line and the field. Records are kept as raw text and
//! parsed one at a time: a malformed record can be skipped under `--lenient` without giving up
//! on the rest.

use std::path::{Path, PathBuf};

use serde::de::{DeserializeOwned, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use crate::error::{InputError, Result};
use crate::jsonl;

/// A JSON file read into memory (UTF-8 checked, BOM removed).
pub struct JsonDoc {
    path: PathBuf,
    text: String,
}

/// One record of a document: its key (for top-level objects), raw JSON and first line.
pub struct Rec<'a> {
    pub key: Option<String>,
    pub raw: &'a str,
    pub line: u64,
}

impl JsonDoc {
    /// Reads a JSON file (BOM removed, UTF-8 checked).
    pub fn read(path: &Path) -> Result<Self> {
        Ok(Self {
            path: path.to_path_buf(),
            text: jsonl::read_text(path)?,
        })
    }

    /// A document of `text` that errors name `path`.
    pub fn from_text(path: &Path, text: String) -> Self {
        Self {
            path: path.to_path_buf(),
            text,
        }
    }

    /// The file it was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The first non-whitespace character.
    pub(crate) fn first_char(&self) -> Option<char> {
        self.text.trim_start().chars().next()
    }

    /// The records of a top-level array, or of a JSON-lines file (one object per line).
    pub fn array_records(&self) -> Result<Vec<Rec<'_>>> {
        match self.first_char() {
            Some('[') => {
                let items: Vec<&RawValue> =
                    serde_json::from_str(&self.text).map_err(|e| self.syntax_error(&e))?;
                Ok(self.locate(items.into_iter().map(|r| (None, r))))
            }
            Some('{') => self.line_records(),
            Some(_) => Err(
                InputError::new(&self.path, "expected a JSON array or JSON lines")
                    .line(1)
                    .into(),
            ),
            None => Ok(Vec::new()),
        }
    }

    /// The entries of a top-level object (`{"id": {...}, ...}`) in file order.
    pub(crate) fn object_records(&self) -> Result<Vec<Rec<'_>>> {
        let mut de = serde_json::Deserializer::from_str(&self.text);
        let entries = de
            .deserialize_map(EntriesVisitor)
            .map_err(|e| self.syntax_error(&e))?;
        de.end().map_err(|e| self.syntax_error(&e))?;
        Ok(self.locate(entries.into_iter().map(|(k, r)| (Some(k), r))))
    }

    /// One record per line; a line ends at `\n`, `\r\n` or a lone `\r` (a raw CR cannot be
    /// inside a JSON value, so splitting there never cuts a record).
    fn line_records(&self) -> Result<Vec<Rec<'_>>> {
        let mut out = Vec::new();
        let mut line = 0u64;
        for piece in self.text.split('\n') {
            let piece = piece.strip_suffix('\r').unwrap_or(piece);
            for t in piece.split('\r') {
                line += 1;
                if t.trim().is_empty() {
                    continue;
                }
                out.push(Rec {
                    key: None,
                    raw: t,
                    line,
                });
            }
        }
        Ok(out)
    }

    fn locate<'a>(
        &'a self,
        items: impl Iterator<Item = (Option<String>, &'a RawValue)>,
    ) -> Vec<Rec<'a>> {
        let base = self.text.as_ptr() as usize;
        let bytes = self.text.as_bytes();
        let mut pos = 0usize;
        let mut line = 1u64;
        let mut out = Vec::new();
        for (key, raw) in items {
            let s = raw.get();
            let off = (s.as_ptr() as usize).saturating_sub(base).min(bytes.len());
            if off >= pos {
                line += bytes[pos..off].iter().filter(|b| **b == b'\n').count() as u64;
                pos = off;
            }
            out.push(Rec { key, raw: s, line });
        }
        out
    }

    /// Parses one record into `T`; errors name the file and the line inside the record.
    pub fn parse<T: DeserializeOwned>(&self, rec: &Rec<'_>) -> std::result::Result<T, InputError> {
        serde_json::from_str(rec.raw).map_err(|e| {
            let line = rec.line + (e.line() as u64).saturating_sub(1);
            jsonl::json_error(&self.path, line, &e)
        })
    }

    fn syntax_error(&self, e: &serde_json::Error) -> InputError {
        jsonl::json_error(&self.path, e.line() as u64, e)
    }
}

struct EntriesVisitor;

impl<'de> Visitor<'de> for EntriesVisitor {
    type Value = Vec<(String, &'de RawValue)>;
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(
        self,
        mut map: A,
    ) -> std::result::Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        while let Some((k, v)) = map.next_entry::<String, &'de RawValue>()? {
            out.push((k, v));
        }
        Ok(out)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, _seq: A) -> std::result::Result<Self::Value, A::Error> {
        Err(serde::de::Error::custom(
            "expected a JSON object keyed by id, found an array",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize, Debug)]
    struct R {
        #[allow(dead_code)]
        a: u32,
    }

    #[test]
    fn array_records_know_their_lines() {
        let text = "[\n  {\"a\": 1},\n  {\n    \"a\": 2\n  },\n  {\"b\": 3}\n]\n";
        let doc = JsonDoc::from_text(Path::new("x.json"), text.into());
        let recs = doc.array_records().unwrap();
        assert_eq!(
            recs.iter().map(|r| r.line).collect::<Vec<_>>(),
            vec![2, 3, 6]
        );
        let e = doc.parse::<R>(&recs[2]).unwrap_err();
        assert_eq!(e.line, Some(6));
        assert_eq!(e.field.as_deref(), Some("a"));
    }

    #[test]
    fn object_records_and_json_lines() {
        let doc = JsonDoc::from_text(
            Path::new("x.json"),
            "{\"d1\": {\"a\": 1},\n \"d2\": {\"a\": 2}}".into(),
        );
        let recs = doc.object_records().unwrap();
        assert_eq!(recs[1].key.as_deref(), Some("d2"));
        assert_eq!(recs[1].line, 2);
        let doc = JsonDoc::from_text(
            Path::new("x.jsonl"),
            "{\"a\": 1}\r\n\r\n{\"a\": 2}\n".into(),
        );
        let recs = doc.array_records().unwrap();
        assert_eq!(recs.len(), 2);
        assert_eq!(recs[1].line, 3);
    }

    #[test]
    fn syntax_error_names_line() {
        let doc = JsonDoc::from_text(Path::new("x.json"), "[\n{\"a\": 1},\n{\"a\": }\n]".into());
        let e = doc.array_records().err().unwrap().to_string();
        assert!(e.contains("x.json:3"), "{e}");
    }

    #[test]
    fn json_lines_end_at_lf_crlf_or_a_lone_cr() {
        for text in [
            "{\"a\":1}\n{\"a\":2}\n\n{\"a\":3}",
            "{\"a\":1}\r\n{\"a\":2}\r\n\r\n{\"a\":3}\r\n",
            "{\"a\":1}\r{\"a\":2}\r\r{\"a\":3}\r",
        ] {
            let doc = JsonDoc::from_text(Path::new("x.jsonl"), text.to_string());
            let recs = doc.array_records().unwrap();
            let got: Vec<(u64, &str)> = recs.iter().map(|r| (r.line, r.raw)).collect();
            assert_eq!(
                got,
                vec![(1, "{\"a\":1}"), (2, "{\"a\":2}"), (4, "{\"a\":3}")],
                "{text:?}"
            );
        }
    }
}
