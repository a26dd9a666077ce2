//! The human calibration run: which human-rated answers are judged (a seeded sample of whole
//! tasks, so that the answers of one task stay together as a bootstrap cluster and the answer
//! sources are compared on the same tasks), how they are rendered (MTRAG's `completeness` with
//! its own prompt that shows the passages), and how the judgements are compared with the
//! annotators ([`crate::human::annotator_agreement::compare`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use mtr_llm::ChatRequest;

use crate::config::AuditSettings;
use crate::dimension::Dimension;
use crate::error::{AuditError, Result};
use crate::human::annotator_agreement::{self, HumanCalibration, HumanItem, MtragJudged};
use crate::items::aggregate::{ItemScore, score_items};
use crate::judges::engine::{Render, Unit};
use crate::judges::prompts::{AuditPrompts, ContextBudget, Fitted, TurnView, fit_to};
use crate::judges::record::Judgement;
use crate::statistics::resample;

/// `passage_id` of the judgements of MTRAG's answer completeness (judged as a quality rating
/// with the `human_completeness` prompt).
pub(crate) const ANSWER_COMPLETENESS: &str = "answer_completeness";

/// A seeded sample of whole tasks holding at least `n` answers (all answers without `n`),
/// in file order.
pub(crate) fn sample(items: &[HumanItem], n: Option<usize>, seed: u64) -> Vec<HumanItem> {
    let Some(n) = n else {
        return items.to_vec();
    };
    let mut tasks: Vec<&str> = items.iter().map(|i| i.task.as_str()).collect();
    tasks.sort_unstable();
    tasks.dedup();
    let mut order: Vec<usize> = (0..tasks.len()).collect();
    let mut rng = crate::seed::rng(seed, &["human-sample"]);
    rand::seq::SliceRandom::shuffle(order.as_mut_slice(), &mut rng);
    let mut chosen = BTreeSet::new();
    let mut count = 0;
    for t in order {
        if count >= n {
            break;
        }
        chosen.insert(tasks[t]);
        count += items.iter().filter(|i| i.task == tasks[t]).count();
    }
    items
        .iter()
        .filter(|i| chosen.contains(i.task.as_str()))
        .cloned()
        .collect()
}

/// The units of the calibration set: faithfulness (when the task has passages), quality, and
/// answer completeness (with passages) for every answer.
pub(crate) fn units(items: &[HumanItem]) -> Vec<Unit> {
    let mut out = Vec::new();
    for (i, it) in items.iter().enumerate() {
        let conv = it.task.split("<::>").next().unwrap_or(&it.task).to_string();
        let turn = it
            .history
            .iter()
            .filter(|(s, _)| *s == mtr_core::model::Speaker::User)
            .count()
            + 1;
        let base = Unit {
            dimension: Dimension::Quality,
            dialogue_id: conv,
            turn_id: it.id.clone(),
            turn,
            passage_id: None,
            trial: None,
            pool: None,
            gold_position: None,
            source: i,
            judge: None,
        };
        if !it.passages.is_empty() {
            out.push(Unit {
                dimension: Dimension::Faithfulness,
                ..base.clone()
            });
        }
        out.push(base.clone());
        if !it.passages.is_empty() {
            out.push(Unit {
                passage_id: Some(ANSWER_COMPLETENESS.into()),
                ..base
            });
        }
    }
    out
}

/// Renders the calibration units, fitted to the judges' context.
pub(crate) struct HumanRender<'a> {
    pub items: &'a [HumanItem],
    pub prompts: &'a AuditPrompts,
    pub budget: Option<ContextBudget>,
}

impl HumanRender<'_> {
    pub(crate) fn fitted(&self, u: &Unit) -> Result<Fitted> {
        let it = &self.items[u.source];
        let view = TurnView::from_parts(it.history(), &it.question);
        let render = |v: &TurnView<'_>| -> Result<ChatRequest> {
            match (u.dimension, u.passage_id.as_deref()) {
                (Dimension::Quality, Some(ANSWER_COMPLETENESS)) => {
                    self.prompts.human_completeness(v, &it.passages, &it.answer)
                }
                (Dimension::Faithfulness, _) => {
                    self.prompts.faithfulness(v, &it.passages, &it.answer)
                }
                (Dimension::Quality, _) => self.prompts.quality(v, &it.answer),
                (d, _) => Err(AuditError::Internal(format!(
                    "human calibration does not judge {d}"
                ))),
            }
        };
        fit_to(self.budget.as_ref(), &view, &render)
    }
}

