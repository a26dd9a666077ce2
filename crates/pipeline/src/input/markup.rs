//! Plain-text markup with headings, read as a run of headings and paragraphs ([`Block`]) for
//! [`super::sections`] to cut into sections:
//!
//! - reStructuredText (a title line underlined, and maybe overlined, by a run of one
//!   punctuation character at least as long as the title; levels in the order the adornment
//!   styles first appear, as docutils assigns them). Paragraphs are the text between blank
//!   lines with their lines joined; list items (`-`, `*`, `+`, `1.`) start a new block;
//!   directive and comment lines (`.. `) and the `::` of literal blocks are dropped, the
//!   literal text kept.
//! - Markdown (CommonMark's ATX headings `#`..`######` and setext headings underlined by `=`
//!   or `-`; pandoc's `{#anchor}` after a heading names its anchor). Paragraphs are kept as
//!   written (Markdown is already text: list markers, emphasis and line breaks stay), fenced
//!   code blocks (``` or ~~~) whole, so a `#` line inside code is no heading; YAML front
//!   matter (`---` ... `---` at the top) is dropped, its `title:` kept as the document's
//!   title; HTML comments are dropped.

use super::sections::{Block, collapse};

/// The blocks of a reStructuredText document.
pub(crate) fn rst_blocks(text: &str) -> Vec<Block> {
    let lines: Vec<&str> = text.lines().map(|l| l.trim_end()).collect();
    let mut styles: Vec<(char, bool)> = Vec::new();
    let mut out = Vec::new();
    let mut para: Vec<&str> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let over = adornment(line);
        let (title_at, overlined) = match over {
            Some(_) if i + 2 < lines.len() && adornment(lines[i + 2]) == over => (i + 1, true),
            _ => (i, false),
        };
        let under = lines.get(title_at + 1).and_then(|l| adornment(l));
        let title = lines[title_at].trim();
        let is_heading = !title.is_empty()
            && adornment(title).is_none()
            && under.is_some_and(|c| {
                lines[title_at + 1].chars().count() >= title.chars().count()
                    && (!overlined || over == Some(c))
            });
        if let (true, Some(c)) = (is_heading, under) {
            end_para(&mut para, &mut out);
            let style = (c, overlined);
            let level = match styles.iter().position(|s| *s == style) {
                Some(p) => p + 1,
                None => {
                    styles.push(style);
                    styles.len()
                }
            };
            out.push(Block::Heading {
                level: u8::try_from(level.min(6)).unwrap_or(6),
                text: title.to_string(),
                anchor: None,
            });
            i = title_at + 2;
            continue;
        }
        let t = line.trim();
        if t.is_empty() || t.starts_with(".. ") || t == "::" {
            end_para(&mut para, &mut out);
        } else {
            if starts_item(t) {
                end_para(&mut para, &mut out);
            }
            para.push(t.strip_suffix("::").map_or(t, |s| s.trim_end()));
        }
        i += 1;
    }
    end_para(&mut para, &mut out);
    out
}

/// The character of a line that is one punctuation character repeated (3 or more).
fn adornment(line: &str) -> Option<char> {
    let t = line.trim_end();
    let c = t.chars().next()?;
    (c.is_ascii_punctuation() && t.chars().count() >= 3 && t.chars().all(|x| x == c)).then_some(c)
}

fn starts_item(t: &str) -> bool {
    let bullet = ["- ", "* ", "+ "].iter().any(|b| t.starts_with(b));
    let numbered = t.split_once(['.', ')']).is_some_and(|(n, rest)| {
        !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()) && rest.starts_with(' ')
    });
    bullet || numbered
}

fn end_para(para: &mut Vec<&str>, out: &mut Vec<Block>) {
    if para.is_empty() {
        return;
    }
    let text = collapse(&para.join(" "));
    para.clear();
    if text.is_empty() {
        return;
    }
    let text = match text.strip_prefix("* ").or_else(|| text.strip_prefix("+ ")) {
        Some(rest) => format!("- {rest}"),
        None => text,
    };
    out.push(Block::Para(text));
}

/// A Markdown document's title (its first level-1 heading, else its front matter's
/// `title:`) and blocks.
pub(crate) fn markdown_blocks(text: &str) -> (Option<String>, Vec<Block>) {
    let text = text.trim_start_matches('\u{feff}').replace("\r\n", "\n");
    let (front_title, body) = front_matter(&text);
    let mut out = Vec::new();
    let mut para: Vec<&str> = Vec::new();
    let mut fence: Option<&str> = None;
    let mut comment = false;
    for line in body.lines().map(str::trim_end) {
        let t = line.trim_start();
        if let Some(f) = fence {
            para.push(line);
            if t.starts_with(f) {
                fence = None;
            }
            continue;
        }
        if comment || t.starts_with("<!--") {
            comment = !t.contains("-->");
            continue;
        }
        if let Some(f) = ["```", "~~~"].into_iter().find(|f| t.starts_with(f)) {
            fence = Some(f);
            para.push(line);
        } else if let Some((level, title, anchor)) = atx_heading(line) {
            end_markdown_para(&mut para, &mut out);
            out.push(Block::Heading {
                level,
                text: title,
                anchor,
            });
        } else if let Some(level) = setext_level(line).filter(|_| can_be_setext(&para)) {
            let title = collapse(&para.join(" "));
            para.clear();
            let (text, anchor) = heading_anchor(&title);
            out.push(Block::Heading {
                level,
                text,
                anchor,
            });
        } else if t.is_empty() {
            end_markdown_para(&mut para, &mut out);
        } else {
            para.push(line);
        }
    }
    end_markdown_para(&mut para, &mut out);
    let h1 = out.iter().find_map(|b| match b {
        Block::Heading { level: 1, text, .. } => Some(text.clone()),
        _ => None,
    });
    (h1.or(front_title), out)
}

