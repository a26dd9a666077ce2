//! Seeds that only code can write: a target run with `MTR_FUZZ_WRITE_SEEDS=DIR` (and
//! `-runs=1`) writes its generated seeds (Parquet files, zipped office documents, Batch output
//! lines that answer an export) into DIR at its first input. `fuzz/seeds.sh` runs each built
//! target that way beside the seeds it copies from the fixtures.

use std::path::PathBuf;
use std::sync::Once;

/// The folder seeds are asked for, if any.
pub fn requested() -> Option<PathBuf> {
    std::env::var_os("MTR_FUZZ_WRITE_SEEDS").map(PathBuf::from)
}

/// Writes `seeds` (name, bytes) into the requested folder once, when seeds are asked for;
/// does nothing otherwise. Called at each input of a target (libFuzzer would take an `exit`
/// for a crash).
pub fn write_if_asked(seeds: impl FnOnce() -> Vec<(String, Vec<u8>)>) {
    static ONCE: Once = Once::new();
    let Some(dir) = requested() else {
        return;
    };
    ONCE.call_once(|| {
        std::fs::create_dir_all(&dir).expect("seed folder");
        for (name, bytes) in seeds() {
            std::fs::write(dir.join(name), bytes).expect("seed file");
        }
    });
}
