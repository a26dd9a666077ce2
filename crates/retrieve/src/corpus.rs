//! Where the passages to index come from: a native benchmark folder, a bare JSONL corpus
//! (mtr's `{id, title, text}` or BEIR's `{_id, title, text}`), or any iterator of passages.
//! Passages are streamed and checked on the way (empty or duplicate ids, empty texts, ids that
//! would break a TREC run file), never loaded all at once.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::path::{Path, PathBuf};

use mtr_core::{BenchmarkDir, InputError, Passage};
use serde::Deserialize;

use crate::analyzer::{Analyzer, Language};
use crate::error::{Error, Result};

/// A corpus on disk.
#[derive(Debug, Clone)]
pub enum CorpusSource {
    /// A native benchmark folder (its `corpus.jsonl`, and its manifest's language).
    Benchmark(BenchmarkDir),
    /// A JSONL file of passages.
    File(PathBuf),
}

impl CorpusSource {
    /// A benchmark folder when `path` is one, else a JSONL corpus file (or a folder holding
    /// `corpus.jsonl`).
    pub fn detect(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        if BenchmarkDir::is_native(path) {
            return Ok(CorpusSource::Benchmark(BenchmarkDir::open(path)?));
        }
        if path.is_dir() {
            let c = path.join(mtr_core::benchmark::CORPUS);
            if c.is_file() {
                return Ok(CorpusSource::File(c));
            }
            return Err(InputError::new(
                path,
                "neither a native benchmark nor a folder with corpus.jsonl",
            )
            .hint("pass a benchmark folder (`mtr import ...`) or a JSONL corpus file")
            .into());
        }
        if path.is_file() {
            return Ok(CorpusSource::File(path.to_path_buf()));
        }
        Err(InputError::new(path, "no such file or folder").into())
    }

    /// The JSONL file holding the passages.
    pub fn corpus_path(&self) -> PathBuf {
        match self {
            CorpusSource::Benchmark(b) => b.corpus_path(),
            CorpusSource::File(p) => p.clone(),
        }
    }

    /// The language the source declares (a benchmark manifest's `language`), if any.
    pub(crate) fn declared_analyzer(&self) -> Result<Option<Analyzer>> {
        match self {
            CorpusSource::Benchmark(b) => Ok(Language::from_code(&b.manifest()?.language)),
            CorpusSource::File(_) => Ok(None),
        }
    }

    /// Resolves a language setting to an analyzer: explicit `en`/`zh` win, `auto` uses the
    /// declared language and falls back to detection over the first 200 passages.
    pub(crate) fn resolve_analyzer(&self, language: Language) -> Result<Analyzer> {
        match language {
            Language::En => return Ok(Analyzer::English),
            Language::Zh => return Ok(Analyzer::Chinese),
            Language::Auto => {}
        }
        if let Some(a) = self.declared_analyzer()? {
            return Ok(a);
        }
        let mut sample = Vec::new();
        let path = self.corpus_path();
        let mut lines = mtr_core::jsonl::Lines::open(&path)?;
        while let Some(line) = lines.next_line() {
            let (no, text) = line?;
            let p = parse_passage(&path, no, text)?;
            sample.push(p.text);
            if sample.len() >= 200 {
                break;
            }
        }
        Ok(Analyzer::detect(sample.iter().map(String::as_str)))
    }

    /// The passages as an iterator (parsed, not checked; indexing checks them).
    pub fn passages(&self) -> Result<PassageIter> {
        let path = self.corpus_path();
        Ok(PassageIter {
            lines: mtr_core::jsonl::Lines::open(&path)?,
            path,
        })
    }

    /// Streams the checked passages: `f(line_no, passage)`.
    pub fn for_each(&self, mut f: impl FnMut(u64, Passage) -> Result<()>) -> Result<()> {
        let path = self.corpus_path();
        let mut lines = mtr_core::jsonl::Lines::open(&path)?;
        while let Some(line) = lines.next_line() {
            let (no, text) = line?;
            let p = parse_passage(&path, no, text)?;
            f(no, p)?;
        }
        Ok(())
    }
}

