//! The leaderboard as Markdown (one table per board, for READMEs and papers) and CSV (one row
//! per board and system, every measure's mean plus the main measure's interval, for
//! spreadsheets and plotting scripts). A board with holes filled (`mtr bench --fill-holes K`)
//! shows Judged@K and each measure's filled value beside it; the CSV then ends with
//! `holes_depth`, `judged`, `judged_filled` and one `<measure>_filled` column per measure.

use std::fmt::Write;

use super::{Board, Leaderboard};

fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

fn label(b: &Board, id: &str) -> String {
    b.measures
        .iter()
        .find(|m| m.id == id)
        .map_or(id.to_string(), |m| m.label.clone())
}

/// The leaderboard as Markdown: its warnings, then each board's tables.
pub fn markdown(lb: &Leaderboard) -> String {
    let mut o = String::from("# Leaderboard\n\n");
    for w in &lb.warnings {
        let _ = writeln!(o, "> warning: {w}\n");
    }
    for b in &lb.boards {
        board_header(&mut o, b);
        table_head(&mut o, b);
        for r in &b.rows {
            table_row(&mut o, b, r);
        }
        o.push('\n');
        trends(&mut o, b);
    }
    o
}

/// The measures other than the main one, in display order.
fn others(b: &Board) -> Vec<&crate::result::MeasureInfo> {
    b.measures
        .iter()
        .filter(|m| m.id != b.main_measure)
        .collect()
}

/// A board's heading, what it scored, its warnings and the lines above its table.
fn board_header(o: &mut String, b: &Board) {
    let main = label(b, &b.main_measure);
    let _ = writeln!(
        o,
        "## {} ({}){}\n",
        b.benchmark,
        if b.version.is_empty() {
            "benchmark version not recorded".to_string()
        } else {
            format!("benchmark version {}", b.version)
        },
        b.part
            .as_ref()
            .map_or(String::new(), |p| format!(" ({p} part)"))
    );
    let _ = writeln!(
        o,
        "{} scored turns in {} dialogues; data fingerprint `{}`. Ranked by {main} (95% cluster-bootstrap interval over dialogues); ▲/▼ next to the score: significantly better/worse than the baseline of the row's result (paired randomization, Holm); n/a (depth N): the measure is deeper than the run's N documents per turn.\n",
        b.scored_queries,
        b.scored_dialogues,
        mtr_core::fingerprint::short(&b.fingerprint)
    );
    for w in &b.warnings {
        let _ = writeln!(o, "> warning: {w}\n");
    }
    if let Some(l) = &b.labels {
        let _ = writeln!(o, "{}", super::robust::markdown_header(l));
    }
    if let Some(h) = &b.holes {
        let _ = writeln!(o, "{}\n", crate::holes::report_cells::explanation(h, &main));
    }
}

/// The table's header and rule: with holes filled, each measure is followed by its filled
/// value and the depth by Judged@K.
fn table_head(o: &mut String, b: &Board) {
    let main = label(b, &b.main_measure);
    let holes = b.holes.as_ref();
    let filled = |l: &str| holes.map_or(String::new(), |_| format!(" {l} filled |"));
    let _ = write!(
        o,
        "| # | system | {main} |{} vs baseline | depth |{}",
        filled(&main),
        holes.map_or(String::new(), |h| format!(" Judged@{} |", h.depth))
    );
    let others = others(b);
    for m in &others {
        let _ = write!(o, " {} |{}", m.label, filled(&m.label));
    }
    let labels = b.labels.is_some();
    let _ = writeln!(o, " date |{}", if labels { " label-robust |" } else { "" });
    let per_measure = if holes.is_some() { 2 } else { 1 };
    let _ = write!(
        o,
        "|---|---|{}---|---|{}",
        "---|".repeat(per_measure),
        "---|".repeat(usize::from(holes.is_some()))
    );
    for _ in &others {
        o.push_str(&"---|".repeat(per_measure));
    }
    o.push_str(if labels { "---|---|\n" } else { "---|\n" });
}

/// A row's "vs baseline" cell.
fn versus_cell(b: &Board, r: &super::Row) -> String {
    match &r.versus {
        Some(v) if v.significant => {
            format!("{} {:+.4}", if v.diff > 0.0 { "▲" } else { "▼" }, v.diff)
        }
        Some(v) => format!("{:+.4}", v.diff),
        None if b
            .rows
            .iter()
            .any(|x| x.versus.as_ref().is_some_and(|v| v.baseline == r.system)) =>
        {
            "baseline".into()
        }
        None => "–".into(),
    }
}

