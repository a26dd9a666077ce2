//! Test support for the local modules: an installation as the setup script leaves it, with no
//! server able to start (the venv's python is an empty file).

use std::path::Path;

use super::LocalPaths;

pub(super) const SMOLLM2_FILE: &str = "smollm2-135m-instruct-q4_1.gguf";
pub(super) const QWEN05_FILE: &str = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf";

/// An installation under `home` as the setup script leaves it: the venv's python and the
/// given model files (empty stand-ins; no test here starts a server).
pub(super) fn installed(home: &Path, models: &[&str]) -> LocalPaths {
    let paths = LocalPaths {
        home: home.to_path_buf(),
    };
    std::fs::create_dir_all(home.join("venv/bin")).unwrap();
    std::fs::write(paths.venv_python(), "").unwrap();
    std::fs::create_dir_all(paths.models()).unwrap();
    for f in models {
        std::fs::write(paths.models().join(f), "x").unwrap();
    }
    paths
}
