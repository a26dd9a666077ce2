//! Human label files (`--human-labels FILE`), read into what the calibration judges and
//! compares ([`crate::human::annotator_agreement`] holds the comparison).
//!
//! Two kinds of file are read:
//! - MTRAG's human evaluation set (`human_evaluations_clapnq_govt.json`): tasks (conversation,
//!   passages, reference answer) and evaluations of several answers, each rated 1-4 by (about)
//!   three annotators for faithfulness, completeness, appropriateness and naturalness. The
//!   judges rate every evaluated answer with the audit's own faithfulness and quality prompts,
//!   and their ratings are compared with the annotators'. Its top-level JSON-list forms (a
//!   list of evaluation files, or of evaluations carrying their task) are read too.
//! - A generic JSONL of ratings of audited items: `{"turn_id", "dimension", "passage_id"?,
//!   "score", "annotator"?}`, compared with the audit's item scores.

use std::collections::BTreeMap;
use std::path::Path;

use mtr_core::InputError;
use mtr_core::model::{Speaker, Utterance};
use serde::{Deserialize, Serialize};

use crate::dimension::Dimension;
use crate::error::Result;

/// One human-rated answer of the MTRAG set, ready to be judged.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HumanItem {
    /// `task_id|model_id`.
    pub id: String,
    /// The task (a conversation turn): the cluster of the bootstrap.
    pub task: String,
    /// Which model wrote the answer (`reference`, `GPT-4o`, ...).
    pub source: String,
    pub history: Vec<(Speaker, String)>,
    pub question: String,
    /// Evidence passages as shown to judges.
    pub passages: Vec<String>,
    pub answer: String,
    /// metric -> annotator -> rating.
    pub ratings: BTreeMap<String, BTreeMap<String, f64>>,
}

impl HumanItem {
    pub(crate) fn history(&self) -> Vec<Utterance<'_>> {
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
pub(crate) struct HumanRating {
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
pub(crate) enum HumanLabels {
    /// MTRAG evaluations: answers to judge, on a 1-4 scale.
    Mtrag {
        items: Vec<HumanItem>,
        scale: [f64; 2],
    },
    /// Ratings of audited items on the dimensions' own scales.
    Items(Vec<HumanRating>),
}

/// Human metrics each judged dimension is compared with (MTRAG names), primary first.
/// `completeness` is judged with its own prompt (see [`MtragJudged`]).
pub(crate) fn mtrag_metrics(dim: Dimension) -> &'static [&'static str] {
    match dim {
        Dimension::Faithfulness => &["faithfulness"],
        Dimension::Quality => &["completeness", "appropriateness", "naturalness"],
        _ => &[],
    }
}

/// What the judges rate for an MTRAG human metric: the dimension's own prompt, or (for
/// `completeness`) the answer-completeness prompt with the passages shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum MtragJudged {
    Dimension(Dimension),
    AnswerCompleteness,
}

/// The judgement a human metric of dimension `dim` is compared with.
pub(crate) fn judged_for(dim: Dimension, metric: &str) -> MtragJudged {
    if dim == Dimension::Quality && metric == "completeness" {
        MtragJudged::AnswerCompleteness
    } else {
        MtragJudged::Dimension(dim)
    }
}

pub(crate) fn load(path: &Path) -> Result<HumanLabels> {
    let text = mtr_core::jsonl::read_text(path)?;
    let first = text.trim_start_matches('\u{feff}').trim_start();
    if first.starts_with('{')
        && let Ok(v) = serde_json::from_str::<serde_json::Value>(first)
        && v.get("evaluations").is_some()
    {
        return load_mtrag(path, &v);
    }
    if first.starts_with('[') {
        let v: serde_json::Value = serde_json::from_str(first)
            .map_err(|e| field_err(path, "", format!("not a JSON array: {e}")))?;
        return load_mtrag(path, &merge_list(path, &v)?);
    }
    Ok(HumanLabels::Items(mtr_core::jsonl::read_all(path)?))
}

