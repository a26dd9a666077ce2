//! BEIR: `corpus.jsonl` (`_id`, `title`, `text`), `queries.jsonl` (`_id`, `text`) and
//! `qrels/<split>.tsv` (`query-id corpus-id score` with a header line). Each query becomes a
//! one-turn dialogue, or, when the query ids are conversational (`conv<::>3`, `conv_3`, ...),
//! the queries of one conversation become the turns of one dialogue (see [`super::group`]).
//!
//! The query set is the chosen split's: queries judged only in another split are left out;
//! queries judged in no split at all are kept as turns without gold.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::builder::Diag;
use super::builder::{self, Builder, ImportReport, Origin};
use super::corpus::{self, CorpusOptions};
use super::group;
use super::options::ImportOptions;
use super::{judgements, walk};
use crate::error::{Error, InputError, Result};
use crate::jsonl;
use crate::model::{Dialogue, Gold, Tags, Turn};
use crate::progress::Progress;

/// True for a folder with `corpus.jsonl` and `queries.jsonl`.
pub(super) fn sniff(path: &Path) -> bool {
    path.is_dir()
        && path.join("queries.jsonl").is_file()
        && (path.join("corpus.jsonl").is_file() || path.join("qrels").is_dir())
}

/// The qrels files of a BEIR folder by split name.
fn qrels_files(src: &Path) -> Result<Vec<(String, PathBuf)>> {
    let dir = src.join("qrels");
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    Ok(walk::files(&dir, 0)?
        .into_iter()
        .filter_map(|p| {
            let n = walk::file_name(&p);
            n.strip_suffix(".tsv").map(|s| (s.to_string(), p.clone()))
        })
        .collect())
}

