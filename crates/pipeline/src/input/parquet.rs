//! Parquet corpora (Hugging Face `datasets` dumps such as wikimedia/wikipedia:
//! `data/train-00000-of-00041.parquet` with `id, url, title, text`; any flat table with an id
//! and a text column). Read row group by row group and, within one, a batch of rows at a time
//! from just the id, title and text columns (the parquet crate's column readers, without
//! Arrow), so that memory holds one batch of text, never a file. A row whose id or text is
//! null or not UTF-8 is a malformed record named by row group, row and column.

use std::fs::File;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use mtr_core::{Error as CoreError, InputError};
use parquet::column::reader::{ColumnReader, ColumnReaderImpl};
use parquet::data_type::{ByteArray, ByteArrayType, Int32Type, Int64Type};
use parquet::file::reader::{FileReader, RowGroupReader, SerializedFileReader};

use super::Document;
use super::collect::Collector;
use super::fields::CorpusFields;
use crate::error::Result;

/// Rows read per batch: a thousand Wikipedia articles are a few MB of text.
const BATCH: usize = 1024;

/// Reads every row of the Parquet file at `path`.
pub(crate) fn read(path: &Path, fields: &CorpusFields, out: &mut Collector) -> Result<()> {
    let file = File::open(path).map_err(|e| CoreError::io(path, e))?;
    let reader = guarded(path, || SerializedFileReader::new(file))?;
    let schema = reader.metadata().file_metadata().schema_descr_ptr();
    let names: Vec<String> = schema.columns().iter().map(|c| c.path().string()).collect();
    let cols = Columns::find(&names, fields, path)?;
    for g in 0..reader.num_row_groups() {
        let rg = guarded(path, || reader.get_row_group(g))?;
        read_group(rg.as_ref(), g, &cols, path, out)?;
    }
    Ok(())
}

/// The indices of the id, text and title columns.
struct Columns<'a> {
    names: &'a [String],
    id: usize,
    text: usize,
    title: Option<usize>,
}

impl<'a> Columns<'a> {
    /// Finds the columns `fields` names (or the usual names) among the file's `names`.
    fn find(names: &'a [String], fields: &CorpusFields, path: &Path) -> Result<Self> {
        let find = |candidates: &[&str]| {
            candidates
                .iter()
                .find_map(|want| names.iter().position(|n| n == want))
        };
        let missing = |what: &str, candidates: &[&str]| {
            CoreError::from(
                InputError::new(
                    path,
                    format!(
                        "no {what} column (looked for {}; the file has {})",
                        candidates.join(", "),
                        names.join(", ")
                    ),
                )
                .field(candidates.first().copied().unwrap_or(what))
                .hint("--corpus-fields names the columns, e.g. id=doc_id,text=body"),
            )
        };
        let (ids, texts) = (fields.id_names(), fields.text_names());
        Ok(Self {
            names,
            id: find(&ids).ok_or_else(|| missing("id", &ids))?,
            text: find(&texts).ok_or_else(|| missing("text", &texts))?,
            title: find(&fields.title_names()),
        })
    }
}

/// Reads the rows of row group `g`, a batch at a time.
fn read_group(
    rg: &dyn RowGroupReader,
    g: usize,
    cols: &Columns<'_>,
    path: &Path,
    out: &mut Collector,
) -> Result<()> {
    let open = |i: usize| Column::open(rg, i, &cols.names[i], path);
    let mut batch = Batch {
        id: open(cols.id)?,
        text: open(cols.text)?,
        title: cols.title.map(open).transpose()?,
    };
    let mut row = 0usize;
    loop {
        let n = batch.id.next_batch(path)?;
        if n == 0 {
            return Ok(());
        }
        let same = batch.text.next_batch(path)? == n
            && batch.title.as_mut().map_or(Ok(n), |t| t.next_batch(path))? == n;
        if !same {
            return Err(CoreError::from(InputError::new(
                path,
                format!("row group {g}: the columns have different numbers of rows"),
            ))
            .into());
        }
        for r in 0..n {
            batch.row(
                r,
                Place {
                    path,
                    g,
                    row: row + r,
                },
                out,
            );
        }
        row += n;
    }
}

/// Where a row is: file, row group, row.
#[derive(Clone, Copy)]
struct Place<'a> {
    path: &'a Path,
    g: usize,
    row: usize,
}

impl Place<'_> {
    fn error(self, field: &str, message: &str) -> InputError {
        InputError::new(
            self.path,
            format!("row group {}, row {}: {message}", self.g, self.row),
        )
        .field(field)
    }
}

/// The columns of one row group, read a batch at a time together.
struct Batch {
    id: Column,
    text: Column,
    title: Option<Column>,
}

