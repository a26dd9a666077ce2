//! Plain-text markup with headings: reStructuredText (a title line underlined, and maybe
//! overlined, by a run of one punctuation character at least as long as the title; levels in
//! the order the adornment styles first appear, as docutils assigns them) read as a run of
//! headings and paragraphs ([`Block`]). Paragraphs are the text between blank lines with their
//! lines joined; list items (`-`, `*`, `+`, `1.`) start a new block; directive and comment
//! lines (`.. `) and the `::` of literal blocks are dropped, the literal text kept.

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
}
