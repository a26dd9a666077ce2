//! How the holes' figures read in the Markdown tables of `mtr bench` and `mtr leaderboard`:
//! the sentence above the table, the Judged@K cell (before and after filling) and each
//! measure's filled cell beside it.

use super::{HolesInfo, SystemHoles};

/// The sentence above a table that shows the holes' columns.
pub(crate) fn explanation(h: &HolesInfo, main_label: &str) -> String {
    let k = h.depth;
    let tau = h.kendall_tau.map_or(String::new(), |t| {
        format!(
            " Kendall's tau-b of the order by {main_label}, original against filled: {:.3} [{:.3}, {:.3}].",
            t.mean, t.ci_low, t.ci_high
        )
    });
    format!(
        "Holes: {} passages in the systems' top {k} that the qrels do not judge, {} judged by the relevance judges (`{}/`), {} of them relevant{}. Judged@{k}: the share of a system's top {k} the qrels judge, original → filled; a low share means its numbers rest on unjudged passages, counted as not relevant. \"filled\": the measure with the judged holes added to the qrels (relevant holes as relevant, the others as judged not relevant).{tau}",
        h.holes,
        h.judged,
        h.folder,
        h.relevant,
        if h.judged < h.holes {
            format!(
                "; {} not judged yet (rerun to judge them)",
                h.holes - h.judged
            )
        } else {
            String::new()
        }
    )
}

/// Judged@K before → after.
pub(crate) fn judged_cell(h: Option<&SystemHoles>) -> String {
    h.map_or("–".into(), |h| {
        format!("{:.3} → {:.3}", h.judged.mean, h.judged_filled.mean)
    })
}

/// A measure with the holes filled (with its interval for the main measure).
pub(crate) fn filled_cell(h: Option<&SystemHoles>, id: &str, main: bool) -> String {
    match h.and_then(|h| h.filled.get(id)) {
        Some(e) if main => format!("{:.4} [{:.3}, {:.3}]", e.mean, e.ci_low, e.ci_high),
        Some(e) => format!("{:.4}", e.mean),
        None => "–".into(),
    }
}
