//! Content fingerprints. A benchmark's fingerprint is a BLAKE3 hash over its data files' names
//! and bytes in a fixed order, so it is the same on every machine and changes when any label
//! or passage changes. Config and prompt hashes use the same function over canonical JSON.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use serde::Serialize;

use crate::error::{Error, Result};

/// Hex BLAKE3 of a byte string, shortened to 16 hex digits for display.
pub fn short(hash: &str) -> &str {
    &hash[..hash.len().min(16)]
}

/// BLAKE3 of `bytes`, in hex.
pub fn hash_bytes(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

/// Hash of a value's canonical JSON (keys in declaration/insertion order, no whitespace).
pub fn hash_json<T: Serialize>(value: &T) -> String {
    match serde_json::to_vec(value) {
        Ok(v) => hash_bytes(&v),
        Err(e) => hash_bytes(e.to_string().as_bytes()),
    }
}

/// Streams a file through BLAKE3.
pub fn hash_file(path: impl AsRef<Path>) -> Result<String> {
    let path = path.as_ref();
    let mut f = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut hasher = blake3::Hasher::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf).map_err(|e| Error::io(path, e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher.finalize().to_hex().to_string())
}

/// Hash over several named files in the given order: `name \0 hash \n` per file.
pub(crate) fn hash_files(root: impl AsRef<Path>, names: &[&str]) -> Result<String> {
    let mut hasher = blake3::Hasher::new();
    for name in names {
        let p = root.as_ref().join(name);
        if !p.exists() {
            continue;
        }
        hasher.update(name.as_bytes());
        hasher.update(b"\0");
        hasher.update(hash_file(&p)?.as_bytes());
        hasher.update(b"\n");
    }
    Ok(hasher.finalize().to_hex().to_string())
}

/// The config hash of a report: `config` together with the seeded generator's name
/// ([`crate::rng::NAME`]), so outputs drawn with another generator never claim the same
/// configuration.
pub fn config_hash<T: Serialize + ?Sized>(config: &T) -> String {
    hash_json(&(config, crate::rng::NAME))
}

/// The fingerprint every report carries: what data, what config, what prompts, what tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Fingerprint {
    /// The data's hash.
    pub data: String,
    /// The settings' hash.
    pub config: String,
    /// The prompts' hash.
    pub prompts: String,
    /// mtr's version.
    pub tool_version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The git commit mtr was built from, when known.
    pub git_commit: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_hash_names_the_seeded_generator() {
        let cfg = serde_json::json!({"seed": 42});
        assert_eq!(config_hash(&cfg), hash_json(&(&cfg, "chacha12")));
        assert_ne!(config_hash(&cfg), hash_json(&cfg));
    }

    #[test]
    fn stable_known_hash() {
        assert_eq!(
            hash_bytes(b"mtr"),
            blake3::hash(b"mtr").to_hex().to_string()
        );
        assert_eq!(hash_bytes(b"").len(), 64);
    }
}
