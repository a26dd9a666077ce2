//! The "Worst items" section (with their text) and the cost ledger.

use super::doc::Block;
use super::format::JUDGES_FAILURE;
use crate::dimension::Dimension;
use crate::statistics::verdict::Verdict;
use crate::summary::{Summary, WorstItem};

pub(super) fn worst(b: &mut Vec<Block>, s: &Summary, v: &Verdict) {
    if s.worst.values().all(Vec::is_empty) {
        return;
    }
    let failed = |d: &Dimension| v.fails(*d);
    b.push(Block::Heading(
        2,
        if s.worst
            .iter()
            .filter(|(_, x)| !x.is_empty())
            .all(|(d, _)| failed(d))
        {
            format!("Worst items: {JUDGES_FAILURE}")
        } else {
            "Worst items".into()
        },
    ));
    for (dim, items) in &s.worst {
        if items.is_empty() {
            continue;
        }
        b.push(Block::Heading(
            3,
            if failed(dim) {
                format!(
                    "{} (the judges cannot separate: {JUDGES_FAILURE})",
                    dim.title()
                )
            } else {
                dim.title().to_string()
            },
        ));
        for w in items {
            worst_item(b, w);
        }
    }
}

/// One worst item: its scores, then its texts and the judges' justifications.
fn worst_item(b: &mut Vec<Block>, w: &WorstItem) {
    let per: Vec<String> = w
        .per_judge
        .iter()
        .map(|(j, v)| format!("{j} {v:.2}"))
        .collect();
    b.push(Block::Para(format!(
        "**{}** (turn {}{}) score {:.2} [{}]",
        w.turn_id,
        w.turn,
        w.passage_id
            .as_ref()
            .map(|p| format!(", passage `{p}`"))
            .unwrap_or_default(),
        w.score,
        per.join(", ")
    )));
    if !w.history.is_empty() {
        b.push(Block::Quote {
            label: "Conversation (latest)".into(),
            text: w.history.join("\n"),
        });
    }
    b.push(Block::Quote {
        label: "Question".into(),
        text: w.question.clone(),
    });
    if let Some(p) = &w.passage {
        b.push(Block::Quote {
            label: "Gold passage".into(),
            text: p.clone(),
        });
    }
    if let (Some(id), Some(p)) = (&w.preferred_passage_id, &w.preferred_passage) {
        b.push(Block::Quote {
            label: format!("Passage the judges preferred (`{id}`)"),
            text: p.clone(),
        });
    }
    if let Some(a) = &w.answer {
        b.push(Block::Quote {
            label: "Reference answer".into(),
            text: a.clone(),
        });
    }
    if !w.justifications.is_empty() {
        b.push(Block::List(
            w.justifications
                .iter()
                .map(|(j, t)| format!("{j}: {t}"))
                .collect(),
        ));
    }
}

pub(super) fn cost(b: &mut Vec<Block>, s: &Summary) {
    b.push(Block::Heading(2, "Cost".into()));
    let row = |name: &str, l: &crate::summary::Ledger| {
        vec![
            name.to_string(),
            l.calls.to_string(),
            l.cache_hits.to_string(),
            l.failed.to_string(),
            l.prompt_tokens.to_string(),
            l.completion_tokens.to_string(),
            format!("{:.4}", l.cost_usd),
        ]
    };
    let mut rows: Vec<Vec<String>> = s.cost.per_judge.iter().map(|(j, l)| row(j, l)).collect();
    rows.push(row("total", &s.cost.total));
    b.push(Block::Table {
        head: [
            "Judge",
            "Judgements",
            "Cache hits",
            "Failed",
            "Prompt tokens",
            "Completion tokens",
            "USD",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    });
    let per: Vec<String> = s
        .cost
        .prompt_tokens_per_judgement
        .iter()
        .map(|(d, t)| format!("{d}: {t:.0} prompt tokens per judgement"))
        .collect();
    if !per.is_empty() {
        b.push(Block::List(per));
    }
}
