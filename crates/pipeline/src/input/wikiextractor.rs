//! WikiExtractor's default output: files (`AA/wiki_00`, `AA/wiki_01`, ..., `.bz2` with
//! `--compress`) of `<doc id=".." url=".." title="..">` blocks, each closed by `</doc>`, whose
//! first line repeats the title. Read line by line (one document in memory at a time): the id
//! and title come from the header (or the fields `--corpus-fields` names), the text is the
//! body without the repeated title. A block without an id, a block that never closes, a block
//! opened inside another, or text outside any block is a malformed record at its line.
//! (WikiExtractor's `--json` output is JSON lines: see [`super::json`].)

use std::io::BufRead;
use std::path::Path;

use mtr_core::InputError;

use super::Document;
use super::collect::Collector;
use super::compressed;
use super::fields::CorpusFields;
use crate::error::Result;

/// True when a file's first bytes look like WikiExtractor output.
pub(crate) fn sniff(head: &[u8]) -> bool {
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    head.trim_ascii_start().starts_with(b"<doc ")
}

/// A `<doc ...>` block being read.
struct Open {
    line: u64,
    id: Option<String>,
    title: String,
    text: String,
    bad: Option<InputError>,
}

/// Reads the `<doc>` blocks of one (decompressed) stream named `label`.
pub(crate) fn read(
    mut reader: impl BufRead,
    label: &Path,
    fields: &CorpusFields,
    out: &mut Collector,
) -> Result<()> {
    let mut blocks = Blocks {
        label,
        id_attr: fields.id.as_deref().unwrap_or("id"),
        title_attr: fields.title.as_deref().unwrap_or("title"),
        open: None,
        stray: false,
    };
    let mut buf = Vec::with_capacity(1 << 12);
    let mut line_no = 0u64;
    loop {
        buf.clear();
        let n = reader
            .read_until(b'\n', &mut buf)
            .map_err(|e| compressed::read_error(label, e))?;
        if n == 0 {
            break;
        }
        line_no += 1;
        let mut bytes = buf.as_slice();
        if line_no == 1 {
            bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        }
        match std::str::from_utf8(bytes) {
            Ok(s) => blocks.line(s.trim_end_matches(['\n', '\r']), line_no, out),
            Err(e) => blocks.not_utf8(e.valid_up_to(), line_no, out),
        }
    }
    blocks.end(out);
    Ok(())
}

/// The state of a stream's `<doc>` blocks between lines.
struct Blocks<'a> {
    label: &'a Path,
    id_attr: &'a str,
    title_attr: &'a str,
    open: Option<Open>,
    /// In a run of lines outside any block (reported once).
    stray: bool,
}

impl Blocks<'_> {
    /// One line of the stream, its line end removed.
    fn line(&mut self, line: &str, line_no: u64, out: &mut Collector) {
        let label = self.label;
        if line.starts_with("<doc ") || line == "<doc>" {
            if let Some(o) = self.open.take() {
                out.malformed(
                    InputError::new(
                        label,
                        "a <doc> block is not closed before the next one opens",
                    )
                    .line(o.line)
                    .field("</doc>"),
                );
            }
            self.open = Some(header(line, line_no, label, self.id_attr, self.title_attr));
            self.stray = false;
        } else if line.trim() == "</doc>" {
            match self.open.take() {
                Some(o) => finish(o, label, out),
                None => out.malformed(
                    InputError::new(label, "</doc> without an opening <doc>").line(line_no),
                ),
            }
        } else if let Some(o) = &mut self.open {
            o.text.push_str(line);
            o.text.push('\n');
        } else if !line.trim().is_empty() && !self.stray {
            self.stray = true;
            out.malformed(
                InputError::new(label, "text outside a <doc ...> block")
                    .line(line_no)
                    .hint("WikiExtractor output is <doc id=\"..\" title=\"..\"> ... </doc> blocks"),
            );
        }
    }

    /// A line that is not UTF-8: its block (or, outside one, the line) is malformed.
    fn not_utf8(&mut self, valid_up_to: usize, line_no: u64, out: &mut Collector) {
        let err = InputError::new(self.label, format!("invalid UTF-8 at byte {valid_up_to}"))
            .line(line_no)
            .hint("re-encode the file as UTF-8");
        match &mut self.open {
            Some(o) if o.bad.is_none() => o.bad = Some(err),
            Some(_) => {}
            None => out.malformed(err),
        }
    }

    /// The end of the stream: a block still open is malformed.
    fn end(self, out: &mut Collector) {
        if let Some(o) = self.open {
            out.malformed(
                InputError::new(self.label, "the <doc> block opened here is never closed")
                    .line(o.line)
                    .field("</doc>"),
            );
        }
    }
}