/// YAML front matter's `title:` and the text after it (the whole text when there is none).
fn front_matter(text: &str) -> (Option<String>, &str) {
    let Some(rest) = text.strip_prefix("---\n") else {
        return (None, text);
    };
    let mut offset = 0;
    let mut title = None;
    for line in rest.split_inclusive('\n') {
        offset += line.len();
        let l = line.trim_end();
        if l == "---" || l == "..." {
            return (title, &rest[offset..]);
        }
        if let Some(v) = l.strip_prefix("title:") {
            let v = v.trim().trim_matches(['"', '\'']).trim();
            title = (!v.is_empty()).then(|| v.to_string());
        }
    }
    (None, text)
}

/// An ATX heading (`## Title ##`, up to three spaces of indent): level, title and anchor.
fn atx_heading(line: &str) -> Option<(u8, String, Option<String>)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    let l = &line[indent..];
    let hashes = l.bytes().take_while(|&b| b == b'#').count();
    if indent > 3 || !(1..=6).contains(&hashes) {
        return None;
    }
    let rest = &l[hashes..];
    if !(rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return None;
    }
    let rest = rest.trim();
    // a closing run of `#` preceded by a space is not part of the title
    let rest = match rest.trim_end_matches('#') {
        r if r.is_empty() || r.ends_with([' ', '\t']) => r.trim_end(),
        _ => rest,
    };
    let (text, anchor) = heading_anchor(rest);
    (!text.is_empty()).then(|| (u8::try_from(hashes).unwrap_or(6), text, anchor))
}

/// A heading's text without pandoc's attributes (`Title {#anchor .class}`), and the anchor.
fn heading_anchor(title: &str) -> (String, Option<String>) {
    let Some(open) = title.rfind(" {").filter(|_| title.ends_with('}')) else {
        return (title.to_string(), None);
    };
    let attrs = &title[open + 2..title.len() - 1];
    let anchor = attrs
        .split_whitespace()
        .find_map(|a| a.strip_prefix('#'))
        .map(str::to_string);
    (title[..open].trim_end().to_string(), anchor)
}

/// The level of a setext underline (`===` 1, `---` 2).
fn setext_level(line: &str) -> Option<u8> {
    let t = line.trim();
    let c = t.chars().next()?;
    (matches!(c, '=' | '-')
        && line.len() - line.trim_start().len() <= 3
        && t.chars().all(|x| x == c))
    .then_some(if c == '=' { 1 } else { 2 })
}

/// True when the paragraph above an underline is one a setext heading can title (not a list
/// item or a table).
fn can_be_setext(para: &[&str]) -> bool {
    para.first()
        .is_some_and(|l| !starts_item(l.trim_start()) && !l.trim_start().starts_with('|'))
}

fn end_markdown_para(para: &mut Vec<&str>, out: &mut Vec<Block>) {
    let text = para.join("\n");
    para.clear();
    if !text.trim().is_empty() {
        out.push(Block::Para(text.trim_matches('\n').to_string()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rst_headings_by_adornment_order_and_paragraphs() {
        let text = "=====\nGuide\n=====\n\nIntro line one\nline two.\n\nPart\n====\n\n-  first item\n   wraps.\n-  second.\n\nSub\n---\n\n.. note:: skipped\n\nText::\n\n   literal\n";
        let b = rst_blocks(text);
        let h = |level, t: &str| Block::Heading {
            level,
            text: t.into(),
            anchor: None,
        };
        assert_eq!(
            b,
            [
                h(1, "Guide"),
                Block::Para("Intro line one line two.".into()),
                h(2, "Part"),
                Block::Para("- first item wraps.".into()),
                Block::Para("- second.".into()),
                h(3, "Sub"),
                Block::Para("Text".into()),
                Block::Para("literal".into()),
            ]
        );
    }

    #[test]
    fn markdown_headings_fences_front_matter_and_anchors() {
        let text = "---\ntitle: \"Front\"\ndate: 2026\n---\n\n# Guide #\n\nIntro *one*\nline two.\n\n## Part {#custom .x}\n\n- first\n- second\n\n```sh\n# not a heading\n```\n\nSub\n---\n\n<!-- a\ncomment -->\nText.\n\n####### seven is text\n";
        let (title, b) = markdown_blocks(text);
        assert_eq!(title.as_deref(), Some("Guide"));
        let h = |level, t: &str, a: Option<&str>| Block::Heading {
            level,
            text: t.into(),
            anchor: a.map(str::to_string),
        };
        assert_eq!(
            b,
            [
                h(1, "Guide", None),
                Block::Para("Intro *one*\nline two.".into()),
                h(2, "Part", Some("custom")),
                Block::Para("- first\n- second".into()),
                Block::Para("```sh\n# not a heading\n```".into()),
                h(2, "Sub", None),
                Block::Para("Text.".into()),
                Block::Para("####### seven is text".into()),
            ]
        );
        // no level-1 heading: the front matter's title; none at all: no title
        assert_eq!(
            markdown_blocks("---\ntitle: T\n---\n## A\nb\n")
                .0
                .as_deref(),
            Some("T")
        );
        assert_eq!(markdown_blocks("just text\n").0, None);
        // a thematic break after a blank line, or under a list, is not a heading
        let (_, b) = markdown_blocks("a\n\n---\n\n- item\n---\n");
        assert!(b.iter().all(|b| matches!(b, Block::Para(_))), "{b:?}");
    }
}
