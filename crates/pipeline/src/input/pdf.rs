//! PDF files: the text layer, page by page, in the order pdf-extract (on lopdf) positions its
//! characters, cleaned by [`pages`]: headers and footers repeated on every page dropped,
//! words hyphenated at line ends joined, soft hyphens removed, lines joined into paragraphs.
//! Each page becomes one document (`file.pdf#page=3`, the PDF open-parameter form a browser
//! opens at that page). An encrypted PDF (one that opens only with a password), a PDF with no
//! text layer (a scan without OCR), and a file lopdf cannot parse are unreadable with the
//! reason.
//!
//! pdf-extract unwraps on fonts and content streams it does not expect (it has about a hundred
//! `unwrap`s); no other pure-Rust reader compared recovers as much text (see
//! benchmarks/corpus/README.md). Its extraction of a page therefore runs under
//! `catch_unwind`, deliberately: a panic there makes that page unreadable (counted and
//! named), never the run. Nothing of ours runs inside it, so no state of ours is left half
//! changed.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use lopdf::Document as Pdf;

use super::pages::{self, CleanPage};

/// What a PDF holds: its title (from the document information, when set) and its pages.
pub(crate) struct PdfText {
    pub(crate) title: Option<String>,
    pub(crate) pages: Vec<CleanPage>,
}

/// Reads the PDF at `path`, or says why it cannot be read.
pub(crate) fn read(path: &Path) -> Result<PdfText, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read: {e}"))?;
    let mut doc = Pdf::load_mem(&bytes).map_err(|e| match e {
        lopdf::Error::Decryption(_) => "encrypted: it opens only with a password".to_string(),
        e => format!("not a readable PDF: {e}"),
    })?;
    if doc.is_encrypted() && doc.decrypt("").is_err() {
        return Err("encrypted: it opens only with a password".to_string());
    }
    let numbers: Vec<u32> = doc.get_pages().keys().copied().collect();
    if numbers.is_empty() {
        return Err("the PDF has no pages".to_string());
    }
    let mut raw = Vec::with_capacity(numbers.len());
    let mut failed = Vec::new();
    for n in &numbers {
        match page_text(&doc, *n) {
            Ok(t) => raw.push(t),
            Err(e) => {
                failed.push(format!("page {n}: {e}"));
                raw.push(String::new());
            }
        }
    }
    let cleaned = pages::clean(&raw);
    if cleaned.iter().all(|p| p.text.trim().is_empty()) {
        return Err(match failed.first() {
            Some(f) => format!("no page could be read ({f})"),
            None => "no text layer (a scanned PDF? run OCR first, e.g. ocrmypdf)".to_string(),
        });
    }
    for f in &failed {
        tracing::warn!("{}: {f}", path.display());
    }
    Ok(PdfText {
        title: info_title(&doc),
        pages: cleaned,
    })
}

/// The text of page `n` as pdf-extract lays it out.
fn page_text(doc: &Pdf, n: u32) -> Result<String, String> {
    let run = || {
        let mut s = String::new();
        let mut out = pdf_extract::PlainTextOutput::new(&mut s);
        pdf_extract::output_doc_page(doc, &mut out, n).map(|()| s)
    };
    match catch_unwind(AssertUnwindSafe(run)) {
        Ok(Ok(s)) => Ok(s),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("the PDF reader failed on this page's content".to_string()),
    }
}

/// The `/Title` of the document information dictionary, when it is set and not a file name.
fn info_title(doc: &Pdf) -> Option<String> {
    let info = doc.trailer.get(b"Info").ok()?;
    let dict = doc.dereference(info).ok()?.1.as_dict().ok()?;
    let raw = dict.get(b"Title").ok()?;
    let title = lopdf::decode_text_string(raw).ok()?;
    let title = title.trim();
    let looks_like_file = title.contains('.') && !title.contains(' ');
    (!title.is_empty() && !looks_like_file).then(|| title.to_string())
}
