//! The Parquet tables of a Hugging Face dataset folder, written and read with the parquet
//! crate's own column writers and record reader (no Arrow: the crate is already in the tree for
//! the synthesis corpus readers, Arrow would add minutes to a cold build for four flat tables).
//!
//! A table is a list of [`Column`]s: required or nullable UTF-8 text, 32-bit integers, and lists
//! of text (the 3-level `LIST` layout `pyarrow` and `datasets` read as `list<string>`). Rows are
//! buffered and written a row group at a time, snappy-compressed like the Hub's own dumps; the
//! file appears only when [`TableWriter::finish`] succeeds. The reader takes the columns it needs
//! by name and names the file and column of anything that does not fit.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parquet::basic::{Compression, ConvertedType, LogicalType, Repetition, Type as Physical};
use parquet::data_type::{ByteArray, ByteArrayType, Int32Type};
use parquet::file::properties::WriterProperties;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::file::writer::SerializedFileWriter;
use parquet::record::Field;
use parquet::schema::types::Type;

use crate::atomic::AtomicFile;
use crate::error::{Error, InputError, Result};

/// Rows a row group holds: a few MB of passage text, small enough to read a group at a time.
const ROWS_PER_GROUP: usize = 10_000;

/// What a column holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// UTF-8 text, never null.
    Text,
    /// UTF-8 text or null.
    OptText,
    /// A 32-bit signed integer, never null.
    Int,
    /// A list of UTF-8 texts (never null, possibly empty).
    TextList,
}

/// A named column of a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Column {
    pub(crate) name: &'static str,
    pub(crate) kind: Kind,
}

/// One cell of a row being written, in the kind of its column.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Cell {
    Text(String),
    Null,
    Int(i32),
    List(Vec<String>),
}

fn text_type(name: &str, repetition: Repetition) -> Result<Type> {
    Type::primitive_type_builder(name, Physical::BYTE_ARRAY)
        .with_repetition(repetition)
        .with_logical_type(Some(LogicalType::String))
        .with_converted_type(ConvertedType::UTF8)
        .build()
        .map_err(|e| Error::Internal(format!("parquet schema of `{name}`: {e}")))
}

fn column_type(c: &Column) -> Result<Type> {
    let internal = |e: parquet::errors::ParquetError| {
        Error::Internal(format!("parquet schema of `{}`: {e}", c.name))
    };
    match c.kind {
        Kind::Text => text_type(c.name, Repetition::REQUIRED),
        Kind::OptText => text_type(c.name, Repetition::OPTIONAL),
        Kind::Int => Type::primitive_type_builder(c.name, Physical::INT32)
            .with_repetition(Repetition::REQUIRED)
            .build()
            .map_err(internal),
        Kind::TextList => {
            let element = text_type("element", Repetition::OPTIONAL)?;
            let list = Type::group_type_builder("list")
                .with_repetition(Repetition::REPEATED)
                .with_fields(vec![Arc::new(element)])
                .build()
                .map_err(internal)?;
            Type::group_type_builder(c.name)
                .with_repetition(Repetition::OPTIONAL)
                .with_logical_type(Some(LogicalType::List))
                .with_converted_type(ConvertedType::LIST)
                .with_fields(vec![Arc::new(list)])
                .build()
                .map_err(internal)
        }
    }
}

/// Writes one Parquet table, a row group at a time.
pub(crate) struct TableWriter {
    path: PathBuf,
    columns: Vec<Column>,
    writer: SerializedFileWriter<AtomicFile>,
    rows: Vec<Vec<Cell>>,
    written: u64,
}

impl TableWriter {
    pub(crate) fn create(path: &Path, columns: &[Column]) -> Result<Self> {
        let fields = columns
            .iter()
            .map(|c| column_type(c).map(Arc::new))
            .collect::<Result<Vec<_>>>()?;
        let schema = Type::group_type_builder("schema")
            .with_fields(fields)
            .build()
            .map_err(|e| Error::Internal(format!("parquet schema: {e}")))?;
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_created_by(format!("mtr {}", env!("CARGO_PKG_VERSION")))
            .build();
        let file = AtomicFile::create(path)?;
        let writer = SerializedFileWriter::new(file, Arc::new(schema), Arc::new(props))
            .map_err(|e| failed(path, &e))?;
        Ok(Self {
            path: path.to_path_buf(),
            columns: columns.to_vec(),
            writer,
            rows: Vec::new(),
            written: 0,
        })
    }