/// Passages of a corpus file, streamed.
pub struct PassageIter {
    lines: mtr_core::jsonl::Lines<std::io::BufReader<std::fs::File>>,
    path: PathBuf,
}

impl Iterator for PassageIter {
    type Item = Result<Passage>;
    fn next(&mut self) -> Option<Result<Passage>> {
        let path = &self.path;
        self.lines.next_line().map(|line| {
            line.map_err(Error::from)
                .and_then(|(no, text)| parse_passage(path, no, text))
        })
    }
}

/// A passage line in any of the accepted shapes.
#[derive(Deserialize)]
struct RawPassage {
    #[serde(alias = "_id", alias = "docid")]
    id: serde_json::Value,
    #[serde(default)]
    title: Option<String>,
    #[serde(alias = "contents")]
    text: String,
    #[serde(default)]
    doc_id: Option<String>,
}

/// Parses one corpus line; ids may be strings or integers (BEIR corpora use both).
pub(crate) fn parse_passage(path: &Path, line_no: u64, text: &str) -> Result<Passage> {
    let raw: RawPassage = mtr_core::jsonl::parse_line(path, line_no, text)?;
    let id = match raw.id {
        serde_json::Value::String(s) => s,
        serde_json::Value::Number(n) => n.to_string(),
        other => {
            return Err(InputError::new(
                path,
                format!("id must be a string or number, found {other}"),
            )
            .line(line_no)
            .field("id")
            .into());
        }
    };
    Ok(Passage {
        id,
        title: raw.title.unwrap_or_default(),
        text: raw.text,
        doc_id: raw.doc_id,
        meta: Default::default(),
    })
}

/// Checks passages as they stream by: non-empty ids without whitespace (TREC run files are
/// whitespace-separated), no id twice; and hashes their content. A passage whose text is only
/// whitespace is real data (an official MTRAG corpus has them and its runs rank them): it is
/// indexed (it can match by its title only) and counted, with one warning at the end.
pub(crate) struct PassageChecker {
    origin: PathBuf,
    seen: HashMap<u64, u64, BuildHasherDefault<IdentityHasher>>,
    hasher: blake3::Hasher,
    count: u64,
    /// Passages whose text is only whitespace, and the first one's id and line.
    empty: u64,
    first_empty: Option<(String, u64)>,
}

impl PassageChecker {
    /// `origin` names the input in error messages (a file, or a label for an iterator).
    pub(crate) fn new(origin: impl AsRef<Path>) -> Self {
        Self {
            origin: origin.as_ref().to_path_buf(),
            seen: HashMap::default(),
            hasher: blake3::Hasher::new(),
            count: 0,
            empty: 0,
            first_empty: None,
        }
    }

    /// Checks one passage found at `line` (1-based line, or the passage's position + 1).
    pub(crate) fn check(&mut self, line: u64, p: &Passage) -> Result<()> {
        let err = |msg: String, field: &str| -> Error {
            InputError::new(&self.origin, msg)
                .line(line)
                .field(field)
                .into()
        };
        if p.id.is_empty() {
            return Err(err("empty passage id".into(), "id"));
        }
        if p.id.chars().any(char::is_whitespace) {
            return Err(err(
                format!(
                    "passage id `{}` contains whitespace, which TREC run files cannot hold",
                    p.id.escape_debug()
                ),
                "id",
            ));
        }
        if p.text.trim().is_empty() {
            self.empty += 1;
            if self.first_empty.is_none() {
                self.first_empty = Some((p.id.clone(), line));
            }
        }
        let key = id_hash(&p.id);
        if let Some(first) = self.seen.insert(key, line) {
            return Err(InputError::new(
                &self.origin,
                format!(
                    "duplicate passage id `{}` (first seen at line {first})",
                    p.id
                ),
            )
            .line(line)
            .field("id")
            .hint("passage ids must be unique within a corpus")
            .into());
        }
        for part in [
            p.id.as_bytes(),
            b"\0",
            p.title.as_bytes(),
            b"\0",
            p.text.as_bytes(),
            b"\n",
        ] {
            self.hasher.update(part);
        }
        self.count += 1;
        Ok(())
    }

