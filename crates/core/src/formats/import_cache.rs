//! The import cache behind [`open_any`]: every command takes a folder in any supported format;
//! a non-native source is imported once into a folder keyed by its [`source_key`] and the
//! native copy is used from then on. The import is staged in a temporary sibling and renamed
//! into place, so a failed import leaves no half-written cache folder.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{Format, ImportOptions, detect, import, walk};
use crate::benchmark::{BenchmarkDir, MANIFEST};
use crate::error::{Error, Result};
use crate::progress::Progress;

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
pub(crate) fn source_key(src: &Path, format: Format, opts: &ImportOptions) -> Result<String> {
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
