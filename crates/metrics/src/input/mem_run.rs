//! A run held in memory: from `mtr_core::Run` (any reader) or parsed from MTRAG run JSONL
//! (`{"task_id", "contexts": [{"document_id", "score"}]}`, documents in list order).

use std::path::{Path, PathBuf};

use ahash::AHashMap;

use super::{Cand, Compat, RunSource, lines};
use crate::error::{MetricsError, Result};
use mtr_core::InputError;

/// A run held in memory (from `mtr_core::Run` or MTRAG JSONL).
#[derive(Debug)]
pub(crate) struct MemRun {
    origin: PathBuf,
    qids: Vec<String>,
    docs: Vec<Vec<(String, f64, u64)>>,
    index: AHashMap<Box<[u8]>, usize>,
    run_id: Option<String>,
    lines: usize,
}

impl MemRun {
    pub(crate) fn from_run(run: &mtr_core::Run) -> Self {
        let mut m = MemRun::empty(PathBuf::from("<run>"));
        for (q, docs) in run {
            let i = m.query(q);
            m.docs[i].extend(docs.iter().map(|(d, s)| (d.clone(), *s, 0)));
            m.lines += docs.len();
        }
        m
    }

    fn empty(origin: PathBuf) -> Self {
        MemRun {
            origin,
            qids: Vec::new(),
            docs: Vec::new(),
            index: AHashMap::new(),
            run_id: None,
            lines: 0,
        }
    }

    fn query(&mut self, qid: &str) -> usize {
        if let Some(i) = self.index.get(qid.as_bytes()) {
            return *i;
        }
        let i = self.qids.len();
        self.qids.push(qid.to_string());
        self.docs.push(Vec::new());
        self.index.insert(qid.as_bytes().into(), i);
        i
    }

    /// Reads an MTRAG run JSONL file: one task per line, documents in `contexts` order with
    /// their given scores (rank = position). A task without contexts retrieved nothing.
    pub(crate) fn read_mtrag_jsonl(path: impl AsRef<Path>) -> Result<Self> {
        #[derive(serde::Deserialize)]
        struct Ctx {
            document_id: serde_json::Value,
            #[serde(default)]
            score: Option<f64>,
        }
        #[derive(serde::Deserialize)]
        struct Task {
            task_id: serde_json::Value,
            #[serde(default)]
            contexts: Vec<Ctx>,
        }
        fn id_text(v: &serde_json::Value) -> Option<String> {
            match v {
                serde_json::Value::String(s) => Some(s.clone()),
                serde_json::Value::Number(n) => Some(n.to_string()),
                _ => None,
            }
        }
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|e| MetricsError::io(path, e))?;
        let mut m = MemRun::empty(path.to_path_buf());
        let bytes = bytes
            .strip_prefix(b"\xEF\xBB\xBF".as_slice())
            .unwrap_or(&bytes);
        for (no, line) in lines(bytes) {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.iter().all(|b| b.is_ascii_whitespace()) {
                continue;
            }
            let task: Task = serde_json::from_slice(line).map_err(|e| {
                InputError::new(path, format!("not an MTRAG run record: {e}")).line(no)
            })?;
            let qid = id_text(&task.task_id).ok_or_else(|| {
                InputError::new(path, "task_id must be a string")
                    .line(no)
                    .field("task_id")
            })?;
            let n = task.contexts.len();
            let i = m.query(&qid);
            for (k, c) in task.contexts.into_iter().enumerate() {
                let doc = id_text(&c.document_id).ok_or_else(|| {
                    InputError::new(path, "document_id must be a string")
                        .line(no)
                        .field(format!("contexts[{k}].document_id"))
                })?;
                // Without a score, rank order is the only information: score = -rank.
                let score = c.score.unwrap_or(-(k as f64 + 1.0));
                m.docs[i].push((doc, score, no));
            }
            m.lines += n;
        }
        // A task listed with no contexts retrieved nothing: it is absent from the run, as
        // trec_eval would see it after conversion.
        let keep: Vec<usize> = (0..m.qids.len())
            .filter(|i| !m.docs[*i].is_empty())
            .collect();
        if keep.len() != m.qids.len() {
            let mut n = MemRun::empty(m.origin.clone());
            for i in keep {
                let j = n.query(&m.qids[i]);
                n.docs[j] = std::mem::take(&mut m.docs[i]);
            }
            n.lines = m.lines;
            m = n;
        }
        Ok(m)
    }

    /// As an `mtr_core::Run` (documents in input order).
    pub(crate) fn to_run(&self) -> mtr_core::Run {
        self.qids
            .iter()
            .zip(&self.docs)
            .map(|(q, d)| {
                (
                    q.clone(),
                    d.iter().map(|(doc, s, _)| (doc.clone(), *s)).collect(),
                )
            })
            .collect()
    }
}

impl RunSource for MemRun {
    fn len(&self) -> usize {
        self.qids.len()
    }
    fn find(&self, qid: &[u8]) -> Option<usize> {
        self.index.get(qid).copied()
    }
    fn run_id(&self) -> Option<&str> {
        self.run_id.as_deref()
    }
    fn origin(&self) -> &Path {
        &self.origin
    }
    fn num_lines(&self) -> usize {
        self.lines
    }
    fn extent(&self, i: usize) -> (usize, usize) {
        (i, self.docs[i].len())
    }
    fn candidates<'a>(&'a self, i: usize, compat: Compat, out: &mut Vec<Cand<'a>>) -> Result<()> {
        out.extend(self.docs[i].iter().map(|(d, s, l)| Cand {
            doc: d.as_bytes(),
            score: compat.score(*s),
            line: *l,
            rel: 0,
        }));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::input::{RunFile, run_from_mtrag_jsonl};

    use crate::input::write_test_file as write;

    #[test]
    fn mtrag_jsonl_run() {
        let d = tempfile::tempdir().unwrap();
        let p = write(
            &d,
            "r.jsonl",
            "{\"task_id\":\"c<::>1\",\"contexts\":[{\"document_id\":\"x\",\"score\":30.030314819923753},{\"document_id\":\"y\",\"score\":2}]}\n{\"task_id\":\"c<::>2\",\"contexts\":[]}\n",
        );
        let r = RunFile::open(&p).unwrap();
        assert!(matches!(r, RunFile::Mem(_)));
        let run = run_from_mtrag_jsonl(&p).unwrap();
        assert_eq!(run.len(), 1);
        assert_eq!(run["c<::>1"][0], ("x".to_string(), 30.030314819923753));
        let p = write(
            &d,
            "bad.jsonl",
            "{\"task_id\":\"a\",\"contexts\":[{\"document_id\":\"x\"}]}\n{oops\n",
        );
        let e = RunFile::open(&p).err().unwrap().to_string();
        assert!(e.contains(":2"), "{e}");
    }
}