    #[cfg(test)]
    pub(crate) fn count(&self) -> u64 {
        self.count
    }

    /// Passages whose text is only whitespace (indexed all the same).
    #[cfg(test)]
    pub(crate) fn empty_count(&self) -> u64 {
        self.empty
    }

    /// Ends the stream: an empty corpus is an error; returns the content hash.
    pub(crate) fn finish(self) -> Result<(u64, String)> {
        if self.count == 0 {
            return Err(InputError::new(&self.origin, "the corpus has no passages")
                .hint("an index needs at least one passage")
                .into());
        }
        if let Some((id, line)) = &self.first_empty {
            tracing::warn!(
                "{}:{line}: {} passage(s) have an empty text (the first: `{id}`): indexed, they can match by title only",
                self.origin.display(),
                self.empty
            );
        }
        Ok((self.count, self.hasher.finalize().to_hex().to_string()))
    }
}

/// 64-bit hash of an id (the first 8 bytes of its BLAKE3 hash). Two distinct ids share one
/// with probability about n^2 / 2^65 (1e-4 at 50M passages); such a pair would be reported
/// as a duplicate naming both lines, never missed.
fn id_hash(id: &str) -> u64 {
    let h = blake3::hash(id.as_bytes());
    let b = h.as_bytes();
    u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
}

/// The keys are already uniform hashes: do not hash them again.
#[derive(Default)]
struct IdentityHasher(u64);

impl std::hash::Hasher for IdentityHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8) | u64::from(*b);
        }
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = i;
    }
}

/// Content hash of a corpus file, computed the same way as during indexing (for checking
/// that an index still matches a corpus whose file was rewritten).
pub(crate) fn content_hash(src: &CorpusSource) -> Result<String> {
    let mut c = PassageChecker::new(src.corpus_path());
    src.for_each(|line, p| c.check(line, &p))?;
    Ok(c.finish()?.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(id: &str, text: &str) -> Passage {
        Passage {
            id: id.into(),
            title: String::new(),
            text: text.into(),
            doc_id: None,
            meta: Default::default(),
        }
    }

    #[test]
    fn checker_reports_bad_passages_with_line_and_field() {
        let mut c = PassageChecker::new("c.jsonl");
        c.check(1, &p("a", "x")).unwrap();
        let e = c.check(2, &p("a", "y")).unwrap_err();
        assert!(e.is_user_error());
        let s = e.to_string();
        assert!(
            s.contains("c.jsonl:2") && s.contains("duplicate") && s.contains("line 1"),
            "{s}"
        );
        // An empty text is real data (MTRAG has it): indexed and counted, not an error.
        c.check(3, &p("b", "  ")).unwrap();
        assert_eq!((c.count(), c.empty_count()), (2, 1));
        let s = c.check(4, &p("b c", "t")).unwrap_err().to_string();
        assert!(s.contains("whitespace"), "{s}");
        let s = PassageChecker::new("e.jsonl")
            .finish()
            .unwrap_err()
            .to_string();
        assert!(s.contains("e.jsonl") && s.contains("no passages"), "{s}");
    }

    #[test]
    fn beir_and_numeric_ids_parse() {
        let q = parse_passage(
            Path::new("c"),
            1,
            r#"{"_id": 17, "title": "T", "text": "body"}"#,
        )
        .unwrap();
        assert_eq!((q.id.as_str(), q.title.as_str()), ("17", "T"));
        let e = parse_passage(Path::new("c"), 3, r#"{"title": "T"}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("c:3"), "{e}");
    }
}
