//! The report's "Human calibration" section: how the judges' ratings compare with people's
//! on the calibration set (`--human-labels`), each agreement with its interval, beside the
//! annotators' own agreement as the ceiling.

use super::doc::Block;
use super::format::{ci, f};
use crate::human::annotator_agreement::{HumanCalibration, JudgeAgreement};

fn with_ci(x: Option<f64>, c: &Option<crate::summary::Interval>) -> String {
    match (x, c) {
        (Some(_), Some(_)) => format!("{} {}", f(x, 3), ci(c, 2)),
        _ => f(x, 3),
    }
}

pub(super) fn section(b: &mut Vec<Block>, h: &HumanCalibration) {
    b.push(Block::Heading(2, "Human calibration".into()));
    let judged = h
        .judged_units
        .map(|n| format!(", {n} judged"))
        .unwrap_or_default();
    b.push(Block::Para(format!(
        "Against `{}` ({} human-rated units{judged}; {} failed judgements excluded). Judges are compared with the median annotator; judge ratings are mapped linearly onto the human scale for kappa. Intervals: cluster bootstrap over tasks (the answers of one task together). The ceiling row is the annotators' own agreement (each annotator against the median of the others; kappa pairwise) on exactly the units the ensemble scored.",
        h.file, h.units, h.failed_judgements
    )));
    judges_table(b, h);
    ceiling_table(b, h);
    self_preference_table(b, h);
}

/// Each judge's (and the ensemble's) agreement with the median annotator, beside the ceiling.
fn judges_table(b: &mut Vec<Block>, h: &HumanCalibration) {
    let mut rows = Vec::new();
    for c in &h.comparisons {
        let metric = match &c.judged_with {
            Some(p) => format!("{} (`{p}`)", c.human_metric),
            None => c.human_metric.clone(),
        };
        let mut push = |who: &str, a: &JudgeAgreement| {
            rows.push(vec![
                c.dimension.name().to_string(),
                metric.clone(),
                who.to_string(),
                a.n.to_string(),
                with_ci(a.pearson, &a.pearson_ci),
                with_ci(a.spearman, &a.spearman_ci),
                with_ci(a.kappa_quadratic, &a.kappa_quadratic_ci),
            ]);
        };
        push("ensemble", &c.ensemble);
        for (j, a) in &c.per_judge {
            push(j, a);
        }
        rows.push(vec![
            c.dimension.name().to_string(),
            metric.clone(),
            "annotators (ceiling)".into(),
            c.ceiling.units.to_string(),
            with_ci(
                c.ceiling.pearson_leave_one_out,
                &c.ceiling.pearson_leave_one_out_ci,
            ),
            with_ci(
                c.ceiling.spearman_leave_one_out,
                &c.ceiling.spearman_leave_one_out_ci,
            ),
            with_ci(
                c.ceiling.kappa_quadratic_pairwise,
                &c.ceiling.kappa_quadratic_pairwise_ci,
            ),
        ]);
    }
    b.push(Block::Table {
        head: [
            "Dimension",
            "Human metric",
            "Rater",
            "n",
            "Pearson",
            "Spearman",
            "κ (quadratic)",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    });
}

/// The annotators' own agreement on the judged units and on the whole file.
fn ceiling_table(b: &mut Vec<Block>, h: &HumanCalibration) {
    let rows = h
        .comparisons
        .iter()
        .map(|c| {
            let all = c.ceiling_all_units.as_ref();
            vec![
                c.dimension.name().to_string(),
                c.human_metric.clone(),
                c.ceiling.units.to_string(),
                format!("{:.2}", c.ceiling.annotators_per_unit),
                with_ci(
                    c.ceiling.krippendorff_alpha_ordinal,
                    &c.ceiling.krippendorff_alpha_ordinal_ci,
                ),
                with_ci(c.ceiling.pearson_pairwise, &c.ceiling.pearson_pairwise_ci),
                all.map(|a| format!("{} (n={})", f(a.krippendorff_alpha_ordinal, 3), a.units))
                    .unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    b.push(Block::Para(
        "Annotator agreement on the judged units (and on the whole file):".into(),
    ));
    b.push(Block::Table {
        head: [
            "Dimension",
            "Human metric",
            "Units",
            "Annotators per unit",
            "Krippendorff α (ordinal)",
            "Pairwise Pearson",
            "α, whole file",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    });
}

/// The judge-minus-human residual by answer source (self-preference), when there is one.
fn self_preference_table(b: &mut Vec<Block>, h: &HumanCalibration) {
    let mut rows = Vec::new();
    for c in &h.comparisons {
        for (who, by) in &c.residual_by_source {
            for (src, r) in by {
                rows.push(vec![
                    c.dimension.name().to_string(),
                    c.human_metric.clone(),
                    who.clone(),
                    src.clone(),
                    r.n.to_string(),
                    with_ci(r.mean, &r.ci),
                    with_ci(r.minus_others, &r.minus_others_ci),
                ]);
            }
        }
    }
    if !rows.is_empty() {
        b.push(Block::Heading(
            3,
            "Self-preference: residual by answer source".into(),
        ));
        b.push(Block::Para("Judge score (mapped onto the human scale) minus the human median, by which model wrote the answer. A judge that prefers its own family's answers has a positive difference from the other sources on that family's answers.".into()));
        b.push(Block::Table {
            head: [
                "Dimension",
                "Human metric",
                "Judge",
                "Answer source",
                "n",
                "Residual",
                "Minus other sources",
            ]
            .map(String::from)
            .to_vec(),
            rows,
        });
    }
}
