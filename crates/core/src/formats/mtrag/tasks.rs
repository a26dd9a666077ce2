//! MTRAG retrieval tasks of one domain (`<domain>_{rewrite,lastturn}.jsonl` and qrels) put on
//! its dialogues: the human rewrites, the gold from the qrels in file order, and the checks
//! that every task and judgement matches a turn and that the last-turn texts agree with the
//! conversations.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde::Deserialize;

use super::super::builder::{Builder, Origin};
use super::super::judgements;
use super::conversation::{self, Conversation};
use super::source_files::TaskFiles;
use crate::error::{InputError, Result};
use crate::jsonl;
use crate::model::{Dialogue, Gold};

/// A BEIR query line of a task file.
#[derive(Debug, Deserialize)]
struct TaskQuery {
    #[serde(rename = "_id")]
    id: String,
    text: String,
}

/// One qrels judgement with its line.
struct Judgement {
    qid: String,
    pid: String,
    grade: i32,
    line: u64,
}

/// Reads a BEIR queries JSONL into `id -> (text, line)`.
fn read_task_queries(path: &Path, b: &mut Builder) -> Result<HashMap<String, (String, u64)>> {
    let mut out = HashMap::new();
    for line in jsonl::records::<TaskQuery>(path)? {
        match line? {
            jsonl::Line::Record(no, q) => {
                if out
                    .insert(q.id.clone(), (strip_user_prefix(&q.text), no))
                    .is_some()
                {
                    b.diag.problem(
                        "duplicate-task",
                        InputError::new(path, format!("duplicate task id `{}`", q.id))
                            .line(no)
                            .field("_id"),
                    )?;
                }
            }
            jsonl::Line::Malformed(e) => b.diag.problem("malformed-record", e)?,
        }
    }
    Ok(out)
}

/// `|user|: question` -> `question` (the MTRAG task files prefix every utterance).
fn strip_user_prefix(s: &str) -> String {
    let t = s.trim();
    t.strip_prefix("|user|:")
        .map(str::trim)
        .unwrap_or(t)
        .to_string()
}

/// A task file's queries by id (none when the domain has no such file).
fn read_optional(
    path: &Option<std::path::PathBuf>,
    b: &mut Builder,
) -> Result<HashMap<String, (String, u64)>> {
    match path {
        Some(p) => read_task_queries(p, b),
        None => Ok(HashMap::new()),
    }
}

/// The dialogues of domain `dom` with the rewrites and gold of its tasks.
pub(super) fn build_domain(
    dom: &str,
    convs: Vec<(Conversation, Origin)>,
    tasks: &TaskFiles,
    b: &mut Builder,
) -> Result<Vec<Dialogue>> {
    let rewrites = read_optional(&tasks.rewrite, b)?;
    let lastturns = read_optional(&tasks.lastturn, b)?;
    let judgements: Vec<Judgement> = match &tasks.qrels {
        Some(p) => judgements::read(p, &mut b.diag)?
            .into_iter()
            .map(|(qid, pid, grade, line)| Judgement {
                qid,
                pid,
                grade,
                line,
            })
            .collect(),
        None => Vec::new(),
    };
    let mut dialogues = Vec::with_capacity(convs.len());
    let mut turn_ids: HashSet<String> = HashSet::new();
    for (conv, origin) in convs {
        dialogues.push(conversation::dialogue_of(
            dom,
            conv,
            &origin,
            &rewrites,
            &mut turn_ids,
            b,
        )?);
    }
    let qrels_path = tasks.qrels.clone().unwrap_or_default();
    let gold = gold_by_turn(dom, judgements, &qrels_path, &turn_ids, b)?;
    attach_gold(
        &mut dialogues,
        gold,
        &lastturns,
        tasks.lastturn.as_deref(),
        b,
    );
    unmatched_tasks(dom, tasks, &rewrites, &lastturns, &turn_ids, b)?;
    Ok(dialogues)
}

/// Gold from the qrels, in file order, by turn id; a judgement of no turn is a problem.
fn gold_by_turn(
    dom: &str,
    judgements: Vec<Judgement>,
    qrels_path: &Path,
    turn_ids: &HashSet<String>,
    b: &mut Builder,
) -> Result<HashMap<String, Vec<Gold>>> {
    let mut gold: HashMap<String, Vec<Gold>> = HashMap::new();
    for j in judgements {
        if !turn_ids.contains(&j.qid) {
            b.diag.problem(
                "unmatched-qrels",
                InputError::new(
                    qrels_path,
                    format!(
                        "query `{}` matches no turn of the {dom} conversations",
                        j.qid
                    ),
                )
                .line(j.line)
                .field("query-id")
                .hint("task ids are `<conversation_id><::><N>` where N counts the user messages"),
            )?;
            continue;
        }
        b.gold_origin(
            &j.qid,
            &j.pid,
            Origin::new(qrels_path, Some(j.line), "corpus-id"),
        );
        gold.entry(j.qid).or_default().push(Gold {
            passage_id: j.pid,
            grade: j.grade,
        });
    }
    Ok(gold)
}

/// Puts the gold on its turns and warns once when last-turn task texts differ from the
/// conversations' user messages (the conversation's text is kept).
fn attach_gold(
    dialogues: &mut [Dialogue],
    mut gold: HashMap<String, Vec<Gold>>,
    lastturns: &HashMap<String, (String, u64)>,
    lastturn_file: Option<&Path>,
    b: &mut Builder,
) {
    let mut mismatches = 0usize;
    let mut first_mismatch = None;
    for d in dialogues {
        for t in &mut d.turns {
            if let Some(g) = gold.remove(&t.id) {
                t.gold = g;
            }
            if let Some((text, line)) = lastturns.get(&t.id)
                && normalize(text) != normalize(&t.user)
            {
                mismatches += 1;
                first_mismatch.get_or_insert((t.id.clone(), *line));
            }
        }
    }
    if let (Some((id, line)), Some(p)) = (first_mismatch, lastturn_file) {
        b.diag.warn(format!(
            "{}:{line}: {mismatches} task text(s) differ from the conversation's user message (first: `{id}`); the conversation's text is used",
            p.display()
        ));
    }
}

/// Rewrite and last-turn tasks that match no turn, in file order.
fn unmatched_tasks(
    dom: &str,
    tasks: &TaskFiles,
    rewrites: &HashMap<String, (String, u64)>,
    lastturns: &HashMap<String, (String, u64)>,
    turn_ids: &HashSet<String>,
    b: &mut Builder,
) -> Result<()> {
    for (path, map, what) in [
        (&tasks.rewrite, &rewrites, "rewrite"),
        (&tasks.lastturn, &lastturns, "last-turn"),
    ] {
        let Some(path) = path else { continue };
        let mut unmatched: Vec<(&String, u64)> = map
            .iter()
            .filter(|(id, _)| !turn_ids.contains(*id))
            .map(|(id, (_, l))| (id, *l))
            .collect();
        unmatched.sort_by_key(|(_, l)| *l);
        for (id, line) in unmatched {
            b.diag.problem(
                "unmatched-task",
                InputError::new(
                    path,
                    format!("{what} task `{id}` matches no turn of the {dom} conversations"),
                )
                .line(line)
                .field("_id"),
            )?;
        }
    }
    Ok(())
}

fn normalize(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrite_prefix_is_stripped() {
        assert_eq!(strip_user_prefix("|user|: What is X?"), "What is X?");
        assert_eq!(strip_user_prefix("plain"), "plain");
    }
}
