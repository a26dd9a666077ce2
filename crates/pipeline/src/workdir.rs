//! The work directory: every stage's artefact next to a small JSON file with the fingerprint
//! of everything it was made from. A stage whose fingerprint matches is loaded instead of
//! recomputed; a changed input or parameter changes the fingerprint of that stage and of
//! every stage after it, so stale artefacts are never reused.

use std::path::{Path, PathBuf};

use mtr_core::atomic::write_atomic;
use mtr_core::jsonl::{self, JsonlWriter};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{Error, Result};

/// Bump when an artefact's layout or meaning changes.
pub(crate) const ARTEFACT_VERSION: u32 = 1;

/// A folder of fingerprinted artefacts.
#[derive(Debug, Clone)]
pub(crate) struct WorkDir {
    root: PathBuf,
}

impl WorkDir {
    pub(crate) fn create(root: impl AsRef<Path>) -> Result<Self> {
        let root = root.as_ref().to_path_buf();
        std::fs::create_dir_all(&root).map_err(|e| mtr_core::Error::io(&root, e))?;
        Ok(Self { root })
    }
    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    /// The stage's metadata if its fingerprint matches.
    pub(crate) fn fresh<M: DeserializeOwned>(&self, stage: &str, fingerprint: &str) -> Option<M> {
        let p = self.path(&format!("{stage}.meta.json"));
        let text = std::fs::read_to_string(p).ok()?;
        let v: serde_json::Value = serde_json::from_str(&text).ok()?;
        if v.get("fingerprint").and_then(|f| f.as_str()) != Some(fingerprint) {
            return None;
        }
        serde_json::from_value(v.get("meta")?.clone()).ok()
    }

    /// Records that the stage's artefact is complete (written last, after the artefact).
    pub(crate) fn mark<M: Serialize>(
        &self,
        stage: &str,
        fingerprint: &str,
        meta: &M,
    ) -> Result<()> {
        let v = serde_json::json!({"fingerprint": fingerprint, "version": ARTEFACT_VERSION, "meta": meta});
        let bytes = serde_json::to_vec_pretty(&v).map_err(|e| Error::Internal(e.to_string()))?;
        write_atomic(self.path(&format!("{stage}.meta.json")), &bytes)?;
        Ok(())
    }

    pub(crate) fn write_jsonl<T: Serialize>(&self, name: &str, items: &[T]) -> Result<()> {
        let mut w = JsonlWriter::create(self.path(name))?;
        for it in items {
            w.write(it)?;
        }
        w.commit()?;
        Ok(())
    }

    pub(crate) fn read_jsonl<T: DeserializeOwned>(&self, name: &str) -> Result<Vec<T>> {
        Ok(jsonl::read_all(self.path(name))?)
    }

    pub(crate) fn write_f32(&self, name: &str, data: &[f32]) -> Result<()> {
        let bytes: Vec<u8> = data.iter().flat_map(|x| x.to_le_bytes()).collect();
        write_atomic(self.path(name), &bytes)?;
        Ok(())
    }

    pub(crate) fn read_f32(&self, name: &str) -> Result<Vec<f32>> {
        let p = self.path(name);
        let bytes = std::fs::read(&p).map_err(|e| mtr_core::Error::io(&p, e))?;
        if bytes.len() % 4 != 0 {
            return Err(Error::Internal(format!(
                "{}: not a float32 file",
                p.display()
            )));
        }
        Ok(bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect())
    }

    pub(crate) fn write_json<T: Serialize>(&self, name: &str, v: &T) -> Result<()> {
        let bytes = serde_json::to_vec(v).map_err(|e| Error::Internal(e.to_string()))?;
        write_atomic(self.path(name), &bytes)?;
        Ok(())
    }

    pub(crate) fn read_json<T: DeserializeOwned>(&self, name: &str) -> Result<T> {
        let p = self.path(name);
        let text = jsonl::read_text(&p)?;
        serde_json::from_str(&text).map_err(|e| Error::Internal(format!("{}: {e}", p.display())))
    }
}

/// A fingerprint over named parts (canonical JSON of each).
pub(crate) fn fingerprint(parts: &[(&str, serde_json::Value)]) -> String {
    let mut all = serde_json::Map::new();
    all.insert("artefact_version".into(), ARTEFACT_VERSION.into());
    for (k, v) in parts {
        all.insert((*k).to_string(), v.clone());
    }
    mtr_core::fingerprint::hash_json(&all)
}

/// A setting as a fingerprint part (`null` if it cannot be serialized).
pub(crate) fn to_json<T: Serialize>(v: &T) -> serde_json::Value {
    serde_json::to_value(v).unwrap_or(serde_json::Value::Null)
}

/// Content hash of a corpus path: the file's bytes, or every corpus file of a folder
/// (relative path and bytes, sorted; the files [`crate::input::files::list`] reads), or a
/// benchmark's corpus file.
pub(crate) fn input_fingerprint(path: &Path) -> Result<String> {
    if path.is_file() {
        return Ok(mtr_core::fingerprint::hash_file(path)?);
    }
    if crate::input::detect(path)? == crate::input::SourceKind::Benchmark {
        return Ok(mtr_core::fingerprint::hash_file(
            mtr_core::BenchmarkDir::new(path).corpus_path(),
        )?);
    }
    let mut parts = Vec::new();
    for f in crate::input::files::list(path)? {
        let rel = f
            .path
            .strip_prefix(path)
            .unwrap_or(&f.path)
            .to_string_lossy()
            .replace('\\', "/");
        parts.push((rel, mtr_core::fingerprint::hash_file(&f.path)?));
    }
    Ok(mtr_core::fingerprint::hash_json(&parts))
}
