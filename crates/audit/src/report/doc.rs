//! A tiny document model shared by the Markdown and HTML reports, so both say the same thing:
//! headings, paragraphs, tables, quotes, and charts (inline SVG, HTML only).

/// One block of a report.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Block {
    Heading(u8, String),
    Para(String),
    /// A list of short lines.
    List(Vec<String>),
    Table {
        head: Vec<String>,
        rows: Vec<Vec<String>>,
    },
    /// Quoted source text (questions, passages, answers).
    Quote {
        label: String,
        text: String,
    },
    /// An inline SVG chart with a caption; Markdown shows only the caption and a pointer.
    Chart {
        caption: String,
        svg: String,
    },
}

/// Markdown rendering.
pub(crate) fn to_markdown(blocks: &[Block]) -> String {
    let mut out = String::new();
    for b in blocks {
        match b {
            Block::Heading(level, t) => {
                out.push_str(&"#".repeat(usize::from(*level)));
                out.push(' ');
                out.push_str(t);
                out.push_str("\n\n");
            }
            Block::Para(t) => {
                out.push_str(t);
                out.push_str("\n\n");
            }
            Block::List(items) => {
                for i in items {
                    out.push_str("- ");
                    out.push_str(i);
                    out.push('\n');
                }
                out.push('\n');
            }
            Block::Table { head, rows } => {
                out.push_str(&md_row(head));
                out.push_str(&md_row(
                    &head.iter().map(|_| "---".to_string()).collect::<Vec<_>>(),
                ));
                for r in rows {
                    out.push_str(&md_row(r));
                }
                out.push('\n');
            }
            Block::Quote { label, text } => {
                out.push_str(&format!("**{label}:**\n"));
                for line in text.lines() {
                    out.push_str("> ");
                    out.push_str(line);
                    out.push('\n');
                }
                out.push('\n');
            }
            Block::Chart { caption, .. } => {
                out.push_str(&format!("*Chart: {caption} (see report.html).*\n\n"));
            }
        }
    }
    out.trim_end().to_string() + "\n"
}

fn md_row(cells: &[String]) -> String {
    let cells: Vec<String> = cells
        .iter()
        .map(|c| c.replace('|', "\\|").replace('\n', " "))
        .collect();
    format!("| {} |\n", cells.join(" | "))
}

/// Escapes text for HTML.
pub(crate) fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// Inline Markdown of report text: `code` and **bold** only.
fn inline(s: &str) -> String {
    let e = esc(s);
    let mut out = String::new();
    let mut code = false;
    for (i, part) in e.split('`').enumerate() {
        if i > 0 {
            out.push_str(if code { "</code>" } else { "<code>" });
            code = !code;
        }
        out.push_str(part);
    }
    if code {
        out.push_str("</code>");
    }
    let mut res = String::new();
    let mut bold = false;
    for (i, part) in out.split("**").enumerate() {
        if i > 0 {
            res.push_str(if bold { "</strong>" } else { "<strong>" });
            bold = !bold;
        }
        res.push_str(part);
    }
    if bold {
        res.push_str("</strong>");
    }
    res
}

const CSS: &str = "body{font:15px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#1d232a}\
h1{font-size:1.7em}h2{margin-top:2em;border-bottom:1px solid #d0d7de;padding-bottom:.2em}h3{margin-top:1.4em}\
table{border-collapse:collapse;margin:.6em 0 1.2em;font-size:.92em}th,td{border:1px solid #d0d7de;padding:.3em .6em;text-align:left;vertical-align:top}\
th{background:#f3f5f7}td.n{text-align:right;font-variant-numeric:tabular-nums}\
blockquote{margin:.3em 0 .8em;padding:.4em .8em;border-left:4px solid #9fb3c8;background:#f7f9fb;white-space:pre-wrap}\
.label{font-weight:600;margin-top:.6em}figure{margin:1em 0}figcaption{font-size:.9em;color:#57606a}code{background:#f3f5f7;padding:0 .2em}";

fn numeric(s: &str) -> bool {
    let t = s.trim_start_matches(['-', '+', '$']).trim_end_matches('%');
    !t.is_empty()
        && t.chars()
            .all(|c| c.is_ascii_digit() || c == '.' || c == ',' || c == 'e' || c == '-')
}

/// A self-contained HTML page (inline CSS and SVG, no scripts, no external resources).
pub(crate) fn to_html(title: &str, blocks: &[Block]) -> String {
    let mut out = String::new();
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    out.push_str(&format!(
        "<title>{}</title>\n<style>{CSS}</style>\n</head>\n<body>\n",
        esc(title)
    ));
    for b in blocks {
        match b {
            Block::Heading(level, t) => {
                out.push_str(&format!("<h{level}>{}</h{level}>\n", inline(t)))
            }
            Block::Para(t) => out.push_str(&format!("<p>{}</p>\n", inline(t))),
            Block::List(items) => {
                out.push_str("<ul>\n");
                for i in items {
                    out.push_str(&format!("<li>{}</li>\n", inline(i)));
                }
                out.push_str("</ul>\n");
            }
            Block::Table { head, rows } => {
                out.push_str("<table>\n<thead><tr>");
                for h in head {
                    out.push_str(&format!("<th>{}</th>", inline(h)));
                }
                out.push_str("</tr></thead>\n<tbody>\n");
                for r in rows {
                    out.push_str("<tr>");
                    for c in r {
                        let class = if numeric(c) { " class=\"n\"" } else { "" };
                        out.push_str(&format!("<td{class}>{}</td>", inline(c)));
                    }
                    out.push_str("</tr>\n");
                }
                out.push_str("</tbody>\n</table>\n");
            }
            Block::Quote { label, text } => {
                out.push_str(&format!(
                    "<div class=\"label\">{}</div>\n<blockquote>{}</blockquote>\n",
                    esc(label),
                    esc(text)
                ));
            }
            Block::Chart { caption, svg } => {
                out.push_str(&format!(
                    "<figure>\n{svg}\n<figcaption>{}</figcaption>\n</figure>\n",
                    esc(caption)
                ));
            }
        }
    }
    out.push_str("</body>\n</html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_both_formats_and_escapes() {
        let blocks = vec![
            Block::Heading(1, "Audit <x>".into()),
            Block::Para("Mean **3.2** with `seed` 42".into()),
            Block::Table {
                head: vec!["a".into(), "b".into()],
                rows: vec![vec!["x|y".into(), "1.5".into()]],
            },
            Block::Quote {
                label: "Question".into(),
                text: "line1\n<script>".into(),
            },
            Block::Chart {
                caption: "chart".into(),
                svg: "<svg></svg>".into(),
            },
        ];
        let md = to_markdown(&blocks);
        assert!(md.contains("| x\\|y | 1.5 |"));
        assert!(md.contains("> <script>"));
        let html = to_html("t", &blocks);
        assert!(html.contains("&lt;script&gt;"));
        assert!(html.contains("<strong>3.2</strong>"));
        assert!(html.contains("<code>seed</code>"));
        assert!(html.contains("<td class=\"n\">1.5</td>"));
        assert!(!html.contains("<script>"));
    }
}
