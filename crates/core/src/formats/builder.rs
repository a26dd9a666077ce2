//! The writer every importer feeds: passages are streamed straight into `corpus.jsonl` (only
//! their ids stay in memory), dialogues are collected, and [`Builder::finish`] checks the whole
//! (duplicate ids, empty queries, gold passages absent from the corpus) before anything becomes
//! visible: every file is written to a temporary file and renamed, the manifest last.
//!
//! Bad records go through [`Diag`]: strict imports stop at the first one with an error naming
//! file, line and field; lenient imports skip it, keep a warning and count it by kind.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::json_doc::{JsonDoc, Rec};
use crate::atomic::StagedDir;
use crate::benchmark::{self, BenchmarkDir, DIALOGUES, Manifest, QRELS, source_name};
use crate::error::{Error, InputError, Result};
use crate::jsonl::JsonlWriter;
use crate::model::{Dialogue, Passage, Turn, qrels_from_dialogues};
use crate::trec;

/// How many warnings are kept verbatim (the rest are only counted).
const KEPT_WARNINGS: usize = 200;

/// Strict-or-lenient handling of bad records.
#[derive(Debug, Default)]
pub(super) struct Diag {
    lenient: bool,
    warnings: Vec<String>,
    warning_count: u64,
    skipped: BTreeMap<String, u64>,
}

impl Diag {
    pub(super) fn new(lenient: bool) -> Self {
        Self {
            lenient,
            ..Default::default()
        }
    }

    /// A bad record of kind `kind`: an error when strict; when lenient a warning, a skipped-record
    /// count, and `Ok(())` so the caller skips the record and goes on.
    pub(super) fn problem(&mut self, kind: &str, err: InputError) -> Result<()> {
        if !self.lenient {
            return Err(err.into());
        }
        *self.skipped.entry(kind.to_string()).or_default() += 1;
        self.warn(err.to_string());
        Ok(())
    }

    /// Something the user should know that is not a bad record (e.g. a corpus made of the gold
    /// passages only).
    pub(super) fn warn(&mut self, msg: impl Into<String>) {
        let msg = msg.into();
        self.warning_count += 1;
        if self.warnings.len() < KEPT_WARNINGS {
            tracing::warn!("{msg}");
            self.warnings.push(msg);
        }
    }

    #[cfg(test)]
    pub(super) fn skipped(&self) -> &BTreeMap<String, u64> {
        &self.skipped
    }

    /// One record of a JSON document parsed into `T`; a record that does not parse is a
    /// `malformed-record` problem, `Ok(None)` when lenient so the caller skips it.
    pub(super) fn parsed<T: DeserializeOwned>(
        &mut self,
        doc: &JsonDoc,
        rec: &Rec<'_>,
    ) -> Result<Option<T>> {
        match doc.parse(rec) {
            Ok(t) => Ok(Some(t)),
            Err(e) => {
                self.problem("malformed-record", e)?;
                Ok(None)
            }
        }
    }
}

/// Where a gold label came from, to name it in an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Origin {
    pub file: PathBuf,
    pub line: Option<u64>,
    pub field: String,
}

impl Origin {
    pub(super) fn new(file: &Path, line: Option<u64>, field: impl Into<String>) -> Self {
        Self {
            file: file.to_path_buf(),
            line,
            field: field.into(),
        }
    }
    pub(super) fn error(&self, message: impl Into<String>) -> InputError {
        let mut e = InputError::new(&self.file, message).field(self.field.clone());
        if let Some(l) = self.line {
            e = e.line(l);
        }
        e
    }
}

/// What an import produced, for the command's summary.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ImportReport {
    /// The source format's name.
    pub format: String,
    /// The benchmark folder written.
    pub out: PathBuf,
    /// Dialogues written.
    pub dialogues: usize,
    /// Turns written.
    pub turns: usize,
    /// Turns with at least one gold passage (the queries of `qrels.tsv`).
    pub judged_turns: usize,
    /// Passages written.
    pub passages: u64,
    /// (query, passage) judgements in `qrels.tsv`.
    pub qrels_pairs: usize,
    /// Passages imported although their text (and title) is only whitespace: kept because
    /// runs rank them; `mtr validate` warns about them and the audit skips them.
    pub empty_passages: u64,
    /// Records skipped by `--lenient`, by kind.
    pub skipped: BTreeMap<String, u64>,
    /// The first warnings verbatim; `warning_count` counts them all.
    pub warnings: Vec<String>,
    /// Warnings in all (`warnings` keeps the first few).
    pub warning_count: u64,
    /// The benchmark's content fingerprint.
    pub fingerprint: String,
}

