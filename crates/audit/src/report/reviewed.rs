//! The report's "Reviewed" section: what the reviewers' labels on a random sample say
//! (`summary.review`, see [`crate::review_estimates`]): per dimension the share of items that fail and
//! the mean rating, by the judges alone, the reviewers alone and prediction-powered, each with
//! its interval; each judge's agreement with the reviewers beside the reviewers' own; and which
//! number to publish.

use super::doc::Block;
use super::format::{ci, f};
use crate::summary::review::{IntervalMethod, LambdaRule, ThreeWay};
use crate::summary::{Review, ReviewEstimate, ReviewerAgreement};

fn share(e: &ReviewEstimate) -> String {
    let pct = |x: f64| format!("{:.1}", x * 100.0);
    match (e.estimate, &e.ci) {
        (Some(x), Some(c)) => format!(
            "{}% [{}, {}] (n {})",
            pct(x),
            pct(c.lower),
            pct(c.upper),
            e.n
        ),
        (Some(x), None) => format!("{}% (n {})", pct(x), e.n),
        _ => format!("- (n {})", e.n),
    }
}

fn rating(e: &ReviewEstimate) -> String {
    match (e.estimate, &e.ci) {
        (Some(x), Some(c)) => format!("{x:.2} [{:.2}, {:.2}] (n {})", c.lower, c.upper, e.n),
        (Some(x), None) => format!("{x:.2} (n {})", e.n),
        _ => format!("- (n {})", e.n),
    }
}

/// What [`methods_line`] reads of a dimension's share or of its mean rating.
#[derive(Clone, Copy)]
struct Methods<'a> {
    reviewers: &'a ReviewEstimate,
    ppi: &'a ReviewEstimate,
    lambda_rule: Option<LambdaRule>,
    few_clusters: Option<usize>,
}

impl<'a> From<&'a ThreeWay> for Methods<'a> {
    fn from(t: &'a ThreeWay) -> Self {
        Methods {
            reviewers: &t.reviewers,
            ppi: &t.ppi,
            lambda_rule: t.lambda_rule,
            few_clusters: t.few_clusters,
        }
    }
}

/// One sentence per estimated quantity naming its intervals' methods and how λ was set, and
/// when the reviewed dialogues are few, saying so with their count.
fn methods_line(name: &str, t: Methods<'_>) -> Option<String> {
    let m = |e: &ReviewEstimate| e.method.map(IntervalMethod::title);
    let (rev, ppi) = (m(t.reviewers)?, m(t.ppi)?);
    let rule = match t.lambda_rule {
        Some(LambdaRule::CrossFitted) => {
            "λ tuned on the other half of the reviewed dialogues (cross-fitted) and clipped to [0, 1]"
        }
        Some(LambdaRule::Plain) | None => {
            "λ = 1 (plain PPI: too few reviewed dialogues to tune it on a sample of its own)"
        }
    };
    let few = t.few_clusters.map_or(String::new(), |g| {
        format!(
            " Only {g} dialogue{} {} reviewed: intervals are widened for few clusters.",
            if g == 1 { "" } else { "s" },
            if g == 1 { "was" } else { "were" }
        )
    });
    Some(format!(
        "{name}: reviewers only {rev}, prediction-powered {ppi}, {rule}.{few}"
    ))
}

fn agreement_row(dim: &str, a: &ReviewerAgreement, who: String) -> Vec<String> {
    vec![
        dim.to_string(),
        who,
        a.statistic.clone(),
        f(a.kappa, 2),
        ci(&a.ci, 2),
        a.n.to_string(),
    ]
}

pub(super) fn section(b: &mut Vec<Block>, r: &Review, level: f64) {
    b.push(Block::Heading(2, "Reviewed".into()));
    b.push(Block::Para(format!(
        "{} items of the random sample labelled by {} reviewer{} ({}){}. Three estimates per dimension: the judges alone (every scored item; biased by the judges by an unknown amount), the reviewers alone (their random sample), and prediction-powered (PPI++: the reviewers' mean corrected by the judges' scores on every item, with the weight λ of the ensemble's prediction in [0, 1]; unbiased whatever the judges are worth). Several reviewers on one item count once, with their mean. Intervals: {:.0}%, clustered by dialogue; a share's reviewers-only interval is Clopper-Pearson on the effective sample size, the others adjusted Wald with Student's t on (dialogues - 1) degrees of freedom, so no interval from a sample has zero width.",
        r.sample_items,
        r.reviewers.len(),
        if r.reviewers.len() == 1 { "" } else { "s" },
        r.reviewers
            .iter()
            .map(|x| format!("`{x}`"))
            .collect::<Vec<_>>()
            .join(", "),
        if r.unusable_labels > 0 {
            format!(
                "; {} labels matched no scored item or did not fit their dimension",
                r.unusable_labels
            )
        } else {
            String::new()
        },
        level * 100.0
    )));
    b.push(Block::Para(format!("**{}**", r.publish)));
    shares_table(b, r);
    ratings_table(b, r);
    methods_list(b, r);
    agreement_table(b, r);
    b.push(Block::List(
        r.dimensions.values().map(|d| d.publish.clone()).collect(),
    ));
}

