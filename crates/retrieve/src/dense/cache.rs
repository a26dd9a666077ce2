//! A persistent embedding cache keyed by the hash of (model, text), so that re-indexing or a
//! resumed job never pays twice for an embedding. Two append-only files: `vectors.f32`
//! (little-endian rows) and `keys.bin` (16-byte BLAKE3 prefixes, one per row); rows are
//! written before keys, so a crash leaves at most unreferenced rows, which are dropped on open.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::error::{Error, Result};

const KEYS: &str = "keys.bin";
const VECTORS: &str = "vectors.f32";
const HEADER: &str = "cache.json";

type Key = [u8; 16];

struct State {
    index: HashMap<Key, u64>,
    keys: File,
    vectors: File,
    rows: u64,
}

/// An embedding cache for one model in one folder.
pub(crate) struct EmbeddingCache {
    dir: PathBuf,
    model: String,
    dim: usize,
    state: Mutex<State>,
}

impl std::fmt::Debug for EmbeddingCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddingCache")
            .field("dir", &self.dir)
            .field("model", &self.model)
            .field("dim", &self.dim)
            .finish()
    }
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Header {
    model: String,
    dim: usize,
}

impl EmbeddingCache {
    /// Opens (or creates) the cache in `dir` for `model` with vectors of `dim` values.
    pub(crate) fn open(dir: &Path, model: &str, dim: usize) -> Result<Self> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let header_path = dir.join(HEADER);
        if header_path.is_file() {
            let text = mtr_core::jsonl::read_text(&header_path)?;
            let h: Header =
                serde_json::from_str(&text).map_err(|e| Error::index(&header_path, e))?;
            if h.model != model || h.dim != dim {
                return Err(Error::index(
                    &header_path,
                    format!(
                        "cache holds {} ({}-d), not {model} ({dim}-d); use another folder",
                        h.model, h.dim
                    ),
                ));
            }
        } else {
            let h = serde_json::to_vec(&Header {
                model: model.to_string(),
                dim,
            })
            .map_err(|e| Error::Internal(e.to_string()))?;
            mtr_core::atomic::write_atomic(&header_path, &h)?;
        }
        let open = |name: &str| {
            let p = dir.join(name);
            OpenOptions::new()
                .create(true)
                .read(true)
                .append(true)
                .open(&p)
                .map_err(|e| Error::io(&p, e))
        };
        let (keys, vectors) = (open(KEYS)?, open(VECTORS)?);
        let key_bytes = std::fs::read(dir.join(KEYS)).map_err(|e| Error::io(dir.join(KEYS), e))?;
        let vec_len = vectors
            .metadata()
            .map_err(|e| Error::io(dir.join(VECTORS), e))?
            .len();
        let rows = (key_bytes.len() as u64 / 16).min(vec_len / (4 * dim as u64));
        // Drop a torn tail (a crash between or inside the two appends).
        keys.set_len(rows * 16)
            .map_err(|e| Error::io(dir.join(KEYS), e))?;
        vectors
            .set_len(rows * 4 * dim as u64)
            .map_err(|e| Error::io(dir.join(VECTORS), e))?;
        let mut index = HashMap::with_capacity(rows as usize);
        for (i, k) in key_bytes.chunks_exact(16).take(rows as usize).enumerate() {
            let mut key = [0u8; 16];
            key.copy_from_slice(k);
            index.insert(key, i as u64);
        }
        Ok(Self {
            dir: dir.to_path_buf(),
            model: model.to_string(),
            dim,
            state: Mutex::new(State {
                index,
                keys,
                vectors,
                rows,
            }),
        })
    }

    /// Vectors stored.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.state.lock().map(|s| s.rows as usize).unwrap_or(0)
    }

    /// The vector dimension recorded in an existing cache folder, if there is one.
    pub(crate) fn recorded_dim(dir: &Path, model: &str) -> Option<usize> {
        let text = std::fs::read_to_string(dir.join(HEADER)).ok()?;
        let h: Header = serde_json::from_str(&text).ok()?;
        (h.model == model).then_some(h.dim)
    }

    fn key(&self, text: &str) -> Key {
        let mut h = blake3::Hasher::new();
        h.update(self.model.as_bytes());
        h.update(b"\0");
        h.update(text.as_bytes());
        let mut k = [0u8; 16];
        k.copy_from_slice(&h.finalize().as_bytes()[..16]);
        k
    }

    /// The cached vector of `text` (exactly as embedded, prefix included), if any.
    pub(crate) fn get(&self, text: &str) -> Result<Option<Vec<f32>>> {
        let key = self.key(text);
        let state = self
            .state
            .lock()
            .map_err(|_| Error::Internal("embedding cache lock poisoned".into()))?;
        let Some(&row) = state.index.get(&key) else {
            return Ok(None);
        };
        let mut buf = vec![0u8; 4 * self.dim];
        read_exact_at(&state.vectors, &mut buf, row * 4 * self.dim as u64)
            .map_err(|e| Error::io(self.dir.join(VECTORS), e))?;
        Ok(Some(
            buf.chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
        ))
    }

    /// Stores vectors for texts (already-cached texts are skipped). Durable once it returns.
    pub(crate) fn put(&self, texts: &[String], vectors: &[Vec<f32>]) -> Result<()> {
        let mut state = self
            .state
            .lock()
            .map_err(|_| Error::Internal("embedding cache lock poisoned".into()))?;
        let mut vbuf = Vec::new();
        let mut kbuf = Vec::new();
        let mut new_keys = Vec::new();
        for (t, v) in texts.iter().zip(vectors) {
            if v.len() != self.dim {
                return Err(Error::embed(
                    &self.model,
                    format!("returned a {}-d vector, expected {}", v.len(), self.dim),
                ));
            }
            let key = self.key(t);
            if state.index.contains_key(&key) || new_keys.contains(&key) {
                continue;
            }
            v.iter()
                .for_each(|x| vbuf.extend_from_slice(&x.to_le_bytes()));
            kbuf.extend_from_slice(&key);
            new_keys.push(key);
        }
        if new_keys.is_empty() {
            return Ok(());
        }
        state
            .vectors
            .write_all(&vbuf)
            .and_then(|_| state.vectors.flush())
            .map_err(|e| Error::io(self.dir.join(VECTORS), e))?;
        state
            .keys
            .write_all(&kbuf)
            .and_then(|_| state.keys.flush())
            .map_err(|e| Error::io(self.dir.join(KEYS), e))?;
        for key in new_keys {
            let row = state.rows;
            state.index.insert(key, row);
            state.rows += 1;
        }
        Ok(())
    }
}

