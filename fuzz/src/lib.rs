//! The harness of the fuzz targets: each target hands its input to one parser of mtr as the
//! bytes of one file, the other files of the source coming from the format's fixture under
//! `tests/fixtures/formats/`. An error is the expected answer to most inputs; a panic, a hang
//! or a crash is a bug.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

pub use mtr_core::formats::Format;

/// The fixtures of the import formats.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/formats")
}

/// A scratch folder for this process, made once.
fn scratch() -> &'static Path {
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

fn copy_dir(from: &Path, to: &Path) {
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
    static N: AtomicU64 = AtomicU64::new(0);
    let src = scratch().join(format!("src-{fixture}"));
    if !src.is_dir() {
        copy_dir(&fixtures().join(fixture), &src);
    }
    std::fs::write(src.join(primary), data).expect("primary file");
    let out = scratch().join(format!("out-{}", N.fetch_add(1, Ordering::Relaxed)));
    let opts = mtr_core::ImportOptions::default();
    let res = mtr_core::formats::import(format, &src, &out, &opts, &mtr_core::progress::NoProgress);
    if res.is_ok() {
        let dir = mtr_core::BenchmarkDir::open(&out).expect("an import that succeeds opens");
        dir.load().expect("an import that succeeds loads");
        let _ = mtr_core::validate::validate(&dir, &Default::default());
    }
    let _ = std::fs::remove_dir_all(&out);
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
