//! External runs: ranked results of systems bench cannot run itself, read from TREC or MTRAG
//! JSONL files and checked against the benchmark before anything is scored or written. A run
//! is refused, with a message naming the file, when it is empty, when none of its query ids is
//! a scored turn of the benchmark (a run for another benchmark), or when a query lists a
//! document twice. Documents the corpus does not have are, by default, scored as non-relevant
//! (trec_eval's policy: the run keeps its ranks) and counted per system with a warning; with
//! `--strict` such a run is refused.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

use mtr_core::{BenchmarkDir, InputError, Run};

use crate::error::{BenchError, Result};
use crate::query_set::QuerySet;

/// A run read from a file.
#[derive(Debug, Clone, PartialEq)]
pub struct ExternalRun {
    pub name: String,
    pub path: PathBuf,
    /// BLAKE3 of the file: the "configuration" of a system we did not run.
    pub hash: String,
    pub run: Run,
}

/// Splits a `--run` argument: `NAME=FILE` or `FILE` (named after the file stem).
pub(crate) fn parse_run_arg(arg: &str) -> (Option<String>, PathBuf) {
    match arg.split_once('=') {
        Some((name, path))
            if !name.is_empty() && !name.contains('/') && !Path::new(arg).exists() =>
        {
            (Some(name.to_string()), PathBuf::from(path))
        }
        _ => (None, PathBuf::from(arg)),
    }
}

/// The default name of a run file: its stem without `.trec`/`.run`/`.jsonl` suffixes.
pub(crate) fn default_name(path: &Path) -> String {
    let mut name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "run".into());
    for ext in [".jsonl", ".json", ".trec", ".run", ".txt", ".tsv"] {
        if let Some(stripped) = name.strip_suffix(ext) {
            name = stripped.to_string();
        }
    }
    name
}

/// Reads a run (TREC or MTRAG JSONL) and checks it on its own: not empty, no duplicates.
pub(crate) fn load(path: &Path, name: Option<String>) -> Result<ExternalRun> {
    let run = mtr_core::read_run_any(path)?;
    if run.values().all(Vec::is_empty) {
        return Err(BenchError::input(
            InputError::new(
                path,
                "the run is empty: no query has any retrieved document",
            )
            .hint("check that the file is the run you meant"),
        ));
    }
    for (qid, docs) in &run {
        let mut seen = HashSet::with_capacity(docs.len());
        for (d, _) in docs {
            if !seen.insert(d.as_str()) {
                return Err(BenchError::input(
                    InputError::new(path, format!("query `{qid}` lists document `{d}` twice"))
                        .field("docid")
                        .hint("trec_eval refuses duplicate documents; keep one line per (query, document)"),
                ));
            }
        }
    }
    let hash = mtr_core::fingerprint::hash_file(path)?;
    Ok(ExternalRun {
        name: name.unwrap_or_else(|| default_name(path)),
        path: path.to_path_buf(),
        hash,
        run,
    })
}

/// Checks that the run answers at least one scored turn; returns how many it answers.
pub(crate) fn check_overlap(r: &ExternalRun, set: &QuerySet, benchmark: &str) -> Result<usize> {
    let answered = set
        .queries
        .iter()
        .filter(|q| r.run.get(&q.qid).is_some_and(|d| !d.is_empty()))
        .count();
    if answered == 0 {
        let run_examples: Vec<&str> = r.run.keys().take(3).map(String::as_str).collect();
        let bench_examples: Vec<&str> =
            set.queries.iter().take(3).map(|q| q.qid.as_str()).collect();
        return Err(BenchError::input(
            InputError::new(
                &r.path,
                format!(
                    "none of the run's {} query ids is a scored turn of benchmark `{benchmark}` (run has `{}`; the benchmark has `{}`)",
                    r.run.len(),
                    run_examples.join("`, `"),
                    bench_examples.join("`, `"),
                ),
            )
            .field("qid")
            .hint("is this a run for another benchmark? query ids must equal the benchmark's turn ids"),
        ));
    }
    Ok(answered)
}

/// What one streaming pass over the corpus found: which of the wanted ids exist, and the
/// title and text of the passages to show.
#[derive(Debug, Clone, Default)]
pub(crate) struct CorpusLookup {
    pub missing: BTreeSet<String>,
    pub texts: HashMap<String, (String, String)>,
    /// Passages in the corpus.
    pub passages: u64,
}

/// How many ranked documents of `run` are in `missing`: every occurrence, and distinct ids.
pub(crate) fn out_of_corpus(run: &Run, missing: &BTreeSet<String>) -> (usize, usize) {
    let mut distinct: BTreeSet<&str> = BTreeSet::new();
    let mut count = 0;
    for (d, _) in run.values().flatten() {
        if missing.contains(d) {
            count += 1;
            distinct.insert(d.as_str());
        }
    }
    (count, distinct.len())
}

