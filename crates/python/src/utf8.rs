//! A Python `str`'s UTF-8 bytes, for the ids of DataFrames and dicts, without a copy where
//! the interpreter allows. On CPython 3.10 and later that is `PyUnicode_AsUTF8AndSize`, in the
//! stable ABI since 3.10: the string's own UTF-8 (an ASCII string's data itself, cached
//! otherwise). The wheel is abi3 for 3.9, whose stable ABI lacks it, so on 3.9 the bytes come
//! through `to_cow` (a temporary `bytes` object a string): slower, the same bytes.

use std::os::raw::c_char;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyString;

unsafe extern "C" {
    // In every CPython 3 (the stable ABI's since 3.10); declared here because pyo3 leaves it
    // out of abi3-py39 builds. Called on 3.10 and later only.
    fn PyUnicode_AsUTF8AndSize(
        unicode: *mut ffi::PyObject,
        size: *mut ffi::Py_ssize_t,
    ) -> *const c_char;
}

/// How this interpreter gives a string's UTF-8.
#[derive(Debug, Clone, Copy)]
pub struct Utf8 {
    stable_abi_310: bool,
}

impl Utf8 {
    pub fn new(py: Python<'_>) -> Self {
        Utf8 {
            stable_abi_310: py.version_info() >= (3, 10),
        }
    }

    /// Calls `f` with the string's UTF-8 bytes (a string with lone surrogates, which has
    /// none, is Python's `UnicodeEncodeError`).
    #[inline]
    pub fn with<R>(self, s: &Bound<'_, PyString>, f: impl FnOnce(&[u8]) -> R) -> PyResult<R> {
        if !self.stable_abi_310 {
            return Ok(f(s.to_cow()?.as_bytes()));
        }
        let mut size: ffi::Py_ssize_t = 0;
        // SAFETY: `s` is a str; the buffer belongs to it and lives as long as it does, and
        // the slice does not outlive this call.
        let p = unsafe { PyUnicode_AsUTF8AndSize(s.as_ptr(), &mut size) };
        if p.is_null() {
            return Err(PyErr::fetch(s.py()));
        }
        let bytes = unsafe { std::slice::from_raw_parts(p.cast::<u8>(), size as usize) };
        Ok(f(bytes))
    }
}