    /// Adds a row (one cell per column, in column order).
    pub(crate) fn push(&mut self, row: Vec<Cell>) -> Result<()> {
        if row.len() != self.columns.len() {
            return Err(Error::Internal(format!(
                "{}: a row of {} cells for {} columns",
                self.path.display(),
                row.len(),
                self.columns.len()
            )));
        }
        self.rows.push(row);
        if self.rows.len() >= ROWS_PER_GROUP {
            self.flush_group()?;
        }
        Ok(())
    }

    fn flush_group(&mut self) -> Result<()> {
        if self.rows.is_empty() {
            return Ok(());
        }
        let path = self.path.clone();
        let mut group = self
            .writer
            .next_row_group()
            .map_err(|e| failed(&path, &e))?;
        for (i, column) in self.columns.iter().enumerate() {
            let Some(mut w) = group.next_column().map_err(|e| failed(&path, &e))? else {
                return Err(Error::Internal(format!(
                    "{}: too few columns",
                    path.display()
                )));
            };
            let cells = self.rows.iter().map(|r| &r[i]);
            match column.kind {
                Kind::Int => {
                    let values = cells.map(int_cell).collect::<Result<Vec<i32>>>()?;
                    w.typed::<Int32Type>().write_batch(&values, None, None)
                }
                Kind::Text | Kind::OptText => {
                    let (values, defs) = text_cells(cells, column)?;
                    let defs = (column.kind == Kind::OptText).then_some(&defs[..]);
                    w.typed::<ByteArrayType>().write_batch(&values, defs, None)
                }
                Kind::TextList => {
                    let (values, defs, reps) = list_cells(cells, column)?;
                    w.typed::<ByteArrayType>()
                        .write_batch(&values, Some(&defs), Some(&reps))
                }
            }
            .map_err(|e| failed(&path, &e))?;
            w.close().map_err(|e| failed(&path, &e))?;
        }
        group.close().map_err(|e| failed(&path, &e))?;
        self.written += self.rows.len() as u64;
        self.rows.clear();
        Ok(())
    }

    /// Writes the last row group and the footer, then moves the file into place; returns the
    /// number of rows.
    pub(crate) fn finish(mut self) -> Result<u64> {
        self.flush_group()?;
        let file = self
            .writer
            .into_inner()
            .map_err(|e| failed(&self.path, &e))?;
        file.commit()?;
        Ok(self.written)
    }
}

fn failed(path: &Path, e: &parquet::errors::ParquetError) -> Error {
    Error::io(path, std::io::Error::other(e.to_string()))
}

fn int_cell(c: &Cell) -> Result<i32> {
    match c {
        Cell::Int(v) => Ok(*v),
        other => Err(Error::Internal(format!("{other:?} in an integer column"))),
    }
}

fn text_cells<'a>(
    cells: impl Iterator<Item = &'a Cell>,
    column: &Column,
) -> Result<(Vec<ByteArray>, Vec<i16>)> {
    let (mut values, mut defs) = (Vec::new(), Vec::new());
    for c in cells {
        match c {
            Cell::Text(s) => {
                values.push(ByteArray::from(s.as_str()));
                defs.push(1);
            }
            Cell::Null if column.kind == Kind::OptText => defs.push(0),
            other => {
                return Err(Error::Internal(format!(
                    "{other:?} in the text column `{}`",
                    column.name
                )));
            }
        }
    }
    Ok((values, defs))
}

