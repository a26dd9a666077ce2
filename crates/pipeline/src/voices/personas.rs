//! A persona file: who a dialogue's user is (a name, and a description of who they are, what
//! they know and how they write). Three formats, by extension:
//! - `.jsonl`: one object a line, `{"name": "...", "description": "..."}`;
//! - `.toml`: `[[persona]]` tables with `name` and `description`;
//! - anything else: one `NAME: DESCRIPTION` a line (`#` comments and blank lines skipped).
//!
//! A bad record is an error naming the file, its line and the field; two personas of one name
//! are an error naming both lines.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::voice_files::{Format, bad_line, content_lines, read};
use crate::error::Result;

/// One persona.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Persona {
    /// A short name, unique in its file (recorded on each dialogue asked in it).
    pub name: String,
    /// Who they are, what they know, how they write (shown to the user agent).
    pub description: String,
}

/// The longest description kept whole (characters): a persona is a few sentences of a prompt.
const MAX_DESCRIPTION: usize = 1200;

/// The personas of `path` and its content hash.
pub(crate) fn read_personas(path: &Path) -> Result<(Vec<Persona>, String)> {
    let (text, hash, format) = read(path, "persona")?;
    let records = match format {
        Format::JsonLines | Format::JsonArray => json_records(path, &text, format)?,
        Format::Toml => toml_records(path, &text)?,
        Format::Tsv | Format::Text => text_records(path, &text)?,
    };
    let mut seen: BTreeMap<String, u64> = BTreeMap::new();
    let mut out = Vec::with_capacity(records.len());
    for (line, p) in records {
        if let Some(first) = seen.insert(p.name.to_lowercase(), line) {
            return Err(bad_line(
                path,
                line,
                "name",
                format!(
                    "persona `{}` is named twice: on lines {first} and {line}",
                    p.name
                ),
            ));
        }
        out.push(p);
    }
    Ok((out, hash))
}

/// A persona from a record's `name` and `description` (both required, non-empty).
fn persona(
    path: &Path,
    line: u64,
    name: Option<&str>,
    description: Option<&str>,
) -> Result<Persona> {
    let name = name.map(str::trim).unwrap_or_default();
    if name.is_empty() {
        return Err(bad_line(
            path,
            line,
            "name",
            "a persona needs a non-empty `name`",
        ));
    }
    let description = description.map(str::trim).unwrap_or_default();
    if description.is_empty() {
        return Err(bad_line(
            path,
            line,
            "description",
            format!("persona `{name}` needs a non-empty `description`"),
        ));
    }
    if description.chars().count() > MAX_DESCRIPTION {
        return Err(bad_line(
            path,
            line,
            "description",
            format!("persona `{name}`'s description is longer than {MAX_DESCRIPTION} characters"),
        ));
    }
    Ok(Persona {
        name: name.split_whitespace().collect::<Vec<_>>().join(" "),
        description: description.split_whitespace().collect::<Vec<_>>().join(" "),
    })
}

fn json_records(path: &Path, text: &str, format: Format) -> Result<Vec<(u64, Persona)>> {
    let values: Vec<(u64, Value)> = if format == Format::JsonArray {
        let v: Vec<Value> = serde_json::from_str(text).map_err(|e| {
            bad_line(
                path,
                e.line() as u64,
                "(json)",
                format!("not a JSON array: {e}"),
            )
        })?;
        // an array's records are numbered, not lined
        v.into_iter()
            .enumerate()
            .map(|(i, v)| (i as u64 + 1, v))
            .collect()
    } else {
        content_lines(text)
            .map(|(n, l)| {
                serde_json::from_str(l)
                    .map(|v| (n, v))
                    .map_err(|e| bad_line(path, n, "(json)", format!("not a JSON object: {e}")))
            })
            .collect::<Result<_>>()?
    };
    values
        .into_iter()
        .map(|(n, v)| {
            if !v.is_object() {
                return Err(bad_line(path, n, "(json)", "a persona is a JSON object"));
            }
            let field = |k: &str| v.get(k).and_then(Value::as_str);
            persona(path, n, field("name"), field("description")).map(|p| (n, p))
        })
        .collect()
}

