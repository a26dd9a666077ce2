//! MTRAG conversations: reading them from their files (grouped by domain, duplicates named by
//! their input line) and turning one conversation's messages into a dialogue, the N-th user
//! message becoming turn `<conversation_id><::>N` with the agent message after it as its
//! answer and its enrichments as tags.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::PathBuf;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::super::builder::{Builder, Origin};
use super::super::json_doc::JsonDoc;
use crate::error::{InputError, Result};
use crate::model::{Dialogue, Tags, Turn};

/// The separator of conversation id and turn number in MTRAG task ids.
pub(crate) const TASK_SEP: &str = "<::>";

#[derive(Debug, Deserialize)]
pub(super) struct Conversation {
    conversation_id: String,
    #[serde(default)]
    domain: Option<String>,
    messages: Vec<Message>,
    #[serde(flatten)]
    other: Map<String, Value>,
}

#[derive(Debug, Deserialize)]
struct Message {
    speaker: String,
    text: String,
    #[serde(default)]
    enrichments: Option<Map<String, Value>>,
}

/// The domain a conversation belongs to: the file's, else a known domain named in its
/// `domain` string (`mt-rag-clapnq-elser-512-100-20240503` -> `clapnq`).
fn conversation_domain(
    file_domain: &Option<String>,
    conv: &Conversation,
    known: &BTreeSet<String>,
) -> String {
    if let Some(d) = file_domain {
        return d.clone();
    }
    let raw = conv.domain.clone().unwrap_or_default();
    let lower = raw.to_ascii_lowercase();
    for tok in lower.split(|c: char| !c.is_ascii_alphanumeric()) {
        if known.contains(tok) {
            return tok.to_string();
        }
    }
    if raw.is_empty() {
        "unknown".into()
    } else {
        raw
    }
}

/// Conversations by domain, grouped in file order; files of another domain than `want` and
/// conversations of another domain are left out.
pub(super) fn read_conversations(
    files: &[(PathBuf, Option<String>)],
    want: Option<&String>,
    known: &BTreeSet<String>,
    b: &mut Builder,
) -> Result<BTreeMap<String, Vec<(Conversation, Origin)>>> {
    let mut by_domain: BTreeMap<String, Vec<(Conversation, Origin)>> = BTreeMap::new();
    // conversation id -> where it was first seen, so a duplicate names its own input line
    let mut seen: HashMap<String, (PathBuf, u64)> = HashMap::new();
    for (path, file_dom) in files {
        if let (Some(want), Some(fd)) = (want, file_dom)
            && want != fd
        {
            continue;
        }
        let doc = JsonDoc::read(path)?;
        for rec in doc.array_records()? {
            let Some(conv) = b.diag.parsed::<Conversation>(&doc, &rec)? else {
                continue;
            };
            let dom = conversation_domain(file_dom, &conv, known);
            if want.is_some_and(|w| *w != dom) {
                continue;
            }
            if let Some((first, first_line)) = seen.get(&conv.conversation_id) {
                b.diag.problem(
                    "duplicate-dialogue",
                    InputError::new(
                        path,
                        format!(
                            "duplicate conversation `{}` (first in {} line {first_line})",
                            conv.conversation_id,
                            first
                                .file_name()
                                .map(|n| n.to_string_lossy().into_owned())
                                .unwrap_or_default()
                        ),
                    )
                    .line(rec.line)
                    .field("conversation_id"),
                )?;
                continue;
            }
            seen.insert(conv.conversation_id.clone(), (path.clone(), rec.line));
            by_domain
                .entry(dom)
                .or_default()
                .push((conv, Origin::new(path, Some(rec.line), "messages")));
        }
    }
    Ok(by_domain)
}

