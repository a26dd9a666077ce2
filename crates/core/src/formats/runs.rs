//! Retrieval runs in the formats systems publish them in: TREC 6-column lines
//! (`qid Q0 docid rank score tag`) and MTRAG JSON lines (`{task_id, contexts: [{document_id,
//! score, ...}]}`, ranked in list order). [`read_run_any`] tells them apart by the first
//! non-blank line.
//!
//! MTRAG runs are read as `trec_eval` sees them after the usual conversion (rank = position in
//! `contexts`, the given score): a task with no contexts has no lines and so is absent from the
//! run; contexts keep their order.

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use crate::error::{Error, InputError, Result};
use crate::jsonl::{self, Lines};
use crate::model::Run;
use crate::trec;

/// The format of a run file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RunFormat {
    Trec,
    MtragJsonl,
}

/// Looks at the first non-blank line: JSON means MTRAG JSONL, anything else TREC.
pub(super) fn sniff_run(path: &Path) -> Result<RunFormat> {
    let mut lines = Lines::open(path)?;
    match lines.next_line() {
        Some(Ok((_, l))) if l.trim_start().starts_with('{') || l.trim_start().starts_with('[') => {
            Ok(RunFormat::MtragJsonl)
        }
        Some(Err(e)) => Err(e),
        _ => Ok(RunFormat::Trec),
    }
}

/// Reads a run in any supported format.
pub fn read_run_any(path: &Path) -> Result<Run> {
    match sniff_run(path)? {
        RunFormat::Trec => trec::read_run(path),
        RunFormat::MtragJsonl => read_mtrag_run(path),
    }
}

#[derive(Debug, Deserialize)]
struct MtragRunLine {
    task_id: Value,
    #[serde(default)]
    contexts: Option<Vec<MtragContext>>,
}

#[derive(Debug, Deserialize)]
struct MtragContext {
    document_id: Value,
    #[serde(default)]
    score: Option<Value>,
}

fn text_of(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Reads an MTRAG run (JSON lines, or one JSON array of the same records).
pub(super) fn read_mtrag_run(path: &Path) -> Result<Run> {
    let mut run = Run::new();
    let mut lines = Lines::open(path)?;
    let mut add = |no: u64, rec: MtragRunLine| -> Result<()> {
        let qid = text_of(&rec.task_id).ok_or_else(|| {
            InputError::new(path, "`task_id` is empty")
                .line(no)
                .field("task_id")
        })?;
        let contexts = rec.contexts.unwrap_or_default();
        if contexts.is_empty() {
            return Ok(());
        }
        if run.contains_key(&qid) {
            return Err(
                InputError::new(path, format!("task `{qid}` appears twice in the run"))
                    .line(no)
                    .field("task_id")
                    .into(),
            );
        }
        let mut docs = Vec::with_capacity(contexts.len());
        for (i, c) in contexts.into_iter().enumerate() {
            let doc = text_of(&c.document_id).ok_or_else(|| {
                InputError::new(
                    path,
                    format!("context {i} of task `{qid}` has no document_id"),
                )
                .line(no)
                .field(format!("contexts[{i}].document_id"))
            })?;
            let score = match &c.score {
                Some(Value::Number(n)) => n.as_f64().filter(|f| f.is_finite()),
                Some(Value::String(s)) => crate::trec::parse_score(s.trim()),
                _ => None,
            }
            .ok_or_else(|| {
                InputError::new(
                    path,
                    format!("context {i} of task `{qid}` has no finite numeric score"),
                )
                .line(no)
                .field(format!("contexts[{i}].score"))
            })?;
            docs.push((doc, score));
        }
        if run.contains_key(&qid) {
            // a second ranking of the same task would silently replace the first
            return Err(InputError::new(path, format!("duplicate task `{qid}`"))
                .line(no)
                .field("task_id")
                .hint("a run holds one ranking per task")
                .into());
        }
        run.insert(qid, docs);
        Ok(())
    };
    let mut first = true;
    while let Some(next) = lines.next_line() {
        let (no, line) = next?;
        if first && line.trim_start().starts_with('[') {
            // A JSON array of run records.
            let doc = super::json_doc::JsonDoc::read(path)?;
            for rec in doc.array_records()? {
                let r: MtragRunLine = doc.parse(&rec).map_err(Error::from)?;
                add(rec.line, r)?;
            }
            return Ok(run);
        }
        first = false;
        let rec: MtragRunLine = jsonl::parse_line(path, no, line)?;
        add(no, rec)?;
    }
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mtrag_and_trec_runs() {
        let d = tempfile::tempdir().unwrap();
        let m = d.path().join("run.jsonl");
        std::fs::write(
            &m,
            "{\"task_id\":\"c<::>2\",\"Collection\":\"x\",\"contexts\":[{\"document_id\":\"d2\",\"score\":0.5,\"text\":\"t\"},{\"document_id\":\"d1\",\"score\":0.75}]}\n{\"task_id\":\"c<::>3\",\"contexts\":[]}\n",
        )
        .unwrap();
        let r = read_run_any(&m).unwrap();
        assert_eq!(r.len(), 1, "a task without contexts is absent");
        assert_eq!(
            r["c<::>2"],
            vec![("d2".to_string(), 0.5), ("d1".to_string(), 0.75)]
        );
        let t = d.path().join("run.txt");
        std::fs::write(&t, "q1 Q0 d1 1 2.5 sys\n").unwrap();
        assert_eq!(sniff_run(&t).unwrap(), RunFormat::Trec);
        assert_eq!(read_run_any(&t).unwrap()["q1"][0].1, 2.5);
    }

    #[test]
    fn bad_mtrag_run_names_line_and_field() {
        let d = tempfile::tempdir().unwrap();
        let m = d.path().join("run.jsonl");
        std::fs::write(&m, "{\"task_id\":\"a\",\"contexts\":[{\"document_id\":\"d\",\"score\":1}]}\n{\"task_id\":\"b\",\"contexts\":[{\"score\":1}]}\n").unwrap();
        let e = read_run_any(&m).unwrap_err().to_string();
        assert!(
            e.contains("run.jsonl:2") && e.contains("document_id"),
            "{e}"
        );
    }

    #[test]
    fn a_duplicate_task_or_a_score_that_is_not_finite_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let m = d.path().join("run.jsonl");
        let line = |t: &str, s: &str| {
            format!(
                "{{\"task_id\":\"{t}\",\"contexts\":[{{\"document_id\":\"d\",\"score\":{s}}}]}}\n"
            )
        };
        std::fs::write(&m, line("a", "1") + &line("b", "2") + &line("a", "3")).unwrap();
        let e = read_run_any(&m).unwrap_err();
        assert!(e.is_user_error());
        let e = e.to_string();
        assert!(e.contains("run.jsonl:3") && e.contains("task_id"), "{e}");
        for bad in ["\"nan\"", "\"inf\"", "\"-Infinity\""] {
            std::fs::write(&m, line("a", "1") + &line("b", bad)).unwrap();
            let e = read_run_any(&m).unwrap_err().to_string();
            assert!(
                e.contains("run.jsonl:2") && e.contains("contexts[0].score"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn real_mtrag_runs_read() {
        let dir =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/mtrag/runs_clapnq");
        if !dir.is_dir() {
            eprintln!("skipping: {} absent", dir.display());
            return;
        }
        let r = read_run_any(&dir.join("bm25__bm25_clapnq_lastturn.jsonl")).unwrap();
        // 208 tasks, one of which has no contexts.
        assert_eq!(r.len(), 207);
        assert!(r.values().all(|d| !d.is_empty() && d.len() <= 10));
    }
}
