//! `mtr import hf DIR` (and `auto`): a Hugging Face dataset folder back into a native
//! benchmark. A folder `mtr export --to hf` wrote has a `dialogues` config: its rows give back
//! every dialogue as it was, so the data fingerprint is the same. Any other folder in MTEB's
//! retrieval layout (configs `corpus`, `queries` and `qrels` or `default`, as Parquet or JSON
//! lines) is read as BEIR is: each query a turn, grouped into dialogues by conversational ids.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value as Json};

use super::layout;
use super::parquet::{Row, TableReader};
use crate::error::{Error, InputError, Result};
use crate::formats::beir::{self, Query};
use crate::formats::builder::{self, Builder, ImportReport, Origin};
use crate::formats::corpus::{self, CorpusOptions};
use crate::formats::judgements::Judgement;
use crate::formats::options::ImportOptions;
use crate::formats::walk;
use crate::model::{Dialogue, Gold, Passage, Tags, Turn};
use crate::progress::Progress;

/// Folders that hold qrels in MTEB's layouts: `qrels/` or the default config's `default/`.
const QRELS_FOLDERS: [&str; 2] = ["qrels", "default"];

/// The data files of a config folder (`.parquet` or `.jsonl`), sorted by name.
fn data_files(dir: &Path) -> Result<Vec<PathBuf>> {
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let mut files: Vec<PathBuf> = walk::files(dir, 1)?
        .into_iter()
        .filter(|p| {
            let n = walk::file_name(p).to_ascii_lowercase();
            n.ends_with(".parquet") || n.ends_with(".jsonl")
        })
        .collect();
    files.sort();
    Ok(files)
}

fn is_parquet(p: &Path) -> bool {
    walk::file_name(p)
        .to_ascii_lowercase()
        .ends_with(".parquet")
}

/// True for a folder with a `corpus/` config and a `queries/` or `dialogues/` one, each holding
/// Parquet or JSON-lines files.
pub(crate) fn sniff(path: &Path) -> bool {
    let has = |name: &str| data_files(&path.join(name)).is_ok_and(|f| !f.is_empty());
    path.is_dir()
        && has(layout::CORPUS.name)
        && (has(layout::QUERIES.name) || has(layout::DIALOGUES.name))
}

pub(crate) fn import(
    src: &Path,
    out: &Path,
    opts: &ImportOptions,
    progress: &dyn Progress,
) -> Result<ImportReport> {
    if !sniff(src) {
        return Err(InputError::new(
            src,
            "not a Hugging Face dataset folder: no corpus/ with queries/ or dialogues/ holding .parquet or .jsonl files",
        )
        .hint("`mtr export BENCH --to hf -o DIR` writes one; MTEB's layout has corpus/, queries/ and qrels/ (or default/)")
        .into());
    }
    let mut b = Builder::create(out, opts.lenient)?;
    progress.stage("corpus", 0);
    for f in data_files(&src.join(layout::CORPUS.name))? {
        if is_parquet(&f) {
            read_corpus(&f, &mut b)?;
        } else {
            corpus::read_into(&f, &mut b, CorpusOptions::default(), progress)?;
        }
    }
    let dialogue_files = data_files(&src.join(layout::DIALOGUES.name))?;
    let (manifest, dialogues) = if dialogue_files.is_empty() {
        retrieval_layout(src, opts, &mut b)?
    } else {
        let mut dialogues = Vec::new();
        for f in &dialogue_files {
            if !is_parquet(f) {
                return Err(
                    InputError::new(f, "the dialogues config of an mtr export is Parquet").into(),
                );
            }
            read_dialogues(f, &mut dialogues)?;
        }
        (mtr_manifest(src, opts)?, dialogues)
    };
    b.finish(manifest, dialogues)
}

/// The exported manifest when the folder has one (name, license, models, settings), else a
/// new one.
fn mtr_manifest(src: &Path, opts: &ImportOptions) -> Result<crate::benchmark::Manifest> {
    let p = src.join(layout::MANIFEST);
    if !p.is_file() {
        return Ok(builder::manifest(
            "hf",
            builder::name_from_path(src),
            "",
            opts,
            src,
        ));
    }
    let text = crate::jsonl::read_text(&p)?;
    let mut m: crate::benchmark::Manifest = toml::from_str(&text)
        .map_err(|e| Error::from(InputError::new(&p, e.message().to_string())))?;
    if let Some(name) = &opts.name {
        m.name = name.clone();
    }
    Ok(m)
}

