//! The synthesis corpus readers (`mtr synth --corpus`, `mtr corpus`: mtr-pipeline's `input`):
//! the input is one corpus file, named so that the reader of its form takes it (`.pdf`,
//! `.docx`, `.parquet`, `wiki_00`, ...), read as synth reads it. Zipped office documents are
//! fuzzed twice: as raw bytes (the zip reader's answers) and as the XML inside the fixture's
//! own zip (the document readers' answers; a mutated zip rarely gets that far).
//!
//! pdf-extract panics on content it does not expect, and `input/pdf.rs` catches that per page
//! on purpose, as `input/parquet.rs` catches the parquet crate's: the PDF and Parquet targets
//! call [`crate::quiet_caught_panics`] so that libFuzzer's panic hook does not take those for
//! crashes.

use std::io::{Read, Write};
use std::path::Path;
use std::sync::OnceLock;

use mtr_pipeline::input::fixtures::{numbered, rows, wikiextractor_docs, wikiextractor_json};

/// Reads `data` as the corpus file `name`, as synth reads a corpus.
pub fn corpus(name: &str, data: &[u8]) {
    let dir = crate::scratch().join("corpus");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("corpus folder");
    let p = dir.join(name);
    std::fs::write(&p, data).expect("corpus file");
    let _ = mtr_pipeline::input::read(&p, &Default::default());
}

/// The office formats and the XML entry each keeps its text in.
const OFFICE: [(&str, &str, &str); 2] = [
    (
        "docx",
        "mixed/06-expenses-per-diem.docx",
        "word/document.xml",
    ),
    ("odt", "mixed/11-remote-work.odt", "content.xml"),
];

/// The entries of a zip file, in order.
fn entries(path: &Path) -> Vec<(String, Vec<u8>)> {
    let file = std::fs::File::open(path).expect("office fixture");
    let mut z = zip::ZipArchive::new(file).expect("office fixture zip");
    (0..z.len())
        .map(|i| {
            let mut e = z.by_index(i).expect("office fixture entry");
            let mut bytes = Vec::new();
            e.read_to_end(&mut bytes).expect("office fixture entry");
            (e.name().to_string(), bytes)
        })
        .collect()
}

/// The office fixtures' entries (read once).
fn office_fixtures() -> &'static [Vec<(String, Vec<u8>)>; 2] {
    static E: OnceLock<[Vec<(String, Vec<u8>)>; 2]> = OnceLock::new();
    E.get_or_init(|| OFFICE.map(|(_, f, _)| entries(&crate::corpus_docs().join(f))))
}

/// The office fixture `kind` (0: DOCX, 1: ODT) zipped again with its text entry replaced by
/// `xml`.
fn office_with(kind: usize, xml: &[u8]) -> Vec<u8> {
    let mut z = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (name, bytes) in &office_fixtures()[kind] {
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        z.start_file(name.as_str(), opts).expect("zip entry");
        let body = if name == OFFICE[kind].2 { xml } else { bytes };
        z.write_all(body).expect("zip entry");
    }
    z.finish().expect("zip").into_inner()
}

/// An office document: the first byte picks DOCX or ODT, the rest is the file.
pub fn office(data: &[u8]) {
    if let Some((&pick, rest)) = data.split_first() {
        let kind = usize::from(pick) % 2;
        corpus(&format!("doc.{}", OFFICE[kind].0), rest);
    }
}

/// An office document's XML: the first byte picks DOCX or ODT, the rest is the XML that the
/// fixture's zip holds in place of its own.
pub fn office_xml(data: &[u8]) {
    if let Some((&pick, rest)) = data.split_first() {
        let kind = usize::from(pick) % 2;
        corpus(&format!("doc.{}", OFFICE[kind].0), &office_with(kind, rest));
    }
}

/// Seeds of [`office`]: the fixtures (and the truncated DOCX) behind the byte that picks them.
pub fn office_seeds() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for (i, (_, f, _)) in OFFICE.iter().enumerate() {
        if let Ok(b) = std::fs::read(crate::corpus_docs().join(f)) {
            out.push((format!("office-{i}"), [&[i as u8][..], &b].concat()));
        }
    }
    if let Ok(b) = std::fs::read(crate::corpus_docs().join("bad/truncated.docx")) {
        out.push(("office-truncated".into(), [&[0u8][..], &b].concat()));
    }
    out
}

/// Seeds of [`office_xml`]: each fixture's text XML behind the byte that picks it.
pub fn office_xml_seeds() -> Vec<(String, Vec<u8>)> {
    (0..2)
        .filter_map(|i| {
            let (name, bytes) = office_fixtures()[i]
                .iter()
                .find(|(n, _)| n == OFFICE[i].2)?;
            Some((
                format!("xml-{i}-{}", name.replace('/', "_")),
                [&[i as u8][..], bytes].concat(),
            ))
        })
        .collect()
}

/// The compression codecs of [`codecs`], picked by the first byte.
const CODECS: [&str; 3] = ["bz2", "zst", "xz"];

/// A compressed JSON-lines corpus: the first byte picks bzip2, zstd or xz.
pub fn codecs(data: &[u8]) {
    if let Some((&pick, rest)) = data.split_first() {
        corpus(
            &format!("corpus.jsonl.{}", CODECS[usize::from(pick) % 3]),
            rest,
        );
    }
}

/// Seeds of [`codecs`]: the BEIR fixture's corpus in each codec.
pub fn codecs_seeds() -> Vec<(String, Vec<u8>)> {
    let Ok(plain) = std::fs::read(crate::fixtures().join("beir/corpus.jsonl")) else {
        return Vec::new();
    };
    CODECS
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let p = crate::scratch().join(format!("seed.jsonl.{c}"));
            mtr_pipeline::input::fixtures::write_compressed(&p, &plain).ok()?;
            let bytes = std::fs::read(&p).ok()?;
            Some((format!("codec-{c}"), [&[i as u8][..], &bytes].concat()))
        })
        .collect()
}

/// Seeds of the Parquet target: a Hugging Face dump's layout, in one and in several row
/// groups, a null id among them.
pub fn parquet_seeds() -> Vec<(String, Vec<u8>)> {
    let docs = numbered(0, 6);
    let mut r = rows(&docs);
    r[2].0 = None;
    [1, 4]
        .iter()
        .filter_map(|per_group| {
            let p = crate::scratch().join("seed.parquet");
            mtr_pipeline::input::fixtures::write_parquet(&p, &r, *per_group).ok()?;
            Some((format!("parquet-{per_group}"), std::fs::read(&p).ok()?))
        })
        .collect()
}

/// Seeds of the WikiExtractor target: both of its forms.
pub fn wikiextractor_seeds() -> Vec<(String, Vec<u8>)> {
    let docs = numbered(0, 3);
    vec![
        ("wiki-docs".into(), wikiextractor_docs(&docs).into_bytes()),
        ("wiki-json".into(), wikiextractor_json(&docs).into_bytes()),
    ]
}

/// Seeds of the zip target: MTRAG's passage-level corpus zip (the fixture's corpus zipped).
pub fn zip_seeds() -> Vec<(String, Vec<u8>)> {
    let Ok(corpus) = std::fs::read(crate::fixtures().join("mtrag/corpus_mini.jsonl")) else {
        return Vec::new();
    };
    let mut z = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default();
    if z.start_file("clapnq.jsonl", opts).is_err() || z.write_all(&corpus).is_err() {
        return Vec::new();
    }
    match z.finish() {
        Ok(c) => vec![("mtrag-zip".into(), c.into_inner())],
        Err(_) => Vec::new(),
    }
}