/// The open block of a `<doc ...>` line.
fn header(line: &str, line_no: u64, label: &Path, id_attr: &str, title_attr: &str) -> Open {
    let id = attribute(line, id_attr).filter(|v| !v.trim().is_empty());
    let bad = id.is_none().then(|| {
        InputError::new(
            label,
            format!("the <doc> header has no `{id_attr}` attribute"),
        )
        .line(line_no)
        .field(id_attr)
    });
    Open {
        line: line_no,
        id,
        title: attribute(line, title_attr).unwrap_or_default(),
        text: String::with_capacity(1 << 12),
        bad,
    }
}

fn finish(o: Open, label: &Path, out: &mut Collector) {
    if let Some(e) = o.bad {
        out.malformed(e);
        return;
    }
    let Some(id) = o.id else {
        return;
    };
    // the body repeats the title on its first line
    let body = o.text.trim_start_matches('\n');
    let body = match body.split_once('\n') {
        Some((first, rest)) if !o.title.is_empty() && first.trim() == o.title => rest,
        None if !o.title.is_empty() && body.trim() == o.title => "",
        _ => body,
    };
    let text = body.trim_matches('\n').to_string();
    let line = o.line;
    out.document(
        Document {
            id,
            title: o.title,
            text,
        },
        || InputError::new(label, "").line(line),
    );
}

/// The value of `name="..."` in a `<doc ...>` line, HTML entities decoded.
fn attribute(line: &str, name: &str) -> Option<String> {
    let mut rest = line;
    loop {
        let at = rest.find(name)?;
        let before = rest[..at].chars().next_back();
        let after = &rest[at + name.len()..];
        if matches!(before, Some(' ' | '\t'))
            && let Some(v) = after.strip_prefix("=\"")
        {
            let end = v.find('"')?;
            return Some(unescape(&v[..end]));
        }
        rest = after;
    }
}

/// Decodes the entities WikiExtractor writes in attributes.
fn unescape(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    s.replace("&quot;", "\"")
        .replace("&#x27;", "'")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_str(text: &str) -> (Vec<Document>, Option<(InputError, u64)>) {
        let mut c = Collector::new(None);
        read(
            text.as_bytes(),
            Path::new("AA/wiki_00"),
            &CorpusFields::default(),
            &mut c,
        )
        .unwrap();
        let c = c.finish();
        let (docs, bad) = (c.kept, c.malformed);
        (docs.into_iter().map(|(d, _)| d).collect(), bad)
    }

    #[test]
    fn blocks_become_documents_without_the_repeated_title() {
        let (docs, bad) = read_str(
            "<doc id=\"12\" url=\"https://en.wikipedia.org/wiki?curid=12\" title=\"Anarchism &amp; more\">\nAnarchism & more\n\nAnarchism is a philosophy.\n\nIt has history.\n</doc>\n<doc id=\"25\" url=\"u\" title=\"Autism\">\nAutism\n\nAutism is a condition.\n</doc>\n",
        );
        assert!(bad.is_none());
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0].id, "12");
        assert_eq!(docs[0].title, "Anarchism & more");
        assert_eq!(
            docs[0].text,
            "Anarchism is a philosophy.\n\nIt has history."
        );
        assert_eq!(docs[1].text, "Autism is a condition.");
        assert!(sniff(b"<doc id=\"1\""));
        assert!(!sniff(b"{\"id\": 1}"));
    }

    #[test]
    fn malformed_blocks_are_named_by_line_and_counted() {
        let (docs, bad) = read_str(
            "<doc url=\"u\" title=\"No id\">\nNo id\n\ntext\n</doc>\n<doc id=\"2\" title=\"Ok\">\nOk\n\nfine\n</doc>\n<doc id=\"3\" title=\"Open\">\nOpen\n",
        );
        assert_eq!(docs.len(), 1);
        let (first, n) = bad.unwrap();
        assert_eq!(
            (first.line, first.field.as_deref(), n),
            (Some(1), Some("id"), 2)
        );
        assert!(
            first.to_string().starts_with("AA/wiki_00:1: field `id`"),
            "{first}"
        );
    }
}
