//! Reading a corpus path as a whole: the files [`super::files`] lists, each through its
//! reader into one [`Collector`], then the malformed records (the first named, the rest
//! counted, or skipped with `skip_bad`) and the sample drawn, reported in an
//! [`InputReport`]. Document files (PDF, DOCX, ODT, HTML, Markdown, reStructuredText) go through
//! [`super::documents`]; one that cannot be read is skipped and listed, or fails the read
//! when [`Unreadable::Fail`].

use std::path::Path;

use mtr_core::{BenchmarkDir, Error as CoreError, InputError};
use rayon::prelude::*;

use super::collect::Collector;
use super::document::{Document, Source};
use super::fields::CorpusFields;
use super::files::{self, CorpusFile, Format};
use super::summary::{InputReport, Sample, SkippedFile};
use super::{compressed, documents, json, parquet, text, wikiextractor};
use crate::error::Result;

/// What kind of source a corpus path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    /// One corpus file.
    File,
    /// A folder of corpus files.
    Folder,
    /// A native mtr benchmark folder (read from its `corpus.jsonl`).
    Benchmark,
}

/// Detects the kind of source at `path`.
pub fn detect(path: &Path) -> Result<SourceKind> {
    if path.is_dir() {
        if BenchmarkDir::is_native(path) {
            return Ok(SourceKind::Benchmark);
        }
        return Ok(SourceKind::Folder);
    }
    if path.is_file() {
        return Ok(SourceKind::File);
    }
    Err(CoreError::from(InputError::new(path, "no such file or folder")).into())
}

/// How to read a corpus.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadOptions {
    /// Which record fields hold the id, title and text.
    pub fields: CorpusFields,
    /// Keep a seeded uniform sample of this many documents (0: all).
    pub max_documents: usize,
    /// The sample's seed.
    pub seed: u64,
    /// Skip malformed records (counted) instead of failing.
    pub skip_bad: bool,
}

/// What an unreadable document file does to a read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Unreadable {
    /// It is skipped, named with its reason in the report.
    #[default]
    Skip,
    /// The read fails on it (`--strict`), naming the file and the reason.
    Fail,
}

/// The documents read and what reading found.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The documents, in input order.
    pub documents: Vec<Document>,
    /// Where each document came from (`sources[i]` is `documents[i]`'s).
    pub sources: Vec<Source>,
    /// What reading found.
    pub report: InputReport,
}

/// Reads a corpus path as `opts` says, skipping (and listing) unreadable document files.
pub fn read(path: &Path, opts: &ReadOptions) -> Result<Loaded> {
    read_with(path, opts, Unreadable::Skip)
}

/// Reads a corpus path as `opts` says; `unreadable` says what an unreadable document file
/// (an encrypted PDF, a damaged DOCX) does to the read.
pub fn read_with(path: &Path, opts: &ReadOptions, unreadable: Unreadable) -> Result<Loaded> {
    let files = files::list(path)?;
    let sample = (opts.max_documents > 0).then_some((opts.max_documents, opts.seed));
    let mut out = Collector::new(sample);
    let root = if path.is_dir() {
        path
    } else {
        path.parent().unwrap_or(path)
    };
    let mut report = InputReport {
        files: files.len(),
        ..Default::default()
    };
    let mut at = 0;
    while at < files.len() {
        let f = &files[at];
        if !f.format.is_document() || f.format == Format::Text {
            out.begin_file(relative(root, &f.path));
            read_records(root, f, opts, &mut out)?;
            at += 1;
            continue;
        }
        // a run of document files, read side by side, collected in order
        let run = files[at..]
            .iter()
            .take(DOCUMENT_BATCH)
            .take_while(|f| f.format.is_document() && f.format != Format::Text)
            .count();
        read_documents(
            root,
            &files[at..at + run],
            unreadable,
            &mut report,
            &mut out,
        )?;
        at += run;
    }
    let super::collect::Collected {
        kept,
        read,
        malformed: bad,
    } = out.finish();
    report.documents = read;
    if let Some((first, n)) = bad {
        report.malformed_skipped = malformed(first, n, opts.skip_bad)?;
    }
    if kept.is_empty() {
        return Err(CoreError::from(nothing_read(path, &report.skipped)).into());
    }
    if opts.max_documents > 0 && read > opts.max_documents as u64 {
        report.sample = Some(Sample {
            kept: kept.len(),
            seed: opts.seed,
        });
    }
    let (documents, sources) = kept.into_iter().unzip();
    Ok(Loaded {
        documents,
        sources,
        report,
    })
}

