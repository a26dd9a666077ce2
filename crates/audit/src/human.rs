//! Calibration against human ratings (`--human-labels FILE`).
//!
//! Two kinds of file are read:
//! - MTRAG's human evaluation set (`human_evaluations_clapnq_govt.json`): tasks (conversation,
//!   passages, reference answer) and evaluations of several answers, each rated 1-4 by (about)
//!   three annotators for faithfulness, completeness, appropriateness and naturalness. The
//!   judges rate every evaluated answer with the audit's own faithfulness and quality prompts,
//!   and their ratings are compared with the annotators'.
//! - A generic JSONL of ratings of audited items: `{"turn_id", "dimension", "passage_id"?,
//!   "score", "annotator"?}`, compared with the audit's item scores.
//!
//! What is reported per (dimension, human metric): Pearson and Spearman between the ensemble
//! and the human median, the same pooled against each annotator, and quadratic-weighted kappa
//! pooled against each annotator after mapping the judge scale linearly onto the human scale.
//! The annotators' own agreement is the ceiling: Krippendorff's alpha (ordinal), pooled
//! pairwise Pearson, Spearman and kappa, and each annotator against the median of the others.

use std::collections::BTreeMap;
use std::path::Path;

use mtr_core::InputError;
use mtr_core::model::{Speaker, Utterance};
use mtr_metrics::agreement::{self, KappaWeights, Level};
use serde::{Deserialize, Serialize};

use crate::dimension::Dimension;
use crate::error::Result;

/// One human-rated answer of the MTRAG set, ready to be judged.
#[derive(Debug, Clone, PartialEq)]
pub struct HumanItem {
    /// `task_id|model_id`.
    pub id: String,
    pub history: Vec<(Speaker, String)>,
    pub question: String,
    /// Evidence passages as shown to judges.
    pub passages: Vec<String>,
    pub answer: String,
    /// metric -> annotator -> rating.
    pub ratings: BTreeMap<String, BTreeMap<String, f64>>,
}

impl HumanItem {
    pub fn history(&self) -> Vec<Utterance<'_>> {
        self.history
            .iter()
            .map(|(s, t)| Utterance {
                speaker: *s,
                text: t,
            })
            .collect()
    }
}

/// A generic human rating of an audited item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HumanRating {
    pub turn_id: String,
    pub dimension: Dimension,
    #[serde(default)]
    pub passage_id: Option<String>,
    pub score: f64,
    #[serde(default)]
    pub annotator: Option<String>,
}

/// A loaded human-label file.
#[derive(Debug, Clone)]
pub enum HumanLabels {
    /// MTRAG evaluations: answers to judge, on a 1-4 scale.
    Mtrag {
        items: Vec<HumanItem>,
        scale: [f64; 2],
    },
    /// Ratings of audited items on the dimensions' own scales.
    Items(Vec<HumanRating>),
}

/// Human metrics each judged dimension is compared with (MTRAG names), primary first.
pub fn mtrag_metrics(dim: Dimension) -> &'static [&'static str] {
    match dim {
        Dimension::Faithfulness => &["faithfulness"],
        Dimension::Quality => &["completeness", "appropriateness", "naturalness"],
        _ => &[],
    }
}

pub fn load(path: &Path) -> Result<HumanLabels> {
    let text = mtr_core::jsonl::read_text(path)?;
    let first = text.trim_start_matches('\u{feff}').trim_start();
    if first.starts_with('{')
        && let Ok(v) = serde_json::from_str::<serde_json::Value>(first)
        && v.get("evaluations").is_some()
    {
        return load_mtrag(path, &v);
    }
    Ok(HumanLabels::Items(mtr_core::jsonl::read_all(path)?))
}

fn field_err(path: &Path, field: &str, msg: impl Into<String>) -> mtr_core::Error {
    InputError::new(path, msg).field(field).into()
}