fn json_cell(row: &Row<'_>, name: &str) -> Result<Json> {
    let s = row.text(name)?;
    serde_json::from_str(&s).map_err(|e| row.error(name, &format!("not JSON: {e}")))
}

fn read_corpus(path: &Path, b: &mut Builder) -> Result<()> {
    let columns = [
        ("_id", true),
        ("title", false),
        ("text", true),
        ("doc_id", false),
        ("metadata", false),
    ];
    let r = TableReader::open(path, &columns)?;
    r.for_each(|no, row| {
        let meta = match row.opt_text("metadata")? {
            None => Map::new(),
            Some(s) => serde_json::from_str(&s)
                .map_err(|e| row.error("metadata", &format!("not a JSON object: {e}")))?,
        };
        let p = Passage {
            id: row.text("_id")?,
            title: row.opt_text("title")?.unwrap_or_default(),
            text: row.text("text")?,
            doc_id: row.opt_text("doc_id")?,
            meta,
        };
        b.passage(p, path, no + 1)
    })
}

/// Appends the dialogues of one `dialogues` file: consecutive rows of one `dialogue_id` are its
/// turns, numbered from 1.
fn read_dialogues(path: &Path, out: &mut Vec<Dialogue>) -> Result<()> {
    let wanted: Vec<(&str, bool)> = layout::DIALOGUES
        .columns
        .iter()
        .map(|c| (c.name, !matches!(c.name, "rewrite" | "answer")))
        .collect();
    let r = TableReader::open(path, &wanted)?;
    r.for_each(|_, row| {
        let dialogue_id = row.text("dialogue_id")?;
        let turn = row.int("turn")?;
        let gold: Vec<Gold> = serde_json::from_value(json_cell(row, "gold")?)
            .map_err(|e| row.error("gold", &format!("not a list of {{passage_id, grade}}: {e}")))?;
        let tags: Tags = serde_json::from_value(json_cell(row, "tags")?)
            .map_err(|e| row.error("tags", &format!("not a tags object: {e}")))?;
        let t = Turn {
            id: row.text("turn_id")?,
            user: row.text("user")?,
            rewrite: row.opt_text("rewrite")?,
            answer: row.opt_text("answer")?,
            gold,
            tags,
        };
        match out.last_mut() {
            Some(d) if d.id == dialogue_id => {
                if turn != d.turns.len() as i64 + 1 {
                    return Err(row.error(
                        "turn",
                        &format!(
                            "turn {turn} of dialogue `{dialogue_id}` follows turn {}",
                            d.turns.len()
                        ),
                    ));
                }
                d.turns.push(t);
            }
            _ => {
                if turn != 1 {
                    return Err(row.error(
                        "turn",
                        &format!("dialogue `{dialogue_id}` starts at turn {turn}, not 1"),
                    ));
                }
                let Json::Object(meta) = json_cell(row, "dialogue_meta")? else {
                    return Err(row.error("dialogue_meta", "not a JSON object"));
                };
                out.push(Dialogue {
                    id: dialogue_id,
                    turns: vec![t],
                    meta,
                });
            }
        }
        Ok(())
    })
}

/// MTEB's retrieval layout: queries and qrels become one-turn queries grouped as BEIR's are.
fn retrieval_layout(
    src: &Path,
    opts: &ImportOptions,
    b: &mut Builder,
) -> Result<(crate::benchmark::Manifest, Vec<Dialogue>)> {
    let queries_dir = src.join(layout::QUERIES.name);
    let mut queries = Vec::new();
    for f in data_files(&queries_dir)? {
        if is_parquet(&f) {
            read_queries(&f, &mut queries)?;
        } else {
            queries.extend(beir::read_queries(&f, b)?);
        }
    }
    let (split, qrels_files, other_files) = qrels_split(src, opts)?;
    let mut judgements = Vec::new();
    for f in &qrels_files {
        read_qrels(f, b, &mut judgements)?;
    }
    let qrels_path = qrels_files.first().cloned().unwrap_or_default();
    // the chosen split's queries and those judged in no split, as BEIR's importer keeps them
    let mut elsewhere = Vec::new();
    for f in other_files {
        read_qrels(&f, b, &mut elsewhere)?;
    }
    let judged: HashSet<&String> = judgements.iter().map(|(q, ..)| q).collect();
    let other: HashSet<&String> = elsewhere.iter().map(|(q, ..)| q).collect();
    queries.retain(|q| judged.contains(&q.id) || !other.contains(&q.id));
    let dialogues =
        beir::dialogues_from_queries(queries, &queries_dir, judgements, &qrels_path, opts, b)?;
    let mut manifest = builder::manifest("hf", builder::name_from_path(src), "", opts, src);
    if let Some(split) = split {
        manifest
            .extra
            .insert("split".into(), toml::Value::String(split));
    }
    Ok((manifest, dialogues))
}

