//! What the holes were pooled from, kept in `pool.json` so that a review can score the runs
//! again with reviewed labels without the run files; and where inside `mtr judge`'s folder the
//! audit of the holes keeps its own (`audit/`, where a rerun resumes).

use std::path::Path;

use crate::error::Result;

/// The audit's folder inside `mtr judge`'s.
pub const AUDIT_DIR: &str = "audit";

/// The pool's file name ([`Pool`]).
pub(crate) const POOL: &str = "pool.json";

/// What the holes were pooled from, kept so that a review can score the runs again with
/// reviewed labels without the run files: K, the original qrels of the pooled turns, and each
/// run's top K per turn in `trec_eval` order.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Pool {
    /// K.
    pub depth: usize,
    /// The original qrels of the turns some run answers.
    pub qrels: mtr_core::Qrels,
    /// Each run's top K, in the order given.
    pub runs: Vec<PoolRun>,
}

/// One run's top K per turn.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PoolRun {
    /// The run's name.
    pub run: String,
    /// Turn -> its top K passages, best first.
    pub top: std::collections::BTreeMap<String, Vec<String>>,
}

impl Pool {
    /// The pool of `runs` at depth `k` against `qrels`.
    pub(crate) fn of(
        qrels: &mtr_core::Qrels,
        runs: &[super::hole_pool::NamedRun],
        k: usize,
    ) -> Self {
        let mut turns = std::collections::BTreeSet::new();
        let runs = runs
            .iter()
            .map(|r| PoolRun {
                run: r.name.clone(),
                top: r
                    .run
                    .iter()
                    .filter(|(q, _)| qrels.contains_key(*q))
                    .map(|(q, docs)| {
                        turns.insert(q.clone());
                        let top = super::hole_pool::top_k(docs, k);
                        (q.clone(), top.into_iter().map(str::to_string).collect())
                    })
                    .collect(),
            })
            .collect();
        let qrels = qrels
            .iter()
            .filter(|(q, _)| turns.contains(*q))
            .map(|(q, j)| (q.clone(), j.clone()))
            .collect();
        Self {
            depth: k,
            qrels,
            runs,
        }
    }

    /// The runs again, each passage of a top K scored K - rank (so `trec_eval` order is the
    /// stored order), named as they were.
    pub(crate) fn named_runs(&self) -> Vec<super::hole_pool::NamedRun> {
        self.runs
            .iter()
            .map(|r| super::hole_pool::NamedRun {
                name: r.run.clone(),
                path: std::path::PathBuf::from(&r.run),
                run: r
                    .top
                    .iter()
                    .map(|(q, docs)| {
                        let n = docs.len();
                        let ranked = docs
                            .iter()
                            .enumerate()
                            .map(|(i, d)| (d.clone(), (n - i) as f64))
                            .collect();
                        (q.clone(), ranked)
                    })
                    .collect(),
            })
            .collect()
    }
}

/// Reads `pool.json` back.
pub fn read_pool(dir: &Path) -> Result<Pool> {
    let path = dir.join(POOL);
    let text = mtr_core::jsonl::read_text(&path)?;
    serde_json::from_str(&text).map_err(|e| {
        crate::AuditError::Core(
            mtr_core::InputError::new(&path, format!("not a pool of `mtr judge`: {e}"))
                .line(e.line() as u64)
                .hint("run `mtr judge` again into this folder to write it")
                .into(),
        )
    })
}

/// Writes `pool.json` atomically.
pub(crate) fn write_pool(dir: &Path, pool: &Pool) -> Result<()> {
    let mut json = serde_json::to_string(pool).map_err(|e| json_error(dir, e))?;
    json.push('\n');
    mtr_core::atomic::write_atomic(dir.join(POOL), json.as_bytes())?;
    Ok(())
}

fn json_error(dir: &Path, e: serde_json::Error) -> crate::AuditError {
    crate::AuditError::Output {
        path: dir.to_path_buf(),
        message: e.to_string(),
    }
}
