//! Reading a persona or seed file: its text (an unreadable file is the user's error, naming
//! it), its content hash (what the fingerprint holds of it), and its format by extension and
//! first character, so that both readers report a bad line the same way.

use std::path::Path;

use mtr_core::InputError;

use crate::error::Result;

/// The formats a persona or seed file may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Format {
    /// One JSON object a line (`.jsonl`, `.ndjson`, or a `.json` whose first character is `{`).
    JsonLines,
    /// One JSON array of objects (a `.json` whose first character is `[`).
    JsonArray,
    /// TOML (`.toml`).
    Toml,
    /// Tab-separated `id<TAB>text` (`.tsv`).
    Tsv,
    /// Anything else: plain text lines.
    Text,
}

/// The text and content hash of `path`, and its format; an unreadable, non-UTF-8 or empty
/// file is an error naming it.
pub(super) fn read(path: &Path, what: &str) -> Result<(String, String, Format)> {
    let bytes = std::fs::read(path).map_err(|e| {
        input(InputError::new(
            path,
            format!("cannot read the {what} file: {e}"),
        ))
    })?;
    let hash = mtr_core::fingerprint::hash_bytes(&bytes);
    let text = String::from_utf8(bytes).map_err(|e| {
        input(InputError::new(
            path,
            format!("the {what} file is not UTF-8: {e}"),
        ))
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text).to_string();
    if text
        .lines()
        .all(|l| l.trim().is_empty() || l.trim_start().starts_with('#'))
    {
        return Err(input(
            InputError::new(path, format!("the {what} file is empty")).hint(format!(
                "give at least one {what}, or leave the setting unset"
            )),
        ));
    }
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let first = text.trim_start().chars().next();
    let format = match ext.as_str() {
        "jsonl" | "ndjson" => Format::JsonLines,
        "json" if first == Some('[') => Format::JsonArray,
        "json" => Format::JsonLines,
        "toml" => Format::Toml,
        "tsv" => Format::Tsv,
        _ => Format::Text,
    };
    Ok((text, hash, format))
}

/// The lines of `text` that hold something, with their 1-based numbers: blank lines and
/// `#` comments are skipped.
pub(super) fn content_lines(text: &str) -> impl Iterator<Item = (u64, &str)> {
    text.lines()
        .enumerate()
        .map(|(i, l)| (i as u64 + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
}

/// A bad line of `path`: its number and the field at fault.
pub(super) fn bad_line(
    path: &Path,
    line: u64,
    field: &str,
    message: impl Into<String>,
) -> crate::Error {
    input(InputError::new(path, message).line(line).field(field))
}

/// A user error about a file.
pub(super) fn input(e: InputError) -> crate::Error {
    crate::Error::Core(mtr_core::Error::from(e))
}
