//! Files that are documents rather than records (PDF, DOCX, ODT, HTML, Markdown,
//! reStructuredText):
//! each read by its module into pages or sections, each page or section one [`Document`]
//! whose id is the file's id (its path relative to the corpus folder, extension kept, since
//! `guide.pdf` and `guide.html` may both exist) with the place appended (`#page=3` or
//! `#<anchor>`), titled `<document title>, page 3` or by its heading path, and whose
//! [`Source`] names the file and the page or section. A file that cannot be read comes back
//! as the reason, for the caller to skip and list (or, strict, to fail on).

use std::path::Path;

use mtr_core::InputError;

use super::collect::Collector;
use super::document::{Document, Source};
use super::files::Format;
use super::office::{self, Office};
use super::sections::{self, Section};
use super::{compressed, html, markup, pdf};

/// What one document file holds: its pages or sections as documents with their sources, and
/// the pages read (PDF).
pub(crate) struct Parsed {
    pub(crate) pages: u64,
    pub(crate) documents: Vec<(Document, Source)>,
}

/// Reads the document file `file` (`rel`: its path relative to the corpus folder), or says
/// why it cannot be read. Touches nothing shared, so files are read side by side
/// ([`super::load`]) and collected in their order.
pub(crate) fn parse(file: &Path, rel: &str, format: Format) -> Result<Parsed, String> {
    let stem = file_stem(rel);
    let sections = match format {
        Format::Pdf => return pdf_pages(file, rel, stem),
        Format::Docx | Format::Odt => {
            let kind = if format == Format::Docx {
                Office::Docx
            } else {
                Office::Odt
            };
            sections::sections(office::read(file, kind)?, &stem)
        }
        Format::Html => {
            let page = html::read(file)?;
            let title = if page.title.is_empty() {
                stem
            } else {
                page.title
            };
            sections::sections(page.blocks, &title)
        }
        Format::Rst => {
            let text = compressed::read_text(file).map_err(|e| e.to_string())?;
            sections::sections(markup::rst_blocks(&text), &stem)
        }
        Format::Markdown => {
            let text = compressed::read_text(file).map_err(|e| e.to_string())?;
            let (title, blocks) = markup::markdown_blocks(&text);
            sections::sections(blocks, &title.unwrap_or(stem))
        }
        _ => Vec::new(),
    };
    by_section(rel, sections)
}

/// Puts what [`parse`] read of `file` into `out`, in order.
pub(crate) fn collect(file: &Path, parsed: Parsed, out: &mut Collector) {
    for (doc, source) in parsed.documents {
        out.located(doc, source, || InputError::new(file, "").field("id"));
    }
}

/// One document per PDF page with text.
fn pdf_pages(file: &Path, rel: &str, stem: String) -> Result<Parsed, String> {
    let text = pdf::read(file)?;
    let title = text.title.unwrap_or(stem);
    let pages = text.pages.len() as u64;
    let documents = text
        .pages
        .into_iter()
        .filter(|p| !p.text.trim().is_empty())
        .map(|page| {
            let doc = Document {
                id: format!("{rel}#page={}", page.number),
                title: format!("{title}, page {}", page.number),
                text: page.text,
            };
            let source = Source {
                file: rel.to_string(),
                page: Some(page.number),
                section: None,
            };
            (doc, source)
        })
        .collect();
    Ok(Parsed { pages, documents })
}

/// One document per section; a file without any text is unreadable.
fn by_section(rel: &str, sections: Vec<Section>) -> Result<Parsed, String> {
    if sections.is_empty() {
        return Err("no text found".to_string());
    }
    let documents = sections
        .into_iter()
        .map(|s| {
            let doc = Document {
                id: format!("{rel}#{}", s.anchor),
                title: s.title.clone(),
                text: s.text,
            };
            let source = Source {
                file: rel.to_string(),
                page: None,
                section: Some(s.title),
            };
            (doc, source)
        })
        .collect();
    Ok(Parsed {
        pages: 0,
        documents,
    })
}