impl Render for HumanRender<'_> {
    fn render(&self, u: &Unit) -> Result<ChatRequest> {
        self.fitted(u)?.request(|tokens, limit| {
            format!(
                "a human calibration prompt needs {tokens} tokens of {limit} (it was screened out)"
            )
        })
    }
    fn prompt_id(&self, dim: Dimension) -> String {
        self.prompts.get(dim).id()
    }
}

/// Answer-completeness judgements carry the quality prompt's id while judging (the engine keys
/// prompts by dimension); this gives them their own prompt's id for `human_items.jsonl`.
pub(crate) fn name_prompts(records: &mut [Judgement], prompts: &AuditPrompts) {
    let id = prompts.human_completeness_prompt().id();
    for j in records
        .iter_mut()
        .filter(|j| j.passage_id.as_deref() == Some(ANSWER_COMPLETENESS))
    {
        j.prompt = id.clone();
    }
}

/// The reverse of [`name_prompts`] for records of an earlier run, so that one made with the
/// current completeness prompt is reused (and one made with another version is not).
pub(crate) fn reusable_existing(
    mut existing: HashMap<String, Judgement>,
    prompts: &AuditPrompts,
) -> HashMap<String, Judgement> {
    let id = prompts.human_completeness_prompt().id();
    let quality = prompts.get(Dimension::Quality).id();
    for j in existing
        .values_mut()
        .filter(|j| j.passage_id.as_deref() == Some(ANSWER_COMPLETENESS))
    {
        j.prompt = if j.prompt == id {
            quality.clone()
        } else {
            format!("{} (stale)", j.prompt)
        };
    }
    existing
}

/// An MTRAG calibration file as read: where it is, its rating scale and every answer in it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MtragFile<'a> {
    pub(crate) path: &'a std::path::Path,
    pub(crate) scale: [f64; 2],
    pub(crate) items: &'a [HumanItem],
}

/// Compares the judgements of the MTRAG calibration set with the annotators. `file.items` are
/// all the file's answers: the judged ones are compared with the annotators and give the
/// ceiling; all of them give the whole file's ceiling (`ceiling_all_units`).
pub(crate) fn mtrag(
    file: MtragFile<'_>,
    judgements: &[Judgement],
    judges: usize,
    dims: &[Dimension],
    s: &AuditSettings,
    prompts: &AuditPrompts,
) -> HumanCalibration {
    let MtragFile { path, scale, items } = file;
    let scored = score_items(judgements, judges, 1);
    let by_key: HashMap<(Dimension, &str, Option<&str>), &ItemScore> = scored
        .iter()
        .map(|i| {
            (
                (i.dimension, i.turn_id.as_str(), i.passage_id.as_deref()),
                i,
            )
        })
        .collect();
    let mut comparisons = Vec::new();
    for dim in [Dimension::Faithfulness, Dimension::Quality] {
        if !dims.contains(&dim) {
            continue;
        }
        for metric in annotator_agreement::mtrag_metrics(dim) {
            let judged = annotator_agreement::judged_for(dim, metric);
            let passage = match judged {
                MtragJudged::AnswerCompleteness => Some(ANSWER_COMPLETENESS),
                MtragJudged::Dimension(_) => None,
            };
            let units: Vec<annotator_agreement::Unit> = items
                .iter()
                .filter_map(|it| {
                    let ann = it.ratings.get(*metric)?;
                    let per_judge = by_key
                        .get(&(dim, it.id.as_str(), passage))
                        .map(|i| i.per_judge.clone())
                        .unwrap_or_default();
                    Some(annotator_agreement::Unit {
                        per_judge,
                        annotators: ann.clone(),
                        cluster: it.task.clone(),
                        source: it.source.clone(),
                    })
                })
                .collect();
            let (lo, hi) = dim.scale();
            let r = resample::bootstrap(s, "human");
            let mut c = annotator_agreement::compare(dim, metric, &units, [lo, hi], scale, &r);
            c.judged_with = Some(match judged {
                MtragJudged::AnswerCompleteness => prompts.human_completeness_prompt().id(),
                MtragJudged::Dimension(d) => prompts.get(d).id(),
            });
            comparisons.push(c);
        }
    }
    let judged: BTreeSet<&str> = judgements.iter().map(|j| j.turn_id.as_str()).collect();
    HumanCalibration {
        file: path.display().to_string(),
        kind: "mtrag".into(),
        units: items.len(),
        judged_units: Some(judged.len()),
        comparisons,
        failed_judgements: judgements.iter().filter(|j| !j.ok()).count(),
    }
}

