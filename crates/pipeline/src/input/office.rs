//! Word-processor files: DOCX (Office Open XML: `word/document.xml` in a zip) and ODT
//! (OpenDocument: `content.xml` in a zip), read with quick-xml as a run of headings and
//! paragraphs ([`Block`]): DOCX headings by their `Heading1`..`Heading9`/`Title` paragraph
//! style, ODT headings by `text:h` and its outline level; list items as `- ` lines, table rows
//! as their cells joined by ` | `, tabs and line breaks kept as spaces. Footnotes, comments,
//! headers and footers of the page, text boxes' order and tracked changes are not read apart
//! (a text box's text stays where its anchor is). A file that is not a zip, a zip without the
//! document part, or XML that does not parse is unreadable with the reason.

use std::io::Read;
use std::path::Path;

use quick_xml::Reader;
use quick_xml::XmlVersion;
use quick_xml::events::{BytesRef, BytesStart, Event};

use super::sections::{Block, collapse};

/// Which word-processor format a file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Office {
    Docx,
    Odt,
}

impl Office {
    /// The archive entry that holds the text.
    fn part(self) -> &'static str {
        match self {
            Self::Docx => "word/document.xml",
            Self::Odt => "content.xml",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Docx => "DOCX",
            Self::Odt => "ODT",
        }
    }
}

/// The blocks of the word-processor file at `path`, or why it cannot be read.
pub(crate) fn read(path: &Path, kind: Office) -> Result<Vec<Block>, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("cannot open: {e}"))?;
    let mut zip = zip::ZipArchive::new(file)
        .map_err(|e| format!("not a readable {} (zip) file: {e}", kind.name()))?;
    let mut entry = zip
        .by_name(kind.part())
        .map_err(|e| format!("the {} has no {} ({e})", kind.name(), kind.part()))?;
    let mut xml = Vec::new();
    entry
        .read_to_end(&mut xml)
        .map_err(|e| format!("{} is damaged: {e}", kind.part()))?;
    blocks(&xml, kind).map_err(|e| format!("{} is not well-formed XML: {e}", kind.part()))
}

/// The paragraph being read.
#[derive(Default)]
struct Para {
    text: String,
    heading: Option<u8>,
    list: bool,
}

/// Walks the document XML into blocks.
fn blocks(xml: &[u8], kind: Office) -> Result<Vec<Block>, quick_xml::Error> {
    let mut reader = Reader::from_reader(xml);
    let mut buf = Vec::new();
    let mut out = Vec::new();
    let mut para: Option<Para> = None;
    let mut row: Option<Vec<String>> = None;
    let mut in_text = kind == Office::Odt;
    loop {
        let event = reader.read_event_into(&mut buf)?;
        match &event {
            Event::Start(e) | Event::Empty(e) => {
                let empty = matches!(event, Event::Empty(_));
                let name = e.local_name();
                match (kind, name.as_ref()) {
                    (Office::Docx, b"p") | (Office::Odt, b"p" | b"h") if !empty => {
                        para = Some(Para {
                            heading: odt_heading(e, kind),
                            list: para.as_ref().is_some_and(|p| p.list),
                            ..Para::default()
                        });
                    }
                    (Office::Docx, b"pStyle") => {
                        if let Some(p) = &mut para {
                            p.heading = docx_heading(e);
                        }
                    }
                    (Office::Docx, b"numPr") => {
                        if let Some(p) = &mut para {
                            p.list = true;
                        }
                    }
                    (Office::Docx, b"t") => in_text = !empty,
                    (_, b"tab" | b"br" | b"line-break" | b"s") => push_text(&mut para, " "),
                    (_, b"tr" | b"table-row") if !empty => row = Some(Vec::new()),
                    (Office::Odt, b"list-item") if !empty => {
                        para = Some(Para {
                            list: true,
                            ..Para::default()
                        });
                    }
                    _ => {}
                }
            }
            Event::End(e) => match (kind, e.local_name().as_ref()) {
                (Office::Docx, b"p") | (Office::Odt, b"p" | b"h") => {
                    let list = para.as_ref().is_some_and(|p| p.list && kind == Office::Odt);
                    end_para(para.take(), &mut row, &mut out);
                    if list {
                        para = Some(Para {
                            list: true,
                            ..Para::default()
                        });
                    }
                }
                (Office::Odt, b"list-item") => para = None,
                (Office::Docx, b"t") => in_text = false,
                (_, b"tr" | b"table-row") => {
                    if let Some(cells) = row.take() {
                        let cells: Vec<_> = cells.into_iter().filter(|c| !c.is_empty()).collect();
                        if !cells.is_empty() {
                            out.push(Block::Para(cells.join(" | ")));
                        }
                    }
                }
                _ => {}
            },
            Event::Text(t) if in_text => {
                let s = t.decode().map_err(quick_xml::Error::Encoding)?;
                push_text(&mut para, &s);
            }
            Event::GeneralRef(r) if in_text => push_text(&mut para, &entity(r)),
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    Ok(out)
}

/// A paragraph ends: a heading, a list item, a table cell or a paragraph.
fn end_para(para: Option<Para>, row: &mut Option<Vec<String>>, out: &mut Vec<Block>) {
    let Some(p) = para else {
        return;
    };
    let text = collapse(&p.text);
    if let Some(cells) = row {
        cells.push(text);
        return;
    }
    if text.is_empty() {
        return;
    }
    out.push(match p.heading {
        Some(level) => Block::Heading {
            level,
            text,
            anchor: None,
        },
        None if p.list => Block::Para(format!("- {text}")),
        None => Block::Para(text),
    });
}

fn push_text(para: &mut Option<Para>, s: &str) {
    if let Some(p) = para {
        p.text.push_str(s);
    }
}

/// The heading level of a DOCX paragraph style (`Heading2` is 2, `Title` is 1).
fn docx_heading(e: &BytesStart<'_>) -> Option<u8> {
    let v = attribute(e, b"val")?;
    let lower = v.to_ascii_lowercase();
    if lower == "title" {
        return Some(1);
    }
    let n = lower.strip_prefix("heading")?.trim().parse::<u8>().ok()?;
    (1..=9).contains(&n).then_some(n.min(6))
}

/// The level of an ODT `text:h` (its `text:outline-level`, 1 when absent).
fn odt_heading(e: &BytesStart<'_>, kind: Office) -> Option<u8> {
    if kind != Office::Odt || e.local_name().as_ref() != b"h" {
        return None;
    }
    let level = attribute(e, b"outline-level")
        .and_then(|v| v.parse::<u8>().ok())
        .unwrap_or(1);
    Some(level.clamp(1, 6))
}

/// The value of the attribute whose local name is `local`.
fn attribute(e: &BytesStart<'_>, local: &[u8]) -> Option<String> {
    e.attributes().flatten().find_map(|a| {
        (a.key.local_name().as_ref() == local)
            .then(|| {
                a.normalized_value(XmlVersion::Implicit1_0)
                    .ok()
                    .map(|v| v.into_owned())
            })
            .flatten()
    })
}

/// The text of an entity or character reference (`&amp;`, `&#233;`).
fn entity(r: &BytesRef<'_>) -> String {
    if let Ok(Some(c)) = r.resolve_char_ref() {
        return c.to_string();
    }
    match r.decode().as_deref() {
        Ok("amp") => "&",
        Ok("lt") => "<",
        Ok("gt") => ">",
        Ok("quot") => "\"",
        Ok("apos") => "'",
        _ => "",
    }
    .to_string()
}
