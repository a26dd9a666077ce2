//! The training files: one JSON line per turn as FlagEmbedding reads it (`query`, `pos`, `neg`
//! lists, with the turn's `turn_id` and `dialogue_id`), or with `--flat` one line per
//! (positive, negative) pair with exactly the columns sentence-transformers'
//! MultipleNegativesRankingLoss takes in order (`anchor`, `positive`, `negative`: any other
//! column would be fed to the loss too). Each split is its own file, written atomically.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mtr_core::jsonl::JsonlWriter;
use serde::Serialize;

use crate::error::Result;

/// How a turn's triplets are laid out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TripletForm {
    /// One line per turn: `query`, `pos` and `neg` lists (FlagEmbedding).
    #[default]
    Lists,
    /// One line per (positive, negative) pair: `anchor`, `positive`, `negative`.
    Flat,
}

/// One turn's triplets, texts resolved.
pub(crate) struct TurnTriplets<'a> {
    pub turn_id: &'a str,
    pub dialogue_id: &'a str,
    pub query: &'a str,
    pub pos: Vec<String>,
    pub neg: Vec<String>,
}

#[derive(Serialize)]
struct ListsLine<'a> {
    turn_id: &'a str,
    dialogue_id: &'a str,
    query: &'a str,
    pos: &'a [String],
    neg: &'a [String],
}

#[derive(Serialize)]
struct FlatLine<'a> {
    anchor: &'a str,
    positive: &'a str,
    negative: &'a str,
}

/// The file of split `name`: `out` itself when there is one split, else `STEM.NAME.jsonl`
/// beside it.
pub fn split_path(out: &Path, name: &str, single: bool) -> PathBuf {
    if single {
        return out.to_path_buf();
    }
    let file = out
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "triplets.jsonl".into());
    let stem = file.strip_suffix(".jsonl").unwrap_or(&file);
    out.with_file_name(format!("{stem}.{name}.jsonl"))
}

/// Writers of every split, with what each has written.
pub(crate) struct SplitWriters {
    form: TripletForm,
    writers: BTreeMap<String, (JsonlWriter, PathBuf, usize)>,
}

impl SplitWriters {
    pub(crate) fn create<'a>(
        out: &Path,
        names: impl Iterator<Item = &'a str>,
        single: bool,
        form: TripletForm,
    ) -> Result<Self> {
        let mut writers = BTreeMap::new();
        for name in names {
            let path = split_path(out, name, single);
            writers.insert(name.to_string(), (JsonlWriter::create(&path)?, path, 0));
        }
        Ok(Self { form, writers })
    }

    /// Writes one turn's lines to `split`; returns how many.
    pub(crate) fn write(&mut self, split: &str, t: &TurnTriplets<'_>) -> Result<usize> {
        let Some((w, _, turns)) = self.writers.get_mut(split) else {
            return Err(crate::error::AuditError::Internal(format!(
                "no split `{split}`"
            )));
        };
        *turns += 1;
        match self.form {
            TripletForm::Lists => {
                w.write(&ListsLine {
                    turn_id: t.turn_id,
                    dialogue_id: t.dialogue_id,
                    query: t.query,
                    pos: &t.pos,
                    neg: &t.neg,
                })?;
                Ok(1)
            }
            TripletForm::Flat => {
                let mut n = 0;
                for positive in &t.pos {
                    for negative in &t.neg {
                        w.write(&FlatLine {
                            anchor: t.query,
                            positive,
                            negative,
                        })?;
                        n += 1;
                    }
                }
                Ok(n)
            }
        }
    }

    /// Commits every file: `(split, path, turns, lines)` in split-name order.
    pub(crate) fn commit(self) -> Result<Vec<(String, PathBuf, usize, u64)>> {
        let mut out = Vec::new();
        for (name, (w, path, turns)) in self.writers {
            let lines = w.commit()?;
            out.push((name, path, turns, lines));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_files_sit_beside_the_named_file() {
        let out = Path::new("out/tr.jsonl");
        assert_eq!(split_path(out, "train", true), out);
        assert_eq!(split_path(out, "dev", false), Path::new("out/tr.dev.jsonl"));
        assert_eq!(
            split_path(Path::new("x.json"), "dev", false),
            Path::new("x.json.dev.jsonl")
        );
    }
}