/// Document files read side by side at most (their documents are held until collected).
const DOCUMENT_BATCH: usize = 64;

/// Reads document files side by side and collects their documents in order; an unreadable
/// one is listed in `report` (or, strict, fails the read).
fn read_documents(
    root: &Path,
    batch: &[CorpusFile],
    unreadable: Unreadable,
    report: &mut InputReport,
    out: &mut Collector,
) -> Result<()> {
    let parsed: Vec<_> = batch
        .par_iter()
        .map(|f| {
            let rel = relative(root, &f.path);
            let parsed = documents::parse(&f.path, &rel, f.format);
            (rel, parsed)
        })
        .collect();
    for (f, (rel, parsed)) in batch.iter().zip(parsed) {
        out.begin_file(rel.clone());
        match parsed {
            Ok(p) => {
                report.pages += p.pages;
                documents::collect(&f.path, p, out);
            }
            Err(reason) => unreadable_file(&f.path, rel, reason, unreadable, report)?,
        }
    }
    Ok(())
}

/// A document file that could not be read: fails the read (`--strict`), else is listed.
fn unreadable_file(
    path: &Path,
    rel: String,
    reason: String,
    unreadable: Unreadable,
    report: &mut InputReport,
) -> Result<()> {
    if unreadable == Unreadable::Fail {
        return Err(CoreError::from(
            InputError::new(path, reason)
                .hint("leave --strict out to skip unreadable files (they are listed)"),
        )
        .into());
    }
    tracing::warn!("{rel}: skipped: {reason}");
    report.skipped.push(SkippedFile { file: rel, reason });
    Ok(())
}

/// Reads a file of records (or a `.txt` document) into `out`.
fn read_records(
    root: &Path,
    f: &CorpusFile,
    opts: &ReadOptions,
    out: &mut Collector,
) -> Result<()> {
    match f.format {
        Format::Text => text::read(root, &f.path, out),
        Format::WikiExtractor => {
            wikiextractor::read(compressed::open(&f.path)?, &f.path, &opts.fields, out)
        }
        Format::JsonLines => {
            json::read_lines(compressed::open(&f.path)?, &f.path, &opts.fields, out)
        }
        Format::Json => {
            json::read_document(compressed::read_text(&f.path)?, &f.path, &opts.fields, out)
        }
        Format::Parquet => parquet::read(&f.path, &opts.fields, out),
        Format::Zip => json::read_zip(&f.path, &opts.fields, out),
        Format::Pdf
        | Format::Docx
        | Format::Odt
        | Format::Html
        | Format::Rst
        | Format::Markdown => Ok(()),
    }
}

/// The malformed records: an error naming the first, or (skipping) how many were skipped.
fn malformed(first: InputError, n: u64, skip_bad: bool) -> Result<u64> {
    if skip_bad {
        tracing::warn!("{n} malformed records skipped; the first: {first}");
        return Ok(n);
    }
    let more = match n - 1 {
        0 => String::new(),
        1 => " (and 1 more malformed record)".to_string(),
        k => format!(" (and {k} more malformed records)"),
    };
    let hint = "fix the record, or pass --skip-bad to leave malformed records out";
    Err(CoreError::from(InputError {
        message: format!("{}{more}", first.message),
        hint: Some(match first.hint {
            Some(h) => format!("{h}; {hint}"),
            None => hint.to_string(),
        }),
        ..first
    })
    .into())
}