/// Values, definition and repetition levels of a list column: an empty list is defined up to
/// the list (level 1), an element up to the element (level 3).
fn list_cells<'a>(
    cells: impl Iterator<Item = &'a Cell>,
    column: &Column,
) -> Result<(Vec<ByteArray>, Vec<i16>, Vec<i16>)> {
    let (mut values, mut defs, mut reps) = (Vec::new(), Vec::new(), Vec::new());
    for c in cells {
        let Cell::List(items) = c else {
            return Err(Error::Internal(format!(
                "{c:?} in the list column `{}`",
                column.name
            )));
        };
        if items.is_empty() {
            defs.push(1);
            reps.push(0);
        }
        for (i, s) in items.iter().enumerate() {
            values.push(ByteArray::from(s.as_str()));
            defs.push(3);
            reps.push(i16::from(i > 0));
        }
    }
    Ok((values, defs, reps))
}

/// A value read from a table: text (also from a byte column that holds UTF-8), an integer
/// (any width, or a float without a fraction), null, or a list of texts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Text(String),
    Int(i64),
    Null,
    List(Vec<String>),
}

/// Reads the named columns of a Parquet file row by row.
pub(crate) struct TableReader {
    path: PathBuf,
    reader: SerializedFileReader<File>,
    projection: Type,
    names: Vec<String>,
}

impl TableReader {
    /// Opens `path` for the columns `wanted` (`(name, required)`); a required column the file
    /// lacks is a user error naming the file, the column and the columns it has.
    pub(crate) fn open(path: &Path, wanted: &[(&str, bool)]) -> Result<Self> {
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        let reader = guarded(path, || SerializedFileReader::new(file)).map_err(|e| {
            Error::from(
                InputError::new(path, format!("not a readable Parquet file: {e}"))
                    .hint("write it with pyarrow or `datasets`, or re-download it"),
            )
        })?;
        let root = reader.metadata().file_metadata().schema().clone();
        let have: Vec<String> = root
            .get_fields()
            .iter()
            .map(|f| f.name().to_string())
            .collect();
        let mut fields = Vec::new();
        let mut names = Vec::new();
        for (name, required) in wanted {
            match root.get_fields().iter().find(|f| f.name() == *name) {
                Some(f) => {
                    fields.push(f.clone());
                    names.push(name.to_string());
                }
                None if *required => {
                    return Err(InputError::new(
                        path,
                        format!("no column `{name}` (the file has {})", have.join(", ")),
                    )
                    .field(*name)
                    .hint("a Hugging Face retrieval folder has corpus (_id, title, text), queries (_id, text) and qrels (query-id, corpus-id, score)")
                    .into());
                }
                None => {}
            }
        }
        let projection = Type::group_type_builder("schema")
            .with_fields(fields)
            .build()
            .map_err(|e| Error::Internal(format!("projection of {}: {e}", path.display())))?;
        Ok(Self {
            path: path.to_path_buf(),
            reader,
            projection,
            names,
        })
    }

    /// Calls `f` with each row's 0-based number and its cells by column name (columns the file
    /// lacks are absent).
    pub(crate) fn for_each(&self, mut f: impl FnMut(u64, &Row<'_>) -> Result<()>) -> Result<()> {
        let mut rows = guarded(&self.path, || {
            self.reader.get_row_iter(Some(self.projection.clone()))
        })
        .map_err(|e| self.unreadable(&e))?;
        for no in 0usize.. {
            let Some(row) =
                guarded(&self.path, || rows.next().transpose()).map_err(|e| self.unreadable(&e))?
            else {
                break;
            };
            let mut cells = Vec::with_capacity(self.names.len());
            for (name, field) in row.into_columns() {
                let value = value_of(field).ok_or_else(|| {
                    Error::from(
                        InputError::new(
                            &self.path,
                            format!("row {no}: the column holds neither text, a whole number nor a list of texts"),
                        )
                        .field(name.clone()),
                    )
                })?;
                cells.push((name, value));
            }
            f(
                no as u64,
                &Row {
                    path: &self.path,
                    no: no as u64,
                    cells,
                },
            )?;
        }
        Ok(())
    }

    fn unreadable(&self, e: &parquet::errors::ParquetError) -> Error {
        InputError::new(&self.path, format!("not a readable Parquet file: {e}")).into()
    }
}

/// A call into the parquet crate, whose panic becomes its error: the crate asserts on some
/// damaged pages (a dictionary page holding fewer values than it claims panicked `mtr import
/// hf`; found by fuzzing), so each call runs under `catch_unwind`, deliberately: nothing of
/// ours runs inside it, and the read stops at the error.
fn guarded<T>(
    path: &Path,
    call: impl FnOnce() -> parquet::errors::Result<T>,
) -> parquet::errors::Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(call)).unwrap_or_else(|_| {
        tracing::debug!("{}: the parquet reader panicked", path.display());
        Err(parquet::errors::ParquetError::General(
            "the Parquet reader failed on a damaged page".into(),
        ))
    })
}