/// Picks the split: the requested one, else `test`, `dev`, the only one.
fn choose_split(
    src: &Path,
    splits: &[(String, PathBuf)],
    want: Option<&str>,
) -> Result<Option<(String, PathBuf)>> {
    if let Some(w) = want {
        return match splits.iter().find(|(s, _)| s == w) {
            Some(x) => Ok(Some(x.clone())),
            None => Err(
                InputError::new(src.join("qrels"), format!("no qrels for split `{w}`"))
                    .field("--split")
                    .hint(format!(
                        "splits found: {}",
                        splits
                            .iter()
                            .map(|(s, _)| s.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                    .into(),
            ),
        };
    }
    for pref in ["test", "dev", "validation"] {
        if let Some(x) = splits.iter().find(|(s, _)| s == pref) {
            return Ok(Some(x.clone()));
        }
    }
    match splits {
        [] => Ok(None),
        [one] => Ok(Some(one.clone())),
        _ => Err(InputError::new(
            src.join("qrels"),
            "several qrels splits and none is `test` or `dev`",
        )
        .field("--split")
        .hint(format!(
            "choose one: {}",
            splits
                .iter()
                .map(|(s, _)| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))
        .into()),
    }
}

/// One query of `queries.jsonl`.
pub(crate) struct Query {
    pub id: String,
    pub text: String,
    pub line: u64,
}

/// Reads a BEIR `queries.jsonl` (ids may be strings or numbers).
pub(crate) fn read_queries(path: &Path, b: &mut Builder) -> Result<Vec<Query>> {
    let mut out = Vec::new();
    for line in jsonl::records_with(path, jsonl::parse_plain::<Map<String, Value>>)? {
        let (no, map) = match line? {
            jsonl::Line::Record(no, map) => (no, map),
            jsonl::Line::Malformed(e) => {
                b.diag.problem("malformed-record", e)?;
                continue;
            }
        };
        let id = match map.get("_id").or_else(|| map.get("id")) {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => {
                b.diag.problem(
                    "malformed-record",
                    InputError::new(path, "query has no `_id`")
                        .line(no)
                        .field("_id"),
                )?;
                continue;
            }
        };
        let text = match map.get("text") {
            Some(Value::String(s)) => s.trim().to_string(),
            _ => {
                b.diag.problem(
                    "malformed-record",
                    InputError::new(path, format!("query `{id}` has no `text`"))
                        .line(no)
                        .field("text"),
                )?;
                continue;
            }
        };
        out.push(Query { id, text, line: no });
    }
    Ok(out)
}

/// Builds dialogues from queries (grouped per `opts.grouping`) with gold from judgements.
pub(crate) fn dialogues_from_queries(
    queries: Vec<Query>,
    queries_path: &Path,
    judgements: Vec<judgements::Judgement>,
    qrels_path: &Path,
    opts: &ImportOptions,
    b: &mut Builder,
) -> Result<Vec<Dialogue>> {
    let mut seen = HashSet::new();
    let mut qs = Vec::with_capacity(queries.len());
    for q in queries {
        if !seen.insert(q.id.clone()) {
            b.diag.problem(
                "duplicate-turn",
                InputError::new(queries_path, format!("duplicate query id `{}`", q.id))
                    .line(q.line)
                    .field("_id"),
            )?;
            continue;
        }
        qs.push(q);
    }
    let mut gold: HashMap<String, Vec<Gold>> = HashMap::new();
    for (qid, pid, grade, line) in judgements {
        if !seen.contains(&qid) {
            b.diag.problem(
                "unmatched-qrels",
                InputError::new(
                    qrels_path,
                    format!("query `{qid}` is not in {}", walk::file_name(queries_path)),
                )
                .line(line)
                .field("query-id"),
            )?;
            continue;
        }
        b.gold_origin(&qid, &pid, Origin::new(qrels_path, Some(line), "corpus-id"));
        gold.entry(qid).or_default().push(Gold {
            passage_id: pid,
            grade,
        });
    }
    let ids: Vec<String> = qs.iter().map(|q| q.id.clone()).collect();
    let groups = group::group_ids(&ids, opts.grouping).map_err(|bad| {
        let line = qs.iter().find(|q| q.id == bad).map(|q| q.line).unwrap_or(0);
        Error::from(
            InputError::new(queries_path, format!("query id `{bad}` is not conversational (`conv<::>N`, `conv::N`, `conv_N`, `conv-N`)"))
                .line(line)
                .field("_id")
                .hint("use --group auto or single"),
        )
    })?;
    let mut slots: Vec<Option<Query>> = qs.into_iter().map(Some).collect();
    let mut dialogues = Vec::with_capacity(groups.len());
    for g in groups {
        let turns = g
            .members
            .iter()
            .filter_map(|&i| slots.get_mut(i).and_then(Option::take))
            .map(|q| Turn {
                gold: gold.remove(&q.id).unwrap_or_default(),
                id: q.id,
                user: q.text,
                rewrite: None,
                answer: None,
                tags: Tags::default(),
            })
            .collect();
        dialogues.push(Dialogue {
            id: g.dialogue_id,
            turns,
            meta: Map::new(),
        });
    }
    Ok(dialogues)
}

pub(super) fn import(
    src: &Path,
    out: &Path,
    opts: &ImportOptions,
    progress: &dyn Progress,
) -> Result<ImportReport> {
    if !src.is_dir() {
        return Err(InputError::new(
            src,
            "a BEIR source must be a folder with corpus.jsonl, queries.jsonl and qrels/",
        )
        .into());
    }
    let queries_path = src.join("queries.jsonl");
    if !queries_path.is_file() {
        return Err(InputError::new(&queries_path, "missing queries file of a BEIR folder").into());
    }
    let corpus_path = opts
        .corpus
        .clone()
        .unwrap_or_else(|| src.join("corpus.jsonl"));
    let splits = qrels_files(src)?;
    let chosen = match &opts.qrels {
        Some(q) => Some(("custom".to_string(), q.clone())),
        None => choose_split(src, &splits, opts.split.as_deref())?,
    };
    let mut b = Builder::create(out, opts.lenient)?;
    if corpus_path.exists() {
        corpus::read_into(&corpus_path, &mut b, CorpusOptions::default(), progress)?;
    } else {
        b.diag.problem(
            "missing-corpus",
            InputError::new(&corpus_path, "missing corpus of a BEIR folder"),
        )?;
    }
    let mut queries = read_queries(&queries_path, &mut b)?;
    let (judgements, qrels_path) = match &chosen {
        Some((_, p)) => (judgements::read(p, &mut b.diag)?, p.clone()),
        None => {
            b.diag.warn(format!(
                "{}: no qrels: the turns have no gold",
                src.display()
            ));
            (Vec::new(), PathBuf::new())
        }
    };
    // Keep the chosen split's queries and those judged in no split.
    if let Some((split, _)) = &chosen {
        let mut other: HashSet<String> = HashSet::new();
        for (s, p) in &splits {
            if s != split {
                other.extend(
                    judgements::read(p, &mut Diag::new(true))?
                        .into_iter()
                        .map(|(q, ..)| q),
                );
            }
        }
        let chosen_q: HashSet<&String> = judgements.iter().map(|(q, ..)| q).collect();
        queries.retain(|q| chosen_q.contains(&q.id) || !other.contains(&q.id));
    }
    let dialogues = dialogues_from_queries(
        queries,
        &queries_path,
        judgements,
        &qrels_path,
        opts,
        &mut b,
    )?;
    let mut manifest = builder::manifest("beir", builder::name_from_path(src), "", opts, src);
    if let Some((split, _)) = chosen {
        manifest
            .extra
            .insert("split".into(), toml::Value::String(split));
    }
    b.finish(manifest, dialogues)
}

#[cfg(test)]
mod tests {
    use super::super::options::ImportOptions;
    use super::super::test_support::{counts, fixture, load};
    use super::*;

    #[test]
    fn fixture_groups_conversational_ids_and_picks_test_split() {
        let (r, b) = load(import, &fixture("beir"), &ImportOptions::default());
        // c3_1 is judged only in dev: left out of the test split.
        assert_eq!(counts(&r), (2, 5, 5, 5, 6));
        assert_eq!(b.dialogues[0].id, "c1");
        assert_eq!(
            b.dialogues[0]
                .turns
                .iter()
                .map(|t| t.id.as_str())
                .collect::<Vec<_>>(),
            ["c1_1", "c1_2", "c1_3"]
        );
        let (d, i) = b.find_turn("c1_2").unwrap();
        assert_eq!(
            d.turns[i].gold.len(),
            2,
            "grade-0 judgements are kept as judged non-relevant"
        );
        assert_eq!(b.find_turn("c2_1").unwrap().0.turns[0].user, "年假有几天？");
        let dev = ImportOptions {
            split: Some("dev".into()),
            ..Default::default()
        };
        let (r, _) = load(import, &fixture("beir"), &dev);
        assert_eq!((r.turns, r.judged_turns), (1, 1));
        let single = ImportOptions {
            grouping: super::super::options::Grouping::Single,
            ..Default::default()
        };
        assert_eq!(load(import, &fixture("beir"), &single).0.dialogues, 5);
        // BEIR `metadata` is flattened into the passage's meta.
        let mut url = None;
        crate::BenchmarkDir::new(b.dir.root())
            .for_each_passage(|_, p| {
                if p.id == "d2" {
                    url = p.meta.get("url").cloned();
                }
                Ok(())
            })
            .unwrap();
        assert!(url.is_some());
    }

    #[test]
    fn unknown_split_is_a_user_error() {
        let tmp = tempfile::tempdir().unwrap();
        let opts = ImportOptions {
            split: Some("train".into()),
            ..Default::default()
        };
        let e = import(
            &fixture("beir"),
            &tmp.path().join("b"),
            &opts,
            &crate::progress::NoProgress,
        )
        .unwrap_err();
        assert!(
            e.is_user_error() && e.to_string().contains("--split"),
            "{e}"
        );
    }
}
