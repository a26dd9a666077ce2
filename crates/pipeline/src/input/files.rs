//! Which files of a corpus path are read, and as what. A file is taken by its name (a
//! compression extension first stripped: `.gz`, `.bz2`, `.zst`, `.xz`): `.jsonl`/`.ndjson`
//! JSON lines, `.json` JSON lines or an array (by its first character), `.parquet`, `.zip`
//! (MTRAG's passage-level corpora), `.txt` one document each, `.pdf`, `.docx`, `.odt`,
//! `.html`/`.htm`, `.md`/`.markdown`, `.rst` documents read by page or section; a file without one of these
//! extensions (WikiExtractor's `AA/wiki_00`) by its first bytes: `<doc ` is WikiExtractor
//! output, `{` JSON lines, `%PDF-` a PDF, `<!doctype html`/`<html` an HTML page, anything else
//! is not a corpus file. A `.txt` file that starts with `<doc ` is WikiExtractor output too.
//! In a folder that holds records (JSON, Parquet, zip, WikiExtractor) the document files are
//! its documentation (a dump's README.md), not documents. A BEIR or native benchmark folder
//! is read from its `corpus.jsonl` alone. Listed in sorted order, hidden entries skipped, so
//! that reading and the input fingerprint are reproducible.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use mtr_core::formats::walk;
use mtr_core::{BenchmarkDir, Error as CoreError, InputError};

use super::compressed::{self, Compression};
use super::wikiextractor;
use crate::error::Result;

/// How a corpus file is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// One document per file (`.txt`).
    Text,
    /// `<doc ...> ... </doc>` blocks.
    WikiExtractor,
    /// One JSON record per line.
    JsonLines,
    /// A JSON array of records (or JSON lines), read whole.
    Json,
    Parquet,
    /// A zip archive of JSON-lines or JSON files.
    Zip,
    /// A PDF's text layer, one document per page.
    Pdf,
    /// A Word document, one document per section.
    Docx,
    /// An OpenDocument text, one document per section.
    Odt,
    /// An HTML page's main content, one document per section.
    Html,
    /// reStructuredText, one document per section.
    Rst,
    /// Markdown, one document per section.
    Markdown,
}

impl Format {
    /// True for files that are documents (a `.txt` read whole, the others by page or section),
    /// false for files of records.
    pub(crate) fn is_document(self) -> bool {
        matches!(
            self,
            Self::Text
                | Self::Pdf
                | Self::Docx
                | Self::Odt
                | Self::Html
                | Self::Rst
                | Self::Markdown
        )
    }
}

/// A file to read and its format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CorpusFile {
    pub(crate) path: PathBuf,
    pub(crate) format: Format,
}

/// How deep a folder is searched (WikiExtractor's `AA/`, a Hugging Face dump's
/// `<config>/data/`).
const MAX_DEPTH: usize = 8;

/// The corpus files of `path` (a file, a folder, a BEIR or native benchmark folder), sorted.
pub(crate) fn list(path: &Path) -> Result<Vec<CorpusFile>> {
    if path.is_dir()
        && (BenchmarkDir::is_native(path)
            || mtr_core::formats::looks_like(mtr_core::formats::Format::Beir, path))
    {
        let corpus = path.join("corpus.jsonl");
        return Ok(vec![CorpusFile {
            path: corpus,
            format: Format::JsonLines,
        }]);
    }
    if path.is_file() {
        let format = format_of(path)?.unwrap_or(Format::JsonLines);
        return Ok(vec![CorpusFile {
            path: path.to_path_buf(),
            format,
        }]);
    }
    if !path.exists() {
        return Err(
            CoreError::from(InputError::new(path, "no such file or folder").hint(
                "--corpus takes a folder or file of documents: WikiExtractor output, JSON lines, \
                 JSON, Parquet, a zip of JSON lines, .md/.txt files (compressed with .gz, .bz2, \
                 .zst or .xz or not)",
            ))
            .into(),
        );
    }
    let mut out = Vec::new();
    for p in walk::files(path, MAX_DEPTH)? {
        if let Some(format) = format_of(&p)? {
            out.push(CorpusFile { path: p, format });
        }
    }
    if out.iter().any(|f| !f.format.is_document()) {
        out.retain(|f| !f.format.is_document());
    }
    if out.is_empty() {
        return Err(CoreError::from(
            InputError::new(path, "the folder has no corpus files").hint(
                "point --corpus at WikiExtractor output, JSON lines, JSON, Parquet or .md/.txt \
                 files (compressed or not)",
            ),
        )
        .into());
    }
    Ok(out)
}

/// The format of one file (None: not a corpus file).
fn format_of(p: &Path) -> Result<Option<Format>> {
    let name = walk::file_name(p);
    let (_, bare) = Compression::of(&name);
    let lower = bare.to_ascii_lowercase();
    let ext = Path::new(&lower)
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("");
    Ok(match ext {
        "jsonl" | "ndjson" => Some(Format::JsonLines),
        "json" => Some(match first_bytes(p)?.trim_ascii_start().first() {
            Some(b'[') => Format::Json,
            _ => Format::JsonLines,
        }),
        "parquet" => Some(Format::Parquet),
        "zip" => Some(Format::Zip),
        "md" | "markdown" => Some(Format::Markdown),
        "pdf" => Some(Format::Pdf),
        "docx" => Some(Format::Docx),
        "odt" => Some(Format::Odt),
        "html" | "htm" | "xhtml" => Some(Format::Html),
        "rst" => Some(Format::Rst),
        "txt" if wikiextractor::sniff(&first_bytes(p)?) => Some(Format::WikiExtractor),
        "txt" => Some(Format::Text),
        _ => {
            let head = first_bytes(p)?;
            if wikiextractor::sniff(&head) {
                Some(Format::WikiExtractor)
            } else if head.starts_with(b"%PDF-") {
                Some(Format::Pdf)
            } else if looks_like_html(&head) {
                Some(Format::Html)
            } else if head.trim_ascii_start().starts_with(b"{") {
                Some(Format::JsonLines)
            } else {
                None
            }
        }
    })
}

/// True when a file's first bytes open an HTML document.
fn looks_like_html(head: &[u8]) -> bool {
    let lower = head.trim_ascii_start().to_ascii_lowercase();
    lower.starts_with(b"<!doctype html") || lower.starts_with(b"<html")
}

/// The first bytes of a (decompressed) file, to tell its format.
fn first_bytes(p: &Path) -> Result<Vec<u8>> {
    let mut r = compressed::open(p)?;
    let head = r.fill_buf().map_err(|e| compressed::read_error(p, e))?;
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    Ok(head[..head.len().min(64)].to_vec())
}
