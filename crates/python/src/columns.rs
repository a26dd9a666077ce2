//! A DataFrame's columns, or a dict read into the same shape, as mtr-metrics' column buffers
//! (`evaluate_columns`, `qrels_from_columns`). The Python layer (`python/mtr/_evaluate.py`)
//! describes each id column as `("objects", ndarray)` (an object or python-string column:
//! read here in one pass with the GIL into one UTF-8 buffer and offsets) or
//! `("arrow", data, offsets)` (a pyarrow-backed column: its buffers borrowed as they lie), and
//! hands the grade or score column as an int64 or float64 array, borrowed as it lies (numpy's
//! C API, no copy). No Python code runs per row; what runs per row here runs once.

use std::path::{Path, PathBuf};

use mtr_metrics::{IdColumn, Offsets, QrelsColumns, QueryIds, RunColumns};
use numpy::{Element, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple};

use crate::errors::Failure;
use crate::utf8::Utf8;

/// Ids in a buffer of our own (object columns, dicts): Arrow's layout, 64-bit offsets.
#[derive(Debug, Default)]
pub struct OwnedIds {
    data: Vec<u8>,
    offsets: Vec<i64>,
}

impl OwnedIds {
    pub fn with_capacity(rows: usize) -> Self {
        let mut offsets = Vec::with_capacity(rows + 1);
        offsets.push(0);
        OwnedIds {
            data: Vec::with_capacity(rows * 8),
            offsets,
        }
    }

    /// Appends one string.
    #[inline]
    pub fn push_str(&mut self, utf8: Utf8, s: &Bound<'_, PyString>) -> PyResult<()> {
        utf8.with(s, |b| self.data.extend_from_slice(b))?;
        self.offsets.push(self.data.len() as i64);
        Ok(())
    }

    /// Appends the last value again.
    fn repeat_last(&mut self) {
        let n = self.offsets.len();
        let (start, end) = match self.offsets.get(n.saturating_sub(2)..) {
            Some([s, e]) => (*s as usize, *e as usize),
            _ => return,
        };
        self.data.extend_from_within(start..end);
        self.offsets.push(self.data.len() as i64);
    }

    /// An object column's values, each a str or written as `str()` writes it. With
    /// `group`, a value equal to the one before is not stored again: the result is one id a
    /// run of equal rows and where each run ends (a qid column is runs of one query).
    fn from_objects(array: &Bound<'_, PyAny>, group: bool) -> Result<(Self, Vec<usize>), Failure> {
        let py = array.py();
        let array: PyReadonlyArray1<'_, Py<PyAny>> = array.extract().map_err(internal)?;
        let items = array
            .as_slice()
            .map_err(|e| Failure::Internal(e.to_string()))?;
        let utf8 = Utf8::new(py);
        let mut ids = OwnedIds::with_capacity(if group { 1024 } else { items.len() });
        let mut ends = Vec::new();
        let mut previous: Option<&Py<PyAny>> = None;
        for (row, item) in items.iter().enumerate() {
            if previous.is_some_and(|p| p.is(item)) {
                // the same object as the row before (a column built by indexing shares them)
                if !group {
                    ids.repeat_last();
                }
                continue;
            }
            previous = Some(item);
            let item = item.bind(py);
            let pushed = match item.cast::<PyString>() {
                Ok(s) => ids.push_str(utf8, s),
                Err(_) => ids.push_str(utf8, &item.str().map_err(internal)?),
            };
            pushed.map_err(|e| Failure::Internal(format!("an id is not text: {e}")))?;
            if group {
                ids.merge_repeat(&mut ends, row);
            }
        }
        if group && !items.is_empty() {
            ends.push(items.len());
        }
        Ok((ids, ends))
    }

    /// With grouping: the value just pushed starts a new run at `row`, unless it equals the
    /// value before, whose run then goes on (and the value is taken back).
    fn merge_repeat(&mut self, ends: &mut Vec<usize>, row: usize) {
        let n = self.offsets.len();
        if n >= 3 {
            let (a, b, c) = (
                self.offsets[n - 3] as usize,
                self.offsets[n - 2] as usize,
                self.offsets[n - 1] as usize,
            );
            if self.data[a..b] == self.data[b..c] {
                self.data.truncate(b);
                self.offsets.pop();
                return;
            }
            ends.push(row);
        }
    }

    fn column(&self) -> Result<IdColumn<'_>, Failure> {
        Ok(IdColumn::new(&self.data, Offsets::I64(&self.offsets))?)
    }
}

/// One id column.
pub enum Ids<'py> {
    Owned(OwnedIds),
    Arrow32(PyReadonlyArray1<'py, u8>, PyReadonlyArray1<'py, i32>),
    Arrow64(PyReadonlyArray1<'py, u8>, PyReadonlyArray1<'py, i64>),
}