impl Batch {
    /// Row `r` of the current batch as a document, or a malformed record.
    fn row(&self, r: usize, at: Place<'_>, out: &mut Collector) {
        let doc_id = match self.id.string(r) {
            Cell::Text(s) if !s.trim().is_empty() => s,
            Cell::Text(_) | Cell::Null => {
                return out.malformed(at.error(&self.id.name, "no document id"));
            }
            Cell::NotUtf8 => {
                return out.malformed(at.error(&self.id.name, "the id is not UTF-8 text"));
            }
        };
        let body = match self.text.string(r) {
            Cell::Text(s) => s,
            Cell::Null => return out.malformed(at.error(&self.text.name, "no document text")),
            Cell::NotUtf8 => {
                return out.malformed(at.error(&self.text.name, "the text is not UTF-8"));
            }
        };
        let heading = match self.title.as_ref().map(|t| t.string(r)) {
            Some(Cell::Text(s)) => s,
            _ => String::new(),
        };
        let id_name = self.id.name.clone();
        out.document(
            Document {
                id: doc_id,
                title: heading,
                text: body,
            },
            || {
                InputError::new(at.path, format!("row group {}, row {}", at.g, at.row))
                    .field(id_name)
            },
        );
    }
}

/// A call into the parquet crate: its error, or its panic, is the user's unreadable file. The
/// crate asserts on some damaged pages (a dictionary page holding fewer values than it claims
/// panicked; found by fuzzing), so each call runs under `catch_unwind`, deliberately: nothing
/// of ours runs inside it, and the read stops at the error.
fn guarded<T>(path: &Path, call: impl FnOnce() -> parquet::errors::Result<T>) -> Result<T> {
    let message = match catch_unwind(AssertUnwindSafe(call)) {
        Ok(Ok(v)) => return Ok(v),
        Ok(Err(e)) => format!("not a readable Parquet file: {e}"),
        Err(_) => "not a readable Parquet file: the Parquet reader failed on a damaged page".into(),
    };
    Err(CoreError::from(
        InputError::new(path, message).hint("re-download it, or convert it with pyarrow"),
    )
    .into())
}

/// A column's typed reader.
enum Values {
    Bytes(ColumnReaderImpl<ByteArrayType>, Vec<ByteArray>),
    Int32(ColumnReaderImpl<Int32Type>, Vec<i32>),
    Int64(ColumnReaderImpl<Int64Type>, Vec<i64>),
}

/// One column of a row group, read a batch at a time.
struct Column {
    name: String,
    max_def: i16,
    values: Values,
    defs: Vec<i16>,
    /// Index into the batch's values of each row (None: null).
    slots: Vec<Option<usize>>,
}

/// A cell of a text column.
enum Cell {
    Text(String),
    Null,
    NotUtf8,
}

impl Column {
    fn open(rg: &dyn RowGroupReader, i: usize, name: &str, path: &Path) -> Result<Self> {
        let descr = rg.metadata().column(i).column_descr_ptr();
        if descr.max_rep_level() > 0 {
            return Err(CoreError::from(
                InputError::new(
                    path,
                    "a list column cannot be a document's id, title or text",
                )
                .field(name),
            )
            .into());
        }
        let values = match guarded(path, || rg.get_column_reader(i))? {
            ColumnReader::ByteArrayColumnReader(r) => Values::Bytes(r, Vec::new()),
            ColumnReader::Int32ColumnReader(r) => Values::Int32(r, Vec::new()),
            ColumnReader::Int64ColumnReader(r) => Values::Int64(r, Vec::new()),
            _ => {
                return Err(CoreError::from(
                    InputError::new(path, "the column is neither text nor an integer").field(name),
                )
                .into());
            }
        };
        Ok(Self {
            name: name.to_string(),
            max_def: descr.max_def_level(),
            values,
            defs: Vec::new(),
            slots: Vec::new(),
        })
    }

    /// Reads the next batch of rows; returns how many (0 at the end of the row group).
    fn next_batch(&mut self, path: &Path) -> Result<usize> {
        self.defs.clear();
        let defs = (self.max_def > 0).then_some(&mut self.defs);
        let values = &mut self.values;
        let (rows, _, _) = guarded(path, || match values {
            Values::Bytes(r, v) => {
                v.clear();
                r.read_records(BATCH, defs, None, v)
            }
            Values::Int32(r, v) => {
                v.clear();
                r.read_records(BATCH, defs, None, v)
            }
            Values::Int64(r, v) => {
                v.clear();
                r.read_records(BATCH, defs, None, v)
            }
        })?;
        self.slots.clear();
        if self.max_def > 0 {
            let mut next = 0;
            for d in &self.defs {
                if *d == self.max_def {
                    self.slots.push(Some(next));
                    next += 1;
                } else {
                    self.slots.push(None);
                }
            }
        } else {
            self.slots.extend((0..rows).map(Some));
        }
        Ok(rows)
    }

