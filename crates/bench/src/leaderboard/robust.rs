//! Label robustness on the leaderboard: for a result made with `mtr bench --audit`, each row
//! gets its rank interval under the original qrels and every audited variant (a row is
//! *label-robust* when the interval is one rank), and the board gets the tau figures of each
//! variant and the original -> corrected ranks for the page's slope chart. Everything comes
//! from the results' `label_sensitivity` sections; nothing is recomputed here.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::result::BenchResult;
use crate::sensitivity::Variant;
use crate::stats::bootstrap::Estimate;

/// A row's ranks under all qrels (from its own result's audit).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RowRobustness {
    /// Its rank under the original qrels.
    pub original_rank: usize,
    /// Variant -> rank.
    pub ranks: BTreeMap<String, usize>,
    /// Its best rank over the original and every variant.
    pub best: usize,
    /// Its worst rank over the original and every variant.
    pub worst: usize,
    /// Same rank under the original and every variant.
    pub robust: bool,
}

/// The board's label-sensitivity header (from the latest result that carries an audit).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BoardLabels {
    /// The result file it comes from.
    pub file: String,
    /// The measure scored.
    pub measure: String,
    /// The figures rest on the audited turns only.
    pub partial: bool,
    /// Scored turns the audit covered.
    pub scored_turns_audited: usize,
    /// Scored turns of the result.
    pub scored_turns: usize,
    /// The audit's alignment threshold: golds scored below it are removed.
    pub flag_rating_below: f64,
    /// The tau figures of each variant.
    pub variants: Vec<VariantTau>,
    /// Original rank -> corrected rank per system (the slope chart).
    pub slope: Vec<Slope>,
}

/// One variant's agreement with the original ranking.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VariantTau {
    /// The variant's name.
    pub variant: String,
    /// Kendall's tau-b between the original and the variant ranking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kendall_tau: Option<Estimate>,
    /// tau_AP of the original ranking against the variant's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tau_ap: Option<Estimate>,
    /// Pairs of systems whose order flips.
    pub flips: usize,
}

/// One system's original and corrected rank (the slope chart).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Slope {
    /// The system's name.
    pub system: String,
    /// Its rank under the original qrels.
    pub original_rank: usize,
    /// Its rank under the corrected qrels.
    pub corrected_rank: usize,
}

/// The row robustness of `system` in `r`, when `r` carries an audit.
pub fn row(r: &BenchResult, system: &str) -> Option<RowRobustness> {
    let x = r.label_sensitivity.as_ref()?.robustness_of(system)?;
    Some(RowRobustness {
        original_rank: x.original_rank,
        ranks: x.ranks.clone(),
        best: x.best,
        worst: x.worst,
        robust: x.robust,
    })
}

/// The board header of `r` (written as `file`), when it carries an audit.
pub fn board(r: &BenchResult, file: &str) -> Option<BoardLabels> {
    let ls = r.label_sensitivity.as_ref()?;
    let corrected = ls.variant(Variant::Corrected);
    Some(BoardLabels {
        file: file.to_string(),
        measure: ls.measure.clone(),
        partial: ls.scope.partial,
        scored_turns_audited: ls.scope.scored_turns_audited,
        scored_turns: ls.scope.scored_turns,
        flag_rating_below: ls.scope.flag_rating_below,
        variants: ls
            .variants
            .iter()
            .map(|v| VariantTau {
                variant: v.variant.name().to_string(),
                kendall_tau: v.kendall_tau,
                tau_ap: v.tau_ap,
                flips: v.flips.len(),
            })
            .collect(),
        slope: ls
            .original
            .iter()
            .enumerate()
            .map(|(i, s)| Slope {
                system: s.system.clone(),
                original_rank: s.rank,
                corrected_rank: corrected
                    .and_then(|c| c.systems.get(i))
                    .map_or(s.rank, |x| x.rank),
            })
            .collect(),
    })
}

/// The Markdown lines under a board's heading.
pub(crate) fn markdown_header(b: &BoardLabels) -> String {
    let taus: Vec<String> = b
        .variants
        .iter()
        .map(|v| {
            format!(
                "{}: tau {}, tau_AP {}, {} flipped pairs",
                v.variant,
                v.kendall_tau.map_or("–".into(), |e| format!(
                    "{:.3} [{:.3}, {:.3}]",
                    e.mean, e.ci_low, e.ci_high
                )),
                v.tau_ap.map_or("–".into(), |e| format!("{:.3}", e.mean)),
                v.flips
            )
        })
        .collect();
    format!(
        "Label sensitivity ({}; audit: golds with alignment below {} removed, verified missing golds added; {} of {} scored turns audited{}): {}. label-robust: the row's rank interval under the original and every audited variant (✓ when it is one rank).\n",
        b.measure,
        b.flag_rating_below,
        b.scored_turns_audited,
        b.scored_turns,
        if b.partial {
            ", partial: on the audited turns only"
        } else {
            ""
        },
        taus.join("; ")
    )
}

/// A row's label-robust cell.
pub(crate) fn markdown_cell(r: Option<&RowRobustness>) -> String {
    match r {
        Some(x) if x.robust => format!("✓ {}", x.best),
        Some(x) => format!("{}–{}", x.best, x.worst),
        None => "–".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_and_header() {
        let robust = RowRobustness {
            original_rank: 1,
            ranks: BTreeMap::new(),
            best: 1,
            worst: 1,
            robust: true,
        };
        let moved = RowRobustness {
            best: 2,
            worst: 4,
            robust: false,
            ..robust.clone()
        };
        assert_eq!(markdown_cell(Some(&robust)), "✓ 1");
        assert_eq!(markdown_cell(Some(&moved)), "2–4");
        assert_eq!(markdown_cell(None), "–");
        let b = BoardLabels {
            file: "r/bench.json".into(),
            measure: "ndcg_cut_10".into(),
            partial: true,
            scored_turns_audited: 40,
            scored_turns: 208,
            flag_rating_below: 3.0,
            variants: vec![VariantTau {
                variant: "corrected".into(),
                kendall_tau: Some(Estimate {
                    mean: 0.9,
                    ci_low: 0.8,
                    ci_high: 1.0,
                }),
                tau_ap: None,
                flips: 2,
            }],
            slope: Vec::new(),
        };
        let h = markdown_header(&b);
        assert!(h.contains("40 of 208 scored turns audited, partial"), "{h}");
        assert!(
            h.contains("corrected: tau 0.900 [0.800, 1.000], tau_AP –, 2 flipped pairs"),
            "{h}"
        );
        assert!(h.contains("below 3 removed"), "{h}");
    }
}
