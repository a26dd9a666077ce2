//! What an evaluation is and how its numbers are made, whichever reader went through the run:
//! the options that change the numbers, one query's values, and the summary. Summary:
//! arithmetic mean for measures, sums for `num_*` (with `-c`, `num_rel` counts every judgement
//! with grade > 0, as trec_eval does), geometric mean for `gm_map`; the sum runs in qid byte
//! order like trec_eval's.

#[cfg(test)]
use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::compute::{QueryInput, compute};
use crate::error::{MetricsError, Result};
use crate::input::{Compat, Dedup, EvalQrels, QrelsQuery};
use crate::measure::{Aggregation, Column, Family, MeasureSet};
use crate::rank::NONPOOL;
use mtr_core::InputError;

/// What to do with qrels queries the run has no results for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MissingQueries {
    /// An error naming them (trec_eval 10.0).
    #[default]
    Error,
    /// Score them 0 and average over all qrels queries (trec_eval `-c`).
    Complete,
    /// Average over the queries in both qrels and run (trec_eval 9.x without `-c`).
    Intersect,
}

/// Everything that changes the numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct EvalOptions {
    /// Measures to compute (default: trec_eval's official set).
    pub measures: MeasureSet,
    /// Minimum grade counted relevant (`-l`), >= 0. nDCG ignores it and uses raw grades.
    pub relevance_level: i64,
    /// What to do with qrels queries the run lacks.
    pub missing: MissingQueries,
    /// Depth cutoff (`-M`): only the top `max_docs` ranked documents of each query count.
    pub max_docs: Option<usize>,
    /// Score precision (trec_eval 10 or 9).
    pub compat: Compat,
    /// What to do with a document listed twice for one query.
    pub dedup: Dedup,
}

impl Default for EvalOptions {
    fn default() -> Self {
        EvalOptions {
            measures: MeasureSet::official(),
            relevance_level: 1,
            missing: MissingQueries::Error,
            max_docs: None,
            compat: Compat::TrecEval10,
            dedup: Dedup::Error,
        }
    }
}

impl EvalOptions {
    /// Default options with these measures.
    pub fn with_measures(measures: MeasureSet) -> Self {
        EvalOptions {
            measures,
            ..EvalOptions::default()
        }
    }

    pub(crate) fn validate(&self) -> Result<()> {
        if self.relevance_level < 0 {
            return Err(MetricsError::invalid("relevance level (-l) must be >= 0"));
        }
        if self.max_docs == Some(0) {
            return Err(MetricsError::invalid("depth cutoff (-M) must be >= 1"));
        }
        Ok(())
    }

    /// The record of conventions every JSON output carries.
    pub fn conventions(&self) -> Conventions {
        Conventions {
            compat: self.compat.name(),
            score_precision: match self.compat {
                Compat::TrecEval10 => "f64 (trec_eval 10.0)",
                Compat::TrecEval9 => {
                    "f32 (trec_eval 9.x, pytrec_eval, BEIR, MTEB); iprec_at_recall levels as (long)(p*R + 0.9)"
                }
            },
            relevance_level: self.relevance_level,
            missing_queries: self.missing,
            max_docs: self.max_docs,
            dedup: self.dedup,
            ranking: "score descending, ties by docno descending (byte order); rank column ignored",
            averaging: "arithmetic mean over evaluated queries in qid byte order; num_* summed; gm_map geometric",
            ndcg_gain: "ndcg, ndcg_cut: linear (gain = grade); ndcg_exp_cut: 2^grade - 1; discount log2(rank + 1)",
            map_cut_denominator: "map_cut: R (all relevant, trec_eval); map_capped_cut: min(R, k)",
            negative_grades: "judged non-relevant",
        }
    }
}

/// The conventions behind a set of numbers, serialised into every JSON output.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Conventions {
    /// `trec_eval_10` or `trec_eval_9`.
    pub compat: &'static str,
    /// How scores are read (double or float).
    pub score_precision: &'static str,
    /// The relevance level (`-l`).
    pub relevance_level: i64,
    /// What happened to qrels queries the run lacks.
    pub missing_queries: MissingQueries,
    /// The depth cutoff (`-M`), if any.
    pub max_docs: Option<usize>,
    /// What happened to duplicate documents.
    pub dedup: Dedup,
    /// How documents are ranked.
    pub ranking: &'static str,
    /// How per-query values become the summary.
    pub averaging: &'static str,
    /// The gain nDCG uses.
    pub ndcg_gain: &'static str,
    /// map_cut's denominator.
    pub map_cut_denominator: &'static str,
    /// How negative grades count.
    pub negative_grades: &'static str,
}

/// One evaluated query's values, aligned with [`Evaluation::columns`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueryScores {
    /// The query id.
    pub qid: String,
    /// One value per column.
    pub values: Vec<f64>,
    /// The run had no results for it (`-c`): its values are trec_eval's zeros.
    pub missing: bool,
}