/// Calibration against generic ratings of audited items.
pub(crate) fn items(
    path: &std::path::Path,
    ratings: &[annotator_agreement::HumanRating],
    scored: &[ItemScore],
    dims: &[Dimension],
    s: &AuditSettings,
) -> HumanCalibration {
    let by_key: HashMap<(Dimension, &str, Option<&str>), &ItemScore> = scored
        .iter()
        .map(|i| {
            (
                (i.dimension, i.turn_id.as_str(), i.passage_id.as_deref()),
                i,
            )
        })
        .collect();
    let mut grouped: BTreeMap<(Dimension, String, Option<String>), BTreeMap<String, f64>> =
        BTreeMap::new();
    for (n, r) in ratings.iter().enumerate() {
        let who = r.annotator.clone().unwrap_or_else(|| format!("rating{n}"));
        grouped
            .entry((r.dimension, r.turn_id.clone(), r.passage_id.clone()))
            .or_default()
            .insert(who, r.score);
    }
    let mut comparisons = Vec::new();
    for &dim in dims {
        let units: Vec<annotator_agreement::Unit> = grouped
            .iter()
            .filter(|((d, _, _), _)| *d == dim)
            .map(|((d, t, p), ann)| {
                let item = by_key.get(&(*d, t.as_str(), p.as_deref()));
                annotator_agreement::Unit {
                    per_judge: item.map(|i| i.per_judge.clone()).unwrap_or_default(),
                    annotators: ann.clone(),
                    // turns of one dialogue are a cluster
                    cluster: item
                        .map(|i| i.dialogue_id.clone())
                        .unwrap_or_else(|| t.clone()),
                    source: String::new(),
                }
            })
            .collect();
        if units.is_empty() {
            continue;
        }
        let (lo, hi) = dim.scale();
        let r = resample::bootstrap(s, "human");
        comparisons.push(annotator_agreement::compare(
            dim,
            dim.name(),
            &units,
            [lo, hi],
            [lo, hi],
            &r,
        ));
    }
    HumanCalibration {
        file: path.display().to_string(),
        kind: "items".into(),
        units: grouped.len(),
        judged_units: None,
        comparisons,
        failed_judgements: 0,
    }
}

fn cell(x: Option<f64>, ci: &Option<crate::summary::Interval>) -> String {
    match (x, ci) {
        (Some(v), Some(c)) => format!("{v:.3} [{:.2}, {:.2}]", c.lower, c.upper),
        (Some(v), None) => format!("{v:.3}"),
        _ => "-".into(),
    }
}

