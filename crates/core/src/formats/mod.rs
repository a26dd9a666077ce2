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
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::benchmark::{BenchmarkDir, MANIFEST};
use crate::error::{Error, InputError, Result};
use crate::progress::Progress;

pub mod beir;
pub mod builder;
pub mod cast;
pub mod corpus;
mod dataset_file;
pub mod export;
pub mod group;
pub mod inscit;
pub mod json_doc;
pub mod judgements;
pub mod mtrag;
pub mod qrecc;
pub mod runs;
pub mod topiocqa;
pub mod trec_dir;
mod walk;

pub use builder::ImportReport;

/// A format mtr can read a benchmark from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// mtr's own folder (`benchmark.toml`, `corpus.jsonl`, `dialogues.jsonl`, `qrels.tsv`).
    Native,
    /// IBM MTRAG: conversations + BEIR-style retrieval tasks + corpus (per-domain or upstream layout).
    Mtrag,
    /// BEIR: `corpus.jsonl`, `queries.jsonl`, `qrels/<split>.tsv`.
    Beir,
    /// TREC: a topics file, qrels, optionally a collection.
    Trec,
    /// TopiOCQA JSON (`Conversation_no`, `Turn_no`, `Question`, `Answer`, `Topic`, ...).
    Topiocqa,
    /// QReCC JSON (`Conversation_no`, `Turn_no`, `Question`, `Rewrite`, `Truth_passages`, ...).
    Qrecc,
    /// INSCIT JSON (dialogues with `turns[].context`, `labels[].evidence[].passage_id`).
    Inscit,
    /// TREC CAsT / iKAT topics JSON plus TREC qrels.
    Cast,
}

impl Format {
    pub const ALL: [Format; 8] = [
        Format::Native,
        Format::Mtrag,
        Format::Beir,
        Format::Trec,
        Format::Topiocqa,
        Format::Qrecc,
        Format::Inscit,
        Format::Cast,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Format::Native => "native",
            Format::Mtrag => "mtrag",
            Format::Beir => "beir",
            Format::Trec => "trec",
            Format::Topiocqa => "topiocqa",
            Format::Qrecc => "qrecc",
            Format::Inscit => "inscit",
            Format::Cast => "cast",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let lower = s.to_ascii_lowercase();
        let f = match lower.as_str() {
            "native" | "mtr" => Format::Native,
            "mtrag" | "mt-rag" => Format::Mtrag,
            "beir" => Format::Beir,
            "trec" => Format::Trec,
            "topiocqa" => Format::Topiocqa,
            "qrecc" => Format::Qrecc,
            "inscit" => Format::Inscit,
            "cast" | "ikat" | "trec-cast" | "trec-ikat" => Format::Cast,
            _ => {
                return Err(format!(
                    "unknown format `{s}` (expected one of: {})",
                    Format::ALL
                        .iter()
                        .map(|f| f.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        };
        Ok(f)
    }
}

/// How query ids of flat formats (BEIR, TREC) become dialogues.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Grouping {
    /// Group when every id looks conversational (`conv::3`, `conv<::>3`, `conv_3`, `conv-3`)
    /// and grouping yields real multi-turn dialogues; otherwise one dialogue per query.
    #[default]
    Auto,
    /// One single-turn dialogue per query.
    Single,
    /// Always group by the conversational id pattern (an id that does not match is an error).
    Conversational,
}

impl FromStr for Grouping {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(Grouping::Auto),
            "single" | "none" => Ok(Grouping::Single),
            "conversational" | "conv" => Ok(Grouping::Conversational),
            _ => Err(format!(
                "unknown grouping `{s}` (expected auto, single or conversational)"
            )),
        }
    }
}

/// Options every importer understands (each uses the ones that apply to it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ImportOptions {
    /// MTRAG: import only this domain (`clapnq`, `govt`, ...); all domains when absent.
    pub domain: Option<String>,
    /// BEIR: which qrels split (`test`, `dev`, ...); default test, then dev, then the only one.
    pub split: Option<String>,
    /// Skip bad records with a warning (counted in the report) instead of failing.
    pub lenient: bool,
    /// BEIR/TREC: how query ids become dialogues.
    pub grouping: Grouping,
    /// The benchmark's name in the manifest (default: derived from the source).
    pub name: Option<String>,
    /// An explicit corpus file or folder (formats whose corpus ships separately).
    pub corpus: Option<PathBuf>,
    /// An explicit qrels file (CAsT, TREC).
    pub qrels: Option<PathBuf>,
}

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
    let checks: [(Format, Sniff); 7] = [
        (Format::Mtrag, mtrag::sniff),
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
        .hint("name the format: `mtr import FORMAT SRC -o DIR` (mtrag, beir, trec, topiocqa, qrecc, inscit, cast)")
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
/// folder, else `$XDG_CACHE_HOME/mtr/imports/<key>` (or `~/.cache/...`).
fn cache_dir_for(src: &Path, key: &str) -> Result<PathBuf> {
    let short = &key[..key.len().min(20)];
    if src.is_dir() {
        let local = src.join(".mtr").join("imports");
        if std::fs::create_dir_all(&local).is_ok() && is_writable(&local) {
            return Ok(local.join(short));
        }
    }
    let base = match std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        Some(x) => PathBuf::from(x),
        None => match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
            Some(h) => PathBuf::from(h).join(".cache"),
            None => std::env::temp_dir(),
        },
    };
    Ok(base.join("mtr").join("imports").join(short))
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
    fn format_names_roundtrip() {
        for f in Format::ALL {
            assert_eq!(f.name().parse::<Format>().unwrap(), f);
        }
        assert_eq!("iKAT".parse::<Format>().unwrap(), Format::Cast);
        assert!("nope".parse::<Format>().is_err());
    }

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
        ] {
            assert_eq!(detect(&root.join(dir)).unwrap(), want, "{dir}");
        }
        assert_eq!(
            detect(&root.join("topiocqa/topiocqa_dev.json")).unwrap(),
            Format::Topiocqa
        );
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