/// Streams a native benchmark folder into existence.
pub(super) struct Builder {
    out: PathBuf,
    /// The folder written, moved over `out` when the import finishes.
    stage: Option<StagedDir>,
    corpus: Option<JsonlWriter>,
    ids: HashSet<String>,
    passages: u64,
    gold_origins: HashMap<(String, String), Origin>,
    /// Passages kept although their title and text are only whitespace.
    empty_passages: u64,
    /// The first of them: id, file, line (named in the warning).
    first_empty: Option<(String, PathBuf, u64)>,
    pub diag: Diag,
}

impl Builder {
    pub(super) fn create(out: &Path, lenient: bool) -> Result<Self> {
        if out.exists() && !out.is_dir() {
            return Err(InputError::new(out, "the output path exists and is not a folder").into());
        }
        if out.is_dir() && !BenchmarkDir::is_native(out) && !is_empty_dir(out)? {
            return Err(InputError::new(
                out,
                "the output folder exists, is not empty and is not an mtr benchmark",
            )
            .hint("choose a new folder with -o; mtr only overwrites its own benchmark folders")
            .into());
        }
        let stage = StagedDir::create(out)?;
        let corpus = JsonlWriter::create(stage.path().join(benchmark::CORPUS))?;
        Ok(Self {
            out: out.to_path_buf(),
            stage: Some(stage),
            corpus: Some(corpus),
            ids: HashSet::new(),
            passages: 0,
            gold_origins: HashMap::new(),
            empty_passages: 0,
            first_empty: None,
            diag: Diag::new(lenient),
        })
    }

    /// Adds a passage read from `file:line`. Duplicate ids are bad records; a passage whose
    /// title and text are only whitespace is kept (real corpora have them and real runs rank
    /// them) and counted in [`ImportReport::empty_passages`] with one warning.
    pub(super) fn passage(&mut self, p: Passage, file: &Path, line: u64) -> Result<()> {
        if p.id.trim().is_empty() {
            return self.diag.problem(
                "empty-passage-id",
                InputError::new(file, "passage id is empty")
                    .line(line)
                    .field("id"),
            );
        }
        if p.text.trim().is_empty() && p.title.trim().is_empty() && !self.ids.contains(&p.id) {
            // Real data (an official MTRAG domain) holds such passages and its official runs
            // rank them: they are kept, counted and reported once at the end.
            self.empty_passages += 1;
            if self.first_empty.is_none() {
                self.first_empty = Some((p.id.clone(), file.to_path_buf(), line));
            }
        }
        if self.ids.contains(&p.id) {
            return self.diag.problem(
                "duplicate-passage",
                InputError::new(file, format!("duplicate passage id `{}`", p.id))
                    .line(line)
                    .field("id")
                    .hint("passage ids must be unique across the corpus"),
            );
        }
        match self.corpus.as_mut() {
            Some(w) => w.write(&p)?,
            None => return Err(Error::Internal("corpus writer already closed".into())),
        }
        self.ids.insert(p.id);
        self.passages += 1;
        Ok(())
    }

    pub(super) fn contains(&self, id: &str) -> bool {
        self.ids.contains(id)
    }

    /// Records where the judgement `(qid, pid)` came from.
    pub(super) fn gold_origin(&mut self, qid: &str, pid: &str, origin: Origin) {
        self.gold_origins
            .entry((qid.to_string(), pid.to_string()))
            .or_insert(origin);
    }

