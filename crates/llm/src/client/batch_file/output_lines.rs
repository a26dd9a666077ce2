//! The lines of a Batch output file, read as every other reader of mtr reads lines
//! (`mtr_core::jsonl::Lines`): a UTF-8 byte-order mark dropped, a line ended by LF, CRLF or a
//! lone CR (an output file that went through an old-Mac editor or a spreadsheet), blank lines
//! skipped but counted, invalid UTF-8 the user's error at its line. Each line also says
//! whether a line end closed it: the import skips a last line that was cut short (a copy
//! still being written) instead of refusing the file.

use std::cell::Cell;
use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use mtr_core::jsonl::Lines;

use super::ImportError;

/// One non-blank line: its 1-based number, its text without line end, and whether a line end
/// closed it.
pub(super) struct OutputLine<'a> {
    pub(super) number: u64,
    pub(super) text: &'a str,
    pub(super) complete: bool,
}

/// The lines of a Batch output file.
pub(super) struct OutputLines<R> {
    lines: Lines<LastByte<R>>,
    /// The last byte the line reader consumed: after a line, its line end if it had one.
    last: Rc<Cell<Option<u8>>>,
    name: PathBuf,
}

impl<R: BufRead> OutputLines<R> {
    /// The lines of `reader`; `name` names the file in errors.
    pub(super) fn new(reader: R, name: &Path) -> Self {
        let last = Rc::new(Cell::new(None));
        let reader = LastByte {
            inner: reader,
            last: Rc::clone(&last),
        };
        Self {
            lines: Lines::new(reader, name),
            last,
            name: name.to_path_buf(),
        }
    }

    /// The next non-blank line, or the user's error (invalid UTF-8, a stream that does not
    /// decode) at its line, or the I/O error.
    pub(super) fn next_line(&mut self) -> Option<Result<OutputLine<'_>, ImportError>> {
        let next = self.lines.next_line()?;
        let complete = matches!(self.last.get(), Some(b'\n' | b'\r'));
        Some(match next {
            Ok((number, text)) => Ok(OutputLine {
                number,
                text,
                complete,
            }),
            Err(e) => Err(import_error(e, &self.name)),
        })
    }
}

/// mtr-core's reading error as the import's: the user's file at its line, or the I/O error.
fn import_error(e: mtr_core::Error, file: &Path) -> ImportError {
    match e {
        mtr_core::Error::Io { path, source } => ImportError::Io { file: path, source },
        mtr_core::Error::Input(e) => ImportError::Line {
            file: e.file,
            line: e.line.unwrap_or(0),
            message: e.message,
            hint: e.hint.unwrap_or_default(),
        },
        // the line reader fails with nothing else; were it to, it is no fault of the file
        other => ImportError::Io {
            file: file.to_path_buf(),
            source: std::io::Error::other(other.to_string()),
        },
    }
}

/// A reader that remembers the last byte consumed from it.
struct LastByte<R> {
    inner: R,
    last: Rc<Cell<Option<u8>>>,
}

impl<R: Read> Read for LastByte<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if let Some(b) = buf[..n].last() {
            self.last.set(Some(*b));
        }
        Ok(n)
    }
}

impl<R: BufRead> BufRead for LastByte<R> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        self.inner.fill_buf()
    }

    fn consume(&mut self, amt: usize) {
        // the bytes being consumed are the front of the buffer `fill_buf` last returned, which
        // a second call returns again without reading
        if amt > 0
            && let Ok(buf) = self.inner.fill_buf()
            && let Some(b) = buf.get(amt - 1)
        {
            self.last.set(Some(*b));
        }
        self.inner.consume(amt);
    }
}
