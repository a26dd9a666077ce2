//! `mtr corpus` as a RAG team runs it on its documents: the fixtures made by pandoc,
//! LibreOffice and Chromium (tests/fixtures/corpus-docs) read by page and section with their
//! sources; unreadable files listed with their reason, fatal with --strict, a folder of them
//! exit 2; a team's own chunks keep their ids. And what real files differ in (a BOM, CRLF)
//! read whole, while what is broken (a truncated compressed file of each codec, invalid UTF-8,
//! duplicate ids, nesting deeper than a record needs) exits 2 naming file and line, on copies
//! of MTRAG's govt corpus (../shared) or, without it, of the shipped handbook.

use std::path::{Path, PathBuf};

use mtr_pipeline::input::fixtures::write_compressed;

use crate::audit::mtr;

fn fixtures(dir: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/corpus-docs")
        .join(dir)
}

/// Runs `mtr corpus ARGS..`; returns (exit code, stdout lines of the output file, stderr).
fn corpus(args: &[&std::ffi::OsStr], out: &Path) -> (Option<i32>, Vec<serde_json::Value>, String) {
    let o = mtr()
        .arg("corpus")
        .args(args)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap();
    let lines = std::fs::read_to_string(out)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (
        o.status.code(),
        lines,
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn documents_by_page_and_section_with_their_sources() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("docs.jsonl");
    let (code, lines, stderr) = corpus(&[fixtures("mixed").as_os_str()], &out);
    assert_eq!(code, Some(0), "{stderr}");
    let page = lines
        .iter()
        .find(|l| l["id"] == "05-business-travel.pdf#page=2")
        .unwrap();
    assert_eq!(
        page["source"],
        serde_json::json!({"file": "05-business-travel.pdf", "page": 2})
    );
    let section = lines
        .iter()
        .find(|l| l["id"] == "06-expenses-per-diem.docx#receipts")
        .unwrap();
    assert_eq!(
        section["source"]["section"],
        "Expense Claims and Per Diem › Receipts"
    );
    assert!(
        stderr.contains(&format!(
            "{} documents from 8 files, 5 PDF pages",
            lines.len()
        )),
        "{stderr}"
    );
    // --chunks: passages as synth makes them, ids carrying the page
    let (code, passages, stderr) =
        corpus(&[fixtures("mixed").as_os_str(), "--chunks".as_ref()], &out);
    assert_eq!(code, Some(0), "{stderr}");
    let p = passages
        .iter()
        .find(|p| p["doc_id"] == "05-business-travel.pdf#page=2")
        .unwrap();
    assert!(
        p["id"]
            .as_str()
            .unwrap()
            .starts_with("05-business-travel.pdf#page=2#"),
        "{p}"
    );
    assert_eq!(p["source"]["page"], 2);
    assert!(stderr.contains("passages written"), "{stderr}");
}

#[test]
fn unreadable_files_are_listed_fatal_when_strict_and_alone_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("docs");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(
        fixtures("mixed").join("10-onboarding.md"),
        dir.join("10-onboarding.md"),
    )
    .unwrap();
    for name in [
        "encrypted.pdf",
        "scanned.pdf",
        "truncated.docx",
        "mislabelled.html",
    ] {
        std::fs::copy(fixtures("bad").join(name), dir.join(name)).unwrap();
    }
    let out = tmp.path().join("docs.jsonl");
    let (code, lines, stderr) = corpus(&[dir.as_os_str()], &out);
    assert_eq!(code, Some(0), "{stderr}");
    // the Markdown file's nine sections (the title's and eight more), nothing of the others
    assert_eq!(lines.len(), 9, "{stderr}");
    assert!(
        lines
            .iter()
            .all(|l| l["source"]["file"] == "10-onboarding.md")
    );
    for (file, reason) in [
        ("encrypted.pdf", "password"),
        ("scanned.pdf", "no text layer"),
        ("truncated.docx", "not a readable DOCX"),
        ("mislabelled.html", "not valid UTF-8"),
    ] {
        assert!(
            stderr
                .lines()
                .any(|l| l.contains(file) && l.contains(reason)),
            "{file}: {stderr}"
        );
    }
    assert!(stderr.contains("4 files skipped"), "{stderr}");
    let (code, _, stderr) = corpus(
        &[dir.as_os_str(), "--strict".as_ref()],
        &tmp.path().join("s.jsonl"),
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("encrypted.pdf") && stderr.contains("password"),
        "{stderr}"
    );
    assert!(!tmp.path().join("s.jsonl").exists(), "no output on failure");
    let (code, _, stderr) = corpus(&[fixtures("bad").as_os_str()], &tmp.path().join("b.jsonl"));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("no file of the corpus could be read"),
        "{stderr}"
    );
}