    /// Checks the dialogues against each other and the corpus, then writes everything.
    pub(super) fn finish(
        mut self,
        mut manifest: Manifest,
        dialogues: Vec<Dialogue>,
    ) -> Result<ImportReport> {
        let dialogues = self.check(dialogues)?;
        if let Some((id, file, line)) = self.first_empty.take() {
            self.diag.warn(
                InputError::new(
                    &file,
                    format!(
                        "{} passage(s) have no text, only whitespace (the first: `{id}`): imported as they are, since runs may rank them; `mtr validate` lists them and the audit skips them (empty_passage)",
                        self.empty_passages
                    ),
                )
                .line(line)
                .field("text")
                .to_string(),
            );
        }
        if manifest.language.is_empty() {
            manifest.language = crate::language::detect_language(
                dialogues
                    .iter()
                    .flat_map(|d| d.turns.iter().map(|t| t.user.as_str())),
            );
        }
        let corpus = self
            .corpus
            .take()
            .ok_or_else(|| Error::Internal("corpus writer already closed".into()))?;
        corpus.commit()?;
        let stage = self
            .stage
            .take()
            .ok_or_else(|| Error::Internal("the import was already written".into()))?;
        let dir = BenchmarkDir::new(stage.path());
        let mut w = JsonlWriter::create(dir.path(DIALOGUES))?;
        for d in &dialogues {
            w.write(d)?;
        }
        w.commit()?;
        let qrels = qrels_from_dialogues(&dialogues);
        trec::write_qrels(dir.path(QRELS), &qrels)?;
        manifest.fingerprint = dir.compute_fingerprint()?;
        benchmark::write_manifest(&dir, &manifest)?;
        stage.commit_replacing()?;
        Ok(ImportReport {
            format: manifest.source.clone(),
            out: self.out.clone(),
            dialogues: dialogues.len(),
            turns: dialogues.iter().map(|d| d.turns.len()).sum(),
            judged_turns: qrels.len(),
            passages: self.passages,
            qrels_pairs: qrels.values().map(|m| m.len()).sum(),
            empty_passages: self.empty_passages,
            skipped: self.diag.skipped.clone(),
            warnings: self.diag.warnings.clone(),
            warning_count: self.diag.warning_count,
            fingerprint: manifest.fingerprint.clone(),
        })
    }

    /// Duplicate dialogue and turn ids, empty queries, gold passages absent from the corpus.
    fn check(&mut self, dialogues: Vec<Dialogue>) -> Result<Vec<Dialogue>> {
        let corpus_known = self.passages > 0;
        if !corpus_known {
            self.diag.warn(format!(
                "{}: the corpus is empty: gold passage ids cannot be checked (give the collection with --corpus)",
                self.out.display()
            ));
        }
        let mut seen_dialogues: HashSet<String> = HashSet::new();
        let mut seen_turns: HashSet<String> = HashSet::new();
        let mut out = Vec::with_capacity(dialogues.len());
        for mut d in dialogues {
            if !seen_dialogues.insert(d.id.clone()) {
                self.duplicate_dialogue(&d)?;
                continue;
            }
            let mut turns = Vec::with_capacity(d.turns.len());
            for mut t in std::mem::take(&mut d.turns) {
                if !self.turn_is_kept(&d.id, &t, &mut seen_turns)? {
                    continue;
                }
                if corpus_known {
                    self.keep_gold_in_corpus(&mut t)?;
                }
                turns.push(t);
            }
            if turns.is_empty() {
                continue;
            }
            d.turns = turns;
            out.push(d);
        }
        Ok(out)
    }

    /// Reports a dialogue whose id an earlier one has, naming the file its first gold came from.
    fn duplicate_dialogue(&mut self, d: &Dialogue) -> Result<()> {
        let origin = d
            .turns
            .first()
            .and_then(|t| t.gold.first().map(|g| (t.id.clone(), g.passage_id.clone())));
        let file = origin
            .and_then(|k| self.gold_origins.get(&k).map(|o| o.file.clone()))
            .unwrap_or_else(|| self.out.join(DIALOGUES));
        self.diag.problem(
            "duplicate-dialogue",
            InputError::new(file, format!("duplicate dialogue id `{}`", d.id)).field("id"),
        )
    }

    /// False (after reporting the problem) for a turn whose id an earlier turn has or whose
    /// question is empty.
    fn turn_is_kept(
        &mut self,
        dialogue: &str,
        t: &Turn,
        seen_turns: &mut HashSet<String>,
    ) -> Result<bool> {
        if !seen_turns.insert(t.id.clone()) {
            self.diag.problem(
                "duplicate-turn",
                InputError::new(
                    self.out.join(DIALOGUES),
                    format!("duplicate turn id `{}` (dialogue `{dialogue}`)", t.id),
                )
                .field("turns.id"),
            )?;
            return Ok(false);
        }
        if t.user.trim().is_empty() {
            self.diag.problem(
                "empty-query",
                InputError::new(
                    self.out.join(DIALOGUES),
                    format!("turn `{}` has an empty question", t.id),
                )
                .field("user"),
            )?;
            return Ok(false);
        }
        Ok(true)
    }

    /// Drops (after reporting each) the gold passages of `t` that the corpus lacks.
    fn keep_gold_in_corpus(&mut self, t: &mut Turn) -> Result<()> {
        let mut kept = Vec::with_capacity(t.gold.len());
        for g in std::mem::take(&mut t.gold) {
            if self.ids.contains(&g.passage_id) {
                kept.push(g);
                continue;
            }
            let message = format!(
                "gold passage `{}` of turn `{}` is not in the corpus",
                g.passage_id, t.id
            );
            let err = match self.gold_origins.get(&(t.id.clone(), g.passage_id.clone())) {
                Some(o) => o.error(message),
                None => InputError::new(self.out.join(DIALOGUES), message).field("gold.passage_id"),
            };
            self.diag.problem(
                "missing-gold-passage",
                err.hint("the corpus must contain every judged passage"),
            )?;
        }
        t.gold = kept;
        Ok(())
    }
}