impl std::fmt::Debug for TableReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableReader")
            .field("path", &self.path)
            .field("columns", &self.names)
            .finish()
    }
}

fn value_of(field: Field) -> Option<Value> {
    Some(match field {
        Field::Null => Value::Null,
        Field::Str(s) => Value::Text(s),
        Field::Bytes(b) => Value::Text(String::from_utf8(b.data().to_vec()).ok()?),
        Field::Byte(v) => Value::Int(v.into()),
        Field::Short(v) => Value::Int(v.into()),
        Field::Int(v) => Value::Int(v.into()),
        Field::Long(v) => Value::Int(v),
        Field::UByte(v) => Value::Int(v.into()),
        Field::UShort(v) => Value::Int(v.into()),
        Field::UInt(v) => Value::Int(v.into()),
        Field::ULong(v) => Value::Int(i64::try_from(v).ok()?),
        Field::Double(v) if v.fract() == 0.0 && v.abs() < 1e15 => Value::Int(v as i64),
        Field::Float(v) if v.fract() == 0.0 && v.abs() < 1e7 => Value::Int(v as i64),
        Field::ListInternal(list) => Value::List(
            list.elements()
                .iter()
                .map(|e| match e {
                    Field::Str(s) => Some(s.clone()),
                    _ => None,
                })
                .collect::<Option<Vec<_>>>()?,
        ),
        _ => return None,
    })
}

/// One row being read: its cells by column name.
pub(crate) struct Row<'a> {
    path: &'a Path,
    no: u64,
    cells: Vec<(String, Value)>,
}

