//! Importers from the published formats of conversational retrieval benchmarks into mtr's native
//! benchmark folder, format auto-detection, and [`open_any`], which lets every command take a
//! folder in any supported format: it is imported once into a cache keyed by the source's
//! fingerprint and the native copy is used from then on.
//!
//! One module per format; each exposes `import(src, out, opts, progress) -> ImportReport` and a
//! cheap `sniff(path) -> bool` used by [`detect`]. Shared machinery (strict-or-lenient problem
//! handling, the streaming writer of the native folder, JSON documents with line numbers,
//! corpus readers, grouping of query ids into dialogues) lives in the helper modules.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::benchmark::{BenchmarkDir, MANIFEST};
use crate::error::{Error, InputError, Result};
use crate::progress::Progress;

pub mod beir;
pub mod builder;
pub mod cast;
pub mod chatrag;
pub mod coral;
pub mod corpus;
mod dataset_file;
pub mod doc2dial;
pub mod export;
pub mod group;
pub mod hf;
pub mod inscit;
pub mod json_doc;
pub mod judgements;
pub mod mtrag;
mod options;
pub mod qrecc;
pub mod quac;
pub mod runs;
mod scalar;
#[cfg(test)]
mod test_support;
pub mod topiocqa;
pub mod trec_dir;
mod typed_doc;
pub mod walk;

pub use builder::ImportReport;
pub use options::{Format, Grouping, ImportOptions};