fn is_empty_dir(p: &Path) -> Result<bool> {
    let mut rd = std::fs::read_dir(p).map_err(|e| Error::io(p, e))?;
    Ok(rd.next().is_none())
}

/// A default manifest for an import.
pub(super) fn manifest(
    format: &str,
    name: String,
    license: &str,
    opts: &super::options::ImportOptions,
    src: &Path,
) -> Manifest {
    let mut extra = toml::Table::new();
    let mut imp = toml::Table::new();
    imp.insert("format".into(), toml::Value::String(format.into()));
    // only the source's own name: an absolute path would publish the importer's home folder
    // with the benchmark, and make the manifest differ between machines
    imp.insert("source".into(), toml::Value::String(source_name(src)));
    if let Some(d) = &opts.domain {
        imp.insert("domain".into(), toml::Value::String(d.clone()));
    }
    if let Some(s) = &opts.split {
        imp.insert("split".into(), toml::Value::String(s.clone()));
    }
    if opts.lenient {
        imp.insert("lenient".into(), toml::Value::Boolean(true));
    }
    extra.insert("import".into(), toml::Value::Table(imp));
    Manifest {
        name: opts.name.clone().unwrap_or(name),
        version: "1".into(),
        language: String::new(),
        source: format.into(),
        license: license.into(),
        extra,
        ..Default::default()
    }
}

/// Marks a benchmark whose corpus holds only the gold passages (no collection was found).
pub(super) fn mark_gold_only(manifest: &mut Manifest) {
    manifest
        .extra
        .insert("corpus".into(), toml::Value::String("gold-only".into()));
}

