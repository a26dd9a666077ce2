//! TREC CAsT (2019-2022) and iKAT (2023-) topics JSON plus TREC qrels.
//!
//! Topics are a JSON array: CAsT `{number, title, description, turn: [{number, raw_utterance,
//! manual_rewritten_utterance, automatic_rewritten_utterance, manual_canonical_result_id |
//! canonical_result_id, passage, ...}]}`; CAsT 2022 turns carry `utterance` and `participant`
//! (only user turns are kept); iKAT `{number, title, ptkb, turns: [{turn_id, utterance,
//! resolved_utterance, response, response_provenance}]}`. The query id is
//! `<topic number>_<turn number>` (CAsT's and iKAT's qrels ids); a turn number that already
//! starts with the topic number is used as is. The manual rewrite (`resolved_utterance` in
//! iKAT) is the `rewrite`; `response` (or CAsT 2021's canonical `passage`) is the `answer`.
//! Gold comes from the qrels file (`--qrels`, or a `*qrel*` file beside the topics); the
//! collections (MS MARCO, KILT, ClueWeb) are not shipped with the topics: give `--corpus` to
//! check gold ids and retrieve, else the corpus is empty.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::builder::{self, Builder, ImportReport, Origin};
use super::corpus::{self, CorpusOptions};
use super::json_doc::JsonDoc;
use super::options::ImportOptions;
use super::scalar::scalar;
use super::{dataset_file, judgements, walk};
use crate::error::{InputError, Result};
use crate::model::{Dialogue, Gold, Tags, Turn};
use crate::progress::Progress;

fn looks(head: &str) -> bool {
    let t = head.trim_start();
    t.starts_with('[')
        && head.contains("\"number\"")
        && (head.contains("\"raw_utterance\"")
            || (head.contains("\"utterance\"")
                && (head.contains("\"turn\"") || head.contains("\"turns\""))))
}

pub(super) fn sniff(path: &Path) -> bool {
    !dataset_file::candidates(path, looks).is_empty()
}

fn first_str(m: &Map<String, Value>, keys: &[&str]) -> Option<String> {
    keys.iter().find_map(|k| m.get(*k).and_then(scalar))
}

fn find_qrels(src: &Path) -> Option<PathBuf> {
    let dir = if src.is_dir() { src } else { src.parent()? };
    walk::files(dir, 1)
        .ok()?
        .into_iter()
        .find(|f| walk::file_name(f).to_ascii_lowercase().contains("qrel"))
}

fn find_collection(src: &Path) -> Option<PathBuf> {
    let dir = if src.is_dir() { src } else { src.parent()? };
    for d in ["collection", "corpus", "passages"] {
        if dir.join(d).is_dir() {
            return Some(dir.join(d));
        }
    }
    walk::files(dir, 1).ok()?.into_iter().find(|f| {
        let n = walk::file_name(f).to_ascii_lowercase();
        (n.starts_with("collection") || n.starts_with("corpus") || n.starts_with("passages"))
            && corpus::is_corpus_file(f)
    })
}

pub(super) fn import(
    src: &Path,
    out: &Path,
    opts: &ImportOptions,
    progress: &dyn Progress,
) -> Result<ImportReport> {
    let data = dataset_file::pick(src, looks, opts.split.as_deref(), "CAsT/iKAT topics")?;
    let qrels_path = opts.qrels.clone().or_else(|| find_qrels(src));
    let corpus_path = opts.corpus.clone().or_else(|| find_collection(src));
    let mut b = Builder::create(out, opts.lenient)?;
    match &corpus_path {
        Some(c) => corpus::read_into(c, &mut b, CorpusOptions::default(), progress)?,
        None => b.diag.warn(format!(
            "{}: no collection given: the corpus is empty (give --corpus)",
            data.display()
        )),
    }
    let mut dialogues = read_topics(&data, &mut b)?;
    match &qrels_path {
        Some(q) => attach_qrels(q, &mut dialogues, &mut b)?,
        None => b.diag.warn(format!(
            "{}: no qrels file: the turns have no gold (give --qrels)",
            data.display()
        )),
    }
    let manifest = builder::manifest("cast", builder::name_from_path(&data), "", opts, src);
    b.finish(manifest, dialogues)
}

/// One dialogue per topic, its user turns without gold yet.
fn read_topics(data: &Path, b: &mut Builder) -> Result<Vec<Dialogue>> {
    let doc = JsonDoc::read(data)?;
    let mut dialogues = Vec::new();
    for rec in doc.array_records()? {
        let Some(topic) = b.diag.parsed::<Map<String, Value>>(&doc, &rec)? else {
            continue;
        };
        let bad = |msg: String, field: &str| InputError::new(data, msg).line(rec.line).field(field);
        let Some(number) = first_str(&topic, &["number", "topic_id", "topic_number"]) else {
            b.diag.problem(
                "malformed-record",
                bad("topic has no `number`".into(), "number"),
            )?;
            continue;
        };
        let turns_v = topic.get("turn").or_else(|| topic.get("turns"));
        let Some(Value::Array(turns_v)) = turns_v else {
            b.diag.problem(
                "malformed-record",
                bad(format!("topic `{number}` has no `turn` array"), "turn"),
            )?;
            continue;
        };
        let title = first_str(&topic, &["title"]);
        let mut turns = Vec::new();
        for (i, tv) in turns_v.iter().enumerate() {
            if let Some(t) = topic_turn(data, rec.line, &number, &title, i, tv, b)? {
                turns.push(t);
            }
        }
        let mut meta = Map::new();
        for k in ["title", "description", "ptkb"] {
            if let Some(v) = topic.get(k).filter(|v| !v.is_null()) {
                meta.insert(k.into(), v.clone());
            }
        }
        dialogues.push(Dialogue {
            id: number,
            turns,
            meta,
        });
    }
    Ok(dialogues)
}

