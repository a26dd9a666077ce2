//! The "Scores" section (each dimension's mean with its interval, per-judge means, agreement,
//! the judges' failures) and the "Not audited" section.

use super::doc::Block;
use super::format::{JUDGES_FAILURE, chance, ci, f};
use crate::dimension::Dimension;
use crate::statistics::verdict::Verdict;
use crate::summary::Summary;

pub(super) fn scores(b: &mut Vec<Block>, s: &Summary, v: &Verdict) {
    b.push(Block::Heading(2, "Scores".into()));
    b.push(Block::Para(format!(
        "Item score = mean over judges. Ratings are 1-5; completeness is the share of (judge x trial) picks that chose the gold out of a pool of the gold and {} hard negatives ({} seeded permutations per judge). Intervals: {:.0}% cluster bootstrap over dialogues ({} resamples).",
        s.settings.negatives,
        s.settings.trials,
        s.settings.confidence * 100.0,
        s.settings.resamples
    )));
    let mut rows = Vec::new();
    for (dim, d) in &s.dimensions {
        rows.push(vec![
            d.title.clone(),
            d.items.to_string(),
            d.scored.to_string(),
            format!("{}{}", f(d.mean, 3), chance(s, *dim)),
            ci(&d.ci, 3),
            if v.fails(*dim) {
                format!("{} (< {}; {JUDGES_FAILURE})", d.flagged, d.flag_threshold)
            } else {
                format!("{} (< {})", d.flagged, d.flag_threshold)
            },
            f(d.agreement.krippendorff_alpha_ordinal, 3),
            if *dim == Dimension::Completeness {
                f(d.agreement.fleiss_kappa, 3)
            } else {
                "-".into()
            },
            v.dimensions
                .get(dim)
                .map_or("-", |x| x.separation.name())
                .to_string(),
        ]);
    }
    b.push(Block::Table {
        head: [
            "Dimension",
            "Items",
            "Scored",
            "Mean",
            "CI",
            "Flagged",
            "Krippendorff α (ordinal)",
            "Fleiss κ (passages picked)",
            "Judges separate",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    });
    per_judge(b, s);
    failures(b, s);
}

/// Each judge's mean per dimension, and the agreement notes.
fn per_judge(b: &mut Vec<Block>, s: &Summary) {
    let judges: Vec<&str> = s.judges.iter().map(|j| j.name.as_str()).collect();
    if !judges.is_empty() {
        let mut head = vec!["Dimension".to_string()];
        head.extend(judges.iter().map(|j| format!("{j} mean (n, failed)")));
        let rows = s
            .dimensions
            .iter()
            .map(|(dim, d)| {
                let mut r = vec![dim.name().to_string()];
                for j in &judges {
                    r.push(match d.per_judge.get(*j) {
                        Some(x) => format!(
                            "{}{} ({}, {})",
                            f(x.mean, 3),
                            chance(s, *dim),
                            x.n,
                            x.failed
                        ),
                        None => "-".into(),
                    });
                }
                r
            })
            .collect();
        b.push(Block::Heading(3, "Per judge".into()));
        b.push(Block::Table { head, rows });
    }
    let notes: Vec<String> = s
        .dimensions
        .iter()
        .filter_map(|(dim, d)| d.agreement.note.as_ref().map(|n| format!("{dim}: {n}")))
        .collect();
    if !notes.is_empty() {
        b.push(Block::List(notes));
    }
}

/// The judgements that stayed unparsable, per judge and dimension.
fn failures(b: &mut Vec<Block>, s: &Summary) {
    if !s.failures.is_empty() {
        b.push(Block::Heading(3, "Failed judgements".into()));
        b.push(Block::Para("Judgements that stayed unparsable after the LLM layer's retries (or whose call failed) are excluded from every mean, never scored.".into()));
        let rows = s
            .failures
            .iter()
            .flat_map(|(judge, by)| {
                by.iter()
                    .map(move |(dim, n)| vec![judge.clone(), dim.name().to_string(), n.to_string()])
            })
            .collect();
        b.push(Block::Table {
            head: vec!["Judge".into(), "Dimension".into(), "Failed".into()],
            rows,
        });
    }
}

pub(super) fn skipped(b: &mut Vec<Block>, s: &Summary) {
    let rows: Vec<Vec<String>> = s
        .plan
        .skipped
        .iter()
        .flat_map(|(dim, by)| {
            by.iter().map(move |(why, n)| {
                vec![
                    dim.name().to_string(),
                    why.name().to_string(),
                    n.to_string(),
                ]
            })
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    b.push(Block::Heading(2, "Not audited".into()));
    b.push(Block::Para("Turns without a relevant gold passage or without a reference answer skip the dimensions that need them; `no_gold`, `no_answer` and `unanswerable` count turns, `gold_not_in_corpus` and `no_negatives` count gold passages.".into()));
    b.push(Block::Table {
        head: vec!["Dimension".into(), "Reason".into(), "Count".into()],
        rows,
    });
}
