//! Plain `.txt` files, one document each: the id is the relative path without extension (`/`
//! separated), the title a first line `# Title` (removed from the text) or else the file stem.
//! (Markdown files are read by section: [`super::markup`].)

use std::path::Path;

use mtr_core::InputError;

use super::Document;
use super::collect::Collector;
use super::compressed::{self, Compression};
use crate::error::Result;

/// Reads the text file `file` of the corpus folder `root` as one document.
pub(crate) fn read(root: &Path, file: &Path, out: &mut Collector) -> Result<()> {
    let rel = file.strip_prefix(root).unwrap_or(file);
    let rel_name = rel.to_string_lossy().replace('\\', "/");
    let (_, bare) = Compression::of(&rel_name);
    let id = Path::new(bare)
        .with_extension("")
        .to_string_lossy()
        .into_owned();
    let raw = compressed::read_text(file)?.replace("\r\n", "\n");
    let (title, text) = split_title(&raw);
    let title = title.unwrap_or_else(|| {
        Path::new(&id)
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    });
    out.document(Document { id, title, text }, || InputError::new(file, ""));
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