/// The share of items that fail, three ways per dimension.
fn shares_table(b: &mut Vec<Block>, r: &Review) {
    let rows = r
        .dimensions
        .iter()
        .map(|(dim, d)| {
            vec![
                dim.name().to_string(),
                d.fails.clone(),
                share(&d.judges),
                share(&d.reviewers),
                share(&d.ppi),
                f(d.lambda, 2),
            ]
        })
        .collect();
    b.push(Block::Heading(3, "Share of items that fail".into()));
    b.push(Block::Table {
        head: [
            "Dimension",
            "Fails when",
            "Judges only",
            "Reviewers only",
            "Prediction-powered",
            "λ",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    });
}

/// The mean rating of the rating dimensions, three ways.
fn ratings_table(b: &mut Vec<Block>, r: &Review) {
    let rows: Vec<Vec<String>> = r
        .dimensions
        .iter()
        .filter_map(|(dim, d)| {
            let m = d.mean_rating.as_ref()?;
            Some(vec![
                dim.name().to_string(),
                rating(&m.judges),
                rating(&m.reviewers),
                rating(&m.ppi),
                f(m.lambda, 2),
            ])
        })
        .collect();
    if !rows.is_empty() {
        b.push(Block::Heading(3, "Mean rating (1-5)".into()));
        b.push(Block::Table {
            head: [
                "Dimension",
                "Judges only",
                "Reviewers only",
                "Prediction-powered",
                "λ",
            ]
            .map(String::from)
            .to_vec(),
            rows,
        });
    }
}

/// How each dimension's intervals were made, and the few-clusters warnings.
fn methods_list(b: &mut Vec<Block>, r: &Review) {
    let lines: Vec<String> = r
        .dimensions
        .iter()
        .flat_map(|(dim, d)| {
            let share = Methods {
                reviewers: &d.reviewers,
                ppi: &d.ppi,
                lambda_rule: d.lambda_rule,
                few_clusters: d.few_clusters,
            };
            let rating = d
                .mean_rating
                .as_ref()
                .and_then(|m| methods_line(&format!("{} mean rating", dim.name()), m.into()));
            methods_line(&format!("{} share failing", dim.name()), share)
                .into_iter()
                .chain(rating)
        })
        .collect();
    if !lines.is_empty() {
        b.push(Block::List(lines));
    }
}

/// Each judge's agreement with the reviewers, and the reviewers' own (the ceiling).
fn agreement_table(b: &mut Vec<Block>, r: &Review) {
    let mut rows = Vec::new();
    for (dim, d) in &r.dimensions {
        for a in &d.agreement {
            rows.push(agreement_row(dim.name(), a, format!("`{}`", a.who)));
        }
        if let Some(c) = &d.reviewers_agreement {
            rows.push(agreement_row(
                dim.name(),
                c,
                format!("reviewers {} (ceiling)", c.who),
            ));
        }
    }
    b.push(Block::Heading(3, "Agreement with the reviewers".into()));
    b.push(Block::Para("Each judge against the reviewers' mean on the reviewed items (ratings rounded to a grade; completeness: fails or not). The reviewers' own agreement, where two reviewed the same items, is the ceiling a judge can reach. Intervals: cluster bootstrap over dialogues.".into()));
    b.push(Block::Table {
        head: ["Dimension", "Who", "Statistic", "κ", "CI", "n"]
            .map(String::from)
            .to_vec(),
        rows,
    });
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_reviewed_section_renders() {
        let mut s = crate::review_estimates::tests::summary();
        let (items, labels) = crate::review_estimates::tests::fixture(60);
        s.review = crate::review_estimates::review(&s, &items, &labels);
        let mut b = Vec::new();
        super::section(&mut b, s.review.as_ref().unwrap(), 0.95);
        insta::assert_snapshot!("reviewed_section", super::super::doc::to_markdown(&b));
        assert!(super::super::markdown(&s).contains("\n## Reviewed\n"));
        assert!(super::super::html(&s).contains("Reviewed</h2>"));
        // without labels there is no section
        s.review = None;
        assert!(!super::super::markdown(&s).contains("## Reviewed"));
    }
}
