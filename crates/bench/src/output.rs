//! Writing a results folder: `bench.json` (the result), `per_query.jsonl` (every system's
//! value on every scored turn, for error analysis), `report.md`, `split.json` when a split was
//! used, and `runs/<system>.trec` for the runs bench produced itself. Every file is written to
//! a temporary file first and all are renamed into place only after every one of them was
//! written completely, so a failure leaves no partial output.

use std::io::Write;
use std::path::{Path, PathBuf};

use mtr_core::Run;
use mtr_core::atomic::AtomicFile;
use mtr_core::error::Error;
use serde_json::{Map, Value, json};

use crate::error::{BenchError, Result};
use crate::job::Outcome;
use crate::result::SystemKind;
use crate::strata::position_group;

/// The result file in the output folder.
pub const RESULT_FILE: &str = "bench.json";
pub(crate) const PER_QUERY_FILE: &str = "per_query.jsonl";
/// The Markdown report in the output folder.
pub const REPORT_FILE: &str = "report.md";
pub(crate) const SPLIT_FILE: &str = "split.json";

/// Writes every output of a bench into `dir`; `runs` are the runs of retriever systems by
/// system name. Returns the paths written.
pub fn write_results(
    dir: &Path,
    outcome: &Outcome,
    runs: &[(String, &Run)],
) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let mut pending: Vec<AtomicFile> = Vec::new();

    let mut f = AtomicFile::create(dir.join(RESULT_FILE))?;
    let json =
        serde_json::to_string_pretty(&outcome.result).map_err(BenchError::json("bench.json"))?;
    write_all(&mut f, json.as_bytes())?;
    write_all(&mut f, b"\n")?;
    pending.push(f);

    let mut f = AtomicFile::create(dir.join(PER_QUERY_FILE))?;
    write_per_query(&mut f, outcome)?;
    pending.push(f);

    let mut f = AtomicFile::create(dir.join(REPORT_FILE))?;
    write_all(&mut f, crate::report::markdown(&outcome.result).as_bytes())?;
    pending.push(f);

    if let Some(split) = &outcome.split {
        let mut f = AtomicFile::create(dir.join(SPLIT_FILE))?;
        let json = serde_json::to_string_pretty(split).map_err(BenchError::json("split.json"))?;
        write_all(&mut f, json.as_bytes())?;
        write_all(&mut f, b"\n")?;
        pending.push(f);
    }

    for (name, run) in runs {
        let mut f = AtomicFile::create(dir.join(run_file(name)))?;
        write_trec(&mut f, run, name)?;
        pending.push(f);
    }

    let mut written = Vec::with_capacity(pending.len());
    for f in pending {
        written.push(f.path().to_path_buf());
        f.commit()?;
    }
    Ok(written)
}

fn write_all(f: &mut AtomicFile, bytes: &[u8]) -> Result<()> {
    let path = f.path().to_path_buf();
    f.write_all(bytes).map_err(|e| Error::io(path, e).into())
}

/// One JSON line per (system, scored turn), systems in result order, turns in qid order.
fn write_per_query(f: &mut AtomicFile, o: &Outcome) -> Result<()> {
    let part = o.result.split.as_ref().map(|s| s.part);
    for (sys, scores) in o.result.systems.iter().zip(&o.computed_scores) {
        for (qi, q) in o.set.queries.iter().enumerate() {
            let mut row = Map::new();
            row.insert("system".into(), json!(sys.name));
            row.insert("qid".into(), json!(q.qid));
            row.insert("dialogue".into(), json!(o.set.dialogues[q.dialogue]));
            row.insert("position".into(), json!(q.position));
            row.insert("position_group".into(), json!(position_group(q.position)));
            if let Some(p) = &part {
                row.insert("part".into(), json!(p));
            }
            row.insert("num_rel".into(), json!(q.num_rel));
            row.insert("retrieved".into(), json!(scores.retrieved[qi]));
            row.insert("first_relevant".into(), json!(scores.first_relevant[qi]));
            let mut values = Map::new();
            for (m, info) in o.result.measures.iter().enumerate() {
                values.insert(info.id.clone(), json!(scores.values[m][qi]));
            }
            row.insert("measures".into(), Value::Object(values));
            let tags: Map<String, Value> = q
                .tags
                .pairs()
                .into_iter()
                .map(|(k, v)| (k, Value::String(v)))
                .collect();
            if !tags.is_empty() {
                row.insert("tags".into(), Value::Object(tags));
            }
            let line = serde_json::to_string(&row).map_err(BenchError::json("per_query.jsonl"))?;
            write_all(f, line.as_bytes())?;
            write_all(f, b"\n")?;
        }
    }
    Ok(())
}

/// TREC 6-column lines, best first, rank = position (as `mtr_core::trec::write_run` writes).
fn write_trec(f: &mut AtomicFile, run: &Run, tag: &str) -> Result<()> {
    let tag = file_safe(tag);
    for (q, docs) in run {
        for (rank, (d, s)) in crate::score::ranked(docs).into_iter().enumerate() {
            write_all(f, format!("{q} Q0 {d} {} {s} {tag}\n", rank + 1).as_bytes())?;
        }
    }
    Ok(())
}

/// Where a results folder holds the run of retriever system `name`: `runs/<name>.trec`, the
/// name made file-safe ([`file_safe`]).
pub fn run_file(name: &str) -> PathBuf {
    Path::new("runs").join(format!("{}.trec", file_safe(name)))
}

/// A system name usable as a file name and a TREC tag (no spaces or path separators).
pub(crate) fn file_safe(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_alphanumeric() || matches!(c, '.' | '-' | '_' | '+' | '@' | '=') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Runs of the retriever systems, for [`write_results`].
pub fn retriever_runs(systems: &[crate::job::SystemInput]) -> Vec<(String, &Run)> {
    systems
        .iter()
        .filter(|s| s.kind == SystemKind::Retriever)
        .map(|s| (s.name.clone(), &s.run))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_names() {
        assert_eq!(
            file_safe("rrf(bm25,dense).full:512"),
            "rrf_bm25_dense_.full_512"
        );
        assert_eq!(file_safe("a b/c"), "a_b_c");
    }
}
