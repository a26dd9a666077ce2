//! Reading qrels and runs for evaluation, fast.
//!
//! Runs can hold ten million lines, so the TREC run reader memory-maps the file and makes two
//! passes: the first finds each query's line ranges (hash grouping by qid, so a file whose
//! queries are interleaved costs no more than a sorted one, unlike trec_eval's per-query
//! linear scan), the second parses one query's lines at a time straight from the mapping, with
//! no per-line allocation, and hands processed pages back to the kernel. Document ids are
//! hashed once and looked up in compact per-query tables. Qrels are read into per-query tables
//! built by bucketing and sorting, not one allocation per judgement.
//!
//! Formats: TREC qrels (`qid iter docno grade`), BEIR qrels (`qid docno grade`, optional
//! header), TREC runs (`qid Q0 docno rank score tag [ignored...]`) and MTRAG run JSONL
//! (`{"task_id", "contexts": [{"document_id", "score"}]}`, rank = position). `#` starts a
//! comment line in TREC files, as in trec_eval. Every bad line is an error naming file and line.

mod conventions;
mod lexer;
mod mem_run;
mod qrels;
mod source;
mod table;
pub(crate) mod trec_run;

pub use conventions::{Compat, Dedup};
pub(crate) use lexer::{
    QRELS_FIELDS, RUN_FIELDS, Tokens, Utf8Ahead, bad_line, has_lone_cr_line_ends, is_space,
    line_spans, lines, lone_cr_to_lf, parse_score, strip_bom, utf8_line,
};
pub(crate) use mem_run::MemRun;
pub use qrels::{EvalQrels, QrelsQuery, read_qrels, read_qrels_file};
pub use source::run_from_mtrag_jsonl;
pub(crate) use source::{Cand, RunFile, RunSource, is_jsonl};
pub(crate) use table::{IdIndex, SlotTable, doc_hash, short_cmp, short_eq};
pub(crate) use trec_run::TrecRunFile;

#[cfg(test)]
mod tests_real_files;

/// Writes `text` to `dir/name` and returns the path (tests of the readers).
#[cfg(test)]
pub(crate) fn write_test_file(
    dir: &tempfile::TempDir,
    name: &str,
    text: &str,
) -> std::path::PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p
}