/// One conversation of domain `dom` as a dialogue: a turn per user message (its rewrite from
/// `rewrites`, its id added to `turn_ids`), the agent message after it as its answer.
pub(super) fn dialogue_of(
    dom: &str,
    conv: Conversation,
    origin: &Origin,
    rewrites: &HashMap<String, (String, u64)>,
    turn_ids: &mut HashSet<String>,
    b: &mut Builder,
) -> Result<Dialogue> {
    let mut turns: Vec<Turn> = Vec::new();
    let mut n = 0usize;
    for (i, m) in conv.messages.iter().enumerate() {
        match m.speaker.to_ascii_lowercase().as_str() {
            "user" => {
                n += 1;
                let id = format!("{}{TASK_SEP}{n}", conv.conversation_id);
                let mut tags = enrichment_tags(m.enrichments.as_ref());
                tags.extra.insert("domain".into(), Value::String(dom.to_string()));
                turns.push(Turn {
                    id: id.clone(),
                    user: m.text.trim().to_string(),
                    rewrite: rewrites.get(&id).map(|(t, _)| t.clone()).filter(|t| !t.is_empty()),
                    answer: None,
                    gold: Vec::new(),
                    tags,
                });
                turn_ids.insert(id);
            }
            "agent" | "assistant" | "system" => {
                match turns.last_mut() {
                    Some(t) if t.answer.is_none() => t.answer = Some(m.text.trim().to_string()),
                    _ => b.diag.warn(format!(
                        "{}: conversation `{}` message {i}: an agent message without a preceding user question was ignored",
                        origin.file.display(),
                        conv.conversation_id
                    )),
                }
            }
            other => {
                let mut e = InputError::new(&origin.file, format!("unknown speaker `{other}` (expected user or agent)"))
                    .field(format!("messages[{i}].speaker"));
                if let Some(l) = origin.line {
                    e = e.line(l);
                }
                b.diag.problem("malformed-record", e)?;
            }
        }
    }
    let mut meta = Map::new();
    for (k, v) in &conv.other {
        if matches!(v, Value::String(_) | Value::Number(_) | Value::Bool(_)) {
            meta.insert(k.clone(), v.clone());
        }
    }
    if let Some(d) = &conv.domain {
        meta.insert("domain".into(), Value::String(d.clone()));
    }
    Ok(Dialogue {
        id: conv.conversation_id.clone(),
        turns,
        meta,
    })
}

/// MTRAG enrichments -> tags.
fn enrichment_tags(enrichments: Option<&Map<String, Value>>) -> Tags {
    let mut tags = Tags::default();
    let Some(e) = enrichments else { return tags };
    for (k, v) in e {
        let values: Vec<String> = match v {
            Value::Array(a) => a
                .iter()
                .filter_map(|x| x.as_str().map(str::trim).map(String::from))
                .filter(|s| !s.is_empty())
                .collect(),
            Value::String(s) if !s.trim().is_empty() => vec![s.trim().to_string()],
            _ => Vec::new(),
        };
        if values.is_empty() {
            continue;
        }
        let joined = values.join(",");
        match k.as_str() {
            "Question Type" => tags.question_type = Some(joined),
            "Multi-Turn" => tags.multi_turn_type = Some(joined),
            "Answerability" => tags.answerability = Some(joined.to_lowercase()),
            other => {
                tags.extra.insert(snake_case(other), Value::String(joined));
            }
        }
    }
    tags
}

fn snake_case(s: &str) -> String {
    let mut out = String::new();
    for c in s.trim().chars() {
        if c.is_alphanumeric() {
            out.extend(c.to_lowercase());
        } else if !out.ends_with('_') && !out.is_empty() {
            out.push('_');
        }
    }
    out.trim_end_matches('_').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enrichments_become_tags() {
        let e: Map<String, Value> = serde_json::from_str(
            r#"{"Question Type":["Factoid","Summarization"],"Multi-Turn":["N/A"],"Answerability":["UNANSWERABLE"],"Standalone Type":["Non-standalone"]}"#,
        )
        .unwrap();
        let t = enrichment_tags(Some(&e));
        assert_eq!(t.question_type.as_deref(), Some("Factoid,Summarization"));
        assert_eq!(t.multi_turn_type.as_deref(), Some("N/A"));
        assert_eq!(t.answerability.as_deref(), Some("unanswerable"));
        assert_eq!(t.get("standalone_type").as_deref(), Some("Non-standalone"));
    }
}
