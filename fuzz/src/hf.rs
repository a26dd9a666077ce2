//! The Hugging Face dataset folder importer (`mtr import hf`): a folder that `export_hf`
//! wrote from the BEIR fixture, once, with one of its Parquet files replaced by the input.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use mtr_core::formats::{Format, HfOptions, QueryField};

/// The Parquet files of the folder, one per config; the first byte of an input picks one.
pub const FILES: [&str; 4] = [
    "dialogues/test-00000-of-00001.parquet",
    "corpus/corpus-00000-of-00001.parquet",
    "qrels/test-00000-of-00001.parquet",
    "queries/queries-00000-of-00001.parquet",
];

/// The dataset folder exported from the BEIR fixture (made once per process).
pub fn folder() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let native = crate::scratch().join("hf-native");
        let opts = mtr_core::ImportOptions::default();
        let progress = &mtr_core::progress::NoProgress;
        let beir = crate::fixtures().join("beir");
        mtr_core::formats::import(Format::Beir, &beir, &native, &opts, progress)
            .expect("the BEIR fixture imports");
        let out = crate::scratch().join("hf-fixture");
        let hf = HfOptions {
            query: QueryField::Last,
            sections: Vec::new(),
        };
        let bench = mtr_core::BenchmarkDir::open(&native).expect("the fixture opens");
        mtr_core::formats::export_hf(&bench, &out, &hf).expect("the fixture exports");
        out
    })
}

/// Imports the dataset folder with the file `data[0]` picks replaced by the rest of `data`.
pub fn import(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let src = crate::scratch().join("hf-src");
    if !src.is_dir() {
        crate::copy_dir(folder(), &src);
    }
    let name = FILES[usize::from(pick) % FILES.len()];
    crate::import_from(Format::Hf, &src, name, rest);
    // the next input starts from the whole folder again
    std::fs::copy(folder().join(name), src.join(name)).expect("restore");
}

/// The seeds: each Parquet file as written, behind the byte that picks it.
pub fn seeds() -> Vec<(String, Vec<u8>)> {
    FILES
        .iter()
        .enumerate()
        .filter_map(|(i, f)| {
            let bytes = std::fs::read(folder().join(f)).ok()?;
            Some((format!("hf-{i}"), [&[i as u8][..], &bytes].concat()))
        })
        .collect()
}