/// Result of an evaluation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evaluation {
    /// The value columns, in trec_eval's print order.
    pub columns: Vec<Column>,
    /// Evaluated queries, in qid byte order.
    pub queries: Vec<QueryScores>,
    /// One summary value per column.
    pub summary: Vec<f64>,
    /// Queries the summary is over.
    pub num_q: usize,
    /// The run's tag (last line's sixth column of a TREC run).
    pub run_id: Option<String>,
    /// Every convention used.
    pub conventions: Conventions,
    /// Run queries that have no qrels (ignored).
    pub ignored_run_queries: usize,
}

impl Evaluation {
    /// The index of the column named `name`.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }
    /// Every column's name, in order.
    pub(crate) fn column_names(&self) -> Vec<&str> {
        self.columns.iter().map(|c| c.name.as_str()).collect()
    }
    /// The summary (`all`) value of a column.
    pub fn mean(&self, name: &str) -> Option<f64> {
        self.column(name).map(|i| self.summary[i])
    }
    /// Per-query values of a column, in qid byte order.
    pub fn per_query(&self, name: &str) -> Option<Vec<(&str, f64)>> {
        let i = self.column(name)?;
        Some(
            self.queries
                .iter()
                .map(|q| (q.qid.as_str(), q.values[i]))
                .collect(),
        )
    }
    /// Per-query values of one column by qid.
    #[cfg(test)]
    pub(crate) fn per_query_map(&self, name: &str) -> Option<BTreeMap<String, f64>> {
        let i = self.column(name)?;
        Some(
            self.queries
                .iter()
                .map(|q| (q.qid.clone(), q.values[i]))
                .collect(),
        )
    }
    /// Per-query values aligned with `queries`.
    pub fn values(&self, name: &str) -> Option<Vec<f64>> {
        let i = self.column(name)?;
        Some(self.queries.iter().map(|q| q.values[i]).collect())
    }
    /// The evaluated queries' ids, in order.
    pub fn qids(&self) -> Vec<&str> {
        self.queries.iter().map(|q| q.qid.as_str()).collect()
    }
}

/// One evaluated query's values from its ranked relevance list.
pub(crate) fn score_query(
    q: &QrelsQuery,
    rels: &[i32],
    opts: &EvalOptions,
    n_columns: usize,
) -> QueryScores {
    let mut values = Vec::with_capacity(n_columns);
    compute(
        &opts.measures,
        &QueryInput {
            rels,
            qrels: q,
            level: opts.relevance_level,
            compat: opts.compat,
        },
        &mut values,
    );
    QueryScores {
        qid: q.qid.clone(),
        values,
        missing: false,
    }
}

/// A qrels query the run has no results for, under `-c`: trec_eval evaluates a stand-in
/// ranking of one unjudged document and then reports num_ret 0.
pub(crate) fn score_missing(q: &QrelsQuery, opts: &EvalOptions, columns: &[Column]) -> QueryScores {
    let mut s = score_query(q, &[NONPOOL], opts, columns.len());
    for (c, v) in columns.iter().zip(s.values.iter_mut()) {
        if c.family == Family::NumRet {
            *v = 0.0;
        }
    }
    s.missing = true;
    s
}

pub(crate) fn missing_error(origin: &Path, missing: &[&str], total: usize) -> MetricsError {
    let shown: Vec<&str> = missing.iter().take(5).copied().collect();
    InputError::new(
        origin,
        format!(
            "{} of {} qrels queries have no results in the run (first: {})",
            missing.len(),
            total,
            shown.join(", ")
        ),
    )
    .hint("trec_eval 10.0 stops here too; pass -c to score them 0 and average over all qrels queries, or --intersect to average over the queries in both")
    .into()
}

/// The evaluation from per-query values in qid order.
pub(crate) fn finish(
    columns: Vec<Column>,
    queries: Vec<QueryScores>,
    qrels: &EvalQrels,
    opts: &EvalOptions,
    run_id: Option<String>,
    ignored_run_queries: usize,
    origin: &Path,
) -> Result<Evaluation> {
    if queries.is_empty() {
        return Err(InputError::new(
            origin,
            "no queries with both results and relevance judgements",
        )
        .hint("check that the run and the qrels use the same query ids")
        .into());
    }
    let num_q = queries.len();
    let summary = summarize(&columns, &queries, qrels, opts);
    Ok(Evaluation {
        columns,
        queries,
        summary,
        num_q,
        run_id,
        conventions: opts.conventions(),
        ignored_run_queries,
    })
}

fn summarize(
    columns: &[Column],
    queries: &[QueryScores],
    qrels: &EvalQrels,
    opts: &EvalOptions,
) -> Vec<f64> {
    let n = queries.len() as f64;
    columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let sum = || queries.iter().fold(0.0, |acc, q| acc + q.values[i]);
            match c.aggregation {
                Aggregation::Text => f64::NAN,
                Aggregation::Count => n,
                Aggregation::Sum => {
                    if c.family == Family::NumRel && opts.missing == MissingQueries::Complete {
                        qrels.queries.iter().map(|q| q.num_positive).sum::<u64>() as f64
                    } else {
                        sum()
                    }
                }
                Aggregation::Mean => sum() / n,
                Aggregation::GeometricMean => (sum() / n).exp(),
            }
        })
        .collect()
}
