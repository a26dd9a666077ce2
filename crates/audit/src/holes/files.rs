//! What `mtr judge` writes in its folder: `judgements.jsonl` (one [`HoleVerdict`] a line, in
//! hole order), `summary.json` ([`HoleSummary`]) and `report.md` / `report.html`
//! (`pool.json` is [`super::pool_record`]'s).

use std::path::Path;

use super::effect::HoleSummary;
use super::pool_record::read_pool;
use super::verdicts::HoleVerdict;
use crate::error::Result;
use crate::report::doc::{self, Block};

/// The verdicts' file name.
pub const JUDGEMENTS: &str = "judgements.jsonl";
/// The summary's file name.
pub const SUMMARY: &str = "summary.json";
/// Writes `judgements.jsonl`, `summary.json`, `report.md` and `report.html` atomically.
pub(crate) fn write_outputs(dir: &Path, verdicts: &[HoleVerdict], s: &HoleSummary) -> Result<()> {
    let mut lines = String::new();
    for v in verdicts {
        lines.push_str(&serde_json::to_string(v).map_err(|e| json_error(dir, e))?);
        lines.push('\n');
    }
    mtr_core::atomic::write_atomic(dir.join(JUDGEMENTS), lines.as_bytes())?;
    let mut json = serde_json::to_string_pretty(s).map_err(|e| json_error(dir, e))?;
    json.push('\n');
    mtr_core::atomic::write_atomic(dir.join(SUMMARY), json.as_bytes())?;
    let blocks = report(s);
    mtr_core::atomic::write_atomic(dir.join("report.md"), doc::to_markdown(&blocks).as_bytes())?;
    mtr_core::atomic::write_atomic(
        dir.join("report.html"),
        doc::to_html("Holes judged", &blocks).as_bytes(),
    )?;
    Ok(())
}

/// Whether `dir` is a folder `mtr judge` wrote (its `judgements.jsonl` beside the audit of the
/// holes).
pub fn is_judge_dir(dir: &Path) -> bool {
    dir.join(JUDGEMENTS).is_file()
        && dir
            .join(super::pool_record::AUDIT_DIR)
            .join(crate::summary::SUMMARY)
            .is_file()
}

/// Reads `summary.json` back.
pub fn read_summary(dir: &Path) -> Result<HoleSummary> {
    let path = dir.join(SUMMARY);
    let text = mtr_core::jsonl::read_text(&path)?;
    serde_json::from_str(&text).map_err(|e| {
        crate::AuditError::Core(
            mtr_core::InputError::new(&path, format!("not a summary of `mtr judge`: {e}"))
                .line(e.line() as u64)
                .into(),
        )
    })
}

/// Computes the Reviewed figures of the judge folder `dir` from its reviewers' labels and
/// writes `summary.json` and the reports again with them; returns them (`None` without a
/// usable label).
pub fn attach_review(dir: &Path) -> Result<Option<super::hole_review::HoleReview>> {
    let mut summary = read_summary(dir)?;
    summary.review = review_of(dir)?;
    write_outputs(dir, &read_verdicts(dir)?, &summary)?;
    Ok(summary.review)
}

/// The Reviewed figures of the judge folder `dir` from the labels on disk now (`None` without a
/// usable label); nothing is written.
pub fn review_of(dir: &Path) -> Result<Option<super::hole_review::HoleReview>> {
    let pool = read_pool(dir)?;
    let verdicts = read_verdicts(dir)?;
    super::hole_review::reviewed(dir, &pool, &verdicts)
}

/// Reads `judgements.jsonl` back.
pub fn read_verdicts(dir: &Path) -> Result<Vec<HoleVerdict>> {
    Ok(mtr_core::jsonl::read_all(dir.join(JUDGEMENTS))?)
}

fn json_error(dir: &Path, e: serde_json::Error) -> crate::AuditError {
    crate::AuditError::Output {
        path: dir.to_path_buf(),
        message: e.to_string(),
    }
}

fn f(x: Option<&f64>) -> String {
    x.map_or_else(|| "-".into(), |v| format!("{v:.4}"))
}

