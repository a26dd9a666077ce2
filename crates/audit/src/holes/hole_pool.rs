//! The holes of a set of runs: each run's top K for each turn, ranked as `trec_eval` ranks
//! (score descending, ties by document id descending), less what the qrels judge for that
//! turn, pooled once over the runs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use mtr_core::{InputError, Qrels, Run};
use serde::{Deserialize, Serialize};

use crate::error::{AuditError, Result};

/// A run whose top K is pooled: its name (the file's stem) and its rankings.
#[derive(Debug, Clone)]
pub struct NamedRun {
    /// The file's stem.
    pub name: String,
    /// Where it was read from.
    pub path: PathBuf,
    /// Its rankings, per query in file order.
    pub run: Run,
}

/// One passage ranked in some run's top K for a turn that the qrels do not judge.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Hole {
    /// The turn (query id).
    pub turn_id: String,
    /// The passage.
    pub passage_id: String,
}

/// What `mtr judge` judges: every hole once, and how many each run has.
#[derive(Debug, Clone, PartialEq)]
pub struct HolePlan {
    /// K: the depth pooled.
    pub depth: usize,
    /// The holes, sorted by turn and passage.
    pub holes: Vec<Hole>,
    /// Per run: its holes (with repeats over runs counted in each).
    pub per_run: BTreeMap<String, usize>,
}

/// Reads each run (TREC or MTRAG JSONL) under the name given; two runs with one name are
/// refused.
pub fn read_named_runs(named: &[(String, PathBuf)]) -> Result<Vec<NamedRun>> {
    let mut runs: Vec<NamedRun> = Vec::new();
    for (name, path) in named {
        let name = name.clone();
        if runs.iter().any(|r| r.name == name) {
            return Err(user(
                InputError::new(path, format!("a second run named `{name}`"))
                    .hint("give every run file its own name"),
            ));
        }
        let run = mtr_core::read_run_any(path)?;
        runs.push(NamedRun {
            name,
            path: path.clone(),
            run,
        });
    }
    Ok(runs)
}

/// The first `k` documents of a ranking as `trec_eval` orders them.
pub(crate) fn top_k(docs: &[(String, f64)], k: usize) -> Vec<&str> {
    let mut order: Vec<&(String, f64)> = docs.iter().collect();
    order.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| b.0.cmp(&a.0)));
    order.into_iter().take(k).map(|(d, _)| d.as_str()).collect()
}

/// Pools the holes of `runs` at depth `depth` against `qrels`. A depth of 0, qrels without
/// any judgement, and a run none of whose queries is a turn of the qrels are user errors.
pub fn plan_holes(
    qrels: &Qrels,
    qrels_path: &Path,
    runs: &[NamedRun],
    depth: usize,
) -> Result<HolePlan> {
    if depth == 0 {
        return Err(user(
            InputError::new("--depth", "a depth of 0 pools nothing")
                .hint("give --depth K with K >= 1 (10 by default)"),
        ));
    }
    if qrels.values().all(BTreeMap::is_empty) {
        return Err(user(
            InputError::new(
                qrels_path,
                "the benchmark has no qrels: every passage would be a hole",
            )
            .hint(
                "judge a benchmark with relevance judgements (qrels.tsv or golds in its dialogues)",
            ),
        ));
    }
    let mut holes = BTreeSet::new();
    let mut per_run = BTreeMap::new();
    for r in runs {
        if !r.run.keys().any(|q| qrels.contains_key(q)) {
            return Err(no_turn_matches(r));
        }
        let mut mine = 0;
        for (qid, docs) in &r.run {
            let Some(judged) = qrels.get(qid) else {
                continue;
            };
            for d in top_k(docs, depth) {
                if !judged.contains_key(d) {
                    mine += 1;
                    holes.insert(Hole {
                        turn_id: qid.clone(),
                        passage_id: d.to_string(),
                    });
                }
            }
        }
        per_run.insert(r.name.clone(), mine);
    }
    Ok(HolePlan {
        depth,
        holes: holes.into_iter().collect(),
        per_run,
    })
}

