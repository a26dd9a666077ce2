//! The one Markdown table writer of the project: reports of every command print their tables
//! through it, so that cells are escaped the same way (a `|` inside a cell becomes `\|`, a line
//! break a space) and the header rule says each column's alignment.
//!
//! ```
//! use mtr_core::markdown::{Align, Table};
//!
//! let mut t = Table::new([("system", Align::Left), ("nDCG@10", Align::Right)]);
//! t.row(["bm25", "0.412"]);
//! assert_eq!(t.render(), "| system | nDCG@10 |\n|---|---:|\n| bm25 | 0.412 |\n");
//! ```

use std::fmt::Write as _;

/// How a column's cells line up; Markdown says it in the rule under the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Align {
    /// `---`: text (the renderer's default, left).
    #[default]
    Left,
    /// `---:`: numbers.
    Right,
    /// `:---:`.
    Center,
}

impl Align {
    fn rule(self) -> &'static str {
        match self {
            Align::Left => "---",
            Align::Right => "---:",
            Align::Center => ":---:",
        }
    }
}

/// A Markdown table: a header with each column's alignment, then rows of cells.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Table {
    head: Vec<String>,
    align: Vec<Align>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these columns (name, alignment).
    pub fn new<S: Into<String>>(columns: impl IntoIterator<Item = (S, Align)>) -> Self {
        let (head, align) = columns.into_iter().map(|(h, a)| (h.into(), a)).unzip();
        Table {
            head,
            align,
            rows: Vec::new(),
        }
    }

    /// A table whose columns are all left-aligned.
    pub fn with_head<S: Into<String>>(head: impl IntoIterator<Item = S>) -> Self {
        Self::new(head.into_iter().map(|h| (h, Align::Left)))
    }

    /// Appends a row. A row shorter than the header is padded with empty cells; a longer one
    /// keeps its extra cells (Markdown renderers drop them), so nothing is lost silently in
    /// the text.
    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) -> &mut Self {
        let mut cells: Vec<String> = cells.into_iter().map(Into::into).collect();
        if cells.len() < self.head.len() {
            cells.resize(self.head.len(), String::new());
        }
        self.rows.push(cells);
        self
    }

    /// The number of rows (the header not counted).
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// True for a table with no row.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The table as Markdown, every line ending in `\n`.
    pub fn render(&self) -> String {
        let mut out = String::new();
        self.render_into(&mut out);
        out
    }

    /// Appends the table to `out`.
    pub fn render_into(&self, out: &mut String) {
        push_row(out, &self.head);
        out.push('|');
        for a in &self.align {
            out.push_str(a.rule());
            out.push('|');
        }
        out.push('\n');
        for r in &self.rows {
            push_row(out, r);
        }
    }
}

impl std::fmt::Display for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.render())
    }
}

/// A cell's text made safe inside a table row: `|` escaped, line breaks as spaces.
pub fn cell(text: &str) -> String {
    let mut o = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '|' => o.push_str("\\|"),
            '\r' => {
                if chars.peek() != Some(&'\n') {
                    o.push(' ');
                }
            }
            '\n' => o.push(' '),
            c => o.push(c),
        }
    }
    o
}

fn push_row(out: &mut String, cells: &[String]) {
    out.push('|');
    for c in cells {
        let _ = write!(out, " {} |", cell(c));
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_header_rule_and_rows() {
        let mut t = Table::new([
            ("system", Align::Left),
            ("score", Align::Right),
            ("mid", Align::Center),
        ]);
        t.row(["a", "1", "x"]).row(["b", "2", "y"]);
        assert_eq!(
            t.render(),
            "| system | score | mid |\n|---|---:|:---:|\n| a | 1 | x |\n| b | 2 | y |\n"
        );
        assert_eq!(t.len(), 2);
        assert_eq!(t.to_string(), t.render());
    }

    #[test]
    fn escapes_pipes_and_line_breaks() {
        let mut t = Table::with_head(["q"]);
        t.row(["a|b\r\nc\nd\re"]);
        assert_eq!(t.render(), "| q |\n|---|\n| a\\|b c d e |\n");
    }

    #[test]
    fn short_rows_are_padded_long_rows_kept() {
        let mut t = Table::with_head(["a", "b"]);
        t.row(["1"]);
        t.row(["1", "2", "3"]);
        assert_eq!(
            t.render(),
            "| a | b |\n|---|---|\n| 1 |  |\n| 1 | 2 | 3 |\n"
        );
    }

    #[test]
    fn an_empty_table_is_its_header() {
        let t = Table::with_head(["only"]);
        assert!(t.is_empty());
        assert_eq!(t.render(), "| only |\n|---|\n");
    }
}
