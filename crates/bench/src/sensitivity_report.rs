//! The label-sensitivity section of a bench's `report.md`, and its few lines in the command's
//! text summary: how the leaderboard reads under the qrels an audit supports, on which turns,
//! with which thresholds, and what to make of each flip. Kept apart from [`crate::report`] so
//! the bench report stays one job per module.

use std::fmt::Write as _;

use mtr_core::markdown::{Align, Table};

use crate::sensitivity::{LabelSensitivity, VariantResult};
use crate::stats::bootstrap::Estimate;

/// One row a variant, after the original's: what it changed in the golds and how the
/// order of the systems moved.
fn variants_table(ls: &LabelSensitivity) -> Table {
    let (l, r) = (Align::Left, Align::Right);
    let mut t = Table::new([
        ("variant", l),
        ("golds removed", r),
        ("golds added", r),
        ("turns changed", r),
        ("turns left without gold", r),
        ("turns scored", r),
        ("Kendall's tau", l),
        ("tau_AP", l),
        ("flips", r),
    ]);
    let dash = "–".to_string();
    let scored = ls.scope.scored_turns_audited.to_string();
    t.row([
        "original".to_string(),
        dash.clone(),
        dash.clone(),
        dash.clone(),
        dash.clone(),
        scored,
        dash.clone(),
        dash.clone(),
        dash,
    ]);
    for v in &ls.variants {
        t.row([
            v.variant.to_string(),
            v.applied.golds_removed.to_string(),
            v.applied.golds_added.to_string(),
            v.applied.turns_changed.to_string(),
            v.applied.turns_left_without_gold.to_string(),
            v.turns.to_string(),
            tau(v.kendall_tau.as_ref()),
            tau(v.tau_ap.as_ref()),
            v.flips.len().to_string(),
        ]);
    }
    t
}

/// One row a system, in the original order: its score, then under each variant its score,
/// rank and change, then the ranks it takes and whether it is label-robust.
fn systems_table(ls: &LabelSensitivity) -> Table {
    let mut head = vec!["system".to_string(), "original (audited turns)".to_string()];
    for v in &ls.variants {
        head.push(v.variant.to_string());
        head.push("change".into());
    }
    head.extend(["ranks".to_string(), "label-robust".to_string()]);
    let mut t = Table::with_head(head);
    let mut order: Vec<usize> = (0..ls.original.len()).collect();
    order.sort_by_key(|&i| ls.original[i].rank);
    let dash = || "–".to_string();
    for i in order {
        let s = &ls.original[i];
        let mut row = vec![format!("{}. {}", s.rank, s.system), ci(&s.estimate)];
        for v in &ls.variants {
            match v.systems.get(i) {
                Some(x) => row.extend([
                    format!("{} (#{})", ci(&x.estimate), x.rank),
                    signed(&x.change),
                ]),
                None => row.extend([dash(), dash()]),
            }
        }
        match ls.robustness_of(&s.system) {
            Some(r) => row.extend([
                format!("{}–{}", r.best, r.worst),
                (if r.robust { "yes" } else { "no" }).to_string(),
            ]),
            None => row.extend([dash(), dash()]),
        }
        t.row(row);
    }
    t
}

fn ci(e: &Estimate) -> String {
    format!("{:.4} [{:.3}, {:.3}]", e.mean, e.ci_low, e.ci_high)
}

fn signed(e: &Estimate) -> String {
    format!("{:+.4} [{:+.3}, {:+.3}]", e.mean, e.ci_low, e.ci_high)
}

fn tau(e: Option<&Estimate>) -> String {
    e.map_or("–".into(), |e| {
        format!("{:.3} [{:.3}, {:.3}]", e.mean, e.ci_low, e.ci_high)
    })
}

/// One sentence on what the figures rest on.
pub(crate) fn scope_line(ls: &LabelSensitivity) -> String {
    let s = &ls.scope;
    let mut o = if s.partial {
        format!(
            "**Partial**: the audit covered {} of {} dialogues; every figure below is on the {} scored turns it audited ({} dialogues) of the bench's {}, under the original qrels and under each variant on those same turns; the other {} turns are in no mean here.",
            s.dialogues_audited,
            s.dialogues_total,
            s.scored_turns_audited,
            s.scored_dialogues_audited,
            s.scored_turns,
            s.scored_turns - s.scored_turns_audited
        )
    } else {
        format!(
            "The audit covered every scored turn ({} turns, {} dialogues).",
            s.scored_turns_audited, s.scored_dialogues_audited
        )
    };
    let _ = write!(
        o,
        " Thresholds (the audit's own): a gold passage is removed when its ensemble alignment score is below {}; added golds are {}.",
        s.flag_rating_below, s.added_golds
    );
    o
}

