//! Per-query measure values of one run against the evaluation set's qrels: the single place
//! where bench calls the metrics crate, so every number comes from its trec_eval-exact code.
//!
//! Conventions (trec_eval 10.0, see `mtr_metrics::EvalOptions::conventions`): documents sorted
//! by score descending, ties broken by document id descending in byte order (the run's rank
//! column is ignored); grade > 0 is relevant, grade <= 0 judged non-relevant; a query the run
//! does not answer scores 0 on every measure (trec_eval `-c`), so every system is averaged over
//! the same turns; scores read as f64.

use std::collections::BTreeMap;

use mtr_core::{Qrels, Run};
use mtr_metrics::{EvalOptions, EvalQrels, MeasureSet, MissingQueries, evaluate_run};

use crate::error::{BenchError, Result};
use crate::measure::Measure;
use crate::query_set::QuerySet;

/// The per-query values of one run, aligned with the query set's queries.
#[derive(Debug, Clone, PartialEq)]
pub struct Scores {
    /// `values[m][q]`: measure `m` (in the order asked) on query `q`.
    pub values: Vec<Vec<f64>>,
    /// 1-based rank of the first relevant document anywhere in the ranking.
    pub first_relevant: Vec<Option<usize>>,
    /// Number of documents the run returned for the query (0 when missing).
    pub retrieved: Vec<usize>,
}

impl Scores {
    pub fn mean(&self, m: usize) -> f64 {
        crate::stats::mean(&self.values[m])
    }
}

/// A query's ranking in trec_eval order: score descending, then document id descending.
pub(crate) fn ranked(docs: &[(String, f64)]) -> Vec<&(String, f64)> {
    let mut v: Vec<&(String, f64)> = docs.iter().collect();
    v.sort_by(|a, b| {
        b.1.total_cmp(&a.1)
            .then_with(|| b.0.as_bytes().cmp(a.0.as_bytes()))
    });
    v
}

/// 1-based rank, in trec_eval order, of the best-ranked relevant document; two linear passes
/// instead of a sort (the best relevant document, then how many documents rank above it).
pub(crate) fn first_relevant_rank(
    docs: &[(String, f64)],
    judged: &BTreeMap<String, i32>,
) -> Option<usize> {
    let before = |a: &(String, f64), b: &(String, f64)| {
        a.1 > b.1 || (a.1 == b.1 && a.0.as_bytes() > b.0.as_bytes())
    };
    let mut best: Option<&(String, f64)> = None;
    for d in docs {
        if judged.get(&d.0).is_some_and(|g| *g > 0) && best.is_none_or(|b| before(d, b)) {
            best = Some(d);
        }
    }
    let best = best?;
    Some(1 + docs.iter().filter(|d| before(d, best)).count())
}

/// The metrics crate's name and parameter of a measure: (`family`, `column`).
fn metrics_name(m: Measure) -> (&'static str, String) {
    let family = match m {
        Measure::Ndcg(_) => "ndcg_cut",
        Measure::Recall(_) => "recall",
        Measure::Mrr(_) => "recip_rank_cut",
        Measure::MapCut(_) => "map_cut",
        Measure::HitStrict(_) => "success_strict",
        Measure::HitLenient(_) => "success_lenient",
        Measure::Precision(_) => "P",
    };
    (family, format!("{family}_{}", m.k()))
}

/// Evaluation options and column names for a list of measures; built once per bench.
#[derive(Debug, Clone)]
pub struct Scorer {
    qrels: EvalQrels,
    opts: EvalOptions,
    columns: Vec<String>,
}

impl Scorer {
    /// A scorer of `measures` against `set`'s qrels.
    pub fn new(set: &QuerySet, measures: &[Measure]) -> Result<Scorer> {
        let mut cutoffs: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for m in measures {
            let (family, _) = metrics_name(*m);
            let c = cutoffs.entry(family).or_default();
            if !c.contains(&m.k()) {
                c.push(m.k());
            }
        }
        let specs: Vec<String> = cutoffs
            .iter()
            .map(|(f, ks)| {
                format!(
                    "{f}.{}",
                    ks.iter()
                        .map(usize::to_string)
                        .collect::<Vec<_>>()
                        .join(",")
                )
            })
            .collect();
        let measure_set = MeasureSet::parse(&specs)
            .map_err(|e| BenchError::Internal(format!("measures {specs:?}: {e}")))?;
        let opts = EvalOptions {
            missing: MissingQueries::Complete,
            ..EvalOptions::with_measures(measure_set)
        };
        Ok(Scorer {
            qrels: EvalQrels::from_qrels(&set.qrels),
            opts,
            columns: measures.iter().map(|m| metrics_name(*m).1).collect(),
        })
    }

    /// The conventions the metrics crate records for these options.
    pub fn conventions(&self) -> mtr_metrics::Conventions {
        self.opts.conventions()
    }

