//! What the importers' tests share: the path of a fixture under `tests/fixtures/formats/` and
//! an import into a fresh folder loaded back, so each importer's tests hold only their
//! assertions.

use std::path::{Path, PathBuf};

use super::builder::ImportReport;
use super::options::ImportOptions;
use crate::error::Result;
use crate::progress::Progress;

/// An importer's `import` function.
pub(crate) type Importer = fn(&Path, &Path, &ImportOptions, &dyn Progress) -> Result<ImportReport>;

/// A fixture of `tests/fixtures/formats/`.
pub(crate) fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/formats")
        .join(name)
}

/// Imports `src` with `import` into a kept temporary folder; the report and the benchmark.
pub(crate) fn load(
    import: Importer,
    src: &Path,
    opts: &ImportOptions,
) -> (ImportReport, crate::Benchmark) {
    let tmp = tempfile::tempdir().unwrap().keep();
    let out = tmp.join("b");
    let r = import(src, &out, opts, &crate::progress::NoProgress).unwrap();
    (r, crate::BenchmarkDir::open(&out).unwrap().load().unwrap())
}

/// What an import counted: dialogues, turns, judged turns, passages, qrels pairs.
pub(crate) fn counts(r: &ImportReport) -> (usize, usize, usize, u64, usize) {
    (
        r.dialogues,
        r.turns,
        r.judged_turns,
        r.passages,
        r.qrels_pairs,
    )
}