/// Turn `i` of topic `number` (read at `data:line`); `None` for a turn that is not the user's
/// or, when lenient, a malformed one.
fn topic_turn(
    data: &Path,
    line: u64,
    number: &str,
    title: &Option<String>,
    i: usize,
    tv: &Value,
    b: &mut Builder,
) -> Result<Option<Turn>> {
    let bad = |msg: String, field: &str| {
        InputError::new(data, msg)
            .line(line)
            .field(format!("turn[{i}]{field}"))
    };
    let Some(t) = tv.as_object() else {
        b.diag.problem(
            "malformed-record",
            bad("a turn must be a JSON object".into(), ""),
        )?;
        return Ok(None);
    };
    if let Some(p) = first_str(t, &["participant", "speaker"])
        && !matches!(p.to_ascii_lowercase().as_str(), "user" | "usr")
    {
        return Ok(None);
    }
    let Some(tn) = first_str(t, &["number", "turn_id", "turn_number"]) else {
        let msg = format!("turn {i} of topic `{number}` has no `number`");
        b.diag.problem("malformed-record", bad(msg, ".number"))?;
        return Ok(None);
    };
    let Some(user) = first_str(t, &["raw_utterance", "utterance", "query"]) else {
        let msg = format!("turn `{tn}` of topic `{number}` has no utterance");
        b.diag
            .problem("malformed-record", bad(msg, ".raw_utterance"))?;
        return Ok(None);
    };
    let id = if tn.starts_with(&format!("{number}_")) || tn.starts_with(&format!("{number}-")) {
        tn.clone()
    } else {
        format!("{number}_{tn}")
    };
    let mut tags = Tags {
        topic: title.clone(),
        ..Default::default()
    };
    for (k, name) in [
        ("automatic_rewritten_utterance", "automatic_rewrite"),
        ("manual_canonical_result_id", "canonical_result_id"),
        ("canonical_result_id", "canonical_result_id"),
        ("result_turn_dependence", "result_turn_dependence"),
        ("query_turn_dependence", "query_turn_dependence"),
        ("response_provenance", "response_provenance"),
        ("ptkb_provenance", "ptkb_provenance"),
    ] {
        if let Some(v) = t.get(k).filter(|v| !v.is_null()) {
            tags.extra
                .entry(name.to_string())
                .or_insert_with(|| v.clone());
        }
    }
    Ok(Some(Turn {
        id,
        user,
        rewrite: first_str(
            t,
            &[
                "manual_rewritten_utterance",
                "resolved_utterance",
                "rewrite",
            ],
        ),
        answer: first_str(t, &["response", "passage"]),
        gold: Vec::new(),
        tags,
    }))
}

/// Gold from the qrels file `q`, matched to the turns by query id.
fn attach_qrels(q: &Path, dialogues: &mut [Dialogue], b: &mut Builder) -> Result<()> {
    let js = judgements::read(q, &mut b.diag)?;
    let mut index: HashMap<String, (usize, usize)> = HashMap::new();
    for (di, d) in dialogues.iter().enumerate() {
        for (ti, t) in d.turns.iter().enumerate() {
            index.insert(t.id.clone(), (di, ti));
        }
    }
    for (qid, pid, grade, line) in js {
        let Some(&(di, ti)) = index.get(&qid) else {
            b.diag.problem(
                "unmatched-qrels",
                InputError::new(q, format!("query `{qid}` matches no turn of the topics"))
                    .line(line)
                    .field("qid"),
            )?;
            continue;
        };
        b.gold_origin(&qid, &pid, Origin::new(q, Some(line), "docid"));
        dialogues[di].turns[ti].gold.push(Gold {
            passage_id: pid,
            grade,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{counts, fixture, load};
    use super::*;

    #[test]
    fn fixture_cast_2020() {
        let (r, b) = load(import, &fixture("cast"), &ImportOptions::default());
        assert_eq!(counts(&r), (2, 4, 4, 5, 5));
        let (d, i) = b.find_turn("81_2").unwrap();
        assert_eq!(
            d.turns[i].rewrite.as_deref(),
            Some("Now my garage door opener stopped working. Why?")
        );
        assert_eq!(
            d.turns[i].tags.get("canonical_result_id").as_deref(),
            Some("MARCO_1037474")
        );
    }

    #[test]
    fn fixture_ikat_2023_without_collection() {
        let (r, b) = load(import, &fixture("ikat"), &ImportOptions::default());
        assert_eq!(counts(&r), (1, 2, 2, 0, 3));
        let t = &b.dialogues[0].turns[1];
        assert_eq!(t.id, "9-1_2");
        assert_eq!(
            t.rewrite.as_deref(),
            Some("Is a Mediterranean vegetarian diet good for losing weight?")
        );
        assert!(t.answer.is_some());
        assert!(b.dialogues[0].meta.contains_key("ptkb"));
        assert!(r.warnings.iter().any(|w| w.contains("corpus is empty")));
    }
}