impl Row<'_> {
    fn get(&self, name: &str) -> Option<&Value> {
        self.cells.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// A user error naming the file, the row and the column `name`.
    pub(crate) fn error(&self, name: &str, message: &str) -> Error {
        InputError::new(self.path, format!("row {}: {message}", self.no))
            .field(name)
            .into()
    }

    /// A text cell (an integer id reads as its decimal digits); null or absent is an error.
    pub(crate) fn text(&self, name: &str) -> Result<String> {
        match self.get(name) {
            Some(Value::Text(s)) => Ok(s.clone()),
            Some(Value::Int(v)) => Ok(v.to_string()),
            Some(Value::Null) | None => Err(self.error(name, "no value")),
            Some(Value::List(_)) => Err(self.error(name, "a list where text belongs")),
        }
    }

    /// A text cell that may be null or absent.
    pub(crate) fn opt_text(&self, name: &str) -> Result<Option<String>> {
        match self.get(name) {
            Some(Value::Null) | None => Ok(None),
            _ => self.text(name).map(Some),
        }
    }

    /// An integer cell.
    pub(crate) fn int(&self, name: &str) -> Result<i64> {
        match self.get(name) {
            Some(Value::Int(v)) => Ok(*v),
            Some(Value::Text(s)) => s
                .trim()
                .parse()
                .map_err(|_| self.error(name, &format!("`{s}` is not a whole number"))),
            _ => Err(self.error(name, "no whole number")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const COLUMNS: [Column; 4] = [
        Column {
            name: "_id",
            kind: Kind::Text,
        },
        Column {
            name: "rewrite",
            kind: Kind::OptText,
        },
        Column {
            name: "turn",
            kind: Kind::Int,
        },
        Column {
            name: "history",
            kind: Kind::TextList,
        },
    ];

    #[test]
    fn a_table_reads_back_cell_for_cell() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("t.parquet");
        let mut w = TableWriter::create(&p, &COLUMNS).unwrap();
        let rows = [
            ("q1", None, 1, vec![]),
            ("q2", Some("rewritten 年假"), 2, vec!["a", "b"]),
            ("q3", Some(""), -3, vec![""]),
        ];
        for (id, rw, turn, hist) in &rows {
            w.push(vec![
                Cell::Text(id.to_string()),
                rw.map_or(Cell::Null, |s| Cell::Text(s.into())),
                Cell::Int(*turn),
                Cell::List(hist.iter().map(|s| s.to_string()).collect()),
            ])
            .unwrap();
        }
        assert_eq!(w.finish().unwrap(), 3);
        let r = TableReader::open(&p, &[("_id", true), ("rewrite", true), ("turn", true)]).unwrap();
        let mut got = Vec::new();
        r.for_each(|_, row| {
            got.push((row.text("_id")?, row.opt_text("rewrite")?, row.int("turn")?));
            Ok(())
        })
        .unwrap();
        assert_eq!(
            got,
            vec![
                ("q1".into(), None, 1),
                ("q2".into(), Some("rewritten 年假".into()), 2),
                ("q3".into(), Some(String::new()), -3)
            ]
        );
        let r = TableReader::open(&p, &[("history", true)]).unwrap();
        let mut lists = Vec::new();
        r.for_each(|_, row| {
            lists.push(row.get("history").cloned());
            Ok(())
        })
        .unwrap();
        assert_eq!(lists[1], Some(Value::List(vec!["a".into(), "b".into()])));
        assert_eq!(lists[2], Some(Value::List(vec![String::new()])));
    }

    #[test]
    fn a_missing_column_names_the_file_and_column() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("t.parquet");
        let mut w = TableWriter::create(&p, &COLUMNS[..1]).unwrap();
        w.push(vec![Cell::Text("x".into())]).unwrap();
        w.finish().unwrap();
        let e = TableReader::open(&p, &[("_id", true), ("text", true)]).unwrap_err();
        assert!(e.is_user_error());
        let s = e.to_string();
        assert!(s.contains("t.parquet") && s.contains("`text`"), "{s}");
        // an optional column the file lacks reads as absent
        let r = TableReader::open(&p, &[("_id", true), ("title", false)]).unwrap();
        r.for_each(|_, row| {
            assert_eq!(row.opt_text("title")?, None);
            Ok(())
        })
        .unwrap();
        // not a Parquet file at all
        std::fs::write(&p, "not parquet").unwrap();
        assert!(TableReader::open(&p, &[]).unwrap_err().is_user_error());
    }

    /// Found by fuzzing (`import_hf`, after the synthesis corpus reader's `pipeline_corpus_parquet`
    /// found it first): a dictionary page that claims one value more than it holds made the
    /// parquet crate assert, and `mtr import hf` panicked instead of naming the file.
    #[test]
    fn a_damaged_page_is_the_users_file_at_fault_not_a_panic() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("t.parquet");
        let mut w = TableWriter::create(&p, &COLUMNS[..1]).unwrap();
        for i in 0..6 {
            w.push(vec![Cell::Text(["a", "b", "c"][i % 3].into())])
                .unwrap();
        }
        w.finish().unwrap();
        let dict = SerializedFileReader::new(File::open(&p).unwrap())
            .unwrap()
            .metadata()
            .row_group(0)
            .column(0)
            .dictionary_page_offset()
            .unwrap() as usize;
        // the page header (thrift compact): type, sizes, then the dictionary page header
        // (field 7: 0x4c after field 3, 0x3c after a crc) whose first field is num_values (0x15,
        // a zigzag varint: 3 values are 6)
        let mut bytes = std::fs::read(&p).unwrap();
        let at = (dict..dict + 32)
            .find(|&i| matches!(bytes[i], 0x4c | 0x3c) && bytes[i + 1] == 0x15 && bytes[i + 2] == 6)
            .unwrap()
            + 2;
        bytes[at] = 8;
        std::fs::write(&p, bytes).unwrap();
        let r = TableReader::open(&p, &[("_id", true)]).unwrap();
        let e = r.for_each(|_, _| Ok(())).unwrap_err();
        assert!(e.is_user_error(), "{e}");
        assert!(
            e.to_string().contains("t.parquet")
                && e.to_string().contains("not a readable Parquet file"),
            "{e}"
        );
    }
}