#[test]
fn langchain_and_llamaindex_chunks_keep_their_ids() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("docs.jsonl");
    let (code, lines, stderr) = corpus(&[fixtures("chunks").as_os_str()], &out);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(lines[0]["id"], "vpn-000");
    assert_eq!(lines[0]["source"]["file"], "langchain.jsonl");
    // --chunks --as-is: the passages synth --chunks as-is makes, every id the team's own
    let (code, passages, stderr) = corpus(
        &[
            fixtures("chunks").as_os_str(),
            "--chunks".as_ref(),
            "--as-is".as_ref(),
        ],
        &out,
    );
    assert_eq!(code, Some(0), "{stderr}");
    let ids: Vec<&str> = passages.iter().map(|p| p["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), lines.len(), "none dropped, none cut");
    assert_eq!(ids[2], "vpn-002", "a four-word chunk is kept");
    assert!(ids.iter().all(|id| !id.contains('#')), "{ids:?}");
}

/// JSON lines of a real corpus: the first 300 of MTRAG's govt corpus, or the handbook's.
fn real_lines() -> Vec<String> {
    let shared =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data/mtrag/corpus_govt.jsonl");
    match std::fs::read_to_string(&shared) {
        Ok(text) => text.lines().take(300).map(str::to_string).collect(),
        Err(_) => {
            mtr_pipeline::input::load(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpora/en"))
                .unwrap()
                .iter()
                .map(|d| {
                    serde_json::json!({"_id": d.id, "title": d.title, "text": d.text}).to_string()
                })
                .collect()
        }
    }
}

#[test]
fn a_bom_and_crlf_corpus_reads_every_record() {
    let tmp = tempfile::tempdir().unwrap();
    let lines = real_lines();
    let p = tmp.path().join("corpus.jsonl");
    std::fs::write(&p, format!("\u{feff}{}", lines.join("\r\n"))).unwrap();
    let (code, out, stderr) = corpus(&[p.as_os_str()], &tmp.path().join("o.jsonl"));
    assert_eq!((code, out.len()), (Some(0), lines.len()), "{stderr}");
}

#[test]
fn broken_corpora_exit_2_naming_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    let lines = real_lines();
    let whole = lines.join("\n") + "\n";
    let out = tmp.path().join("o.jsonl");
    // truncated inside each codec
    for name in ["c.jsonl.gz", "c.jsonl.bz2", "c.jsonl.zst", "c.jsonl.xz"] {
        let p = tmp.path().join(name);
        write_compressed(&p, whole.as_bytes()).unwrap();
        let bytes = std::fs::read(&p).unwrap();
        std::fs::write(&p, &bytes[..bytes.len() / 2]).unwrap();
        let (code, _, stderr) = corpus(&[p.as_os_str()], &out);
        assert_eq!(code, Some(2), "{name}: {stderr}");
        assert!(
            stderr.contains(name) && stderr.contains("truncated or corrupt"),
            "{name}: {stderr}"
        );
    }
    // invalid UTF-8 on line 3, a duplicate id on line 5, nesting 10,000 deep on line 7
    let mut broken: Vec<Vec<u8>> = lines
        .iter()
        .take(8)
        .map(|l| l.clone().into_bytes())
        .collect();
    broken[2] = b"{\"_id\":\"x\",\"text\":\"caf\xe9\"}".to_vec();
    broken[4] = lines[0].clone().into_bytes();
    broken[6] = format!(
        "{{\"_id\":\"deep\",\"text\":\"t\",\"meta\":{}{}}}",
        "[".repeat(10_000),
        "]".repeat(10_000)
    )
    .into_bytes();
    let p = tmp.path().join("broken.jsonl");
    std::fs::write(&p, broken.join(&b"\n"[..])).unwrap();
    let (code, _, stderr) = corpus(&[p.as_os_str()], &out);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("broken.jsonl:3") && stderr.contains("UTF-8"),
        "{stderr}"
    );
    assert!(stderr.contains("and 2 more malformed records"), "{stderr}");
    // each counted when skipped
    let (code, kept, stderr) = corpus(&[p.as_os_str(), "--skip-bad".as_ref()], &out);
    assert_eq!((code, kept.len()), (Some(0), 5), "{stderr}");
    assert!(stderr.contains("3 malformed records skipped"), "{stderr}");
}