/// A run whose query ids match no turn: the error names its first query's line.
fn no_turn_matches(r: &NamedRun) -> AuditError {
    let first = r.run.keys().next().cloned().unwrap_or_default();
    let line = first_line_of(&r.path, &first).unwrap_or(1);
    user(
        InputError::new(
            &r.path,
            format!("no query id of this run is a turn of the benchmark (the first is `{first}`)"),
        )
        .line(line)
        .hint(
            "the run's query ids must be the benchmark's turn ids (`mtr stats BENCH` lists them)",
        ),
    )
}

/// Bad input: the user's to fix (exit 2).
fn user(e: InputError) -> AuditError {
    AuditError::Core(e.into())
}

/// The 1-based line where `qid` first appears in `path`.
fn first_line_of(path: &Path, qid: &str) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines()
        .position(|l| l.contains(qid))
        .map(|i| i as u64 + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(name: &str, lines: &[(&str, &str, f64)]) -> NamedRun {
        let mut run = Run::new();
        for (q, d, s) in lines {
            run.entry(q.to_string())
                .or_default()
                .push((d.to_string(), *s));
        }
        NamedRun {
            name: name.into(),
            path: PathBuf::from(format!("{name}.trec")),
            run,
        }
    }

    fn qrels(lines: &[(&str, &str, i32)]) -> Qrels {
        let mut q = Qrels::new();
        for (t, d, g) in lines {
            q.entry(t.to_string())
                .or_default()
                .insert(d.to_string(), *g);
        }
        q
    }

    #[test]
    fn the_top_k_is_ranked_as_trec_eval_ranks_it() {
        let docs = vec![
            ("a".to_string(), 1.0),
            ("b".to_string(), 3.0),
            ("c".to_string(), 3.0),
            ("d".to_string(), 2.0),
        ];
        assert_eq!(top_k(&docs, 3), vec!["c", "b", "d"]);
        assert_eq!(top_k(&docs, 10).len(), 4);
    }

    #[test]
    fn holes_are_pooled_once_over_runs_and_judged_passages_are_no_holes() {
        let q = qrels(&[("t1", "g", 1), ("t1", "n", 0), ("t2", "g2", 1)]);
        let a = run(
            "a",
            &[
                ("t1", "g", 3.0),
                ("t1", "x", 2.0),
                ("t1", "n", 1.0),
                ("t1", "deep", 0.5),
            ],
        );
        let b = run("b", &[("t1", "x", 3.0), ("t2", "y", 1.0), ("t9", "z", 1.0)]);
        let p = plan_holes(&q, Path::new("qrels.tsv"), &[a, b], 3).unwrap();
        let got: Vec<(&str, &str)> = p
            .holes
            .iter()
            .map(|h| (h.turn_id.as_str(), h.passage_id.as_str()))
            .collect();
        assert_eq!(got, vec![("t1", "x"), ("t2", "y")]);
        assert_eq!(p.per_run["a"], 1);
        assert_eq!(p.per_run["b"], 2);
    }

    #[test]
    fn bad_inputs_are_user_errors() {
        let q = qrels(&[("t1", "g", 1)]);
        let a = run("a", &[("t1", "x", 1.0)]);
        let e = plan_holes(&q, Path::new("q"), std::slice::from_ref(&a), 0).unwrap_err();
        assert!(
            e.is_user_error() && e.to_string().contains("--depth"),
            "{e}"
        );
        let e =
            plan_holes(&Qrels::new(), Path::new("q"), std::slice::from_ref(&a), 10).unwrap_err();
        assert!(
            e.is_user_error() && e.to_string().contains("no qrels"),
            "{e}"
        );
        let other = run("other", &[("zz", "x", 1.0)]);
        let e = plan_holes(&q, Path::new("q"), &[other], 10).unwrap_err();
        assert!(
            e.is_user_error() && e.to_string().contains("other.trec"),
            "{e}"
        );
    }
}
