//! A row-major matrix of f32 vectors, owned or memory-mapped from one little-endian file, so
//! that millions of vectors are searched without being loaded.

use std::path::Path;

use memmap2::Mmap;

use crate::error::{Error, Result};

enum Storage {
    Owned(Vec<f32>),
    Mapped(Mmap),
}

/// `len` vectors of `dim` f32 each.
pub struct VectorMatrix {
    dim: usize,
    len: usize,
    storage: Storage,
}

impl std::fmt::Debug for VectorMatrix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VectorMatrix")
            .field("dim", &self.dim)
            .field("len", &self.len)
            .finish()
    }
}

impl VectorMatrix {
    /// A matrix from concatenated rows.
    pub fn from_rows(dim: usize, data: Vec<f32>) -> Result<Self> {
        if dim == 0 || data.len() % dim != 0 {
            return Err(Error::Dimension(format!(
                "{} values do not make rows of dimension {dim}",
                data.len()
            )));
        }
        Ok(Self {
            dim,
            len: data.len() / dim,
            storage: Storage::Owned(data),
        })
    }

    /// A matrix from separate vectors (all of the same dimension).
    #[cfg(test)]
    pub(crate) fn from_vecs(vecs: &[Vec<f32>]) -> Result<Self> {
        let dim = vecs.first().map_or(0, Vec::len);
        let mut data = Vec::with_capacity(dim * vecs.len());
        for (i, v) in vecs.iter().enumerate() {
            if v.len() != dim {
                return Err(Error::Dimension(format!(
                    "vector {i} has dimension {}, expected {dim}",
                    v.len()
                )));
            }
            data.extend_from_slice(v);
        }
        Self::from_rows(dim, data)
    }

    /// Maps a file of little-endian f32 rows.
    pub fn open(path: &Path, dim: usize) -> Result<Self> {
        if cfg!(target_endian = "big") {
            return Err(Error::Unsupported(
                "vector files are little-endian; big-endian hosts are not supported",
            ));
        }
        let mmap = crate::ids::map_file(path)?;
        let bytes = mmap.len();
        if dim == 0 || bytes % (4 * dim) != 0 {
            return Err(Error::index(
                path,
                format!("{bytes} bytes is not a whole number of {dim}-d f32 rows"),
            ));
        }
        if (mmap.as_ptr() as usize) % std::mem::align_of::<f32>() != 0 {
            return Err(Error::Internal("memory map is not 4-byte aligned".into()));
        }
        Ok(Self {
            dim,
            len: bytes / (4 * dim),
            storage: Storage::Mapped(mmap),
        })
    }

    /// The vectors' dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// How many vectors (rows) it holds.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no vector.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// All values, row after row.
    pub fn as_slice(&self) -> &[f32] {
        match &self.storage {
            Storage::Owned(v) => v,
            Storage::Mapped(m) => {
                // SAFETY: `open` checked that the map is 4-byte aligned and a whole number of
                // f32 values; any bit pattern is a valid f32; the map lives as long as `self`.
                unsafe { std::slice::from_raw_parts(m.as_ptr().cast::<f32>(), self.len * self.dim) }
            }
        }
    }

    /// Row `i`.
    pub fn row(&self, i: usize) -> &[f32] {
        &self.as_slice()[i * self.dim..(i + 1) * self.dim]
    }

    /// L2-normalises every row in place (owned matrices only; mapped ones are normalised when
    /// written).
    pub fn normalize(&mut self) -> Result<()> {
        let dim = self.dim;
        match &mut self.storage {
            Storage::Owned(v) => {
                v.chunks_exact_mut(dim).for_each(normalize_row);
                Ok(())
            }
            Storage::Mapped(_) => Err(Error::Internal(
                "cannot normalise a memory-mapped matrix".into(),
            )),
        }
    }
}

/// Scales a vector to unit length (a zero vector stays zero).
pub(crate) fn normalize_row(v: &mut [f32]) {
    let n = v
        .iter()
        .map(|x| f64::from(*x) * f64::from(*x))
        .sum::<f64>()
        .sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x = (f64::from(*x) / n) as f32);
    }
}

/// Writes a matrix as one little-endian f32 file, atomically.
#[cfg(test)]
pub(crate) fn write_vectors(path: &Path, m: &VectorMatrix) -> Result<()> {
    use std::io::Write as _;
    let mut f = mtr_core::atomic::AtomicFile::create(path)?;
    for chunk in m.as_slice().chunks(1 << 16) {
        let mut buf = Vec::with_capacity(chunk.len() * 4);
        chunk
            .iter()
            .for_each(|x| buf.extend_from_slice(&x.to_le_bytes()));
        f.write_all(&buf).map_err(|e| Error::io(path, e))?;
    }
    f.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_then_map() {
        let dir = tempfile::tempdir().unwrap();
        let mut m =
            VectorMatrix::from_vecs(&[vec![3.0, 4.0], vec![0.0, 2.0], vec![0.0, 0.0]]).unwrap();
        m.normalize().unwrap();
        let p = dir.path().join("v.f32");
        write_vectors(&p, &m).unwrap();
        let r = VectorMatrix::open(&p, 2).unwrap();
        assert_eq!(r.len(), 3);
        assert_eq!(r.row(0), &[0.6, 0.8]);
        assert_eq!(r.row(1), &[0.0, 1.0]);
        assert_eq!(r.row(2), &[0.0, 0.0]);
        assert!(VectorMatrix::open(&p, 4).is_err());
        assert!(VectorMatrix::from_rows(3, vec![1.0; 4]).is_err());
    }
}
