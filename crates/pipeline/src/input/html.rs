//! HTML pages (a site's export, a browser's "save page"): the charset from the document (a
//! byte-order mark, `<meta charset>`, `<meta http-equiv="Content-Type">`; UTF-8 when none is
//! declared and the bytes are UTF-8, else windows-1252 as browsers do), then the main content
//! in the readability manner: the `<main>` element (else `<article>`, `[role=main]`, the
//! body) without navigation, headers and footers of the site, asides, forms, cookie and
//! consent banners, scripts and styles; headings (`h1`-`h6`, their `id` as the anchor) cut
//! it into sections. Script, style and template contents are raw text (removed before the
//! tree is built, as the HTML parser's tokenizer treats them), so a `<` inside a script never
//! opens an element. The tree is tl's, a fast tolerant parser that does not apply HTML's
//! implicit end tags (`<p>a<p>b` nests): text is still read in order, only the blocks'
//! boundaries follow the tags as written. A page whose bytes are not valid in its declared
//! charset is unreadable, with the charset and the byte offset.

use std::path::Path;

use encoding_rs::Encoding;

use super::sections::{Block, collapse};

/// What a page holds: its title and blocks.
pub(crate) struct Page {
    pub(crate) title: String,
    pub(crate) blocks: Vec<Block>,
}

/// Reads the HTML file at `path`, or says why it cannot be read.
pub(crate) fn read(path: &Path) -> Result<Page, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read: {e}"))?;
    let text = decode(&bytes)?;
    parse(&text)
}

/// The page's text in its charset.
pub(crate) fn decode(bytes: &[u8]) -> Result<String, String> {
    if let Some((enc, bom)) = Encoding::for_bom(bytes) {
        return strict(enc, &bytes[bom..]);
    }
    match declared(bytes) {
        Some(enc) => strict(enc, bytes),
        None => match std::str::from_utf8(bytes) {
            Ok(s) => Ok(s.to_string()),
            Err(_) => strict(encoding_rs::WINDOWS_1252, bytes),
        },
    }
}

/// `bytes` decoded as `enc`, or where they are not valid in it.
fn strict(enc: &'static Encoding, bytes: &[u8]) -> Result<String, String> {
    if enc == encoding_rs::UTF_8 {
        return std::str::from_utf8(bytes).map(str::to_string).map_err(|e| {
            format!(
                "not valid UTF-8 (the charset it declares) at byte {}",
                e.valid_up_to()
            )
        });
    }
    enc.decode_without_bom_handling_and_without_replacement(bytes)
        .map(|s| s.into_owned())
        .ok_or_else(|| format!("not valid {} (the charset it declares)", enc.name()))
}

/// The charset a `<meta>` in the first 4 KB declares (HTML's prescan, simplified).
fn declared(bytes: &[u8]) -> Option<&'static Encoding> {
    let head = String::from_utf8_lossy(&bytes[..bytes.len().min(4096)]).to_ascii_lowercase();
    let at = head.find("charset=")? + "charset=".len();
    let rest = head[at..].trim_start_matches(['"', '\'', ' ']);
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.')))
        .unwrap_or(rest.len());
    let enc = Encoding::for_label(&rest.as_bytes()[..end])?;
    // a page that says UTF-16 in ASCII bytes is not UTF-16 (the spec reads it as UTF-8)
    Some(
        if enc == encoding_rs::UTF_16LE || enc == encoding_rs::UTF_16BE {
            encoding_rs::UTF_8
        } else {
            enc
        },
    )
}

/// Elements whose content is never the page's text.
const DROPPED: &[&str] = &[
    "nav", "header", "footer", "aside", "form", "button", "noscript", "iframe", "svg", "select",
    "dialog", "menu", "figure", "head",
];

/// `id`/`class` words of site furniture rather than content.
const FURNITURE: &[&str] = &[
    "cookie",
    "consent",
    "gdpr",
    "banner",
    "newsletter",
    "subscribe",
    "share",
    "social",
    "breadcrumb",
    "sidebar",
    "related",
    "advert",
    "promo",
    "skip-link",
    "comments",
];

/// Elements that hold one block of text.
const BLOCKS: &[&str] = &[
    "p",
    "li",
    "pre",
    "blockquote",
    "dt",
    "dd",
    "tr",
    "caption",
    "address",
    "summary",
];