/// The calibration as a plain-text table for the terminal: per (dimension, human metric) the
/// ensemble, each judge and the annotators' ceiling on the same units, with intervals.
pub fn text_table(h: &HumanCalibration) -> String {
    let mut t = format!(
        "human calibration against {} ({} units{}; intervals: cluster bootstrap over tasks)\n",
        h.file,
        h.units,
        h.judged_units
            .map(|n| format!(", {n} judged"))
            .unwrap_or_default()
    );
    t.push_str(&format!(
        "{:<13} {:<16} {:<22} {:>4} {:>22} {:>22} {:>22}\n",
        "dimension", "human metric", "rater", "n", "pearson", "spearman", "kappa (quadratic)"
    ));
    for c in &h.comparisons {
        let mut row = |who: &str, n: usize, p: String, s: String, k: String| {
            t.push_str(&format!(
                "{:<13} {:<16} {:<22} {:>4} {:>22} {:>22} {:>22}\n",
                c.dimension.name(),
                c.human_metric,
                who,
                n,
                p,
                s,
                k
            ));
        };
        let e = &c.ensemble;
        row(
            "ensemble",
            e.n,
            cell(e.pearson, &e.pearson_ci),
            cell(e.spearman, &e.spearman_ci),
            cell(e.kappa_quadratic, &e.kappa_quadratic_ci),
        );
        if c.per_judge.len() > 1 {
            for (j, a) in &c.per_judge {
                row(
                    j,
                    a.n,
                    cell(a.pearson, &a.pearson_ci),
                    cell(a.spearman, &a.spearman_ci),
                    cell(a.kappa_quadratic, &a.kappa_quadratic_ci),
                );
            }
        }
        let k = &c.ceiling;
        row(
            "annotators (ceiling)",
            k.units,
            cell(k.pearson_leave_one_out, &k.pearson_leave_one_out_ci),
            cell(k.spearman_leave_one_out, &k.spearman_leave_one_out_ci),
            cell(k.kappa_quadratic_pairwise, &k.kappa_quadratic_pairwise_ci),
        );
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::items::aggregate::tests::judgement;

    fn items(tasks: usize) -> Vec<HumanItem> {
        let mut out = Vec::new();
        for t in 0..tasks {
            for (k, src) in ["reference", "gpt-4o", "llama-3.1-405b-instruct"]
                .iter()
                .enumerate()
            {
                let r = 1.0 + ((t + k) % 4) as f64;
                let ratings: BTreeMap<String, f64> = [
                    ("a".to_string(), r),
                    ("b".to_string(), r),
                    ("c".to_string(), if t % 2 == 0 { r } else { 5.0 - r }),
                ]
                .into();
                out.push(HumanItem {
                    id: format!("c{t}<::>1|{src}"),
                    task: format!("c{t}<::>1"),
                    source: src.to_string(),
                    history: Vec::new(),
                    question: "q".into(),
                    passages: vec!["p".into()],
                    answer: format!("answer {t} {k}"),
                    ratings: [("faithfulness".to_string(), ratings)].into(),
                });
            }
        }
        out
    }

    #[test]
    fn samples_whole_tasks_and_larger_samples_extend_smaller_ones() {
        let all = items(10);
        let small = sample(&all, Some(4), 3);
        let large = sample(&all, Some(9), 3);
        assert_eq!(small.len(), 6, "two whole tasks of three answers");
        assert_eq!(large.len(), 9);
        assert!(small.iter().all(|i| large.contains(i)));
        assert_eq!(sample(&all, None, 3).len(), 30);
    }

    #[test]
    fn the_ceiling_uses_the_judged_answers_and_the_whole_file_is_kept_beside() {
        let all = items(6);
        // the judge scored the answers of the first four tasks only
        let js: Vec<Judgement> = all
            .iter()
            .take(12)
            .enumerate()
            .map(|(i, it)| {
                judgement(
                    Dimension::Faithfulness,
                    &it.id,
                    None,
                    "j",
                    None,
                    Some(1.0 + (i % 5) as f64),
                    None,
                )
            })
            .collect();
        let s = AuditSettings {
            resamples: 100,
            ..Default::default()
        };
        let prompts = AuditPrompts::builtin().unwrap();
        let file = MtragFile {
            path: std::path::Path::new("human.json"),
            scale: [1.0, 4.0],
            items: &all,
        };
        let h = mtrag(file, &js, 1, &[Dimension::Faithfulness], &s, &prompts);
        assert_eq!((h.units, h.judged_units), (18, Some(12)));
        let c = &h.comparisons[0];
        assert_eq!(c.ensemble.n, 12);
        assert_eq!(c.ensemble.clusters, 4);
        assert_eq!(c.ceiling.units, 12);
        assert_eq!(c.ceiling_all_units.as_ref().unwrap().units, 18);
        assert_eq!(c.judged_with.as_deref(), Some("audit/faithfulness@1"));
    }
}