/// The split of a qrels file's name (`test-00000-of-00001.parquet`, `test.jsonl` -> `test`).
fn split_of(p: &Path) -> String {
    let n = walk::file_name(p);
    n.split(['-', '.']).next().unwrap_or_default().to_string()
}

/// The qrels files of the chosen split: `--split`, else test, dev, validation, the only one.
fn qrels_split(
    src: &Path,
    opts: &ImportOptions,
) -> Result<(Option<String>, Vec<PathBuf>, Vec<PathBuf>)> {
    let mut files = Vec::new();
    for folder in QRELS_FOLDERS {
        files.extend(data_files(&src.join(folder))?);
    }
    let mut splits: Vec<String> = files.iter().map(|f| split_of(f)).collect();
    splits.sort();
    splits.dedup();
    let chosen = match opts.split.as_deref() {
        Some(w) if splits.iter().any(|s| s == w) => Some(w.to_string()),
        Some(w) => {
            return Err(
                InputError::new(src.join("qrels"), format!("no qrels for split `{w}`"))
                    .field("--split")
                    .hint(format!("splits found: {}", splits.join(", ")))
                    .into(),
            );
        }
        None => ["test", "dev", "validation"]
            .iter()
            .find(|p| splits.iter().any(|s| s == *p))
            .map(|s| s.to_string())
            .or_else(|| (splits.len() == 1).then(|| splits[0].clone())),
    };
    if chosen.is_none() && splits.len() > 1 {
        return Err(InputError::new(
            src.join("qrels"),
            "several qrels splits and none is `test` or `dev`",
        )
        .field("--split")
        .hint(format!("choose one: {}", splits.join(", ")))
        .into());
    }
    let (files, other) = files
        .into_iter()
        .partition(|f| chosen.as_deref() == Some(split_of(f).as_str()));
    Ok((chosen, files, other))
}

fn read_queries(path: &Path, out: &mut Vec<Query>) -> Result<()> {
    let r = TableReader::open(path, &[("_id", true), ("text", true)])?;
    r.for_each(|no, row| {
        out.push(Query {
            id: row.text("_id")?,
            text: row.text("text")?.trim().to_string(),
            line: no + 1,
        });
        Ok(())
    })
}

fn grade(path: &Path, line: u64, score: i64) -> Result<i32> {
    i32::try_from(score).map_err(|_| {
        InputError::new(path, format!("grade {score} is out of range"))
            .line(line)
            .field("score")
            .into()
    })
}

/// Reads one qrels file (Parquet or JSON lines of `query-id`, `corpus-id`, `score`).
fn read_qrels(path: &Path, b: &mut Builder, out: &mut Vec<Judgement>) -> Result<()> {
    if is_parquet(path) {
        let r = TableReader::open(
            path,
            &[("query-id", true), ("corpus-id", true), ("score", true)],
        )?;
        return r.for_each(|no, row| {
            let (q, d) = (row.text("query-id")?, row.text("corpus-id")?);
            b.gold_origin(&q, &d, Origin::new(path, Some(no + 1), "corpus-id"));
            out.push((q, d, grade(path, no + 1, row.int("score")?)?, no + 1));
            Ok(())
        });
    }
    for line in crate::jsonl::records_with(path, crate::jsonl::parse_plain::<Map<String, Json>>)? {
        let (no, map) = match line? {
            crate::jsonl::Line::Record(no, map) => (no, map),
            crate::jsonl::Line::Malformed(e) => {
                b.diag.problem("malformed-record", e)?;
                continue;
            }
        };
        let field = |name: &str| match map.get(name) {
            Some(Json::String(s)) => Ok(s.clone()),
            Some(Json::Number(n)) => Ok(n.to_string()),
            _ => Err(Error::from(
                InputError::new(path, format!("no `{name}`"))
                    .line(no)
                    .field(name),
            )),
        };
        let score = match map.get("score") {
            Some(Json::Number(n)) => n
                .as_i64()
                .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64)),
            _ => None,
        }
        .ok_or_else(|| {
            Error::from(
                InputError::new(path, "no whole-number `score`")
                    .line(no)
                    .field("score"),
            )
        })?;
        let (q, d) = (field("query-id")?, field("corpus-id")?);
        b.gold_origin(&q, &d, Origin::new(path, Some(no), "corpus-id"));
        out.push((q, d, grade(path, no, score)?, no));
    }
    Ok(())
}
