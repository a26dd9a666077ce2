//! Qrels and runs from a DataFrame's column arrays. The Python layer hands each id column over
//! as one UTF-8 buffer of NUL-separated values (one `str.join` in C, not a Python loop per
//! row) and the grade or score column as the bytes of an int64 or float64 array; this module
//! splits them without the GIL. A frame's "line" in an error is its row position counting
//! from 1, so that the message reads like the CLI's for a file.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, HashMap};

use mtr_core::InputError;
use mtr_metrics::Dedup;

use crate::errors::Failure;

/// One input table as columns: the ids NUL-separated, the values native-endian.
#[derive(Debug)]
pub struct Table {
    /// How errors name the table (`qrels DataFrame`).
    pub origin: String,
    pub rows: usize,
    pub qids: Vec<u8>,
    pub docs: Vec<u8>,
    /// 8 bytes a row: int64 grades (qrels) or float64 scores (runs).
    pub values: Vec<u8>,
}

impl Table {
    /// The rows as (qid, docno, value bytes), each id checked.
    fn rows(&self) -> Result<impl Iterator<Item = (&str, &str, [u8; 8])>, Failure> {
        let qids = self.ids(&self.qids, "qid")?;
        let docs = self.ids(&self.docs, "docno")?;
        if self.values.len() != self.rows * 8 {
            return Err(Failure::Internal(format!(
                "{}: {} value bytes for {} rows",
                self.origin,
                self.values.len(),
                self.rows
            )));
        }
        let values = self
            .values
            .chunks_exact(8)
            .map(|c| <[u8; 8]>::try_from(c).unwrap_or_default());
        Ok(qids.zip(docs).zip(values).map(|((q, d), v)| (q, d, v)))
    }

    /// One id column's values: exactly `rows` of them, none holding a NUL.
    fn ids<'a>(
        &'a self,
        blob: &'a [u8],
        field: &str,
    ) -> Result<impl Iterator<Item = &'a str> + 'a, Failure> {
        let text = std::str::from_utf8(blob).map_err(|e| {
            Failure::Internal(format!("{}: column {field} is not UTF-8: {e}", self.origin))
        })?;
        let separators = blob.iter().filter(|b| **b == 0).count();
        let expected = self.rows.saturating_sub(1);
        if separators != expected {
            return Err(InputError::new(
                &self.origin,
                "an id holds a NUL character, which no TREC file can hold",
            )
            .field(field)
            .into());
        }
        let mut parts = text.split('\0');
        if self.rows == 0 {
            parts.next();
        }
        Ok(parts)
    }

    /// The qrels: grades as i32, a second judgement of a document an error (or dropped with
    /// `Dedup::First`), as `mtr eval` reads a qrels file.
    pub fn to_qrels(&self, dedup: Dedup) -> Result<mtr_core::Qrels, Failure> {
        let mut qrels = mtr_core::Qrels::new();
        let mut current: Option<(&str, &mut BTreeMap<String, i32>)> = None;
        for (row, (q, d, v)) in self.rows()?.enumerate() {
            let grade = i32::try_from(i64::from_ne_bytes(v)).map_err(|_| {
                InputError::new(
                    &self.origin,
                    "grade out of the 32-bit range trec_eval reads",
                )
                .line(row as u64 + 1)
                .field("label")
            })?;
            let docs = match current.take() {
                Some((cq, docs)) if cq == q => docs,
                _ => qrels.entry(q.to_string()).or_default(),
            };
            match docs.entry(d.to_string()) {
                Entry::Vacant(e) => {
                    e.insert(grade);
                }
                Entry::Occupied(_) if dedup == Dedup::First => {}
                Entry::Occupied(_) => return Err(self.duplicate(row, "judgement").into()),
            }
            current = Some((q, docs));
        }
        Ok(qrels)
    }

    /// The run: documents of a query in row order with their scores.
    pub fn to_run(&self) -> Result<mtr_core::Run, Failure> {
        let mut run = mtr_core::Run::new();
        let mut current: Option<(&str, &mut Vec<(String, f64)>)> = None;
        for (q, d, v) in self.rows()? {
            let docs = match current.take() {
                Some((cq, docs)) if cq == q => docs,
                _ => run.entry(q.to_string()).or_default(),
            };
            docs.push((d.to_string(), f64::from_ne_bytes(v)));
            current = Some((q, docs));
        }
        Ok(run)
    }

    /// The error for the first row that repeats a (query, document) pair, at or before `upto`
    /// (the whole table when `None`), naming both rows.
    pub fn duplicate_error(&self, upto: Option<usize>, what: &str) -> Option<InputError> {
        let mut first: HashMap<(&str, &str), usize> = HashMap::new();
        let rows = self.rows().ok()?;
        for (row, (q, d, _)) in rows.enumerate().take(upto.map_or(usize::MAX, |u| u + 1)) {
            if let Some(f) = first.get(&(q, d)) {
                return Some(
                    InputError::new(
                        &self.origin,
                        format!(
                            "duplicate {what} for query `{q}`, document `{d}` (first at row {})",
                            f + 1
                        ),
                    )
                    .line(row as u64 + 1)
                    .field("docno")
                    .hint("use dedup=\"first\" to keep the first"),
                );
            }
            first.insert((q, d), row);
        }
        None
    }

    fn duplicate(&self, row: usize, what: &str) -> InputError {
        self.duplicate_error(Some(row), what).unwrap_or_else(|| {
            InputError::new(&self.origin, format!("duplicate {what}")).line(row as u64 + 1)
        })
    }
}
