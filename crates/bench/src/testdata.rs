//! Test support: the real MTRAG clapnq benchmark from `../shared` (imported once per test
//! process into a temporary folder), or `None` with a printed note when the shared data is
//! absent, so tests that need it skip cleanly.

use std::path::PathBuf;
use std::sync::OnceLock;

use mtr_core::BenchmarkDir;
use mtr_core::formats::{Format, ImportOptions};

/// `../shared/data/mtrag` relative to the repository root.
pub(crate) fn mtrag_dir() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/mtrag");
    if p.join("conversations_clapnq.jsonl").is_file() {
        Some(p)
    } else {
        eprintln!(
            "note: {} is absent; skipping a test that needs the shared MTRAG data",
            p.display()
        );
        None
    }
}

static CLAPNQ: OnceLock<Option<(tempfile::TempDir, BenchmarkDir)>> = OnceLock::new();

/// The imported clapnq benchmark.
pub(crate) fn clapnq() -> Option<BenchmarkDir> {
    CLAPNQ
        .get_or_init(|| {
            let src = mtrag_dir()?;
            let tmp = tempfile::tempdir().unwrap();
            let out = tmp.path().join("clapnq");
            let opts = ImportOptions {
                domain: Some("clapnq".into()),
                ..Default::default()
            };
            mtr_core::formats::import(
                Format::Mtrag,
                &src,
                &out,
                &opts,
                &mtr_core::progress::NoProgress,
            )
            .unwrap();
            let dir = BenchmarkDir::open(&out).unwrap();
            Some((tmp, dir))
        })
        .as_ref()
        .map(|(_, d)| d.clone())
}

/// Parses a `trec_eval -q` output: (measure, qid) -> printed value.
pub(crate) fn read_trec_eval(
    path: &std::path::Path,
) -> std::collections::BTreeMap<(String, String), String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let c: Vec<&str> = l.split_whitespace().collect();
            (c.len() == 3).then(|| ((c[0].to_string(), c[1].to_string()), c[2].to_string()))
        })
        .collect()
}
