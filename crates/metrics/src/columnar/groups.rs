//! Which rows belong to which query. A DataFrame gives a query id a row, usually in runs of
//! one query (a run's rows sorted by query); a dict of dicts gives each query's rows as one
//! run. Either way the rows become segments (query, first row, end), each distinct query id
//! interned once (the ids of one run of rows are compared with their neighbour, not hashed),
//! and a query's segments are listed in row order, so that its documents keep the input's
//! order wherever its rows are.

use std::ops::Range;
use std::path::Path;

use mtr_core::InputError;

use super::IdColumn;
use crate::error::{MetricsError, Result};
use crate::input::{IdIndex, doc_hash, short_eq};

/// The query of each row.
#[derive(Debug, Clone, Copy)]
pub enum QueryIds<'a> {
    /// One query id a row (a DataFrame's qid column).
    Rows(IdColumn<'a>),
    /// Rows in runs of one query: query `ids.get(k)` owns rows `ends[k - 1]..ends[k]`
    /// (`0..ends[0]` for the first); a dict of dicts, whose queries are distinct.
    Groups {
        /// One id a group.
        ids: IdColumn<'a>,
        /// Where each group's rows end; non-decreasing, as many as `ids`.
        ends: &'a [usize],
    },
}

impl QueryIds<'_> {
    /// How many rows the ids cover.
    pub fn rows(&self) -> usize {
        match self {
            QueryIds::Rows(ids) => ids.len(),
            QueryIds::Groups { ends, .. } => ends.last().copied().unwrap_or(0),
        }
    }
}

/// The rows grouped by query; queries numbered in order of first appearance.
#[derive(Debug, Default)]
pub(crate) struct Grouping<'a> {
    qids: Vec<&'a str>,
    index: IdIndex,
    /// (query, rows) in row order.
    segments: Vec<(u32, Range<usize>)>,
    /// Segment numbers, query by query (row order within a query).
    by_query: Vec<u32>,
    /// Query `q`'s entries in `by_query` are `starts[q]..starts[q + 1]`.
    starts: Vec<usize>,
}

impl<'a> Grouping<'a> {
    /// Groups the rows; `origin` names the input in errors (a query id that is not UTF-8).
    pub(crate) fn new(ids: &QueryIds<'a>, origin: &Path) -> Result<Self> {
        let mut g = Grouping::default();
        match ids {
            QueryIds::Rows(col) => {
                let n = col.len();
                let mut r = 0;
                while r < n {
                    let q = col.get(r);
                    let mut e = r + 1;
                    while e < n && short_eq(col.get(e), q) {
                        e += 1;
                    }
                    g.push(q, r..e, origin)?;
                    r = e;
                }
            }
            QueryIds::Groups { ids, ends } => {
                if ids.len() != ends.len() {
                    return Err(MetricsError::invalid(format!(
                        "{} query ids for {} groups",
                        ids.len(),
                        ends.len()
                    )));
                }
                let mut start = 0;
                for (k, end) in ends.iter().enumerate() {
                    if *end < start {
                        return Err(MetricsError::invalid("group ends are decreasing"));
                    }
                    g.push(ids.get(k), start..*end, origin)?;
                    start = *end;
                }
            }
        }
        g.by_query_order();
        Ok(g)
    }

    fn push(&mut self, qid: &'a [u8], rows: Range<usize>, origin: &Path) -> Result<()> {
        let h = doc_hash(qid);
        let q = match self
            .index
            .get(h, |i| short_eq(self.qids[i].as_bytes(), qid))
        {
            Some(q) => q,
            None => {
                let text = std::str::from_utf8(qid).map_err(|_| {
                    InputError::new(origin, "query id is not valid UTF-8")
                        .line(rows.start as u64 + 1)
                        .field("qid")
                })?;
                self.qids.push(text);
                self.index.push(h)
            }
        };
        self.segments.push((q as u32, rows));
        Ok(())
    }

    /// Lists the segments query by query (a counting sort, stable: row order kept).
    fn by_query_order(&mut self) {
        let mut starts = vec![0usize; self.qids.len() + 1];
        for (q, _) in &self.segments {
            starts[*q as usize + 1] += 1;
        }
        for i in 1..starts.len() {
            starts[i] += starts[i - 1];
        }
        let mut fill = starts.clone();
        let mut by_query = vec![0u32; self.segments.len()];
        for (s, (q, _)) in self.segments.iter().enumerate() {
            by_query[fill[*q as usize]] = s as u32;
            fill[*q as usize] += 1;
        }
        self.by_query = by_query;
        self.starts = starts;
    }

    /// How many distinct queries.
    pub(crate) fn len(&self) -> usize {
        self.qids.len()
    }

    /// Query `q`'s id.
    pub(crate) fn qid(&self, q: usize) -> &'a str {
        self.qids[q]
    }

    /// The number of the query with this id.
    pub(crate) fn find(&self, qid: &[u8]) -> Option<usize> {
        self.index
            .get(doc_hash(qid), |i| short_eq(self.qids[i].as_bytes(), qid))
    }

    /// Query `q`'s rows, in row order.
    pub(crate) fn rows(&self, q: usize) -> impl Iterator<Item = usize> + '_ {
        self.by_query[self.starts[q]..self.starts[q + 1]]
            .iter()
            .flat_map(|s| self.segments[*s as usize].1.clone())
    }

    /// Query `q`'s first row and its number of rows.
    pub(crate) fn extent(&self, q: usize) -> (usize, usize) {
        let segs = &self.by_query[self.starts[q]..self.starts[q + 1]];
        let first = segs
            .first()
            .map_or(0, |s| self.segments[*s as usize].1.start);
        let rows = segs
            .iter()
            .map(|s| self.segments[*s as usize].1.len())
            .sum();
        (first, rows)
    }
}