/// The Markdown section (starts with `## Label sensitivity`).
pub(crate) fn markdown(ls: &LabelSensitivity) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "## Label sensitivity ({})\n", ls.measure);
    let _ = writeln!(o, "{}\n", scope_line(ls));
    for n in &ls.scope.notes {
        let _ = writeln!(o, "- {n}");
    }
    if !ls.scope.notes.is_empty() {
        o.push('\n');
    }
    variants_table(ls).render_into(&mut o);
    o.push('\n');

    // systems: original and every variant side by side, with ranks
    systems_table(ls).render_into(&mut o);
    o.push('\n');

    for v in &ls.variants {
        variant_details(&mut o, v);
    }
    let _ = writeln!(o, "Conventions:\n");
    for c in &ls.conventions {
        let _ = writeln!(o, "- {c}");
    }
    o.push('\n');
    o
}

fn variant_details(o: &mut String, v: &VariantResult) {
    let _ = writeln!(o, "### {}\n", v.variant);
    if v.flips.is_empty() {
        let _ = writeln!(o, "No pair of systems changes order.\n");
    } else {
        let _ = writeln!(
            o,
            "| flipped pair (original order) | original diff | p (Holm) | variant diff | p (Holm) | reading |"
        );
        let _ = writeln!(o, "|---|---:|---:|---:|---:|---|");
        for f in &v.flips {
            let reading = match (f.original_significant, f.variant_significant) {
                (true, true) => "both orders significant: the labels decide the winner",
                (true, false) => "a significant original order is lost",
                (false, true) => "the new order is significant",
                (false, false) => "neither order significant: a tie either way",
            };
            let _ = writeln!(
                o,
                "| {} > {} | {:+.4} | {:.4} ({:.4}) | {:+.4} | {:.4} ({:.4}) | {reading} |",
                f.above,
                f.below,
                f.original_diff,
                f.p_original,
                f.p_original_holm,
                f.variant_diff,
                f.p_variant,
                f.p_variant_holm
            );
        }
        o.push('\n');
    }
    if !v.moved_turns.is_empty() {
        let _ = writeln!(
            o,
            "Changed turns that move systems most (the turn's change of the measure, at most three systems each):\n"
        );
        let _ = writeln!(o, "| turn | removed | added | moves |");
        let _ = writeln!(o, "|---|---|---|---|");
        for t in &v.moved_turns {
            let moves: Vec<String> = t
                .systems
                .iter()
                .map(|s| format!("{} {:+.3}", s.system, s.shift))
                .collect();
            let _ = writeln!(
                o,
                "| `{}`{} | {} | {} | {} |",
                t.qid,
                if t.left_the_mean {
                    " (leaves the mean)"
                } else {
                    ""
                },
                t.removed.join(", "),
                t.added.join(", "),
                moves.join("; ")
            );
        }
        o.push('\n');
    }
}

/// A few lines for the command's stdout.
pub(crate) fn text_summary(ls: &LabelSensitivity) -> String {
    let mut o = String::new();
    let s = &ls.scope;
    let _ = writeln!(
        o,
        "label sensitivity ({}): {} of {} scored turns audited{}; alignment threshold {}",
        ls.measure,
        s.scored_turns_audited,
        s.scored_turns,
        if s.partial { " (partial)" } else { "" },
        s.flag_rating_below
    );
    for v in &ls.variants {
        let _ = writeln!(
            o,
            "  {:<16} -{} +{} golds, {} turns; tau {} tau_AP {}; {} flipped pairs",
            v.variant.name(),
            v.applied.golds_removed,
            v.applied.golds_added,
            v.turns,
            v.kendall_tau
                .as_ref()
                .map_or("–".into(), |e| format!("{:.3}", e.mean)),
            v.tau_ap
                .as_ref()
                .map_or("–".into(), |e| format!("{:.3}", e.mean)),
            v.flips.len()
        );
    }
    o
}
