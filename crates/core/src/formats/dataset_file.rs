//! Finding the dataset file of single-file JSON formats (TopiOCQA, QReCC, INSCIT, CAsT) inside a
//! source that may be the file itself or a folder of splits, and cheap content sniffing.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::walk;
use crate::error::{InputError, Result};

/// The first `n` bytes of a file as text (lossy), for sniffing.
pub(super) fn head(path: &Path, n: usize) -> String {
    let mut buf = vec![0u8; n];
    let len = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut buf))
        .unwrap_or(0);
    String::from_utf8_lossy(&buf[..len]).into_owned()
}

fn is_json_name(p: &Path) -> bool {
    let n = walk::file_name(p).to_ascii_lowercase();
    n.ends_with(".json") || n.ends_with(".jsonl")
}

/// JSON files directly in `src` (or `src` itself) whose head satisfies `looks`.
pub(super) fn candidates(src: &Path, looks: fn(&str) -> bool) -> Vec<PathBuf> {
    if src.is_file() {
        return if looks(&head(src, 1 << 16)) {
            vec![src.to_path_buf()]
        } else {
            Vec::new()
        };
    }
    walk::files(src, 2)
        .unwrap_or_default()
        .into_iter()
        .filter(|p| is_json_name(p) && looks(&head(p, 1 << 16)))
        .collect()
}

/// The dataset file to import: `src` itself, or the one file in the folder matching `split`
/// (default `dev`, then `test`), or the only candidate.
pub(super) fn pick(
    src: &Path,
    looks: fn(&str) -> bool,
    split: Option<&str>,
    what: &str,
) -> Result<PathBuf> {
    if src.is_file() {
        // The user named the format and the file: parse it and let its errors speak.
        return Ok(src.to_path_buf());
    }
    let c = candidates(src, looks);
    if c.len() == 1 {
        return Ok(c[0].clone());
    }
    if c.is_empty() {
        return Err(InputError::new(src, format!("no {what} data file found")).into());
    }
    let prefs: Vec<&str> = match split {
        Some(s) => vec![s],
        None => vec!["dev", "test", "valid"],
    };
    for p in &prefs {
        let hits: Vec<&PathBuf> = c
            .iter()
            .filter(|f| walk::file_name(f).to_ascii_lowercase().contains(p))
            .collect();
        if hits.len() == 1 {
            return Ok(hits[0].clone());
        }
    }
    Err(
        InputError::new(src, format!("several {what} data files; choose one"))
            .field("--split")
            .hint(format!(
                "pass the file itself or --split with a part of its name: {}",
                c.iter()
                    .map(|p| walk::file_name(p))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
            .into(),
    )
}

/// Corpus files in the folder of `src` other than the dataset files themselves.
pub(super) fn sibling_corpus(src: &Path, dataset: &Path, names: &[&str]) -> Option<PathBuf> {
    let dir = if src.is_dir() { src } else { src.parent()? };
    let files = walk::files(dir, 2).ok()?;
    files.into_iter().find(|f| {
        f != dataset && {
            let n = walk::file_name(f).to_ascii_lowercase();
            names.iter().any(|want| n.contains(want))
        }
    })
}