/// One row of a board's table.
fn table_row(o: &mut String, b: &Board, r: &super::Row) {
    let holes = b.holes.as_ref();
    // the row's holes, when filled at the board's depth
    let row_holes = r
        .holes
        .as_ref()
        .filter(|h| holes.is_some_and(|b| b.depth == h.depth));
    let filled = |id: &str, main: bool| {
        holes.map_or(String::new(), |_| {
            format!(
                " {} |",
                crate::holes::report_cells::filled_cell(row_holes, id, main)
            )
        })
    };
    let e = r.measures.get(&b.main_measure);
    let mark = match &r.versus {
        Some(v) if v.significant && v.diff > 0.0 => " ▲",
        Some(v) if v.significant => " ▼",
        _ => "",
    };
    let dagger = if r.beyond_depth.contains(&b.main_measure) {
        " †"
    } else {
        ""
    };
    let _ = write!(
        o,
        "| {} | {} | {}{mark}{dagger} |{}",
        r.rank,
        cell(&r.system),
        e.map_or("–".into(), |e| format!(
            "{:.4} [{:.3}, {:.3}]",
            e.mean, e.ci_low, e.ci_high
        )),
        filled(&b.main_measure, true)
    );
    let depth = if r.depth == 0 {
        "–".to_string()
    } else {
        r.depth.to_string()
    };
    let _ = write!(o, " {} | {depth} |", versus_cell(b, r));
    if holes.is_some() {
        let _ = write!(
            o,
            " {} |",
            crate::holes::report_cells::judged_cell(row_holes)
        );
    }
    for m in others(b) {
        let v = match r.measures.get(&m.id) {
            Some(e) => format!("{:.4}", e.mean),
            None if r.beyond_depth.contains(&m.id) => crate::depth::not_available(r.depth),
            None => "–".into(),
        };
        let _ = write!(o, " {v} |{}", filled(&m.id, false));
    }
    let _ = write!(o, " {} |", r.date);
    if b.labels.is_some() {
        let _ = write!(
            o,
            " {} |",
            super::robust::markdown_cell(r.label_robust.as_ref())
        );
    }
    o.push('\n');
}

/// The board's trends, when a system has results on several dates.
fn trends(o: &mut String, b: &Board) {
    if b.trends.is_empty() {
        return;
    }
    let _ = writeln!(o, "### Trends ({})\n", label(b, &b.main_measure));
    for t in &b.trends {
        let pts: Vec<String> = t
            .points
            .iter()
            .map(|p| format!("{} {:.4}", p.date, p.estimate.mean))
            .collect();
        let _ = writeln!(o, "- {}: {}", cell(&t.system), pts.join(" → "));
    }
    o.push('\n');
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// One header line, then one line per (board, row). Measures are the union over boards, in
/// first-seen order; a measure a board lacks is an empty field.
pub fn csv(lb: &Leaderboard) -> String {
    let mut ids: Vec<String> = Vec::new();
    for b in &lb.boards {
        for m in &b.measures {
            if !ids.contains(&m.id) {
                ids.push(m.id.clone());
            }
        }
    }
    let mut header: Vec<String> = [
        "benchmark",
        "benchmark_version",
        "benchmark_fingerprint",
        "part",
        "rank",
        "system",
        "kind",
        "retriever",
        "formulation",
        "date",
        "main_measure",
        "main_mean",
        "main_ci_low",
        "main_ci_high",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    header.extend(ids.iter().cloned());
    header.extend(
        [
            "baseline",
            "diff_vs_baseline",
            "p_holm",
            "significant",
            "config_hash",
            "mtr_version",
            "git_commit",
            "file",
            "depth",
            "out_of_corpus",
        ]
        .map(String::from),
    );
    let holes = lb.boards.iter().any(|b| b.holes.is_some());
    if holes {
        header.extend(["holes_depth", "judged", "judged_filled"].map(String::from));
        header.extend(ids.iter().map(|id| format!("{id}_filled")));
    }
    let mut o = header.join(",");
    o.push('\n');
    for b in &lb.boards {
        for r in &b.rows {
            let main = r.measures.get(&b.main_measure);
            let num = |x: Option<f64>| x.map_or(String::new(), |v| format!("{v}"));
            let mut f: Vec<String> = vec![
                b.benchmark.clone(),
                b.version.clone(),
                b.fingerprint.clone(),
                b.part.clone().unwrap_or_default(),
                r.rank.to_string(),
                r.system.clone(),
                r.kind.clone(),
                r.retriever.clone().unwrap_or_default(),
                r.formulation.clone().unwrap_or_default(),
                r.date.clone(),
                b.main_measure.clone(),
                num(main.map(|e| e.mean)),
                num(main.map(|e| e.ci_low)),
                num(main.map(|e| e.ci_high)),
            ];
            for id in &ids {
                f.push(num(r.measures.get(id).map(|e| e.mean)));
            }
            f.push(
                r.versus
                    .as_ref()
                    .map_or(String::new(), |v| v.baseline.clone()),
            );
            f.push(num(r.versus.as_ref().map(|v| v.diff)));
            f.push(num(r.versus.as_ref().map(|v| v.p_holm)));
            f.push(
                r.versus
                    .as_ref()
                    .map_or(String::new(), |v| v.significant.to_string()),
            );
            f.push(r.config_hash.clone());
            f.push(r.mtr_version.clone());
            f.push(r.git_commit.clone().unwrap_or_default());
            f.push(r.file.clone());
            f.push(r.depth.to_string());
            f.push(r.out_of_corpus.to_string());
            if holes {
                let h = r.holes.as_ref();
                f.push(h.map_or(String::new(), |h| h.depth.to_string()));
                f.push(num(h.map(|h| h.judged.mean)));
                f.push(num(h.map(|h| h.judged_filled.mean)));
                for id in &ids {
                    f.push(num(h.and_then(|h| h.filled.get(id)).map(|e| e.mean)));
                }
            }
            let line: Vec<String> = f.iter().map(|x| csv_field(x)).collect();
            o.push_str(&line.join(","));
            o.push('\n');
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quoting() {
        assert_eq!(
            csv_field("rrf(bm25,dense).last"),
            "\"rrf(bm25,dense).last\""
        );
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("a,\"b\""), "\"a,\"\"b\"\"\"");
        assert_eq!(csv_field("plain"), "plain");
    }
}
