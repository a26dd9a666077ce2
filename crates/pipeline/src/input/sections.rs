//! Structured documents (DOCX, ODT, HTML, reStructuredText) as the readers see them: a flat
//! run of headings and paragraphs ([`Block`]), cut into sections at each heading. Each section
//! becomes one document whose id is the file's id and the section's anchor
//! (`handbook/sick-leave.html#reporting-an-absence`) and whose title is its heading path
//! (`Sick Leave › Reporting an absence`), so a passage chunked from it names a place a person
//! can open. Text before the first heading is its own section, titled by the document title.

/// One block of a structured document, in reading order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Block {
    /// A heading of level 1 (the highest) to 6, with its anchor where the document has one.
    Heading {
        level: u8,
        text: String,
        anchor: Option<String>,
    },
    /// A paragraph, list item, table row or preformatted block.
    Para(String),
}

/// One section: its anchor, heading path and text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Section {
    /// Unique within the file: the heading's anchor, or the slug of its heading path.
    pub(crate) anchor: String,
    /// The headings from the top down to this section's, joined by ` › `.
    pub(crate) title: String,
    /// The section's paragraphs, separated by blank lines.
    pub(crate) text: String,
}

/// The separator of a heading path.
const PATH_SEP: &str = " › ";

/// Cuts `blocks` into sections; `doc_title` titles the text before the first heading.
/// Sections without text (a heading followed at once by another) are left out: their
/// headings stay in the path of the sections below them.
pub(crate) fn sections(blocks: Vec<Block>, doc_title: &str) -> Vec<Section> {
    let mut out: Vec<Section> = Vec::new();
    let mut path: Vec<(u8, String)> = Vec::new();
    let mut current = Section {
        anchor: "top".to_string(),
        title: doc_title.to_string(),
        text: String::new(),
    };
    let mut used = std::collections::HashSet::new();
    for block in blocks {
        match block {
            Block::Heading {
                level,
                text,
                anchor,
            } => {
                push(&mut out, std::mem::take(&mut current.text), &current);
                path.retain(|(l, _)| *l < level);
                path.push((level, text));
                let title = path
                    .iter()
                    .map(|(_, t)| t.as_str())
                    .collect::<Vec<_>>()
                    .join(PATH_SEP);
                let base = anchor
                    .filter(|a| !a.is_empty())
                    .unwrap_or_else(|| slug(&title));
                current = Section {
                    anchor: unique(base, &mut used),
                    title,
                    text: String::new(),
                };
            }
            Block::Para(p) => {
                if !current.text.is_empty() {
                    current.text.push_str("\n\n");
                }
                current.text.push_str(&p);
            }
        }
    }
    push(&mut out, current.text.clone(), &current);
    out
}

fn push(out: &mut Vec<Section>, text: String, s: &Section) {
    if !text.trim().is_empty() {
        out.push(Section {
            anchor: s.anchor.clone(),
            title: s.title.clone(),
            text,
        });
    }
}

/// `base`, or `base-2`, `base-3`... when an earlier section took it.
fn unique(base: String, used: &mut std::collections::HashSet<String>) -> String {
    if used.insert(base.clone()) {
        return base;
    }
    let mut n = 2;
    loop {
        let candidate = format!("{base}-{n}");
        if used.insert(candidate.clone()) {
            return candidate;
        }
        n += 1;
    }
}

/// A URL-fragment-friendly slug of a heading (letters and digits of any script, lowercased,
/// runs of anything else as one `-`), as pandoc and most site generators make anchors.
pub(crate) fn slug(text: &str) -> String {
    let last = text.rsplit(PATH_SEP).next().unwrap_or(text);
    let mut s = String::with_capacity(last.len());
    for c in last.chars() {
        if c.is_alphanumeric() {
            s.extend(c.to_lowercase());
        } else if !s.is_empty() && !s.ends_with('-') {
            s.push('-');
        }
    }
    let s = s.trim_end_matches('-').to_string();
    if s.is_empty() {
        "section".to_string()
    } else {
        s
    }
}

/// Whitespace runs (line ends, tabs, non-breaking spaces) collapsed to one space, trimmed.
pub(crate) fn collapse(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text
        .split(|c: char| c.is_whitespace())
        .filter(|w| !w.is_empty())
    {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(level: u8, text: &str) -> Block {
        Block::Heading {
            level,
            text: text.into(),
            anchor: None,
        }
    }

    #[test]
    fn headings_cut_sections_with_their_path_and_unique_anchors() {
        let blocks = vec![
            Block::Para("Intro.".into()),
            h(1, "Sick Leave"),
            h(2, "Reporting"),
            Block::Para("Call.".into()),
            Block::Para("Write.".into()),
            h(2, "Pay"),
            Block::Para("Full pay.".into()),
            h(2, "Pay"),
            Block::Para("Again.".into()),
        ];
        let s = sections(blocks, "Doc");
        let got: Vec<_> = s
            .iter()
            .map(|s| (s.anchor.as_str(), s.title.as_str(), s.text.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("top", "Doc", "Intro."),
                ("reporting", "Sick Leave › Reporting", "Call.\n\nWrite."),
                ("pay", "Sick Leave › Pay", "Full pay."),
                ("pay-2", "Sick Leave › Pay", "Again."),
            ]
        );
        assert_eq!(
            slug("Self-certification & medical certificates"),
            "self-certification-medical-certificates"
        );
        assert_eq!(slug("年假 规定"), "年假-规定");
        assert_eq!(collapse(" a\n\tb\u{a0} c "), "a b c");
    }
}