/// The file name without its extension, as a title of last resort.
fn file_stem(rel: &str) -> String {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    Path::new(name)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| name.to_string())
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use crate::input::{ReadOptions, Unreadable, read, read_with};

    fn fixtures(dir: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/corpus-docs")
            .join(dir)
    }

    #[test]
    fn pdf_docx_odt_html_rst_and_markdown_read_by_page_and_section() {
        let l = read(&fixtures("mixed"), &ReadOptions::default()).unwrap();
        let doc = |id: &str| {
            let i = l.documents.iter().position(|d| d.id == id);
            let i = i.unwrap_or_else(|| panic!("no {id}"));
            (&l.documents[i], &l.sources[i])
        };
        // Chromium's PDF: running header (date, title) and footer (URL, page n/3) dropped
        let (p2, src) = doc("05-business-travel.pdf#page=2");
        assert_eq!(
            (src.file.as_str(), src.page),
            ("05-business-travel.pdf", Some(2))
        );
        assert!(p2.title.ends_with(", page 2"), "{}", p2.title);
        assert!(
            !p2.text.contains("127.0.0.1") && !p2.text.contains("AM Business"),
            "{}",
            p2.text
        );
        assert!(!p2.text.contains('\u{fb01}'), "ligatures spelled out");
        assert_eq!(l.report.pages, 5);
        // LibreOffice's PDF from pandoc's DOCX: the text in reading order
        let (p1, _) = doc("03-parental-leave.pdf#page=1");
        assert!(
            p1.text
                .starts_with("Parental Leave\n\nKestrel Ridge offers"),
            "{}",
            p1.text
        );
        // DOCX and ODT: heading paths, lists
        let (d, src) = doc("06-expenses-per-diem.docx#receipts");
        assert_eq!(d.title, "Expense Claims and Per Diem › Receipts");
        assert_eq!(src.section.as_deref(), Some(d.title.as_str()));
        let (o, _) = doc("11-remote-work.odt#core-hours");
        assert_eq!(o.title, "Remote and Hybrid Work › Core hours");
        // HTML: the article only (no cookie banner, navigation, aside, footer, script);
        // windows-1252 decoded
        for d in l.documents.iter().filter(|d| d.id.contains(".htm")) {
            for furniture in [
                "cookies",
                "Related pages",
                "Contact the People team",
                "dataLayer",
            ] {
                assert!(!d.text.contains(furniture), "{}: {furniture}", d.id);
            }
        }
        let (h, _) = doc("02-sick-leave.htm#self-certification-and-medical-certificates");
        assert!(h.text.contains("baixa médica"), "{}", h.text);
        // reStructuredText and Markdown
        let (r, _) = doc("07-accounts-passwords.rst#password-rules");
        assert!(
            r.text.contains("- be at least 14 characters long;"),
            "{}",
            r.text
        );
        let (m, src) = doc("10-onboarding.md#your-first-day");
        assert_eq!(
            (m.title.as_str(), src.file.as_str()),
            (
                "Onboarding: Your First Weeks › Your first day",
                "10-onboarding.md"
            )
        );
        assert_eq!(src.section.as_deref(), Some(m.title.as_str()));
        assert!(
            m.text.starts_with("First days are always on a Monday"),
            "{}",
            m.text
        );
        let (intro, _) = doc("10-onboarding.md#onboarding-your-first-weeks");
        assert!(
            intro.text.starts_with("Welcome to Kestrel Ridge."),
            "{}",
            intro.text
        );
        assert!(l.report.skipped.is_empty(), "{:?}", l.report.skipped);
    }

    #[test]
    fn langchain_documents_and_llamaindex_nodes_keep_their_ids() {
        let l = read(&fixtures("chunks"), &ReadOptions::default()).unwrap();
        let lc: Vec<_> = l
            .documents
            .iter()
            .filter(|d| d.id.starts_with("vpn-"))
            .collect();
        assert!(lc.len() >= 8, "{}", lc.len());
        assert_eq!(lc[0].id, "vpn-000");
        assert_eq!(lc[1].title, "Laptops, Devices and VPN › Standard equipment");
        assert!(
            lc[1].text.starts_with("On your first day you receive"),
            "{}",
            lc[1].text
        );
        let li: Vec<_> = l
            .documents
            .iter()
            .filter(|d| !d.id.starts_with("vpn-"))
            .collect();
        assert!(li.len() >= 3, "{}", li.len());
        assert!(
            li.iter()
                .all(|d| d.id.len() == 36 && d.title == "12-benefits.md")
        );
        assert!(
            li[0].text.starts_with("# Benefits and Wellbeing"),
            "{}",
            li[0].text
        );
        let sources: std::collections::BTreeSet<_> =
            l.sources.iter().map(|s| s.file.as_str()).collect();
        assert_eq!(
            sources.into_iter().collect::<Vec<_>>(),
            ["langchain.jsonl", "llamaindex.json"]
        );
    }

    #[test]
    fn unreadable_files_are_named_with_their_reason_skipped_or_fatal() {
        let mixed = tempfile::tempdir().unwrap();
        for (from, name) in [
            ("mixed", "10-onboarding.md"),
            ("bad", "encrypted.pdf"),
            ("bad", "scanned.pdf"),
            ("bad", "truncated.docx"),
            ("bad", "mislabelled.html"),
        ] {
            std::fs::copy(fixtures(from).join(name), mixed.path().join(name)).unwrap();
        }
        let l = read(mixed.path(), &ReadOptions::default()).unwrap();
        let skipped: Vec<_> = l
            .report
            .skipped
            .iter()
            .map(|s| (s.file.as_str(), s.reason.as_str()))
            .collect();
        assert_eq!(skipped.len(), 4, "{skipped:?}");
        assert!(
            skipped[0].0 == "encrypted.pdf" && skipped[0].1.contains("password"),
            "{skipped:?}"
        );
        assert!(
            skipped[1].0 == "mislabelled.html" && skipped[1].1.contains("not valid UTF-8"),
            "{skipped:?}"
        );
        assert!(
            skipped[2].0 == "scanned.pdf" && skipped[2].1.contains("no text layer"),
            "{skipped:?}"
        );
        assert!(
            skipped[3].0 == "truncated.docx" && skipped[3].1.contains("zip"),
            "{skipped:?}"
        );
        assert!(
            l.report.summary().contains("4 unreadable files skipped"),
            "{}",
            l.report.summary()
        );
        // strict: the first one fails the read, named
        let e = read_with(mixed.path(), &ReadOptions::default(), Unreadable::Fail).unwrap_err();
        let core = match e {
            crate::Error::Core(c) => c,
            other => panic!("{other}"),
        };
        assert!(
            core.is_user_error() && core.to_string().contains("encrypted.pdf"),
            "{core}"
        );
        // nothing readable: every file named
        let e = read(&fixtures("bad"), &ReadOptions::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no file of the corpus could be read") && e.contains("scanned.pdf"),
            "{e}"
        );
    }
}
