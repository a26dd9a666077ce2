//! The harness of the fuzz targets: each target hands its input to one parser of mtr as the
//! bytes of one file, the other files of the source coming from the format's fixture under
//! `tests/fixtures/formats/`. An error is the expected answer to most inputs; a panic, a hang
//! or a crash is a bug.
//!
//! The readers of mtr-core and mtr-metrics are here; those of the other crates are behind the
//! crate's features (`pipeline`, `llm`, `audit`, `settings`; `full` for all), since they build
//! most of the workspace. Seeds that only code can write (Parquet, zipped office documents,
//! Batch output lines whose ids only an export knows) come from [`seeds`].

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Once, OnceLock};

pub use mtr_core::formats::Format;

#[cfg(feature = "audit")]
pub mod audit;
pub mod hf;
#[cfg(feature = "llm")]
pub mod llm;
#[cfg(feature = "pipeline")]
pub mod pipeline;
pub mod seeds;
#[cfg(feature = "settings")]
pub mod settings;

/// Makes the panics that a reader catches on purpose silent and not fatal: those raised while a
/// function of one of `crates` (crate names as paths spell them: `pdf_extract`, `parquet`) is
/// on the stack, whose calls mtr runs under `catch_unwind` (pdf-extract's per page, the parquet
/// crate's per call). Any other panic goes to libFuzzer's hook, which aborts; a panic that
/// escapes a reader aborts too (libfuzzer-sys's wrapper catches it).
pub fn quiet_caught_panics(crates: &'static [&'static str]) {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let fatal = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let trace = std::backtrace::Backtrace::force_capture().to_string();
            let inside = trace.lines().any(|l| {
                let frame = l
                    .trim_start()
                    .trim_start_matches(|c: char| c.is_ascii_digit())
                    .trim_start_matches(": ")
                    .trim_start_matches('<');
                crates
                    .iter()
                    .any(|c| frame.strip_prefix(c).is_some_and(|r| r.starts_with("::")))
            });
            if !inside {
                fatal(info);
            }
        }));
    });
}

/// The fixtures of the import formats.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/formats")
}

/// The fixtures of the corpus documents (PDF, DOCX, ODT, HTML, RST, chunks).
pub fn corpus_docs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/corpus-docs")
}

/// A scratch folder for this process, made once.
pub fn scratch() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("mtr-fuzz-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("scratch folder");
        d
    })
}

/// `data` written to a scratch file named `name`; its path.
pub fn file(name: &str, data: &[u8]) -> PathBuf {
    let p = scratch().join(name);
    std::fs::write(&p, data).expect("scratch file");
    p
}

/// A fresh, empty scratch folder named after `name` and a counter; its path.
pub fn fresh_dir(name: &str) -> PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    let d = scratch().join(format!("{name}-{}", N.fetch_add(1, Ordering::Relaxed)));
    std::fs::create_dir_all(&d).expect("scratch folder");
    d
}

/// Copies the folder `from` to `to`, recursively.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("copy");
    for e in std::fs::read_dir(from).expect("fixture") {
        let e = e.expect("fixture entry");
        let dst = to.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), &dst).expect("copy");
        }
    }
}

/// Imports the fixture `fixture` (a folder under the fixtures) as `format` with its file
/// `primary` replaced by `data`. Errors are fine; the import must not panic, and a success
/// must leave a benchmark that loads.
pub fn import(format: Format, fixture: &str, primary: &str, data: &[u8]) {
    let src = scratch().join(format!("src-{fixture}"));
    if !src.is_dir() {
        copy_dir(&fixtures().join(fixture), &src);
    }
    import_from(format, &src, primary, data);
}

/// Imports the source folder `src` as `format` with its file `primary` replaced by `data`
/// (see [`import`]).
pub fn import_from(format: Format, src: &Path, primary: &str, data: &[u8]) {
    std::fs::write(src.join(primary), data).expect("primary file");
    let out = fresh_dir("out");
    let _ = std::fs::remove_dir(&out);
    let opts = mtr_core::ImportOptions::default();
    let res = mtr_core::formats::import(format, src, &out, &opts, &mtr_core::progress::NoProgress);
    if res.is_ok() {
        loads(&out);
    }
    let _ = std::fs::remove_dir_all(&out);
}

/// The native benchmark folder `dir` opens, loads and validates (a benchmark an import wrote,
/// or one a target edited).
pub fn loads(dir: &Path) {
    let dir = mtr_core::BenchmarkDir::open(dir).expect("an import that succeeds opens");
    dir.load().expect("an import that succeeds loads");
    let _ = mtr_core::validate::validate(&dir, &Default::default());
}

/// Every line reader of mtr-core over `data`: the line splitter, records parsed as dialogues
/// and as passages, and the whole-file text reader.
pub fn lines(data: &[u8]) {
    use mtr_core::jsonl::{Line, Lines};
    let mut lines = Lines::new(data, "fuzz.jsonl");
    while let Some(l) = lines.next_line() {
        if let Ok((no, text)) = l {
            let _ = mtr_core::jsonl::parse_line::<mtr_core::Dialogue>(Path::new("f"), no, text);
            let _ = mtr_core::jsonl::parse_line::<mtr_core::Passage>(Path::new("f"), no, text);
        }
    }
    let p = file("lines.jsonl", data);
    if let Ok(recs) = mtr_core::jsonl::records::<mtr_core::Turn>(&p) {
        for r in recs {
            if let Ok(Line::Record(..)) = r {}
        }
    }
    let _ = mtr_core::jsonl::read_text(&p);
}

/// A native benchmark folder (the BEIR fixture imported once) with its file `name`
/// (`dialogues.jsonl`, `corpus.jsonl`, `qrels.tsv`) replaced by `data`, opened, loaded and
/// validated: what every command that takes a benchmark folder reads.
pub fn native(name: &str, data: &[u8]) {
    let dir = fresh_dir("native");
    copy_dir(native_fixture(), &dir);
    std::fs::write(dir.join(name), data).expect("native file");
    if let Ok(b) = mtr_core::BenchmarkDir::open(&dir)
        && b.load().is_ok()
    {
        let _ = mtr_core::validate::validate(&b, &Default::default());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The BEIR fixture imported as a native benchmark folder (once per process).
pub fn native_fixture() -> &'static Path {
    static BENCH: OnceLock<PathBuf> = OnceLock::new();
    BENCH.get_or_init(|| {
        let out = scratch().join("native-fixture");
        let opts = mtr_core::ImportOptions::default();
        let progress = &mtr_core::progress::NoProgress;
        mtr_core::formats::import(
            Format::Beir,
            &fixtures().join("beir"),
            &out,
            &opts,
            progress,
        )
        .expect("the BEIR fixture imports");
        out
    })
}

/// Seeds of a target whose first byte picks one of `files` of the native fixture: each file
/// behind the byte that picks it.
pub fn picked_seeds(files: &[&str]) -> Vec<(String, Vec<u8>)> {
    files
        .iter()
        .enumerate()
        .filter_map(|(i, f)| {
            let bytes = std::fs::read(native_fixture().join(f)).ok()?;
            Some((format!("native-{i}"), [&[i as u8][..], &bytes].concat()))
        })
        .collect()
}