    /// Scores `run` on every query of `set`.
    pub fn score(&self, set: &QuerySet, run: &Run) -> Result<Scores> {
        let ev = evaluate_run(&self.qrels, run, &self.opts).map_err(|e| {
            if e.is_user_error() {
                BenchError::Core(e.into())
            } else {
                BenchError::Metrics(e)
            }
        })?;
        let qids = ev.qids();
        if qids.len() != set.queries.len()
            || qids.iter().zip(&set.queries).any(|(a, b)| *a != b.qid)
        {
            return Err(BenchError::Internal(
                "metrics returned queries out of the evaluation set's order".into(),
            ));
        }
        let values = self
            .columns
            .iter()
            .map(|c| {
                ev.values(c)
                    .ok_or_else(|| BenchError::Internal(format!("metrics did not compute `{c}`")))
            })
            .collect::<Result<Vec<_>>>()?;
        let mut first_relevant = vec![None; set.queries.len()];
        let mut retrieved = vec![0; set.queries.len()];
        for (qi, q) in set.queries.iter().enumerate() {
            let Some(docs) = run.get(&q.qid) else {
                continue;
            };
            retrieved[qi] = docs.len();
            if let Some(judged) = set.qrels.get(&q.qid) {
                first_relevant[qi] = first_relevant_rank(docs, judged);
            }
        }
        Ok(Scores {
            values,
            first_relevant,
            retrieved,
        })
    }
}

/// Scores one run for a list of measures (builds a [`Scorer`]; reuse one for many runs).
#[cfg(test)]
pub(crate) fn score_run(set: &QuerySet, run: &Run, measures: &[Measure]) -> Result<Scores> {
    Scorer::new(set, measures)?.score(set, run)
}

/// Qrels restricted to what a measure needs is the caller's business; this helper gives the
/// judged relevant documents of a query, best grade first (for failure analysis).
pub(crate) fn relevant_of<'a>(qrels: &'a Qrels, qid: &str) -> Vec<(&'a str, i32)> {
    let mut v: Vec<(&str, i32)> = qrels
        .get(qid)
        .map(|d| {
            d.iter()
                .filter(|(_, g)| **g > 0)
                .map(|(d, g)| (d.as_str(), *g))
                .collect()
        })
        .unwrap_or_default();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query_set::QuerySet;

    fn set_and_run(qrels: &[(&str, &str, i32)], run: &[(&str, &str, f64)]) -> (QuerySet, Run) {
        let mut q = Qrels::new();
        for (qid, d, g) in qrels {
            q.entry((*qid).into()).or_default().insert((*d).into(), *g);
        }
        let mut r = Run::new();
        for (qid, d, s) in run {
            r.entry((*qid).into()).or_default().push(((*d).into(), *s));
        }
        (QuerySet::build(&[], &q), r)
    }

    /// trec_eval edge case 01 (ties): q1 RR 0.3333, nDCG@10 0.5438, AP@10 0.4167, R@3 0.5;
    /// q2 nDCG@3 0.9197, AP 0.8333.
    #[test]
    fn trec_eval_tie_case() {
        let (set, run) = set_and_run(
            &[
                ("q1", "d1", 1),
                ("q1", "d2", 0),
                ("q1", "d10", 2),
                ("q1", "d9", 0),
                ("q2", "a", 1),
                ("q2", "b", 1),
            ],
            &[
                ("q1", "d1", 0.5),
                ("q1", "d2", 0.5),
                ("q1", "d9", 0.5),
                ("q1", "d10", 0.5),
                ("q1", "d3", 0.4),
                ("q2", "a", 2.0),
                ("q2", "z", 1.0),
                ("q2", "b", 1.0),
                ("q2", "c", 0.0),
            ],
        );
        let ms = [
            Measure::Mrr(1000),
            Measure::Ndcg(10),
            Measure::MapCut(10),
            Measure::Recall(3),
            Measure::Ndcg(3),
            Measure::HitLenient(1),
            Measure::HitStrict(3),
        ];
        let s = score_run(&set, &run, &ms).unwrap();
        let r4 = |x: f64| (x * 10000.0).round() / 10000.0;
        assert_eq!(r4(s.values[0][0]), 0.3333);
        assert_eq!(r4(s.values[1][0]), 0.5438);
        assert_eq!(r4(s.values[2][0]), 0.4167);
        assert_eq!(r4(s.values[3][0]), 0.5);
        assert_eq!(r4(s.values[4][1]), 0.9197);
        assert_eq!(r4(s.values[2][1]), 0.8333);
        assert_eq!(s.values[5][0], 0.0);
        // d10 (grade 2) is ranked 3rd: d9 > d2 > d10 > d1 by docno descending.
        assert_eq!(s.values[6][0], 1.0);
        assert_eq!(s.first_relevant, vec![Some(3), Some(1)]);
        for (q, docs) in &run {
            let sorted = ranked(docs)
                .iter()
                .position(|(d, _)| set.qrels[q].get(d).is_some_and(|g| *g > 0))
                .map(|i| i + 1);
            assert_eq!(first_relevant_rank(docs, &set.qrels[q]), sorted);
        }
    }

    #[test]
    fn missing_query_scores_zero() {
        let (set, run) = set_and_run(&[("q1", "d1", 1), ("q2", "d1", 1)], &[("q1", "d1", 1.0)]);
        let s = score_run(&set, &run, &[Measure::Ndcg(10)]).unwrap();
        assert_eq!(s.values[0], vec![1.0, 0.0]);
        assert_eq!(s.retrieved, vec![1, 0]);
    }
}