/// `[[persona]]` tables; a record's line is that of its table header.
fn toml_records(path: &Path, text: &str) -> Result<Vec<(u64, Persona)>> {
    #[derive(Deserialize)]
    struct File {
        #[serde(default)]
        persona: Vec<toml::Table>,
    }
    let file: File = toml::from_str(text).map_err(|e| {
        let line = e
            .span()
            .and_then(|s| text.get(..s.start))
            .map_or(1, |before| before.lines().count().max(1) as u64);
        bad_line(
            path,
            line,
            "persona",
            format!("not a persona TOML file: {}", e.message()),
        )
    })?;
    let headers: Vec<u64> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.trim() == "[[persona]]")
        .map(|(i, _)| i as u64 + 1)
        .collect();
    if file.persona.is_empty() {
        return Err(bad_line(path, 1, "persona", "no [[persona]] table"));
    }
    file.persona
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let n = headers.get(i).copied().unwrap_or(i as u64 + 1);
            let field = |k: &str| t.get(k).and_then(toml::Value::as_str);
            persona(path, n, field("name"), field("description")).map(|p| (n, p))
        })
        .collect()
}

/// `NAME: DESCRIPTION` lines.
fn text_records(path: &Path, text: &str) -> Result<Vec<(u64, Persona)>> {
    content_lines(text)
        .map(|(n, l)| match l.split_once(':') {
            Some((name, description)) => {
                persona(path, n, Some(name), Some(description)).map(|p| (n, p))
            }
            None => Err(bad_line(
                path,
                n,
                "description",
                "a persona line is `NAME: DESCRIPTION`",
            )),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(name);
        std::fs::write(&p, text).unwrap();
        (d, p)
    }

    fn err(name: &str, text: &str) -> String {
        let (_d, p) = file(name, text);
        let e = read_personas(&p).unwrap_err();
        assert!(e.is_user_error(), "{e}");
        mtr_core::Error::from(e).to_string()
    }

    #[test]
    fn the_three_formats_read_the_same_personas() {
        let want = vec![
            Persona {
                name: "Nurse".into(),
                description: "A night-shift nurse who writes short, practical questions.".into(),
            },
            Persona {
                name: "Student".into(),
                description: "A first-year student, curious, writes long questions.".into(),
            },
        ];
        let (_a, jsonl) = file(
            "p.jsonl",
            "{\"name\": \"Nurse\", \"description\": \"A night-shift nurse who writes short, practical questions.\"}\n\n{\"name\": \"Student\", \"description\": \"A first-year student, curious, writes long questions.\"}\n",
        );
        let (_b, toml) = file(
            "p.toml",
            "[[persona]]\nname = \"Nurse\"\ndescription = \"A night-shift nurse who writes short, practical questions.\"\n\n[[persona]]\nname = \"Student\"\ndescription = \"\"\"A first-year student,\n curious, writes long questions.\"\"\"\n",
        );
        let (_c, txt) = file(
            "p.txt",
            "# who asks\nNurse: A night-shift nurse who writes short, practical questions.\nStudent: A first-year student, curious, writes long questions.\n",
        );
        for p in [jsonl, toml, txt] {
            let (got, hash) = read_personas(&p).unwrap();
            assert_eq!(got, want, "{}", p.display());
            assert_eq!(hash.len(), 64, "{hash}");
        }
    }

    #[test]
    fn bad_files_name_the_file_line_and_field() {
        let e = err(
            "p.jsonl",
            "{\"name\": \"A\", \"description\": \"x\"}\n{\"name\": \"B\"}\n",
        );
        assert!(e.contains("p.jsonl:2: field `description`"), "{e}");
        let e = err(
            "p.jsonl",
            "{\"name\": \"A\", \"description\": \"x\"}\n{oops\n",
        );
        assert!(
            e.contains("p.jsonl:2:") && e.contains("not a JSON object"),
            "{e}"
        );
        let e = err("p.txt", "A: one\n\nno colon here\n");
        assert!(e.contains("p.txt:3: field `description`"), "{e}");
        let e = err(
            "p.toml",
            "[[persona]]\nname = \"A\"\ndescription = \"x\"\n\n[[persona]]\nname = \"\"\ndescription = \"y\"\n",
        );
        assert!(e.contains("p.toml:5: field `name`"), "{e}");
        // duplicate names: both lines
        let e = err("p.txt", "Nurse: one\nStudent: two\nnurse: three\n");
        assert!(
            e.contains("p.txt:3: field `name`") && e.contains("lines 1 and 3"),
            "{e}"
        );
        // empty and missing files
        let e = err("p.txt", "# nothing\n\n");
        assert!(e.contains("p.txt") && e.contains("empty"), "{e}");
        let e = read_personas(Path::new("/no/such/personas.txt")).unwrap_err();
        assert!(
            e.is_user_error() && e.to_string().contains("personas.txt"),
            "{e}"
        );
    }
}