/// The page's title and the blocks of its main content.
fn parse(text: &str) -> Result<Page, String> {
    let cleaned = strip_raw_text(text);
    let dom = tl::parse(&cleaned, tl::ParserOptions::default())
        .map_err(|e| format!("not parseable HTML: {e}"))?;
    let parser = dom.parser();
    let title = find(&dom, "title")
        .map(|t| collapse(&decode_entities(&t.inner_text(parser))))
        .unwrap_or_default();
    let root = ["main", "article"]
        .iter()
        .find_map(|n| find(&dom, n))
        .or_else(|| find_where(&dom, |t| attr(t, "role").as_deref() == Some("main")))
        .or_else(|| find(&dom, "body"));
    let mut blocks = Vec::new();
    match root {
        Some(tag) => walk(tag, parser, &mut blocks),
        None => dom
            .children()
            .iter()
            .filter_map(|h| h.get(parser))
            .for_each(|n| walk_node(n, parser, &mut blocks)),
    }
    Ok(Page { title, blocks })
}

/// The first element named `name`.
fn find<'a>(dom: &'a tl::VDom<'a>, name: &str) -> Option<&'a tl::HTMLTag<'a>> {
    find_where(dom, |t| t.name().as_utf8_str().eq_ignore_ascii_case(name))
}

fn find_where<'a>(
    dom: &'a tl::VDom<'a>,
    f: impl Fn(&tl::HTMLTag<'_>) -> bool,
) -> Option<&'a tl::HTMLTag<'a>> {
    dom.nodes().iter().filter_map(|n| n.as_tag()).find(|t| f(t))
}

fn attr(tag: &tl::HTMLTag<'_>, name: &str) -> Option<String> {
    tag.attributes()
        .get(name)
        .flatten()
        .map(|v| v.as_utf8_str().into_owned())
}

fn walk_node(node: &tl::Node<'_>, parser: &tl::Parser<'_>, out: &mut Vec<Block>) {
    if let Some(tag) = node.as_tag() {
        walk(tag, parser, out);
    }
}

/// Collects the blocks under `tag`, furniture left out.
fn walk(tag: &tl::HTMLTag<'_>, parser: &tl::Parser<'_>, out: &mut Vec<Block>) {
    let name = tag.name().as_utf8_str().to_ascii_lowercase();
    if DROPPED.contains(&name.as_str()) || is_furniture(tag) {
        return;
    }
    if let Some(level) = heading_level(&name) {
        let text = collapse(&decode_entities(&tag.inner_text(parser)));
        if !text.is_empty() {
            out.push(Block::Heading {
                level,
                text,
                anchor: attr(tag, "id"),
            });
        }
        return;
    }
    if BLOCKS.contains(&name.as_str()) && !has_block_child(tag, parser) {
        let mut text = collapse(&decode_entities(&inner_text_spaced(tag, parser)));
        if name == "li" && !text.is_empty() {
            text = format!("- {text}");
        }
        if !text.is_empty() {
            out.push(Block::Para(text));
        }
        return;
    }
    for child in tag.children().top().iter().filter_map(|h| h.get(parser)) {
        match child {
            tl::Node::Tag(t) => walk(t, parser, out),
            tl::Node::Raw(raw) => {
                let text = collapse(&decode_entities(&raw.as_utf8_str()));
                if !text.is_empty() {
                    out.push(Block::Para(text));
                }
            }
            tl::Node::Comment(_) => {}
        }
    }
}

/// The text under `tag` with a space between elements (table cells, line breaks).
fn inner_text_spaced(tag: &tl::HTMLTag<'_>, parser: &tl::Parser<'_>) -> String {
    let mut s = String::new();
    for child in tag.children().top().iter().filter_map(|h| h.get(parser)) {
        match child {
            tl::Node::Raw(raw) => s.push_str(&raw.as_utf8_str()),
            tl::Node::Tag(t) => {
                let name = t.name().as_utf8_str().to_ascii_lowercase();
                if DROPPED.contains(&name.as_str()) {
                    continue;
                }
                let cell = matches!(name.as_str(), "td" | "th");
                if matches!(name.as_str(), "br" | "td" | "th") {
                    s.push(' ');
                }
                s.push_str(&inner_text_spaced(t, parser));
                if cell {
                    s.push_str(" |");
                }
            }
            tl::Node::Comment(_) => {}
        }
    }
    s.trim_end_matches([' ', '|']).to_string()
}