/// The top-level JSON-list form: a list of MTRAG evaluation files (objects with `documents`,
/// `tasks`, `evaluations`), or a list of evaluations that carry their task inline (`input`,
/// `contexts` with passage `text`), merged into the object form.
fn merge_list(path: &Path, v: &serde_json::Value) -> Result<serde_json::Value> {
    let list = v
        .as_array()
        .ok_or_else(|| field_err(path, "", "expected a JSON array"))?;
    let (mut docs, mut tasks, mut evals) = (Vec::new(), Vec::new(), Vec::new());
    let mut seen_tasks = std::collections::BTreeSet::new();
    let mut seen_docs = std::collections::BTreeSet::new();
    for (i, e) in list.iter().enumerate() {
        if let Some(ev) = e.get("evaluations").and_then(|x| x.as_array()) {
            docs.extend(e["documents"].as_array().cloned().unwrap_or_default());
            tasks.extend(e["tasks"].as_array().cloned().unwrap_or_default());
            evals.extend(ev.iter().cloned());
            continue;
        }
        let task_id = e["task_id"].as_str().ok_or_else(|| {
            field_err(
                path,
                &format!("[{i}].task_id"),
                "a list entry is neither an evaluation file nor an evaluation with a task id",
            )
        })?;
        if e.get("input").is_some() && seen_tasks.insert(task_id.to_string()) {
            let mut ctxs = Vec::new();
            for (k, c) in e["contexts"].as_array().into_iter().flatten().enumerate() {
                let id = c["document_id"]
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| format!("{task_id}#{k}"));
                if c.get("text").is_some() && seen_docs.insert(id.clone()) {
                    docs.push(serde_json::json!({
                        "document_id": id, "title": c["title"], "text": c["text"],
                    }));
                }
                ctxs.push(serde_json::json!({ "document_id": id }));
            }
            tasks.push(serde_json::json!({
                "task_id": task_id, "input": e["input"], "contexts": ctxs,
            }));
        }
        evals.push(e.clone());
    }
    Ok(serde_json::json!({ "documents": docs, "tasks": tasks, "evaluations": evals }))
}

fn field_err(path: &Path, field: &str, msg: impl Into<String>) -> mtr_core::Error {
    InputError::new(path, msg).field(field).into()
}

/// The MTRAG file's passages by document id, as the judges are shown them (title, text).
fn mtrag_documents<'a>(path: &Path, v: &'a serde_json::Value) -> Result<BTreeMap<&'a str, String>> {
    Ok(v["documents"]
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
        .collect())
}

/// The dialogue history before the task's last user message, and that message.
fn mtrag_dialogue(
    path: &Path,
    task_id: &str,
    task: &serde_json::Value,
) -> Result<(Vec<(Speaker, String)>, String)> {
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
    Ok((msgs, question))
}

/// Every annotator's rating of one evaluation, by metric then annotator.
fn mtrag_ratings(e: &serde_json::Value) -> BTreeMap<String, BTreeMap<String, f64>> {
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
    ratings
}

fn load_mtrag(path: &Path, v: &serde_json::Value) -> Result<HumanLabels> {
    let docs = mtrag_documents(path, v)?;
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
        let (msgs, question) = mtrag_dialogue(path, task_id, task)?;
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
        let ratings = mtrag_ratings(e);
        items.push(HumanItem {
            id: format!("{task_id}|{model}"),
            task: task_id.to_string(),
            source: model.to_string(),
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
    fn the_top_level_json_list_form_is_read() {
        let dir = tempfile::tempdir().unwrap();
        // a list of evaluations carrying their task inline
        let list = serde_json::json!([
            {
                "task_id": "c1<::>2", "model_id": "GPT-4o", "model_response": "It is 42.",
                "input": [
                    {"speaker": "user", "text": "hi"},
                    {"speaker": "agent", "text": "hello"},
                    {"speaker": "user", "text": "what is the answer?"}
                ],
                "contexts": [{"document_id": "d1", "title": "Answers", "text": "The answer is 42."}],
                "annotations": {"faithfulness": {"a1": {"value": "4"}, "a2": {"value": 3}}}
            },
            {
                "task_id": "c1<::>2", "model_id": "reference", "model_response": "42.",
                "annotations": {"faithfulness": {"a1": {"value": "4"}}}
            }
        ]);
        let p = dir.path().join("list.json");
        std::fs::write(&p, serde_json::to_string_pretty(&list).unwrap()).unwrap();
        let HumanLabels::Mtrag { items, .. } = load(&p).unwrap() else {
            panic!("not read as MTRAG")
        };
        assert_eq!(items.len(), 2);
        assert_eq!(items[0].question, "what is the answer?");
        assert_eq!(items[0].history.len(), 2);
        assert_eq!(
            items[0].passages,
            vec!["Answers\nThe answer is 42.".to_string()]
        );
        assert_eq!(items[1].source, "reference");
        assert_eq!(items[1].task, "c1<::>2");
        assert_eq!(items[0].ratings["faithfulness"].len(), 2);
        // a list of whole evaluation files is merged
        let Some(shared) = shared() else { return };
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&shared).unwrap()).unwrap();
        let p2 = dir.path().join("files.json");
        std::fs::write(&p2, serde_json::to_string(&serde_json::json!([v])).unwrap()).unwrap();
        let HumanLabels::Mtrag { items, .. } = load(&p2).unwrap() else {
            panic!("not read as MTRAG")
        };
        assert_eq!(items.len(), 234);
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
}