fn load_mtrag(path: &Path, v: &serde_json::Value) -> Result<HumanLabels> {
    let docs: BTreeMap<&str, String> = v["documents"]
        .as_array()
        .ok_or_else(|| field_err(path, "documents", "expected an array of documents"))?
        .iter()
        .filter_map(|d| {
            let id = d["document_id"].as_str()?;
            let title = d["title"].as_str().unwrap_or("");
            let text = d["text"].as_str().unwrap_or("");
            let shown = if title.is_empty() || text.starts_with(title) {
                text.to_string()
            } else {
                format!("{title}\n{text}")
            };
            Some((id, shown))
        })
        .collect();
    let tasks = v["tasks"]
        .as_array()
        .ok_or_else(|| field_err(path, "tasks", "expected an array of tasks"))?;
    let mut by_task: BTreeMap<&str, &serde_json::Value> = BTreeMap::new();
    for (i, t) in tasks.iter().enumerate() {
        let id = t["task_id"]
            .as_str()
            .ok_or_else(|| field_err(path, &format!("tasks[{i}].task_id"), "missing task id"))?;
        by_task.insert(id, t);
    }
    let evals = v["evaluations"]
        .as_array()
        .ok_or_else(|| field_err(path, "evaluations", "expected an array"))?;
    let mut items = Vec::new();
    for (i, e) in evals.iter().enumerate() {
        let f = |name: &str| format!("evaluations[{i}].{name}");
        let task_id = e["task_id"]
            .as_str()
            .ok_or_else(|| field_err(path, &f("task_id"), "missing"))?;
        let task = by_task.get(task_id).ok_or_else(|| {
            field_err(
                path,
                &f("task_id"),
                format!("task `{task_id}` is not in `tasks`"),
            )
        })?;
        let model = e["model_id"].as_str().unwrap_or("unknown");
        let answer = e["model_response"]
            .as_str()
            .ok_or_else(|| field_err(path, &f("model_response"), "missing"))?;
        let input = task["input"].as_array().ok_or_else(|| {
            field_err(
                path,
                "tasks[].input",
                format!("task `{task_id}` has no input"),
            )
        })?;
        let mut msgs: Vec<(Speaker, String)> = input
            .iter()
            .map(|m| {
                let s = if m["speaker"].as_str() == Some("user") {
                    Speaker::User
                } else {
                    Speaker::Agent
                };
                (s, m["text"].as_str().unwrap_or("").to_string())
            })
            .collect();
        let Some(pos) = msgs.iter().rposition(|(s, _)| *s == Speaker::User) else {
            return Err(field_err(
                path,
                "tasks[].input",
                format!("task `{task_id}` has no user message"),
            )
            .into());
        };
        let question = msgs[pos].1.clone();
        msgs.truncate(pos);
        let passages: Vec<String> = task["contexts"]
            .as_array()
            .map(|cs| {
                cs.iter()
                    .filter_map(|c| {
                        c["document_id"]
                            .as_str()
                            .and_then(|id| docs.get(id).cloned())
                    })
                    .collect()
            })
            .unwrap_or_default();
        let mut ratings: BTreeMap<String, BTreeMap<String, f64>> = BTreeMap::new();
        if let Some(ann) = e["annotations"].as_object() {
            for (metric, by) in ann {
                let Some(by) = by.as_object() else { continue };
                for (annotator, r) in by {
                    let val = match &r["value"] {
                        serde_json::Value::String(s) => s.trim().parse::<f64>().ok(),
                        serde_json::Value::Number(n) => n.as_f64(),
                        _ => None,
                    };
                    if let Some(x) = val {
                        ratings
                            .entry(metric.clone())
                            .or_default()
                            .insert(annotator.clone(), x);
                    }
                }
            }
        }
        items.push(HumanItem {
            id: format!("{task_id}|{model}"),
            history: msgs,
            question,
            passages,
            answer: answer.to_string(),
            ratings,
        });
    }
    Ok(HumanLabels::Mtrag {
        items,
        scale: [1.0, 4.0],
    })
}