/// The error of a corpus without a document, naming the files that could not be read.
fn nothing_read(path: &Path, skipped: &[SkippedFile]) -> InputError {
    if skipped.is_empty() {
        return InputError::new(path, "the corpus has no documents");
    }
    let list = skipped
        .iter()
        .take(5)
        .map(|s| format!("{} ({})", s.file, s.reason))
        .collect::<Vec<_>>()
        .join("; ");
    let more = match skipped.len() {
        n if n > 5 => format!(" and {} more", n - 5),
        _ => String::new(),
    };
    InputError::new(
        path,
        format!("no file of the corpus could be read: {list}{more}"),
    )
}

/// `file`'s path relative to the corpus folder, `/`-separated.
fn relative(root: &Path, file: &Path) -> String {
    file.strip_prefix(root)
        .unwrap_or(file)
        .to_string_lossy()
        .replace('\\', "/")
}

/// Loads every document of a corpus path, in input order.
pub fn load(path: &Path) -> Result<Vec<Document>> {
    Ok(read(path, &ReadOptions::default())?.documents)
}

/// Extensions a corpus file's name may end in, stripped from its name.
const CORPUS_EXTENSIONS: &[&str] = &[
    "gz", "bz2", "zst", "xz", "jsonl", "json", "ndjson", "parquet", "zip", "txt", "md",
];