/// Figures out the format of a file or folder.
pub fn detect(path: &Path) -> Result<Format> {
    if !path.exists() {
        return Err(InputError::new(path, "no such file or folder").into());
    }
    if path.is_dir() && BenchmarkDir::is_native(path) {
        return Ok(Format::Native);
    }
    // Most specific first: MTRAG folders also look like BEIR folders inside.
    type Sniff = fn(&Path) -> bool;
    let checks: [(Format, Sniff); 12] = [
        (Format::Mtrag, mtrag::sniff),
        (Format::Hf, hf::sniff),
        (Format::Chatrag, chatrag::sniff),
        (Format::Coral, coral::sniff),
        (Format::Doc2dial, doc2dial::sniff),
        (Format::Quac, quac::sniff),
        (Format::Beir, beir::sniff),
        (Format::Inscit, inscit::sniff),
        (Format::Qrecc, qrecc::sniff),
        (Format::Topiocqa, topiocqa::sniff),
        (Format::Cast, cast::sniff),
        (Format::Trec, trec_dir::sniff),
    ];
    for (format, sniff) in checks {
        if sniff(path) {
            tracing::debug!("{} looks like {format}", path.display());
            return Ok(format);
        }
    }
    Err(InputError::new(path, "cannot tell the benchmark format of this file or folder")
        .hint("name the format: `mtr import FORMAT SRC -o DIR` (mtrag, beir, trec, topiocqa, qrecc, inscit, cast, chatrag, coral, doc2dial, quac, hf)")
        .into())
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

/// A native benchmark for any supported file or folder: the folder itself when it is native,
/// else an import into a cache folder keyed by the source's fingerprint (reused while the source
/// and options are unchanged).
pub fn open_any(src: &Path, opts: &ImportOptions) -> Result<BenchmarkDir> {
    open_any_with(src, None, opts, &crate::progress::NoProgress)
}

/// [`open_any`] with an explicit format (skips detection) and a progress sink.
pub fn open_any_with(
    src: &Path,
    format: Option<Format>,
    opts: &ImportOptions,
    progress: &dyn Progress,
) -> Result<BenchmarkDir> {
    let format = match format {
        Some(f) => f,
        None => detect(src)?,
    };
    if format == Format::Native {
        return BenchmarkDir::open(src);
    }
    let key = source_key(src, format, opts)?;
    let cache = cache_dir_for(src, &key)?;
    if cache.join(MANIFEST).is_file() && BenchmarkDir::is_native(&cache) {
        tracing::info!(
            "using the cached import of {} at {}",
            src.display(),
            cache.display()
        );
        return BenchmarkDir::open(&cache);
    }
    let parent = cache
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    std::fs::create_dir_all(&parent).map_err(|e| Error::io(&parent, e))?;
    let tmp = tempfile::Builder::new()
        .prefix(".import-")
        .tempdir_in(&parent)
        .map_err(|e| Error::io(&parent, e))?;
    tracing::info!(
        "importing {} ({format}) into {}",
        src.display(),
        cache.display()
    );
    let report = import(format, src, tmp.path(), opts, progress)?;
    for w in report.warnings.iter().take(20) {
        tracing::warn!("{w}");
    }
    let staged = tmp.keep();
    if let Err(e) = std::fs::rename(&staged, &cache) {
        // Another process finished the same import first: use theirs.
        let _ = std::fs::remove_dir_all(&staged);
        if !BenchmarkDir::is_native(&cache) {
            return Err(Error::io(&cache, e));
        }
    }
    BenchmarkDir::open(&cache)
}

/// Fingerprint of an import source: every file's relative path, size and modification time,
/// plus the format, the options and mtr's version. Cheap (no file is read) and changes whenever
/// a source file does.
pub fn source_key(src: &Path, format: Format, opts: &ImportOptions) -> Result<String> {
    let mut hasher = blake3::Hasher::new();
    hasher.update(format.name().as_bytes());
    hasher.update(b"\0");
    hasher.update(env!("CARGO_PKG_VERSION").as_bytes());
    hasher.update(b"\0");
    hasher.update(crate::fingerprint::hash_json(opts).as_bytes());
    let mut files: Vec<PathBuf> = Vec::new();
    for extra in [&opts.corpus, &opts.qrels].into_iter().flatten() {
        files.extend(walk::files(extra, 8)?);
    }
    if src.is_file() {
        // Single-file formats read companions (corpus, ground truth, qrels) beside the file.
        if let Some(parent) = src.parent().filter(|p| !p.as_os_str().is_empty()) {
            files.extend(walk::files(parent, 2)?);
        }
    }
    files.extend(walk::files(src, 8)?);
    let mut entries: BTreeMap<String, (u64, u128)> = BTreeMap::new();
    for f in files {
        let meta = std::fs::metadata(&f).map_err(|e| Error::io(&f, e))?;
        let mtime = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        entries.insert(f.to_string_lossy().into_owned(), (meta.len(), mtime));
    }
    for (name, (len, mtime)) in entries {
        hasher.update(format!("\n{name}\0{len}\0{mtime}").as_bytes());
    }
    Ok(hasher.finalize().to_hex().to_string())
}

/// Where the import of `src` is cached: `<src>/.mtr/imports/<key>` when `src` is a writable
/// folder, else `imports/<key>` in mtr's cache folder ([`crate::dirs`]).
fn cache_dir_for(src: &Path, key: &str) -> Result<PathBuf> {
    let short = &key[..key.len().min(20)];
    if src.is_dir() {
        let local = src.join(".mtr").join("imports");
        if std::fs::create_dir_all(&local).is_ok() && is_writable(&local) {
            return Ok(local.join(short));
        }
    }
    Ok(crate::dirs::Dirs::from_env().imports().join(short))
}

fn is_writable(dir: &Path) -> bool {
    tempfile::Builder::new()
        .prefix(".probe-")
        .tempfile_in(dir)
        .is_ok()
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

    #[test]
    fn open_any_imports_once_into_the_cache() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/formats/beir");
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("beir");
        std::fs::create_dir_all(src.join("qrels")).unwrap();
        for f in [
            "corpus.jsonl",
            "queries.jsonl",
            "qrels/test.tsv",
            "qrels/dev.tsv",
        ] {
            std::fs::copy(root.join(f), src.join(f)).unwrap();
        }
        let a = open_any(&src, &ImportOptions::default()).unwrap();
        assert!(
            a.root().starts_with(src.join(".mtr/imports")),
            "{}",
            a.root().display()
        );
        let stamp = std::fs::metadata(a.path(MANIFEST))
            .unwrap()
            .modified()
            .unwrap();
        let b = open_any(&src, &ImportOptions::default()).unwrap();
        assert_eq!(a.root(), b.root());
        assert_eq!(
            std::fs::metadata(b.path(MANIFEST))
                .unwrap()
                .modified()
                .unwrap(),
            stamp,
            "the cached import is reused"
        );
        // Other options: another import.
        let c = open_any(
            &src,
            &ImportOptions {
                split: Some("dev".into()),
                ..Default::default()
            },
        )
        .unwrap();
        assert_ne!(a.root(), c.root());
        assert_eq!(c.load().unwrap().turn_count(), 1);
        // A changed source: a new import.
        std::fs::write(
            src.join("qrels/test.tsv"),
            "query-id\tcorpus-id\tscore\nc1_1\td1\t1\n",
        )
        .unwrap();
        let d = open_any(&src, &ImportOptions::default()).unwrap();
        assert_ne!(a.root(), d.root());
        assert_eq!(d.qrels().unwrap().len(), 1);
        // A native folder is returned as is.
        assert_eq!(
            open_any(d.root(), &ImportOptions::default())
                .unwrap()
                .root(),
            d.root()
        );
    }
}
