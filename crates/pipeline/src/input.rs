//! Reading the documents to synthesize from, whatever form a researcher has them in:
//! WikiExtractor output (both forms) in any folder tree, folders of JSON lines or JSON files,
//! BEIR's and mtr's `corpus.jsonl`, MTRAG's passage-level zips, Parquet files or folders (the
//! Hugging Face dump layout included), folders of `.md`/`.txt` files, each compressed or not
//! ([`files`] tells which files are read as what, [`compressed`] decompresses while reading).
//! Everything streams: one record at a time goes into the [`collect::Collector`], which keeps
//! all documents, or with `--max-documents N` a seeded uniform sample of N drawn over the
//! whole input (reservoir sampling), so a dump is never held in memory whole. Field names come
//! from [`fields::CorpusFields`]. A malformed record fails the read naming the file, line (or
//! row group and row) and field of the first and counting the rest, unless `skip_bad` is set.
//! Documents come back in input order (files sorted, records as they come).

mod collect;
mod compressed;
mod document;
mod documents;
mod fields;
pub(crate) mod files;
#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;
mod html;
mod json;
mod load;
mod markup;
mod office;
mod pages;
mod parquet;
mod pdf;
mod sections;
mod summary;
mod text;
mod wikiextractor;

pub use document::{Document, Source};
pub use fields::CorpusFields;
pub use load::{
    Loaded, ReadOptions, SourceKind, Unreadable, corpus_name, detect, load, read, read_with,
};
pub use summary::{InputReport, Sample, SkippedFile};