#[cfg(unix)]
fn read_exact_at(f: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(f, buf, offset)
}

#[cfg(not(unix))]
fn read_exact_at(f: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = f.try_clone()?;
    f.seek(SeekFrom::Start(offset))?;
    f.read_exact(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn survives_reopen_and_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        let c = EmbeddingCache::open(dir.path(), "m", 2).unwrap();
        c.put(
            &["a".into(), "b".into(), "a".into()],
            &[vec![1.0, 2.0], vec![3.0, 4.0], vec![9.0, 9.0]],
        )
        .unwrap();
        assert_eq!(c.len(), 2);
        drop(c);
        // A torn append: half a row of vectors without its key.
        let mut f = OpenOptions::new()
            .append(true)
            .open(dir.path().join(VECTORS))
            .unwrap();
        f.write_all(&[0u8; 4]).unwrap();
        let c = EmbeddingCache::open(dir.path(), "m", 2).unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!(c.get("b").unwrap(), Some(vec![3.0, 4.0]));
        assert_eq!(c.get("a").unwrap(), Some(vec![1.0, 2.0]));
        assert_eq!(c.get("c").unwrap(), None);
        c.put(&["c".into()], &[vec![5.0, 6.0]]).unwrap();
        assert_eq!(c.get("c").unwrap(), Some(vec![5.0, 6.0]));
        assert!(EmbeddingCache::open(dir.path(), "other", 2).is_err());
        assert!(c.put(&["d".into()], &[vec![1.0]]).is_err());
    }
}