/// Streams the corpus once: checks that every id in `wanted` exists and keeps the title and
/// text of the ids in `show`.
pub(crate) fn scan_corpus(
    dir: &BenchmarkDir,
    wanted: &HashSet<&str>,
    show: &HashSet<&str>,
) -> Result<CorpusLookup> {
    let mut remaining: HashSet<&str> = wanted.clone();
    let mut texts = HashMap::new();
    let mut passages = 0u64;
    dir.for_each_passage(|_, p| {
        passages += 1;
        remaining.remove(p.id.as_str());
        if show.contains(p.id.as_str()) {
            texts.insert(p.id.clone(), (p.title, p.text));
        }
        Ok(())
    })?;
    Ok(CorpusLookup {
        missing: remaining.into_iter().map(str::to_string).collect(),
        texts,
        passages,
    })
}

/// The error for a run that ranks documents the corpus lacks (under `--strict`).
pub(crate) fn unknown_docs_error(
    path: &Path,
    run: &Run,
    missing: &BTreeSet<String>,
    corpus: &Path,
) -> BenchError {
    let mut examples: BTreeMap<&str, &str> = BTreeMap::new();
    let mut count = 0usize;
    for (qid, docs) in run {
        for (d, _) in docs {
            if missing.contains(d) {
                count += 1;
                if examples.len() < 3 {
                    examples.entry(d.as_str()).or_insert(qid.as_str());
                }
            }
        }
    }
    let shown: Vec<String> = examples
        .iter()
        .map(|(d, q)| format!("`{d}` (query `{q}`)"))
        .collect();
    BenchError::input(
        InputError::new(
            path,
            format!(
                "{count} ranked documents ({} distinct ids) are not in the benchmark's corpus {}, e.g. {}",
                run.values().flatten().filter(|(d, _)| missing.contains(d)).map(|(d, _)| d).collect::<BTreeSet<_>>().len(),
                corpus.display(),
                shown.join(", ")
            ),
        )
        .field("docid")
        .hint("was the run produced on another corpus or with other passage ids? Without --strict they are scored as non-relevant, as trec_eval does"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_args_and_names() {
        assert_eq!(
            parse_run_arg("bm25=runs/a.trec"),
            (Some("bm25".into()), PathBuf::from("runs/a.trec"))
        );
        assert_eq!(
            parse_run_arg("runs/a.trec"),
            (None, PathBuf::from("runs/a.trec"))
        );
        assert_eq!(
            default_name(Path::new("x/bge__bge_clapnq_rewrite.jsonl")),
            "bge__bge_clapnq_rewrite"
        );
        assert_eq!(default_name(Path::new("x/run.trec")), "run");
    }

    #[test]
    fn out_of_corpus_counts_occurrences_and_distinct_ids() {
        let mut run = Run::new();
        run.insert("q1".into(), vec![("x".into(), 2.0), ("d1".into(), 1.0)]);
        run.insert("q2".into(), vec![("x".into(), 2.0), ("y".into(), 1.0)]);
        let missing: BTreeSet<String> = ["x".to_string(), "y".to_string()].into();
        assert_eq!(out_of_corpus(&run, &missing), (3, 2));
        assert_eq!(out_of_corpus(&run, &BTreeSet::new()), (0, 0));
    }

    #[test]
    fn empty_duplicate_and_foreign_runs_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.trec");
        std::fs::write(&empty, "").unwrap();
        let e = load(&empty, None).unwrap_err().to_string();
        assert!(e.contains("empty.trec") && e.contains("empty"), "{e}");

        let dup = dir.path().join("dup.trec");
        std::fs::write(&dup, "q1 Q0 d1 1 2.0 x\nq1 Q0 d1 2 1.0 x\n").unwrap();
        let e = load(&dup, None).unwrap_err().to_string();
        assert!(e.contains("dup.trec") && e.contains("twice"), "{e}");

        let other = dir.path().join("other.trec");
        std::fs::write(&other, "zz1 Q0 d1 1 2.0 x\n").unwrap();
        let r = load(&other, None).unwrap();
        let mut qrels = mtr_core::Qrels::new();
        qrels.entry("q1".into()).or_default().insert("d1".into(), 1);
        let set = QuerySet::build(&[], &qrels);
        let e = check_overlap(&r, &set, "mybench").unwrap_err();
        assert!(e.is_user_error());
        let e = e.to_string();
        assert!(
            e.contains("other.trec") && e.contains("another benchmark") && e.contains("zz1"),
            "{e}"
        );
    }
}
