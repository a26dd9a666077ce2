//! A paged document's text made readable, page by page: lines repeated at the top or bottom
//! of most pages (running headers and footers: a title, a date, a URL, `Page 3 of 9`, digits
//! compared as one class so page numbers match) dropped; a word hyphenated at a line end
//! (`hyphen-` or `hyphen‐` then a lowercase continuation) joined; soft hyphens (U+00AD, which
//! browsers and typesetters leave in the text layer) removed; the lines of a paragraph joined
//! with spaces, paragraphs kept apart by a blank line; ligatures (`ﬁ`, `ﬂ`) spelled out.

use std::collections::HashMap;

/// One page's cleaned text and its number (1-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CleanPage {
    pub(crate) number: usize,
    pub(crate) text: String,
}

/// How many lines at each end of a page may be a header or footer.
const EDGE: usize = 3;

/// The pages' text with headers, footers and hyphenation dealt with.
pub(crate) fn clean(raw: &[String]) -> Vec<CleanPage> {
    let pages: Vec<Vec<&str>> = raw
        .iter()
        .map(|p| p.lines().map(str::trim).filter(|l| !l.is_empty()).collect())
        .collect();
    let repeated = repeated_edges(&pages);
    raw.iter()
        .enumerate()
        .map(|(i, page)| {
            let n = pages[i].len();
            let mut kept = Vec::new();
            let mut index = 0;
            for line in page.lines() {
                let t = line.trim();
                if !t.is_empty() {
                    let edge = index < EDGE || index + EDGE >= n;
                    index += 1;
                    if edge && repeated.contains_key(&shape(t)) {
                        continue;
                    }
                }
                kept.push(t);
            }
            CleanPage {
                number: i + 1,
                text: paragraphs(&kept),
            }
        })
        .collect()
}

/// The shapes of lines found at the edges of at least half of the pages (and two or more).
fn repeated_edges(pages: &[Vec<&str>]) -> HashMap<String, usize> {
    let mut counts: HashMap<String, usize> = HashMap::new();
    for lines in pages {
        let n = lines.len();
        let mut seen = std::collections::HashSet::new();
        for (i, l) in lines.iter().enumerate() {
            if (i < EDGE || i + EDGE >= n) && seen.insert(shape(l)) {
                *counts.entry(shape(l)).or_default() += 1;
            }
        }
    }
    let need = (pages.len() / 2).max(2);
    counts.retain(|_, c| *c >= need && pages.len() >= 2);
    counts
}

/// A line with every run of digits as `#` and whitespace collapsed.
fn shape(line: &str) -> String {
    let mut s = String::with_capacity(line.len());
    let mut prev = ' ';
    for c in line.chars() {
        let c = if c.is_ascii_digit() {
            '#'
        } else if c.is_whitespace() {
            ' '
        } else {
            c
        };
        if !(c == prev && (c == '#' || c == ' ')) {
            s.push(c);
        }
        prev = c;
    }
    s.trim().to_string()
}

/// Lines joined into paragraphs (a blank line ends one), hyphenation at line ends undone.
fn paragraphs(lines: &[&str]) -> String {
    let mut out = String::new();
    let mut para = String::new();
    for line in lines {
        if line.is_empty() {
            flush(&mut out, &mut para);
            continue;
        }
        let line = unligature(&line.replace('\u{ad}', ""));
        if para.is_empty() {
            para.push_str(&line);
        } else if let Some(stem) = hyphenated(&para)
            && line.chars().next().is_some_and(char::is_lowercase)
        {
            let cut = stem.len();
            para.truncate(cut);
            para.push_str(&line);
        } else {
            para.push(' ');
            para.push_str(&line);
        }
    }
    flush(&mut out, &mut para);
    out
}

/// `line` with typographic ligatures (`ﬁ`, `ﬂ`, `ﬃ`...) spelled out, as search indexes
/// and tokenizers expect.
fn unligature(line: &str) -> String {
    if !line.contains(|c: char| ('\u{fb00}'..='\u{fb06}').contains(&c)) {
        return line.to_string();
    }
    let mut out = String::with_capacity(line.len() + 8);
    for c in line.chars() {
        match c {
            '\u{fb00}' => out.push_str("ff"),
            '\u{fb01}' => out.push_str("fi"),
            '\u{fb02}' => out.push_str("fl"),
            '\u{fb03}' => out.push_str("ffi"),
            '\u{fb04}' => out.push_str("ffl"),
            '\u{fb05}' | '\u{fb06}' => out.push_str("st"),
            c => out.push(c),
        }
    }
    out
}

/// `text` without its final hyphen when it ends in a letter and a hyphen (`-` or `‐`).
fn hyphenated(text: &str) -> Option<&str> {
    let stem = text
        .strip_suffix('-')
        .or_else(|| text.strip_suffix('\u{2010}'))?;
    stem.chars()
        .next_back()
        .is_some_and(char::is_alphabetic)
        .then_some(stem)
}

fn flush(out: &mut String, para: &mut String) {
    if para.is_empty() {
        return;
    }
    if !out.is_empty() {
        out.push_str("\n\n");
    }
    out.push_str(para);
    para.clear();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn running_headers_and_footers_go_hyphens_join_paragraphs_stay() {
        let page = |n: usize, body: &str| {
            format!(
                "12/7/26, 4:20 AM    Travel | Handbook\n\n{body}\n\nhttp://127.0.0.1/travel.html    {n}/3\n"
            )
        };
        let raw = vec![
            page(
                1,
                "Travel\n\nBook flights through Trip-\nDesk, at least a fort-\nnight ahead, the book\u{ad}ing\nsaid.",
            ),
            page(2, "Second page text\nwraps here.\n\nNew para."),
            page(3, "A well-\nKnown rule."),
        ];
        let got = clean(&raw);
        assert_eq!(got.len(), 3);
        assert_eq!(
            got[0].text,
            "Travel\n\nBook flights through Trip- Desk, at least a fortnight ahead, the booking said."
        );
        assert_eq!(got[1].text, "Second page text wraps here.\n\nNew para.");
        // a capital after the hyphen is a real hyphen's word, not a hyphenation
        assert_eq!(got[2].text, "A well- Known rule.");
        assert_eq!(got[2].number, 3);
        // one page has no running header to find
        assert_eq!(clean(&[page(1, "Only.")])[0].text.lines().count(), 5);
    }
}
