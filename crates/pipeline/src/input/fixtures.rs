//! Corpus files in every form the readers take, written by the tests themselves (this crate's
//! and the end-to-end tests', with the `fixtures` feature) rather than committed as blobs:
//! WikiExtractor output in both forms, compressed files of each codec, and Parquet written
//! with the parquet crate's own writer in the layout of a Hugging Face dump.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;

use parquet::basic::Compression as PqCompression;
use parquet::data_type::{ByteArray, ByteArrayType};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;

use super::Document;
use super::compressed::Compression;

fn io_err(e: impl std::fmt::Display) -> io::Error {
    io::Error::other(e.to_string())
}

/// Writes `bytes` to `path` compressed as its name says (`.gz`, `.bz2`, `.zst`, `.xz`).
pub fn write_compressed(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let data = match Compression::of(&name).0 {
        Compression::None => bytes.to_vec(),
        Compression::Gzip => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(bytes)?;
            e.finish()?
        }
        Compression::Bzip2 => {
            let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
            e.write_all(bytes)?;
            e.finish()?
        }
        Compression::Zstd => zstd::stream::encode_all(bytes, 3)?,
        Compression::Xz => {
            let mut e =
                lzma_rust2::XzWriter::new(Vec::new(), lzma_rust2::XzOptions::with_preset(1))?;
            e.write_all(bytes)?;
            e.finish()?
        }
    };
    std::fs::write(path, data)
}

/// Documents in WikiExtractor's default form: `<doc>` blocks whose body repeats the title.
pub fn wikiextractor_docs(docs: &[Document]) -> String {
    docs.iter()
        .map(|d| {
            format!(
                "<doc id=\"{}\" url=\"https://en.wikipedia.org/wiki?curid={}\" title=\"{}\">\n{}\n\n{}\n</doc>\n",
                d.id,
                d.id,
                d.title.replace('&', "&amp;").replace('"', "&quot;"),
                d.title,
                d.text.trim()
            )
        })
        .collect()
}

/// The same documents in WikiExtractor's `--json` form.
pub fn wikiextractor_json(docs: &[Document]) -> String {
    docs.iter()
        .map(|d| {
            serde_json::json!({
                "id": d.id,
                "revid": "1",
                "url": format!("https://en.wikipedia.org/wiki?curid={}", d.id),
                "title": d.title,
                "text": format!("{}\n\n{}", d.title, d.text.trim()),
            })
            .to_string()
                + "\n"
        })
        .collect()
}

/// `n` short numbered documents (`Article <i>`), for tests that count and sample.
pub fn numbered(first: usize, n: usize) -> Vec<Document> {
    (first..first + n)
        .map(|i| Document {
            id: i.to_string(),
            title: format!("Article {i}"),
            text: format!("Article {i} is about topic {i}.\n\nIt has a second paragraph."),
        })
        .collect()
}

/// One row of a Parquet fixture: id, title and text (None: null).
pub type Row<'a> = (Option<&'a str>, &'a str, Option<&'a str>);

/// Writes rows as Parquet with the columns of wikimedia/wikipedia (`id, url, title, text`),
/// `per_group` rows a row group, snappy-compressed like a Hugging Face dump.
pub fn write_parquet(path: &Path, rows: &[Row<'_>], per_group: usize) -> io::Result<()> {
    let schema = Arc::new(
        parse_message_type(
            "message doc { OPTIONAL BYTE_ARRAY id (UTF8); REQUIRED BYTE_ARRAY url (UTF8); \
             REQUIRED BYTE_ARRAY title (UTF8); OPTIONAL BYTE_ARRAY text (UTF8); }",
        )
        .map_err(io_err)?,
    );
    let props = Arc::new(
        WriterProperties::builder()
            .set_compression(PqCompression::SNAPPY)
            .build(),
    );
    let mut w = SerializedFileWriter::new(File::create(path)?, schema, props).map_err(io_err)?;
    for group in rows.chunks(per_group.max(1)) {
        let mut rg = w.next_row_group().map_err(io_err)?;
        let mut col = 0;
        while let Some(mut c) = rg.next_column().map_err(io_err)? {
            let cells: Vec<Option<String>> = group
                .iter()
                .map(|(id, title, text)| match col {
                    0 => id.map(str::to_string),
                    1 => Some(format!(
                        "https://en.wikipedia.org/wiki/{}",
                        id.unwrap_or("")
                    )),
                    2 => Some(title.to_string()),
                    _ => text.map(str::to_string),
                })
                .collect();
            let values: Vec<ByteArray> = cells
                .iter()
                .flatten()
                .map(|s| ByteArray::from(s.as_str()))
                .collect();
            let defs: Vec<i16> = cells.iter().map(|c| i16::from(c.is_some())).collect();
            let optional = col == 0 || col == 3;
            c.typed::<ByteArrayType>()
                .write_batch(&values, optional.then_some(&defs[..]), None)
                .map_err(io_err)?;
            c.close().map_err(io_err)?;
            col += 1;
        }
        rg.close().map_err(io_err)?;
    }
    w.close().map_err(io_err)?;
    Ok(())
}

/// The rows of `docs` for [`write_parquet`].
pub fn rows(docs: &[Document]) -> Vec<Row<'_>> {
    docs.iter()
        .map(|d| (Some(d.id.as_str()), d.title.as_str(), Some(d.text.as_str())))
        .collect()
}
