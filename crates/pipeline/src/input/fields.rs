//! Which fields of a record hold a document's id, title and text. Without a mapping the usual
//! names are tried (those of mtr's corpus importers: `_id`/`id`/`docid`/..., `text`/
//! `contents`/`body`, `title`); `--corpus-fields id=doc_id,text=body` (or `[synth]
//! corpus_fields = { id = "doc_id", text = "body" }`) names them for corpora that call them
//! otherwise. One mapping serves JSON records and Parquet columns alike.

use std::path::Path;
use std::str::FromStr;

use mtr_core::InputError;
use mtr_core::formats::{CorpusOptions, ID_FIELDS, TEXT_FIELDS, passage_from_json};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::Document;

/// The field names of a corpus's id, title and text (None: the usual names).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CorpusFields {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// What a mapping's keys may be.
const KEYS: &str = "id, title, text";

impl FromStr for CorpusFields {
    type Err = String;

    /// `id=doc_id,text=body`: each pair names the field that holds a document's part.
    fn from_str(s: &str) -> Result<Self, String> {
        let mut f = Self::default();
        for pair in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, name) = pair
                .split_once('=')
                .map(|(k, v)| (k.trim(), v.trim()))
                .filter(|(_, v)| !v.is_empty())
                .ok_or_else(|| format!("`{pair}` is not KEY=FIELD (keys: {KEYS})"))?;
            let slot = match key {
                "id" => &mut f.id,
                "title" => &mut f.title,
                "text" => &mut f.text,
                other => return Err(format!("unknown key `{other}` (keys: {KEYS})")),
            };
            *slot = Some(name.to_string());
        }
        Ok(f)
    }
}

impl CorpusFields {
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// The column or field names that may hold the id, most likely first (`doc_id` last: in
    /// passage corpora it names the source document, but a document corpus may use it).
    pub fn id_names(&self) -> Vec<&str> {
        match &self.id {
            Some(n) => vec![n.as_str()],
            None => ID_FIELDS.iter().copied().chain(["doc_id"]).collect(),
        }
    }

    pub fn text_names(&self) -> Vec<&str> {
        match &self.text {
            Some(n) => vec![n.as_str()],
            None => TEXT_FIELDS.to_vec(),
        }
    }

    pub fn title_names(&self) -> Vec<&str> {
        vec![self.title.as_deref().unwrap_or("title")]
    }

    /// A document from one JSON record of `file` (line `line`).
    pub fn document(
        &self,
        file: &Path,
        line: u64,
        mut map: Map<String, Value>,
    ) -> Result<Document, InputError> {
        let missing = |name: &str, what: &str| {
            InputError::new(file, format!("the record has no {what} field `{name}`"))
                .line(line)
                .field(name)
                .hint("--corpus-fields names the fields, e.g. id=doc_id,text=body")
        };
        for (name, canonical, what) in [
            (&self.id, "_id", "id"),
            (&self.text, "text", "text"),
            (&self.title, "title", "title"),
        ] {
            if let Some(name) = name {
                let v = map.remove(name).ok_or_else(|| missing(name, what))?;
                map.insert(canonical.to_string(), v);
            }
        }
        if self.id.is_none()
            && !ID_FIELDS.iter().any(|k| map.contains_key(*k))
            && let Some(v) = map.remove("doc_id")
        {
            map.insert("_id".into(), v);
        }
        let p = passage_from_json(file, line, map, CorpusOptions::default())?;
        Ok(Document {
            id: p.id,
            title: p.title,
            text: p.text,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: serde_json::Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn a_mapping_parses_and_names_its_fields() {
        let f: CorpusFields = "id=doc_id, text=body".parse().unwrap();
        assert_eq!(f.id.as_deref(), Some("doc_id"));
        assert_eq!(f.text.as_deref(), Some("body"));
        assert!(f.title.is_none());
        assert!(
            "url=u"
                .parse::<CorpusFields>()
                .unwrap_err()
                .contains("unknown key")
        );
        assert!(
            "id".parse::<CorpusFields>()
                .unwrap_err()
                .contains("KEY=FIELD")
        );
        assert!("".parse::<CorpusFields>().unwrap().is_empty());
    }

    #[test]
    fn records_become_documents_by_the_mapping_or_the_usual_names() {
        let p = Path::new("c.jsonl");
        let f: CorpusFields = "id=doc_id,text=body,title=name".parse().unwrap();
        let d = f
            .document(
                p,
                3,
                obj(serde_json::json!({"doc_id": 7, "body": "b", "name": "n", "id": "x"})),
            )
            .unwrap();
        assert_eq!(
            (d.id.as_str(), d.title.as_str(), d.text.as_str()),
            ("7", "n", "b")
        );
        let e = f
            .document(p, 4, obj(serde_json::json!({"id": "x", "text": "t"})))
            .unwrap_err();
        assert_eq!((e.line, e.field.as_deref()), (Some(4), Some("doc_id")));
        let usual = CorpusFields::default();
        let d = usual
            .document(
                p,
                1,
                obj(serde_json::json!({"doc_id": "d", "contents": "c"})),
            )
            .unwrap();
        assert_eq!((d.id.as_str(), d.text.as_str()), ("d", "c"));
        let e = usual
            .document(p, 2, obj(serde_json::json!({"id": "d"})))
            .unwrap_err();
        assert_eq!(e.field.as_deref(), Some("text"));
    }
}