/// Agreement of judges with humans, and of humans with each other.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HumanCalibration {
    pub file: String,
    /// `mtrag` (answers judged for calibration) or `items` (ratings of audited items).
    pub kind: String,
    /// Human-rated units in the file.
    pub units: usize,
    pub comparisons: Vec<HumanComparison>,
    /// Failed judgements of the calibration run (excluded).
    pub failed_judgements: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HumanComparison {
    pub dimension: Dimension,
    pub human_metric: String,
    pub human_scale: [f64; 2],
    pub judge_scale: [f64; 2],
    /// The ensemble (mean over judges).
    pub ensemble: JudgeAgreement,
    pub per_judge: BTreeMap<String, JudgeAgreement>,
    /// How well the annotators agree with each other: the ceiling for any judge.
    pub ceiling: Ceiling,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JudgeAgreement {
    /// Units with both a judge score and a human median.
    pub n: usize,
    pub pearson: Option<f64>,
    pub pearson_p: Option<f64>,
    pub spearman: Option<f64>,
    pub spearman_p: Option<f64>,
    /// Pooled over every (unit, annotator) pair.
    pub pairs: usize,
    pub pearson_vs_annotators: Option<f64>,
    pub spearman_vs_annotators: Option<f64>,
    /// Quadratic-weighted kappa against each annotator (pooled), judge scores mapped onto the
    /// human scale and rounded.
    pub kappa_quadratic: Option<f64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Ceiling {
    /// Units with at least two annotators.
    pub units: usize,
    pub annotators_per_unit: f64,
    pub krippendorff_alpha_ordinal: Option<f64>,
    /// Ordered annotator pairs within a unit, pooled.
    pub pairs: usize,
    pub pearson_pairwise: Option<f64>,
    pub spearman_pairwise: Option<f64>,
    pub kappa_quadratic_pairwise: Option<f64>,
    /// Each annotator against the median of the other annotators of the unit.
    pub pearson_leave_one_out: Option<f64>,
    pub spearman_leave_one_out: Option<f64>,
}

/// One unit to compare: judge scores and annotator ratings.
#[derive(Debug, Clone, Default)]
pub struct Unit {
    pub per_judge: BTreeMap<String, f64>,
    pub annotators: BTreeMap<String, f64>,
}

impl Unit {
    pub fn ensemble(&self) -> Option<f64> {
        (!self.per_judge.is_empty())
            .then(|| self.per_judge.values().sum::<f64>() / self.per_judge.len() as f64)
    }
}

pub fn median(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    Some(if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    })
}

/// Maps a judge score onto the human scale (linear), rounded to the nearest grade.
pub fn to_human_grade(score: f64, judge: [f64; 2], human: [f64; 2]) -> i64 {
    let x = human[0] + (score - judge[0]) / (judge[1] - judge[0]) * (human[1] - human[0]);
    x.clamp(human[0], human[1]).round() as i64
}

fn corr(
    f: fn(&[f64], &[f64]) -> std::result::Result<agreement::Correlation, mtr_metrics::MetricsError>,
    x: &[f64],
    y: &[f64],
) -> (Option<f64>, Option<f64>) {
    if x.len() < 3 {
        return (None, None);
    }
    match f(x, y) {
        Ok(c) if c.r.is_finite() => (Some(c.r), c.p_value.is_finite().then_some(c.p_value)),
        _ => (None, None),
    }
}

fn kappa(a: &[i64], b: &[i64]) -> Option<f64> {
    if a.len() < 2 {
        return None;
    }
    agreement::weighted_kappa(a, b, KappaWeights::Quadratic)
        .ok()
        .filter(|k| k.is_finite())
}

fn judge_agreement(
    units: &[Unit],
    score: &dyn Fn(&Unit) -> Option<f64>,
    judge_scale: [f64; 2],
    human_scale: [f64; 2],
) -> JudgeAgreement {
    let (mut x, mut y) = (Vec::new(), Vec::new());
    let (mut px, mut py, mut kx, mut ky) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for u in units {
        let Some(s) = score(u) else { continue };
        let ratings: Vec<f64> = u.annotators.values().copied().collect();
        let Some(m) = median(&ratings) else { continue };
        x.push(s);
        y.push(m);
        for r in ratings {
            px.push(s);
            py.push(r);
            kx.push(to_human_grade(s, judge_scale, human_scale));
            ky.push(r.round() as i64);
        }
    }
    let (pearson, pearson_p) = corr(agreement::pearson, &x, &y);
    let (spearman, spearman_p) = corr(agreement::spearman, &x, &y);
    JudgeAgreement {
        n: x.len(),
        pearson,
        pearson_p,
        spearman,
        spearman_p,
        pairs: px.len(),
        pearson_vs_annotators: corr(agreement::pearson, &px, &py).0,
        spearman_vs_annotators: corr(agreement::spearman, &px, &py).0,
        kappa_quadratic: kappa(&kx, &ky),
    }
}

fn ceiling(units: &[Unit]) -> Ceiling {
    let multi: Vec<&Unit> = units.iter().filter(|u| u.annotators.len() >= 2).collect();
    let mut coders: Vec<String> = multi
        .iter()
        .flat_map(|u| u.annotators.keys().cloned())
        .collect();
    coders.sort();
    coders.dedup();
    let data: Vec<Vec<Option<f64>>> = coders
        .iter()
        .map(|c| multi.iter().map(|u| u.annotators.get(c).copied()).collect())
        .collect();
    let alpha = if multi.len() >= 2 {
        agreement::krippendorff_alpha(&data, Level::Ordinal)
            .ok()
            .filter(|a| a.is_finite())
    } else {
        None
    };
    let (mut a, mut b, mut ka, mut kb, mut lx, mut ly) = (
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
    );
    let mut annotations = 0usize;
    for u in &multi {
        let r: Vec<f64> = u.annotators.values().copied().collect();
        annotations += r.len();
        for i in 0..r.len() {
            for j in 0..r.len() {
                if i != j {
                    a.push(r[i]);
                    b.push(r[j]);
                    ka.push(r[i].round() as i64);
                    kb.push(r[j].round() as i64);
                }
            }
            let others: Vec<f64> = r
                .iter()
                .enumerate()
                .filter(|(k, _)| *k != i)
                .map(|(_, v)| *v)
                .collect();
            if let Some(m) = median(&others) {
                lx.push(r[i]);
                ly.push(m);
            }
        }
    }
    Ceiling {
        units: multi.len(),
        annotators_per_unit: if multi.is_empty() {
            0.0
        } else {
            annotations as f64 / multi.len() as f64
        },
        krippendorff_alpha_ordinal: alpha,
        pairs: a.len(),
        pearson_pairwise: corr(agreement::pearson, &a, &b).0,
        spearman_pairwise: corr(agreement::spearman, &a, &b).0,
        kappa_quadratic_pairwise: kappa(&ka, &kb),
        pearson_leave_one_out: corr(agreement::pearson, &lx, &ly).0,
        spearman_leave_one_out: corr(agreement::spearman, &lx, &ly).0,
    }
}

/// Compares judges with humans on one (dimension, human metric).
pub fn compare(
    dimension: Dimension,
    human_metric: &str,
    units: &[Unit],
    judge_scale: [f64; 2],
    human_scale: [f64; 2],
) -> HumanComparison {
    let mut judges: Vec<String> = units
        .iter()
        .flat_map(|u| u.per_judge.keys().cloned())
        .collect();
    judges.sort();
    judges.dedup();
    let per_judge = judges
        .iter()
        .map(|j| {
            (
                j.clone(),
                judge_agreement(
                    units,
                    &|u: &Unit| u.per_judge.get(j).copied(),
                    judge_scale,
                    human_scale,
                ),
            )
        })
        .collect();
    HumanComparison {
        dimension,
        human_metric: human_metric.to_string(),
        human_scale,
        judge_scale,
        ensemble: judge_agreement(units, &Unit::ensemble, judge_scale, human_scale),
        per_judge,
        ceiling: ceiling(units),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared() -> Option<std::path::PathBuf> {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/data/mtrag/human_evaluations_clapnq_govt.json");
        if p.is_file() {
            Some(p)
        } else {
            eprintln!("skipping: {} is absent", p.display());
            None
        }
    }

    #[test]
    fn loads_the_real_mtrag_human_evaluations() {
        let Some(p) = shared() else { return };
        let HumanLabels::Mtrag { items, scale } = load(&p).unwrap() else {
            panic!("not detected as MTRAG")
        };
        assert_eq!(items.len(), 234);
        assert_eq!(scale, [1.0, 4.0]);
        let first = &items[0];
        assert!(
            first
                .id
                .starts_with("f0d2873b877409f61da7dbdddd22d279<::>1|")
        );
        assert!(first.question.contains("law library"));
        assert!(first.history.is_empty());
        assert_eq!(first.passages.len(), 2);
        assert_eq!(first.ratings["faithfulness"].len(), 3);
        // later turns carry their conversation history
        assert!(items.iter().any(|i| i.history.len() >= 2));
        let with3 = items
            .iter()
            .filter(|i| i.ratings.get("faithfulness").is_some_and(|r| r.len() == 3))
            .count();
        assert_eq!(with3, 223);
    }

    #[test]
    fn perfect_judge_matches_and_ceiling_is_computed() {
        // annotators agree on a monotone truth with noise; a judge equal to the median on a 1-5 scale
        let truth = [1.0, 2.0, 3.0, 4.0, 4.0, 2.0, 1.0, 3.0];
        let units: Vec<Unit> = truth
            .iter()
            .enumerate()
            .map(|(i, &t)| {
                let noise: f64 = if i % 3 == 0 { 1.0 } else { 0.0 };
                let ann: BTreeMap<String, f64> = [
                    ("a".to_string(), t),
                    ("b".to_string(), t),
                    ("c".to_string(), (t + noise).min(4.0)),
                ]
                .into();
                let j = 1.0 + (t - 1.0) * 4.0 / 3.0; // exact linear map onto 1-5
                Unit {
                    per_judge: [("j".to_string(), j)].into(),
                    annotators: ann,
                }
            })
            .collect();
        let c = compare(
            Dimension::Faithfulness,
            "faithfulness",
            &units,
            [1.0, 5.0],
            [1.0, 4.0],
        );
        assert_eq!(c.ensemble.n, 8);
        assert!(c.ensemble.pearson.unwrap() > 0.95, "{:?}", c.ensemble);
        assert!(c.ensemble.kappa_quadratic.unwrap() > 0.8);
        assert_eq!(c.ceiling.units, 8);
        assert_eq!(c.ceiling.pairs, 8 * 6);
        assert!((c.ceiling.annotators_per_unit - 3.0).abs() < 1e-12);
        assert!(c.ceiling.krippendorff_alpha_ordinal.unwrap() > 0.5);
        assert_eq!(to_human_grade(5.0, [1.0, 5.0], [1.0, 4.0]), 4);
        assert_eq!(to_human_grade(1.0, [1.0, 5.0], [1.0, 4.0]), 1);
        assert_eq!(to_human_grade(3.0, [1.0, 5.0], [1.0, 4.0]), 3); // 2.5 rounds up
        assert_eq!(median(&[4.0, 1.0]), Some(2.5));
    }
}