/// The name of a corpus, for the default output folder (`synth-<name>`): the folder's name
/// (`.` names the current folder), or the file's name without its extensions
/// (`dump.jsonl.gz` is `dump`).
pub fn corpus_name(path: &Path) -> String {
    let mut name = mtr_core::benchmark::source_name(path);
    if !path.is_dir() {
        while let Some((stem, ext)) = name.rsplit_once('.') {
            if stem.is_empty() || !CORPUS_EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str()) {
                break;
            }
            name = stem.to_string();
        }
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::Sample;
    use crate::input::fixtures::{
        numbered, wikiextractor_docs, wikiextractor_json, write_compressed,
    };

    fn wiki_docs(first: usize, n: usize) -> String {
        wikiextractor_docs(&numbered(first, n))
    }

    fn wiki_json(first: usize, n: usize) -> String {
        wikiextractor_json(&numbered(first, n))
    }

    fn ids(docs: &[Document]) -> Vec<&str> {
        docs.iter().map(|d| d.id.as_str()).collect()
    }

    #[test]
    fn corpus_names_drop_folders_slashes_and_file_extensions() {
        let dir = tempfile::tempdir().unwrap();
        let wiki = dir.path().join("wiki");
        std::fs::create_dir_all(&wiki).unwrap();
        assert_eq!(corpus_name(&dir.path().join("wiki/")), "wiki");
        assert_eq!(corpus_name(&wiki.join("..").join("wiki")), "wiki");
        assert_eq!(corpus_name(&dir.path().join("dump.jsonl.gz")), "dump");
        assert_eq!(
            corpus_name(&dir.path().join("enwiki.v2.parquet")),
            "enwiki.v2"
        );
    }

    #[test]
    fn wikiextractor_trees_in_both_forms_and_every_compression() {
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("wiki");
        std::fs::create_dir_all(plain.join("AA")).unwrap();
        std::fs::create_dir_all(plain.join("AB")).unwrap();
        std::fs::write(plain.join("AA/wiki_00"), wiki_docs(0, 3)).unwrap();
        write_compressed(&plain.join("AA/wiki_01.bz2"), wiki_docs(3, 3).as_bytes()).unwrap();
        write_compressed(&plain.join("AB/wiki_00.gz"), wiki_docs(6, 2).as_bytes()).unwrap();
        write_compressed(&plain.join("AB/wiki_01.zst"), wiki_docs(8, 1).as_bytes()).unwrap();
        write_compressed(&plain.join("AB/wiki_02.xz"), wiki_docs(9, 1).as_bytes()).unwrap();
        std::fs::write(plain.join("README.md"), "# Not a document\n").unwrap();
        let docs = load(&plain).unwrap();
        assert_eq!(
            ids(&docs),
            ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"]
        );
        assert_eq!(docs[4].title, "Article 4");
        assert_eq!(
            docs[4].text,
            "Article 4 is about topic 4.\n\nIt has a second paragraph."
        );
        let json = dir.path().join("wiki-json");
        std::fs::create_dir_all(json.join("AA")).unwrap();
        std::fs::write(json.join("AA/wiki_00"), wiki_json(0, 4)).unwrap();
        write_compressed(&json.join("AA/wiki_01.gz"), wiki_json(4, 2).as_bytes()).unwrap();
        let docs = load(&json).unwrap();
        assert_eq!(ids(&docs), ["0", "1", "2", "3", "4", "5"]);
        assert_eq!(docs[5].title, "Article 5");
    }

    #[test]
    fn a_sample_is_uniform_over_all_files_seeded_and_said() {
        let dir = tempfile::tempdir().unwrap();
        for f in 0..10 {
            std::fs::write(
                dir.path().join(format!("part-{f}.jsonl")),
                (0..100)
                    .map(|i| format!("{{\"id\":\"{f}-{i}\",\"text\":\"t\"}}\n"))
                    .collect::<String>(),
            )
            .unwrap();
        }
        let opts = |seed| ReadOptions {
            max_documents: 50,
            seed,
            ..Default::default()
        };
        let a = read(dir.path(), &opts(1)).unwrap();
        assert_eq!(a.documents.len(), 50);
        assert_eq!(a.documents, read(dir.path(), &opts(1)).unwrap().documents);
        assert_ne!(a.documents, read(dir.path(), &opts(2)).unwrap().documents);
        // drawn from every part of the input, not the first files
        let files: std::collections::BTreeSet<_> = a
            .documents
            .iter()
            .map(|d| d.id.split('-').next().unwrap().to_string())
            .collect();
        assert!(files.len() >= 8, "{files:?}");
        assert_eq!(a.report.documents, 1000);
        assert_eq!(a.report.sample, Some(Sample { kept: 50, seed: 1 }));
        assert!(
            a.report.summary().contains("uniform sample"),
            "{}",
            a.report.summary()
        );
    }

    #[test]
    fn malformed_records_fail_with_the_first_and_a_count_unless_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.jsonl");
        std::fs::write(
            &p,
            "{\"id\":\"a\",\"text\":\"ok\"}\n{\"id\":\"b\"}\nnot json\n{\"id\":\"c\",\"text\":\"ok\"}\n{\"text\":\"no id\"}\n",
        )
        .unwrap();
        let e = read(&p, &ReadOptions::default()).unwrap_err().to_string();
        assert!(
            e.contains("c.jsonl:2: field `text`") && e.contains("and 2 more malformed records"),
            "{e}"
        );
        let skipped = read(
            &p,
            &ReadOptions {
                skip_bad: true,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(ids(&skipped.documents), ["a", "c"]);
        assert_eq!(skipped.report.malformed_skipped, 3);
    }

    #[test]
    fn benchmark_and_beir_folders_are_read_from_their_corpus_only() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("corpus.jsonl"),
            "{\"_id\":\"d1\",\"title\":\"T\",\"text\":\"passage\"}\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("queries.jsonl"),
            "{\"_id\":\"q1\",\"text\":\"a question\"}\n",
        )
        .unwrap();
        assert_eq!(ids(&load(dir.path()).unwrap()), ["d1"]);
    }

    #[test]
    fn mtrag_passage_zips_and_json_arrays_read() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let zip_path = dir.path().join("clapnq.jsonl.zip");
        let mut z = zip::ZipWriter::new(std::fs::File::create(&zip_path).unwrap());
        z.start_file("clapnq.jsonl", zip::write::SimpleFileOptions::default())
            .unwrap();
        z.write_all(b"{\"id\":\"822086267_7384-8758-0-1375\",\"text\":\"p1\",\"title\":\"T\"}\n{\"id\":\"822086267_7384-8758-1376-2000\",\"text\":\"p2\",\"title\":\"T\"}\n")
            .unwrap();
        z.finish().unwrap();
        let docs = load(&zip_path).unwrap();
        assert_eq!(docs.len(), 2);
        write_compressed(
            &dir.path().join("a.json.gz"),
            b"[{\"doc_id\":\"x\",\"body\":\"b\"},\n{\"doc_id\":\"y\",\"body\":\"c\"}]",
        )
        .unwrap();
        let mapped = read(
            &dir.path().join("a.json.gz"),
            &ReadOptions {
                fields: "id=doc_id,text=body".parse().unwrap(),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(ids(&mapped.documents), ["x", "y"]);
    }

    #[test]
    fn folder_ids_titles_and_order() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("b.md"), "# Bee\n\nBody b.\n").unwrap();
        std::fs::write(dir.path().join("a.txt"), "Plain a.").unwrap();
        std::fs::write(dir.path().join("sub/c.md"), "\u{feff}# 标题\r\n正文。\r\n").unwrap();
        std::fs::write(dir.path().join("ignored.csv"), "a,b\n").unwrap();
        let docs = load(dir.path()).unwrap();
        let ids: Vec<_> = docs.iter().map(|d| d.id.as_str()).collect();
        // a .txt file is one document; Markdown is read by section, its ids carry the file
        assert_eq!(ids, ["a", "b.md#bee", "sub/c.md#标题"]);
        assert_eq!(docs[0].title, "a");
        assert_eq!(docs[1].title, "Bee");
        assert_eq!(docs[1].text, "Body b.");
        assert_eq!(docs[2].title, "标题");
        assert_eq!(docs[2].text, "正文。");
    }

    #[test]
    fn jsonl_fields_and_errors() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.jsonl");
        std::fs::write(
            &p,
            "{\"_id\":\"x\",\"text\":\"hello\"}\n{\"id\":7,\"title\":\"t\",\"text\":\"seven\"}\n",
        )
        .unwrap();
        let docs = load(&p).unwrap();
        assert_eq!(docs[0].id, "x");
        assert_eq!(docs[1].id, "7");
        std::fs::write(
            &p,
            "{\"id\":\"x\",\"text\":\"a\"}\n{\"id\":\"x\",\"text\":\"b\"}\n",
        )
        .unwrap();
        let e = load(&p).unwrap_err().to_string();
        assert!(e.contains("c.jsonl:2") && e.contains("duplicate"), "{e}");
        std::fs::write(&p, "{\"id\":\"x\"}\n").unwrap();
        let e = load(&p).unwrap_err().to_string();
        assert!(e.contains("c.jsonl:1") && e.contains("`text`"), "{e}");
    }

    #[test]
    fn shipped_corpora_load() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpora");
        for lang in ["en", "zh"] {
            let l = read(&root.join(lang), &ReadOptions::default()).unwrap();
            // twelve policies of seven to eleven sections each, by section
            assert!(
                (80..=130).contains(&l.documents.len()),
                "{lang}: {}",
                l.documents.len()
            );
            for (d, s) in l.documents.iter().zip(&l.sources) {
                assert!(d.id.starts_with(&format!("{}#", s.file)), "{}", d.id);
                assert_eq!(s.section.as_deref(), Some(d.title.as_str()));
                assert!(
                    !d.text.trim().is_empty() && !d.text.contains("\n## "),
                    "{}",
                    d.id
                );
            }
        }
    }
}