/// A column as the Python layer describes it: objects to read, or Arrow buffers.
enum Described<'py> {
    Objects(Bound<'py, PyAny>),
    Arrow(Ids<'py>),
}

impl<'py> Described<'py> {
    fn new(d: &Bound<'py, PyAny>) -> Result<Self, Failure> {
        let d = d.cast::<PyTuple>().map_err(|e| internal(e.into()))?;
        let kind: String = d.get_item(0).and_then(|k| k.extract()).map_err(internal)?;
        let item = |i: usize| d.get_item(i).map_err(internal);
        match kind.as_str() {
            "objects" => Ok(Described::Objects(item(1)?)),
            "arrow" => {
                let data = item(1)?.extract().map_err(internal)?;
                let offsets = item(2)?;
                Ok(Described::Arrow(match offsets.extract() {
                    Ok(o) => Ids::Arrow32(data, o),
                    Err(_) => Ids::Arrow64(data, offsets.extract().map_err(internal)?),
                }))
            }
            other => Err(Failure::Internal(format!(
                "unknown id column kind {other:?}"
            ))),
        }
    }

    /// A docno column: a value a row.
    fn ids(self) -> Result<Ids<'py>, Failure> {
        match self {
            Described::Objects(a) => Ok(Ids::Owned(OwnedIds::from_objects(&a, false)?.0)),
            Described::Arrow(ids) => Ok(ids),
        }
    }

    /// A qid column: an object column's runs of equal rows as groups (one id a run).
    fn queries(self) -> Result<Queries<'py>, Failure> {
        match self {
            Described::Objects(a) => {
                let (ids, ends) = OwnedIds::from_objects(&a, true)?;
                Ok(Queries::Groups(ids, ends))
            }
            Described::Arrow(ids) => Ok(Queries::Rows(ids)),
        }
    }
}

impl Ids<'_> {
    fn column(&self) -> Result<IdColumn<'_>, Failure> {
        match self {
            Ids::Owned(o) => o.column(),
            Ids::Arrow32(d, o) => Ok(IdColumn::new(slice(d)?, Offsets::I32(slice(o)?))?),
            Ids::Arrow64(d, o) => Ok(IdColumn::new(slice(d)?, Offsets::I64(slice(o)?))?),
        }
    }
}

/// Which query each row is: a column, or groups of rows (a dict's queries).
pub enum Queries<'py> {
    Rows(Ids<'py>),
    Groups(OwnedIds, Vec<usize>),
}

/// The grade or score column.
pub enum Values<'py, T: Element> {
    Owned(Vec<T>),
    Numpy(PyReadonlyArray1<'py, T>),
}

/// One input table (qrels: `T = i64` grades; run: `T = f64` scores).
pub struct Table<'py, T: Element> {
    /// How errors name it (`run DataFrame`, `qrels dict`).
    pub origin: PathBuf,
    pub queries: Queries<'py>,
    pub docs: Ids<'py>,
    pub values: Values<'py, T>,
}

impl<'py, T: Element> Table<'py, T> {
    /// From `("columns", origin, qids, docnos, values)`.
    pub fn from_description(t: &Bound<'py, PyTuple>) -> Result<Self, Failure> {
        let item = |i: usize| t.get_item(i).map_err(internal);
        let origin: String = item(1)?.extract().map_err(internal)?;
        Ok(Table {
            origin: PathBuf::from(origin),
            queries: Described::new(&item(2)?)?.queries()?,
            docs: Described::new(&item(3)?)?.ids()?,
            values: Values::Numpy(item(4)?.extract().map_err(internal)?),
        })
    }

    /// The pieces mtr-metrics reads, borrowed (taken with the GIL; read without it).
    fn parts(&self) -> Result<(&Path, QueryIds<'_>, IdColumn<'_>, &[T]), Failure> {
        let queries = match &self.queries {
            Queries::Rows(ids) => QueryIds::Rows(ids.column()?),
            Queries::Groups(ids, ends) => QueryIds::Groups {
                ids: ids.column()?,
                ends,
            },
        };
        let values = match &self.values {
            Values::Owned(v) => v.as_slice(),
            Values::Numpy(a) => slice(a)?,
        };
        Ok((&self.origin, queries, self.docs.column()?, values))
    }
}

impl Table<'_, i64> {
    pub fn qrels_columns(&self) -> Result<QrelsColumns<'_>, Failure> {
        let (origin, queries, docs, grades) = self.parts()?;
        Ok(QrelsColumns {
            origin,
            queries,
            docs,
            grades,
        })
    }
}

impl Table<'_, f64> {
    pub fn run_columns(&self) -> Result<RunColumns<'_>, Failure> {
        let (origin, queries, docs, scores) = self.parts()?;
        Ok(RunColumns {
            origin,
            queries,
            docs,
            scores,
        })
    }
}

fn slice<'a, T: Element>(a: &'a PyReadonlyArray1<'_, T>) -> Result<&'a [T], Failure> {
    a.as_slice().map_err(|e| Failure::Internal(e.to_string()))
}

fn internal(e: PyErr) -> Failure {
    Failure::Internal(format!("malformed input description: {e}"))
}