fn has_block_child(tag: &tl::HTMLTag<'_>, parser: &tl::Parser<'_>) -> bool {
    tag.children()
        .top()
        .iter()
        .filter_map(|h| h.get(parser))
        .filter_map(|n| n.as_tag())
        .any(|t| {
            let n = t.name().as_utf8_str().to_ascii_lowercase();
            BLOCKS.contains(&n.as_str())
                || heading_level(&n).is_some()
                || matches!(n.as_str(), "div" | "section" | "ul" | "ol" | "table")
        })
}

fn heading_level(name: &str) -> Option<u8> {
    let n = name.strip_prefix('h')?.parse::<u8>().ok()?;
    (1..=6).contains(&n).then_some(n)
}

fn is_furniture(tag: &tl::HTMLTag<'_>) -> bool {
    if attr(tag, "aria-hidden").as_deref() == Some("true") || tag.attributes().contains("hidden") {
        return true;
    }
    let words = [attr(tag, "id"), attr(tag, "class"), attr(tag, "role")]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ")
        .to_ascii_lowercase();
    matches!(
        attr(tag, "role").as_deref(),
        Some("navigation" | "banner" | "contentinfo" | "complementary")
    ) || FURNITURE.iter().any(|w| words.contains(w))
}

/// `text` without comments and the contents of raw-text elements (`script`, `style`,
/// `template`, `noscript`), which the tokenizer never parses as markup.
fn strip_raw_text(text: &str) -> String {
    // ASCII lowercasing keeps every byte offset, and the markers are ASCII: offsets found in
    // `lower` are character boundaries of `text`
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while let Some((at, open)) = RAW_TEXT
        .iter()
        .filter_map(|open| lower[i..].find(open).map(|at| (i + at, *open)))
        .min_by_key(|(at, _)| *at)
    {
        out.push_str(&text[i..at]);
        i = raw_end(&lower, at, open);
    }
    out.push_str(&text[i..]);
    out
}

/// Where raw-text elements and comments open.
const RAW_TEXT: &[&str] = &["<script", "<style", "<template", "<noscript", "<!--"];

/// The offset after the raw-text element or comment that opens at `at` with `open`.
fn raw_end(lower: &str, at: usize, open: &str) -> usize {
    let body = at + open.len();
    if open == "<!--" {
        return lower[body..]
            .find("-->")
            .map_or(lower.len(), |e| body + e + 3);
    }
    let close = format!("</{}", &open[1..]);
    match lower[body..].find(&close) {
        Some(e) => {
            let after = body + e + close.len();
            lower[after..]
                .find('>')
                .map_or(lower.len(), |g| after + g + 1)
        }
        None => lower.len(),
    }
}

/// Decodes HTML character references: numeric ones and the named ones pages commonly use.
pub(crate) fn decode_entities(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let end = rest[1..].find(';').map(|e| e + 1).filter(|e| *e <= 32);
        let decoded = end.and_then(|e| entity(&rest[1..e]));
        match (end, decoded) {
            (Some(e), Some(c)) => {
                out.push(c);
                rest = &rest[e + 1..];
            }
            _ => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn entity(name: &str) -> Option<char> {
    if let Some(num) = name.strip_prefix('#') {
        let code = match num.strip_prefix(['x', 'X']) {
            Some(hex) => u32::from_str_radix(hex, 16).ok()?,
            None => num.parse().ok()?,
        };
        return char::from_u32(code);
    }
    Some(match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        "nbsp" => '\u{a0}',
        "shy" => '\u{ad}',
        "ndash" => '–',
        "mdash" => '—',
        "hellip" => '…',
        "lsquo" => '‘',
        "rsquo" => '’',
        "ldquo" => '“',
        "rdquo" => '”',
        "laquo" => '«',
        "raquo" => '»',
        "middot" => '·',
        "bull" => '•',
        "copy" => '©',
        "reg" => '®',
        "trade" => '™',
        "euro" => '€',
        "pound" => '£',
        "yen" => '¥',
        "sect" => '§',
        "deg" => '°',
        "times" => '×',
        "eacute" => 'é',
        "egrave" => 'è',
        "aacute" => 'á',
        "agrave" => 'à',
        "ccedil" => 'ç',
        "uuml" => 'ü',
        "ouml" => 'ö',
        "auml" => 'ä',
        "szlig" => 'ß',
        "atilde" => 'ã',
        "otilde" => 'õ',
        "ntilde" => 'ñ',
        "iacute" => 'í',
        "oacute" => 'ó',
        "uacute" => 'ú',
        _ => return None,
    })
}
