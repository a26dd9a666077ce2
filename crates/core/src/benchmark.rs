//! The native benchmark folder: `benchmark.toml` (manifest), `corpus.jsonl` (passages),
//! `dialogues.jsonl` (one dialogue per line) and `qrels.tsv` (TREC 4-column, the gold labels
//! of all turns). The format is documented in `docs/format.md`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::atomic::write_atomic;
use crate::error::{Error, InputError, Result};
use crate::fingerprint;
use crate::jsonl::{self, JsonlWriter};
use crate::model::{Dialogue, Passage, Qrels, qrels_from_dialogues};
use crate::trec;

/// The manifest file of a benchmark folder.
pub(crate) const MANIFEST: &str = "benchmark.toml";
/// The corpus file: one [`Passage`](crate::Passage) per line.
pub const CORPUS: &str = "corpus.jsonl";
/// The dialogues file: one [`Dialogue`] per line.
pub const DIALOGUES: &str = "dialogues.jsonl";
/// The qrels file, TREC 4-column form.
pub const QRELS: &str = "qrels.tsv";
/// The files the fingerprint covers, in hashing order.
pub(crate) const DATA_FILES: [&str; 3] = [CORPUS, DIALOGUES, QRELS];

/// What a benchmark is and where it came from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The benchmark's name.
    pub name: String,
    #[serde(default = "default_version")]
    /// The benchmark's version, as its publisher gives it.
    pub version: String,
    /// ISO 639-1 code(s), e.g. `en`, `zh`, or `multi`.
    #[serde(default)]
    pub language: String,
    /// Where the data came from: `mtrag`, `beir`, `mtr-synth`, ...
    #[serde(default)]
    pub source: String,
    #[serde(default)]
    /// The data's license.
    pub license: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    /// One paragraph on what the benchmark is.
    pub description: String,
    /// BLAKE3 over the data files; see [`fingerprint::hash_files`].
    #[serde(default)]
    pub fingerprint: String,
    /// Models that generated the data, by role (e.g. `generator = "qwen2.5"`), used to warn
    /// about judges judging their own family's output.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub generator: BTreeMap<String, String>,
    /// Anything else a producer wants to record (synthesis parameters, import options).
    #[serde(default, skip_serializing_if = "toml::Table::is_empty")]
    pub extra: toml::Table,
}

fn default_version() -> String {
    "1".into()
}

/// A benchmark folder on disk.
#[derive(Debug, Clone)]
pub struct BenchmarkDir {
    root: PathBuf,
}

impl BenchmarkDir {
    /// A handle on the folder at `root` (nothing is read).
    pub fn new(root: impl AsRef<Path>) -> Self {
        Self {
            root: root.as_ref().to_path_buf(),
        }
    }
    /// Opens an existing native benchmark, checking that its files exist.
    pub fn open(root: impl AsRef<Path>) -> Result<Self> {
        let dir = Self::new(root);
        for name in [MANIFEST, CORPUS, DIALOGUES] {
            let p = dir.root.join(name);
            if !p.is_file() {
                return Err(InputError::new(&p, "missing file of a native benchmark")
                    .hint("import a benchmark with `mtr import FORMAT SRC -o DIR`")
                    .into());
            }
        }
        Ok(dir)
    }
    /// True when `root` holds a manifest and dialogues: a native benchmark folder.
    pub fn is_native(root: impl AsRef<Path>) -> bool {
        root.as_ref().join(MANIFEST).is_file() && root.as_ref().join(DIALOGUES).is_file()
    }
    /// The folder.
    pub fn root(&self) -> &Path {
        &self.root
    }
    /// The folder as a report shows it: the path as given when it is relative, else the
    /// folder's own name (an absolute path would publish the user's home folder with the
    /// report, and make reports of one benchmark differ between machines).
    pub fn display_name(&self) -> String {
        if self.root.is_absolute() {
            source_name(&self.root)
        } else {
            self.root.display().to_string()
        }
    }
    /// The path of a file of the folder (`MANIFEST`, `CORPUS`, ...).
    pub fn path(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }
    /// The corpus file's path.
    pub fn corpus_path(&self) -> PathBuf {
        self.path(CORPUS)
    }
    /// Reads the manifest.
    pub fn manifest(&self) -> Result<Manifest> {
        let p = self.path(MANIFEST);
        let text = jsonl::read_text(&p)?;
        toml::from_str(&text).map_err(|e| {
            let line = e
                .span()
                .map(|s| text[..s.start.min(text.len())].matches('\n').count() as u64 + 1);
            let mut err = InputError::new(&p, e.message().to_string());
            if let Some(l) = line {
                err = err.line(l);
            }
            err.into()
        })
    }
    /// Reads every dialogue.
    pub fn dialogues(&self) -> Result<Vec<Dialogue>> {
        jsonl::read_all(self.path(DIALOGUES))
    }
    /// Streams the corpus, calling `f` for each passage with its line number.
    pub fn for_each_passage(&self, f: impl FnMut(u64, Passage) -> Result<()>) -> Result<()> {
        jsonl::for_each(self.corpus_path(), f)
    }
    /// The qrels file, or qrels derived from the dialogues if the file is absent.
    pub fn qrels(&self) -> Result<Qrels> {
        let p = self.path(QRELS);
        if p.is_file() {
            trec::read_qrels(p)
        } else {
            Ok(qrels_from_dialogues(&self.dialogues()?))
        }
    }
    /// Fingerprint of the data files as they are now.
    pub fn compute_fingerprint(&self) -> Result<String> {
        fingerprint::hash_files(&self.root, &DATA_FILES)
    }
    /// Loads manifest and dialogues (the corpus stays on disk).
    pub fn load(&self) -> Result<Benchmark> {
        Ok(Benchmark {
            dir: self.clone(),
            manifest: self.manifest()?,
            dialogues: self.dialogues()?,
        })
    }
}