/// The report: what was judged, then per run Judged@K and its measures before and after.
fn report(s: &HoleSummary) -> Vec<Block> {
    let k = s.depth;
    let mut b = vec![
        Block::Heading(1, format!("Holes in the top {k}")),
        Block::Para(format!(
            "{} distinct unjudged passages in the runs' top {k} (holes); {} judged, {} judged relevant.{}",
            s.holes,
            s.judged,
            s.relevant,
            if s.complete {
                ""
            } else {
                " **Incomplete**: run the same command again to judge the rest; judged holes are not paid again."
            }
        )),
    ];
    let (p, n) = (format!("P_{k}"), format!("ndcg_cut_{k}"));
    let rows = s
        .runs
        .iter()
        .map(|r| {
            vec![
                r.run.clone(),
                r.holes.to_string(),
                r.relevant_holes.to_string(),
                format!("{:.3}", r.judged_before),
                format!("{:.3}", r.judged_after),
                f(r.original.get(&p)),
                f(r.filled.get(&p)),
                f(r.original.get(&n)),
                f(r.filled.get(&n)),
            ]
        })
        .collect();
    b.push(Block::Table {
        head: vec![
            "Run".into(),
            "Holes".into(),
            "Relevant holes".into(),
            format!("Judged@{k}"),
            format!("Judged@{k} filled"),
            format!("P@{k}"),
            format!("P@{k} filled"),
            format!("nDCG@{k}"),
            format!("nDCG@{k} filled"),
        ],
        rows,
    });
    if let Some(r) = &s.review {
        b.extend(reviewed(r, k));
    }
    if !s.kendall_tau.is_empty() {
        b.push(Block::List(
            s.kendall_tau
                .iter()
                .map(|(m, t)| {
                    let ci = s.kendall_tau_interval.get(m).map_or(String::new(), |c| {
                        format!(
                            " [{:.3}, {:.3}] ({:.0}% bootstrap over the turns, {} resamples)",
                            c.lower,
                            c.upper,
                            c.level * 100.0,
                            c.resamples
                        )
                    });
                    format!(
                        "Kendall's tau-b of the runs' order by {m}, original against filled: {t:.3}{ci}"
                    )
                })
                .collect(),
        ));
    }
    b
}

fn pct(e: &crate::summary::review::ReviewEstimate) -> String {
    let v = e
        .estimate
        .map_or_else(|| "-".to_string(), |x| format!("{:.1}%", x * 100.0));
    match &e.ci {
        Some(ci) => format!(
            "{v} [{:.1}, {:.1}] (n={})",
            ci.lower * 100.0,
            ci.upper * 100.0,
            e.n
        ),
        None => format!("{v} (n={})", e.n),
    }
}

/// The Reviewed section: per run, the share of its holes that are relevant three ways and its
/// measures with the reviewers' labels.
fn reviewed(r: &super::hole_review::HoleReview, k: usize) -> Vec<Block> {
    let (p, n) = (format!("P_{k}"), format!("ndcg_cut_{k}"));
    let rows = r
        .runs
        .iter()
        .map(|x| {
            vec![
                x.run.clone(),
                x.holes.to_string(),
                pct(&x.relevant_share.judges),
                pct(&x.relevant_share.reviewers),
                pct(&x.relevant_share.ppi),
                format!("{} → {}", f(x.filled.get(&p)), f(x.reviewed.get(&p))),
                format!("{} → {}", f(x.filled.get(&n)), f(x.reviewed.get(&n))),
            ]
        })
        .collect();
    vec![
        Block::Heading(2, "Reviewed".into()),
        Block::Para(format!(
            "{} holes reviewed on the random sample (blind; a rating of at least {} reads as relevant), {} in the flagged queue. The share of a run's holes that are relevant: by the judges' verdicts on all its judged holes, by the reviewers' sample alone, and prediction-powered (the reviewers' sample corrected by the verdicts on every hole; unbiased whatever the judges are worth), with {:.0}% intervals clustered by dialogue; publish the prediction-powered one. The measures: with the holes filled by the judges → with the reviewers' labels replacing their verdicts where they exist.",
            r.sampled,
            r.relevant_at_least,
            r.flagged,
            r.level * 100.0
        )),
        Block::Table {
            head: vec![
                "Run".into(),
                "Judged holes".into(),
                "Relevant: judges".into(),
                "Relevant: reviewers".into(),
                "Relevant: prediction-powered".into(),
                format!("P@{k} filled → reviewed"),
                format!("nDCG@{k} filled → reviewed"),
            ],
            rows,
        },
    ]
}
