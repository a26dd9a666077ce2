//! Whole JSON documents whose records nest below the top level (Doc2Dial's
//! `dial_data.<domain>.<doc>[i].turns[j]`, QuAC's `data[i].paragraphs[j].qas[k]`), parsed at once
//! into typed structs: a record that does not fit names the file, the line and the JSON path of
//! the field (`data[3].paragraphs[0].qas[2].question`), which serde alone would not.

use std::path::Path;

use serde::de::DeserializeOwned;

use crate::error::{InputError, Result};
use crate::jsonl;

/// Parses the whole of `file` into `T`; an error names the line and the JSON path.
pub(crate) fn read<T: DeserializeOwned>(file: &Path) -> Result<T> {
    let text = jsonl::read_text(file)?;
    let mut de = serde_json::Deserializer::from_str(&text);
    serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let mut err =
            InputError::new(file, without_position(&inner.to_string())).line(inner.line() as u64);
        if path != "." && !path.is_empty() {
            err = err.field(path);
        }
        err.into()
    })
}

/// serde_json's message without its trailing ` at line L column C`.
fn without_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize)]
    struct Top {
        #[allow(dead_code)]
        data: Vec<Item>,
    }
    #[derive(Deserialize)]
    struct Item {
        #[allow(dead_code)]
        qas: Vec<Qa>,
    }
    #[derive(Deserialize)]
    struct Qa {
        #[allow(dead_code)]
        question: String,
    }

    #[test]
    fn a_nested_error_names_line_and_path() {
        let tmp = tempfile::tempdir().unwrap();
        let f = tmp.path().join("x.json");
        std::fs::write(
            &f,
            "{\"data\": [\n {\"qas\": [{\"question\": \"a\"}]},\n {\"qas\": [{\"question\": \"b\"},\n   {\"question\": 3}]}\n]}\n",
        )
        .unwrap();
        let e = read::<Top>(&f).err().unwrap().to_string();
        assert!(e.contains("x.json:4"), "{e}");
        assert!(e.contains("data[1].qas[1].question"), "{e}");
    }
}
