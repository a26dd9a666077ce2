//! A column of ids as Arrow lays out strings: one byte buffer and `rows + 1` offsets, value
//! `i` being `data[offsets[i]..offsets[i + 1]]`. Arrow arrays (pandas' `string[pyarrow]`)
//! hand theirs over as they are; other callers build the two buffers in one pass. Checked once
//! when made, so that reading a value is two loads and a slice.

use crate::error::{MetricsError, Result};

/// The offsets of an [`IdColumn`]: Arrow's `string` (32-bit) or `large_string` (64-bit).
#[derive(Debug, Clone, Copy)]
pub enum Offsets<'a> {
    /// 32-bit offsets.
    I32(&'a [i32]),
    /// 64-bit offsets.
    I64(&'a [i64]),
}

impl Offsets<'_> {
    fn len(&self) -> usize {
        match self {
            Offsets::I32(o) => o.len(),
            Offsets::I64(o) => o.len(),
        }
    }
}

/// `rows` ids in one buffer (see the module's doc).
#[derive(Debug, Clone, Copy)]
pub struct IdColumn<'a> {
    data: &'a [u8],
    offsets: Offsets<'a>,
}

impl<'a> IdColumn<'a> {
    /// The column of `offsets.len() - 1` values; the offsets must be non-negative,
    /// non-decreasing and within `data` (a bad argument otherwise).
    pub fn new(data: &'a [u8], offsets: Offsets<'a>) -> Result<Self> {
        fn check<T: Copy + TryInto<usize>>(o: &[T], len: usize) -> Result<()> {
            let mut last = 0usize;
            for (i, v) in o.iter().enumerate() {
                let v: usize = (*v).try_into().map_err(|_| bad(i, "negative"))?;
                if v < last || v > len {
                    return Err(bad(i, "decreasing or past the data"));
                }
                last = v;
            }
            Ok(())
        }
        fn bad(i: usize, what: &str) -> MetricsError {
            MetricsError::invalid(format!("id column: offset {i} is {what}"))
        }
        if offsets.len() == 0 {
            return Err(MetricsError::invalid(
                "id column: no offsets (rows + 1 are needed)",
            ));
        }
        match offsets {
            Offsets::I32(o) => check(o, data.len())?,
            Offsets::I64(o) => check(o, data.len())?,
        }
        Ok(IdColumn { data, offsets })
    }

    /// How many values.
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// True when the column has no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Value `i` (`i < len()`).
    #[inline]
    pub fn get(&self, i: usize) -> &'a [u8] {
        // `new` checked the offsets: non-negative, ordered and within the data
        match self.offsets {
            Offsets::I32(o) => &self.data[o[i] as usize..o[i + 1] as usize],
            Offsets::I64(o) => &self.data[o[i] as usize..o[i + 1] as usize],
        }
    }

    /// Every value in order.
    pub fn iter(&self) -> impl Iterator<Item = &'a [u8]> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }
}