    /// Row `r` of the batch as text.
    fn string(&self, r: usize) -> Cell {
        let Some(Some(i)) = self.slots.get(r) else {
            return Cell::Null;
        };
        match &self.values {
            Values::Bytes(_, v) => match v.get(*i).map(|b| std::str::from_utf8(b.data())) {
                Some(Ok(s)) => Cell::Text(s.to_string()),
                Some(Err(_)) => Cell::NotUtf8,
                None => Cell::Null,
            },
            Values::Int32(_, v) => v.get(*i).map_or(Cell::Null, |x| Cell::Text(x.to_string())),
            Values::Int64(_, v) => v.get(*i).map_or(Cell::Null, |x| Cell::Text(x.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::fixtures::write_parquet;

    #[test]
    fn rows_become_documents_across_row_groups_and_nulls_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("train-00000-of-00001.parquet");
        let rows: Vec<(Option<&str>, &str, Option<&str>)> = vec![
            (Some("1"), "One", Some("first text")),
            (Some("2"), "Two", Some("second text")),
            (Some("3"), "Three", None),
            (None, "Four", Some("fourth")),
            (Some("5"), "Five", Some("fifth text")),
        ];
        write_parquet(&p, &rows, 2).unwrap();
        let mut c = Collector::new(None);
        read(&p, &CorpusFields::default(), &mut c).unwrap();
        let c = c.finish();
        let (docs, read_n, bad) = (c.kept, c.read, c.malformed);
        let docs: Vec<_> = docs.into_iter().map(|(d, _)| d).collect();
        let ids: Vec<_> = docs.iter().map(|d| d.id.as_str()).collect();
        assert_eq!((ids, read_n), (vec!["1", "2", "5"], 3));
        assert_eq!(docs[1].title, "Two");
        assert_eq!(docs[2].text, "fifth text");
        let (first, n) = bad.unwrap();
        assert_eq!((first.field.as_deref(), n), (Some("text"), 2));
        assert!(first.to_string().contains("row group 1, row 0"), "{first}");
        // a mapping to a column the file lacks names the columns it has
        let mut c = Collector::new(None);
        let e = read(&p, &"text=body".parse().unwrap(), &mut c).unwrap_err();
        assert!(e.to_string().contains("id, url, title, text"), "{e}");
    }

    /// An uncompressed file of one dictionary-encoded text column (`id`, `text`: `n` rows of
    /// `k` distinct values) whose first dictionary page claims one value more than it holds.
    fn dictionary_claiming_a_value_too_many(path: &Path) {
        use parquet::file::properties::WriterProperties;
        use parquet::file::writer::SerializedFileWriter;
        use std::sync::Arc;
        let schema = Arc::new(
            parquet::schema::parser::parse_message_type(
                "message doc { REQUIRED BYTE_ARRAY id (UTF8); REQUIRED BYTE_ARRAY text (UTF8); }",
            )
            .unwrap(),
        );
        let props = Arc::new(WriterProperties::builder().build());
        let mut w = SerializedFileWriter::new(File::create(path).unwrap(), schema, props).unwrap();
        let mut rg = w.next_row_group().unwrap();
        while let Some(mut c) = rg.next_column().unwrap() {
            let values: Vec<ByteArray> = (0..6)
                .map(|i| ByteArray::from(["a", "b", "c"][i % 3]))
                .collect();
            c.typed::<ByteArrayType>()
                .write_batch(&values, None, None)
                .unwrap();
            c.close().unwrap();
        }
        rg.close().unwrap();
        w.close().unwrap();
        let dict = SerializedFileReader::new(File::open(path).unwrap())
            .unwrap()
            .metadata()
            .row_group(0)
            .column(0)
            .dictionary_page_offset()
            .unwrap() as usize;
        // the page header (thrift compact): type, sizes, then the dictionary page header
        // (field 7: 0x4c after field 3, 0x3c after a crc) whose first field is num_values (0x15,
        // a zigzag varint: 3 values are 6)
        let mut bytes = std::fs::read(path).unwrap();
        let at = (dict..dict + 32)
            .find(|&i| matches!(bytes[i], 0x4c | 0x3c) && bytes[i + 1] == 0x15 && bytes[i + 2] == 6)
            .unwrap()
            + 2;
        bytes[at] = 8;
        std::fs::write(path, bytes).unwrap();
    }

    /// Found by the fuzz campaign (`pipeline_corpus_parquet`): the parquet crate asserts that a
    /// dictionary page holds the values it claims, and a damaged file panicked `mtr synth` /
    /// `mtr corpus` instead of naming the file.
    #[test]
    fn a_damaged_page_is_the_users_file_at_fault_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("corpus.parquet");
        dictionary_claiming_a_value_too_many(&p);
        let mut c = Collector::new(None);
        let e = read(&p, &CorpusFields::default(), &mut c).unwrap_err();
        assert!(e.is_user_error(), "{e}");
        assert!(
            e.to_string().contains("corpus.parquet")
                && e.to_string().contains("not a readable Parquet file"),
            "{e}"
        );
    }
}
