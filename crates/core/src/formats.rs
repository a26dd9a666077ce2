//! Importers from the published formats of conversational retrieval benchmarks into mtr's native
//! benchmark folder, format auto-detection, and [`open_any`], which lets every command take a
//! folder in any supported format: it is imported once into a cache keyed by the source's
//! fingerprint and the native copy is used from then on.
//!
//! One module per format; each exposes `import(src, out, opts, progress) -> ImportReport` and a
//! cheap `sniff(path) -> bool` used by [`detect`]. Shared machinery (strict-or-lenient problem
//! handling, the streaming writer of the native folder, JSON documents with line numbers,
//! corpus readers, grouping of query ids into dialogues) lives in the helper modules.

use std::path::Path;

use crate::benchmark::BenchmarkDir;
use crate::error::{InputError, Result};
use crate::progress::Progress;

mod beir;
mod beir_trec_export;
mod builder;
mod cast;
mod chatrag;
mod coral;
mod corpus;
mod dataset_file;
mod doc2dial;
mod group;
mod hf;
mod import_cache;
mod inscit;
mod json_doc;
mod judgements;
mod mtrag;
mod options;
mod qrecc;
mod quac;
#[cfg(test)]
mod roundtrip_tests;
mod runs;
mod scalar;
#[cfg(test)]
mod test_support;
mod topiocqa;
mod trec_dir;
mod typed_doc;
pub mod walk;

pub use beir_trec_export::{ExportReport, QueryField, export_beir, export_trec};
pub use builder::ImportReport;
pub use corpus::{CorpusOptions, ID_FIELDS, TEXT_FIELDS, passage_from_json};
pub use hf::{CardSection, HfOptions, export_hf};
pub use import_cache::{open_any, open_any_with};
pub use json_doc::JsonDoc;
pub use mtrag::passage_doc_id;
pub use options::{Format, Grouping, ImportOptions};
pub use runs::read_run_any;

/// Figures out the format of a file or folder.
pub fn detect(path: &Path) -> Result<Format> {
    if !path.exists() {
        return Err(InputError::new(path, "no such file or folder").into());
    }
    if path.is_dir() && BenchmarkDir::is_native(path) {
        return Ok(Format::Native);
    }
    // Most specific first: MTRAG folders also look like BEIR folders inside.
    const ORDER: [Format; 12] = [
        Format::Mtrag,
        Format::Hf,
        Format::Chatrag,
        Format::Coral,
        Format::Doc2dial,
        Format::Quac,
        Format::Beir,
        Format::Inscit,
        Format::Qrecc,
        Format::Topiocqa,
        Format::Cast,
        Format::Trec,
    ];
    if let Some(format) = ORDER.into_iter().find(|f| looks_like(*f, path)) {
        tracing::debug!("{} looks like {format}", path.display());
        return Ok(format);
    }
    Err(InputError::new(path, "cannot tell the benchmark format of this file or folder")
        .hint("name the format: `mtr import FORMAT SRC -o DIR` (mtrag, beir, trec, topiocqa, qrecc, inscit, cast, chatrag, coral, doc2dial, quac, hf)")
        .into())
}

/// Whether `path` looks like a source in `format` (a cheap look at names and first bytes;
/// [`detect`] asks the formats in order, most specific first).
pub fn looks_like(format: Format, path: &Path) -> bool {
    match format {
        Format::Native => path.is_dir() && BenchmarkDir::is_native(path),
        Format::Mtrag => mtrag::sniff(path),
        Format::Beir => beir::sniff(path),
        Format::Trec => trec_dir::sniff(path),
        Format::Topiocqa => topiocqa::sniff(path),
        Format::Qrecc => qrecc::sniff(path),
        Format::Inscit => inscit::sniff(path),
        Format::Cast => cast::sniff(path),
        Format::Chatrag => chatrag::sniff(path),
        Format::Coral => coral::sniff(path),
        Format::Doc2dial => doc2dial::sniff(path),
        Format::Quac => quac::sniff(path),
        Format::Hf => hf::sniff(path),
    }
}

/// Imports `src` (in `format`) into a native benchmark folder at `out`.
pub fn import(
    format: Format,
    src: &Path,
    out: &Path,
    opts: &ImportOptions,
    progress: &dyn Progress,
) -> Result<ImportReport> {
    if !src.exists() {
        return Err(InputError::new(src, "no such file or folder").into());
    }
    match format {
        Format::Native => Err(
            InputError::new(src, "this is already a native mtr benchmark")
                .hint("use it directly, or copy the folder")
                .into(),
        ),
        Format::Mtrag => mtrag::import(src, out, opts, progress),
        Format::Beir => beir::import(src, out, opts, progress),
        Format::Trec => trec_dir::import(src, out, opts, progress),
        Format::Topiocqa => topiocqa::import(src, out, opts, progress),
        Format::Qrecc => qrecc::import(src, out, opts, progress),
        Format::Inscit => inscit::import(src, out, opts, progress),
        Format::Cast => cast::import(src, out, opts, progress),
        Format::Chatrag => chatrag::import(src, out, opts, progress),
        Format::Coral => coral::import(src, out, opts, progress),
        Format::Doc2dial => doc2dial::import(src, out, opts, progress),
        Format::Quac => quac::import(src, out, opts, progress),
        Format::Hf => hf::import(src, out, opts, progress),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detect_names_missing_path() {
        let e = detect(Path::new("/definitely/not/here")).unwrap_err();
        assert!(e.is_user_error());
    }

    #[test]
    fn every_fixture_is_detected() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/formats");
        for (dir, want) in [
            ("mtrag", Format::Mtrag),
            ("beir", Format::Beir),
            ("trec", Format::Trec),
            ("topiocqa", Format::Topiocqa),
            ("qrecc", Format::Qrecc),
            ("inscit", Format::Inscit),
            ("cast", Format::Cast),
            ("ikat", Format::Cast),
            ("chatrag", Format::Chatrag),
            ("coral", Format::Coral),
            ("doc2dial", Format::Doc2dial),
            ("quac", Format::Quac),
        ] {
            assert_eq!(detect(&root.join(dir)).unwrap(), want, "{dir}");
        }
        assert_eq!(
            detect(&root.join("topiocqa/topiocqa_dev.json")).unwrap(),
            Format::Topiocqa
        );
        // a ChatRAG-Bench subset folder and one of its files, a release's data file alone
        for (path, want) in [
            ("chatrag/data/doc2dial", Format::Chatrag),
            ("chatrag/data/inscit/dev.json", Format::Chatrag),
            ("coral/test/new_test_conversation.json", Format::Coral),
            ("quac/val_v0.2.json", Format::Quac),
            ("doc2dial/doc2dial_dial_validation.json", Format::Doc2dial),
        ] {
            assert_eq!(detect(&root.join(path)).unwrap(), want, "{path}");
        }
        let tmp = tempfile::tempdir().unwrap();
        assert!(detect(tmp.path()).unwrap_err().is_user_error());
    }
}