/// A benchmark with its dialogues in memory and its corpus on disk.
#[derive(Debug, Clone)]
pub struct Benchmark {
    /// The folder it was loaded from.
    pub dir: BenchmarkDir,
    /// Its manifest.
    pub manifest: Manifest,
    /// Its dialogues, in file order.
    pub dialogues: Vec<Dialogue>,
}

impl Benchmark {
    /// The number of turns of all dialogues.
    pub fn turn_count(&self) -> usize {
        self.dialogues.iter().map(|d| d.turns.len()).sum()
    }
    /// Finds a turn by query id: `(dialogue, turn index)`.
    pub fn find_turn(&self, qid: &str) -> Option<(&Dialogue, usize)> {
        self.dialogues
            .iter()
            .find_map(|d| d.turns.iter().position(|t| t.id == qid).map(|i| (d, i)))
    }
}

/// Writes a native benchmark folder from parts: the corpus is streamed from an iterator.
/// Every file is written atomically; the manifest, written last, gets the fingerprint.
pub fn write_benchmark<I>(
    root: impl AsRef<Path>,
    mut manifest: Manifest,
    dialogues: &[Dialogue],
    corpus: I,
) -> Result<BenchmarkDir>
where
    I: IntoIterator<Item = Result<Passage>>,
{
    let dir = BenchmarkDir::new(root);
    std::fs::create_dir_all(dir.root()).map_err(|e| Error::io(dir.root(), e))?;
    let mut w = JsonlWriter::create(dir.corpus_path())?;
    for p in corpus {
        w.write(&p?)?;
    }
    w.commit()?;
    let mut w = JsonlWriter::create(dir.path(DIALOGUES))?;
    for d in dialogues {
        w.write(d)?;
    }
    w.commit()?;
    trec::write_qrels(dir.path(QRELS), &qrels_from_dialogues(dialogues))?;
    manifest.fingerprint = dir.compute_fingerprint()?;
    write_manifest(&dir, &manifest)?;
    Ok(dir)
}

/// Writes the manifest of `dir` atomically.
pub(crate) fn write_manifest(dir: &BenchmarkDir, manifest: &Manifest) -> Result<()> {
    let text =
        toml::to_string_pretty(manifest).map_err(|e| Error::Internal(format!("manifest: {e}")))?;
    write_atomic(dir.path(MANIFEST), text.as_bytes())
}

/// The last component of an import source (`/home/me/data/mtrag/` -> `mtrag`), never a path.
pub fn source_name(src: &Path) -> String {
    let abs = if src.is_absolute() {
        src.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(src))
            .unwrap_or_else(|_| src.to_path_buf())
    };
    // `.` and `..` name the folder they stand for
    let clean = abs.canonicalize().unwrap_or(abs);
    clean
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "source".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Gold, Tags, Turn};

    #[test]
    fn a_report_names_an_absolute_folder_by_its_own_name_only() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("handbook-bench");
        std::fs::create_dir_all(&root).unwrap();
        assert_eq!(BenchmarkDir::new(&root).display_name(), "handbook-bench");
        assert_eq!(
            BenchmarkDir::new(root.join(".")).display_name(),
            "handbook-bench"
        );
        // a relative path is shown as given
        assert_eq!(
            BenchmarkDir::new("runs/handbook-bench").display_name(),
            "runs/handbook-bench"
        );
    }

    #[test]
    fn write_then_read_back() {
        let tmp = tempfile::tempdir().unwrap();
        let d = Dialogue {
            id: "d1".into(),
            turns: vec![Turn {
                id: "d1::1".into(),
                user: "年假有几天？".into(),
                rewrite: None,
                answer: Some("15天".into()),
                gold: vec![Gold {
                    passage_id: "p1".into(),
                    grade: 1,
                }],
                tags: Tags::default(),
            }],
            meta: Default::default(),
        };
        let p = Passage {
            id: "p1".into(),
            title: "假期".into(),
            text: "员工每年有15天年假。".into(),
            doc_id: None,
            meta: Default::default(),
        };
        let m = Manifest {
            name: "t".into(),
            language: "zh".into(),
            ..Default::default()
        };
        let dir =
            write_benchmark(tmp.path().join("b"), m, std::slice::from_ref(&d), [Ok(p)]).unwrap();
        let b = BenchmarkDir::open(dir.root()).unwrap().load().unwrap();
        assert_eq!(b.dialogues, vec![d]);
        assert_eq!(b.manifest.fingerprint, dir.compute_fingerprint().unwrap());
        assert_eq!(dir.qrels().unwrap()["d1::1"]["p1"], 1);
    }
}