/// A name for a benchmark from its source path (the folder or file stem).
pub(super) fn name_from_path(src: &Path) -> String {
    let stem = src
        .file_stem()
        .or_else(|| src.file_name())
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    if stem.is_empty() || stem == "." || stem == ".." {
        "benchmark".into()
    } else {
        stem
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Gold, Tags, Turn};

    fn turn(id: &str, user: &str, gold: &[&str]) -> Turn {
        Turn {
            id: id.into(),
            user: user.into(),
            rewrite: None,
            answer: None,
            gold: gold
                .iter()
                .map(|g| Gold {
                    passage_id: (*g).into(),
                    grade: 1,
                })
                .collect(),
            tags: Tags::default(),
        }
    }

    fn passage(id: &str) -> Passage {
        Passage {
            id: id.into(),
            title: String::new(),
            text: "t".into(),
            doc_id: None,
            meta: Default::default(),
        }
    }

    #[test]
    fn missing_gold_names_origin_or_is_skipped_when_lenient() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("qrels.tsv");
        for lenient in [false, true] {
            let out = tmp.path().join(format!("out-{lenient}"));
            let mut b = Builder::create(&out, lenient).unwrap();
            b.passage(passage("p1"), &src, 1).unwrap();
            b.gold_origin("d::1", "p9", Origin::new(&src, Some(7), "corpus-id"));
            let d = Dialogue {
                id: "d".into(),
                turns: vec![turn("d::1", "q", &["p1", "p9"])],
                meta: Default::default(),
            };
            let res = b.finish(
                Manifest {
                    name: "x".into(),
                    ..Default::default()
                },
                vec![d],
            );
            if lenient {
                let r = res.unwrap();
                assert_eq!(r.skipped["missing-gold-passage"], 1);
                assert_eq!(r.qrels_pairs, 1);
            } else {
                let e = res.unwrap_err().to_string();
                assert!(
                    e.contains("qrels.tsv:7") && e.contains("corpus-id") && e.contains("p9"),
                    "{e}"
                );
                assert!(!out.exists(), "a failed import leaves nothing");
            }
        }
    }

    #[test]
    fn a_failed_import_over_a_benchmark_leaves_it_as_it_was() {
        let tmp = tempfile::tempdir().unwrap();
        let src = tmp.path().join("c.jsonl");
        let out = tmp.path().join("bench");
        let d = |pids: &[&str]| Dialogue {
            id: "d".into(),
            turns: vec![turn("d::1", "q", pids)],
            meta: Default::default(),
        };
        let manifest = || Manifest {
            name: "x".into(),
            ..Default::default()
        };
        let mut b = Builder::create(&out, false).unwrap();
        b.passage(passage("p1"), &src, 1).unwrap();
        b.finish(manifest(), vec![d(&["p1"])]).unwrap();
        let before: Vec<(String, Vec<u8>)> = ["benchmark.toml", "corpus.jsonl", "dialogues.jsonl"]
            .iter()
            .map(|f| (f.to_string(), std::fs::read(out.join(f)).unwrap()))
            .collect();
        // a second import that fails after its corpus is written
        let mut b = Builder::create(&out, false).unwrap();
        b.passage(passage("p2"), &src, 1).unwrap();
        b.passage(passage("p3"), &src, 2).unwrap();
        assert!(b.finish(manifest(), vec![d(&["p9"])]).is_err());
        for (f, bytes) in &before {
            assert_eq!(&std::fs::read(out.join(f)).unwrap(), bytes, "{f}");
        }
        // and one dropped half-way (an error in a reader)
        let mut b = Builder::create(&out, false).unwrap();
        b.passage(passage("p2"), &src, 1).unwrap();
        drop(b);
        let left: Vec<String> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(left, vec!["bench"], "no staging folder is left");
        assert_eq!(
            std::fs::read(out.join("corpus.jsonl")).unwrap(),
            before[1].1
        );
        // a process killed half-way (no destructor runs) leaves no output folder
        let fresh = tmp.path().join("fresh");
        let mut b = Builder::create(&fresh, false).unwrap();
        b.passage(passage("p1"), &src, 1).unwrap();
        std::mem::forget(b);
        assert!(
            !fresh.exists(),
            "a killed import leaves no half-written folder"
        );
    }

    #[test]
    fn duplicate_passage_and_turn() {
        let tmp = tempfile::tempdir().unwrap();
        let f = tmp.path().join("c.jsonl");
        let mut b = Builder::create(&tmp.path().join("o"), false).unwrap();
        b.passage(passage("p1"), &f, 1).unwrap();
        let e = b.passage(passage("p1"), &f, 2).unwrap_err().to_string();
        assert!(
            e.contains("c.jsonl:2") && e.contains("duplicate passage"),
            "{e}"
        );

        let mut b = Builder::create(&tmp.path().join("o2"), true).unwrap();
        b.passage(passage("p1"), &f, 1).unwrap();
        let d1 = Dialogue {
            id: "d".into(),
            turns: vec![
                turn("t1", "q", &["p1"]),
                turn("t1", "q", &[]),
                turn("t2", " ", &[]),
            ],
            meta: Default::default(),
        };
        let r = b.finish(Manifest::default(), vec![d1]).unwrap();
        assert_eq!(r.turns, 1);
        assert_eq!(r.skipped["duplicate-turn"], 1);
        assert_eq!(r.skipped["empty-query"], 1);
    }

    #[test]
    fn whitespace_passages_are_kept_with_one_warning() {
        let tmp = tempfile::tempdir().unwrap();
        let f = tmp.path().join("corpus_x.jsonl");
        let mut b = Builder::create(&tmp.path().join("o"), false).unwrap();
        b.passage(passage("p1"), &f, 1).unwrap();
        for (i, id) in ["e1", "e2"].iter().enumerate() {
            let mut p = passage(id);
            p.text = " \n\t ".into();
            b.passage(p, &f, i as u64 + 2).unwrap();
        }
        let d = Dialogue {
            id: "d".into(),
            turns: vec![turn("d::1", "q", &["p1"])],
            meta: Default::default(),
        };
        let r = b.finish(Manifest::default(), vec![d]).unwrap();
        assert_eq!((r.passages, r.empty_passages), (3, 2));
        assert!(r.skipped.is_empty(), "{:?}", r.skipped);
        let w: Vec<&String> = r
            .warnings
            .iter()
            .filter(|w| w.contains("no text"))
            .collect();
        assert_eq!(w.len(), 1, "{:?}", r.warnings);
        assert!(
            w[0].contains("corpus_x.jsonl:2")
                && w[0].contains("2 passage(s)")
                && w[0].contains("`e1`"),
            "{}",
            w[0]
        );
        let corpus = std::fs::read_to_string(tmp.path().join("o").join(benchmark::CORPUS)).unwrap();
        assert_eq!(corpus.lines().count(), 3);
    }

    #[test]
    fn refuses_to_overwrite_foreign_folder() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("precious.txt"), "x").unwrap();
        let e = Builder::create(tmp.path(), false).err().unwrap();
        assert!(e.to_string().contains("not empty"), "{e}");
    }
}
