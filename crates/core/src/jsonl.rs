//! Streaming JSONL: one record per line, read with constant memory so that corpora of millions
//! of passages can be validated and converted without loading them. Tolerates what real files
//! contain (a UTF-8 BOM, CRLF and lone CR line ends, blank lines, a last line without a line
//! end) and reports anything else as an [`InputError`] naming the file and line.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::atomic::AtomicFile;
use crate::error::{Error, InputError, Result};

/// Iterates over the non-blank lines of a text stream with 1-based line numbers.
/// A line ends at `\n`, `\r\n` or a lone `\r` (what old Mac editors and some spreadsheet
/// exports write): a file of lone CRs read as one line would lose every record but the first.
pub struct Lines<R> {
    reader: R,
    file: PathBuf,
    line_no: u64,
    buf: Vec<u8>,
    /// The last line ended with `\r`: a `\n` right after it belongs to that line end.
    after_cr: bool,
}

impl Lines<BufReader<File>> {
    /// Opens `path` for reading line by line.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let f = File::open(path).map_err(|e| Error::io(path, e))?;
        Ok(Self::new(BufReader::with_capacity(1 << 16, f), path))
    }
}

impl<R: BufRead> Lines<R> {
    /// A failed read: a stream that is cut short or does not decode (a truncated or corrupt
    /// compressed file, a zip entry whose checksum fails) is the user's file at fault and
    /// names the line being read; anything else is an I/O error.
    fn read_error(&self, e: std::io::Error) -> Error {
        use std::io::ErrorKind;
        if !matches!(e.kind(), ErrorKind::InvalidData | ErrorKind::UnexpectedEof) {
            return Error::io(&self.file, e);
        }
        InputError::new(&self.file, format!("the file is truncated or corrupt: {e}"))
            .line(self.line_no + 1)
            .hint("download or copy the file again")
            .into()
    }

    /// Reads the next line into `buf` without its line end; false at the end of the stream.
    fn read_raw_line(&mut self) -> std::io::Result<bool> {
        self.buf.clear();
        let mut any = false;
        loop {
            let avail = match self.reader.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if avail.is_empty() {
                return Ok(any);
            }
            let mut start = 0;
            if std::mem::take(&mut self.after_cr) && avail[0] == b'\n' {
                start = 1;
            }
            match memchr::memchr2(b'\n', b'\r', &avail[start..]) {
                Some(i) => {
                    let end = start + i;
                    self.buf.extend_from_slice(&avail[start..end]);
                    self.after_cr = avail[end] == b'\r';
                    self.reader.consume(end + 1);
                    return Ok(true);
                }
                None => {
                    any |= avail.len() > start;
                    self.buf.extend_from_slice(&avail[start..]);
                    let n = avail.len();
                    self.reader.consume(n);
                }
            }
        }
    }

    /// Lines of `reader`; `file` names it in errors.
    pub fn new(reader: R, file: impl AsRef<Path>) -> Self {
        Self {
            reader,
            file: file.as_ref().to_path_buf(),
            line_no: 0,
            buf: Vec::with_capacity(4096),
            after_cr: false,
        }
    }

    /// The file errors name.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// The next non-blank line as `(line_no, text)`, with BOM and line end removed.
    pub fn next_line(&mut self) -> Option<Result<(u64, &str)>> {
        let (start, end) = loop {
            match self.read_raw_line() {
                Ok(false) => return None,
                Ok(true) => {}
                Err(e) => return Some(Err(self.read_error(e))),
            }
            self.line_no += 1;
            let mut start = 0;
            if self.line_no == 1 && self.buf.starts_with(b"\xEF\xBB\xBF") {
                start = 3;
            }
            let end = self.buf.len();
            if !self.buf[start..end].iter().all(|b| b.is_ascii_whitespace()) {
                break (start, end);
            }
        };
        let line_no = self.line_no;
        Some(match std::str::from_utf8(&self.buf[start..end]) {
            Ok(s) => Ok((line_no, s)),
            Err(e) => Err(InputError::new(
                &self.file,
                format!("invalid UTF-8 at byte {}", e.valid_up_to()),
            )
            .line(line_no)
            .hint("re-encode the file as UTF-8")
            .into()),
        })
    }
}

/// Parses one JSON line into `T`, turning serde's message into an input error with the field.
/// A line that fails is parsed a second time with path tracking, so the error names the whole
/// path to the bad value (`turns[0].gold[0].passage_id`); lines that parse pay nothing for it.
pub fn parse_line<T: DeserializeOwned>(file: &Path, line_no: u64, text: &str) -> Result<T> {
    serde_json::from_str(text).map_err(|e| {
        let mut err = json_error(file, line_no, &e);
        let de = &mut serde_json::Deserializer::from_str(text);
        if let Err(traced) = serde_path_to_error::deserialize::<_, T>(de) {
            let path = traced.path().to_string();
            if path != "." {
                // a missing field's path is the object that lacks it: add the field's name
                let field = match &err.field {
                    Some(name) if e.to_string().starts_with("missing field") => {
                        format!("{path}.{name}")
                    }
                    _ => path,
                };
                err = err.field(field);
            }
        }
        err.into()
    })
}

/// Parses one JSON line into `T` with serde's message only (no path to the bad value), for
/// readers whose messages name the field themselves (BEIR queries, corpus lines).
pub fn parse_plain<T: DeserializeOwned>(file: &Path, line_no: u64, text: &str) -> Result<T> {
    serde_json::from_str(text).map_err(|e| json_error(file, line_no, &e).into())
}

/// How [`Records`] turns a line into a record: [`parse_line`] or [`parse_plain`].
pub(crate) type ParseFn<T> = fn(&Path, u64, &str) -> Result<T>;

/// Converts a serde_json error into an [`InputError`], extracting the field name when serde
/// names one (`missing field `x``, `unknown field`, `invalid type ... for x`).
pub(crate) fn json_error(file: &Path, line_no: u64, e: &serde_json::Error) -> InputError {
    let msg = e.to_string();
    let field = msg
        .split('`')
        .nth(1)
        .filter(|_| msg.contains("field"))
        .map(str::to_string);
    let mut err = InputError::new(file, strip_position(&msg)).line(line_no);
    if let Some(f) = field {
        err = err.field(f);
    }
    if e.is_syntax() || e.is_eof() {
        err = err.hint("each line must be one complete JSON object");
    }
    err
}

fn strip_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}

/// Calls `f(line_no, record)` for every record of a JSONL file, streaming.
pub fn for_each<T, F>(path: impl AsRef<Path>, mut f: F) -> Result<()>
where
    T: DeserializeOwned,
    F: FnMut(u64, T) -> Result<()>,
{
    let mut lines = Lines::open(path.as_ref())?;
    let file = path.as_ref().to_path_buf();
    while let Some(next) = lines.next_line() {
        let (no, text) = next?;
        let rec: T = parse_line(&file, no, text)?;
        f(no, rec)?;
    }
    Ok(())
}

/// One line of a JSONL file read by [`records`]: a record with its 1-based line number, or the
/// input error that says why the line is not one (bad UTF-8, bad JSON, a wrong shape).
#[derive(Debug)]
pub enum Line<T> {
    /// A record and its line number.
    Record(u64, T),
    /// A line that is not a record, and why.
    Malformed(InputError),
}

/// The records of a JSONL file, streaming, for readers that report a malformed line and
/// continue (validation, importers): each item is a [`Line`], so the caller matches once; an
/// I/O failure is an `Err` item and ends the reading.
pub struct Records<T, R = BufReader<File>> {
    lines: Lines<R>,
    file: PathBuf,
    parse: ParseFn<T>,
}

/// Opens `path` for [`Records`], parsed with [`parse_line`].
pub fn records<T: DeserializeOwned>(path: impl AsRef<Path>) -> Result<Records<T>> {
    records_with(path, parse_line)
}

/// Opens `path` for [`Records`] parsed with `parse`.
pub(crate) fn records_with<T: DeserializeOwned>(
    path: impl AsRef<Path>,
    parse: ParseFn<T>,
) -> Result<Records<T>> {
    let path = path.as_ref();
    Ok(Records {
        lines: Lines::open(path)?,
        file: path.to_path_buf(),
        parse,
    })
}

/// [`Records`] of any reader (an entry of a zip archive) parsed with `parse`; `file` names it
/// in errors.
pub fn records_from<T: DeserializeOwned, R: BufRead>(
    reader: R,
    file: impl AsRef<Path>,
    parse: ParseFn<T>,
) -> Records<T, R> {
    Records {
        lines: Lines::new(reader, file.as_ref()),
        file: file.as_ref().to_path_buf(),
        parse,
    }
}

impl<T: DeserializeOwned, R: BufRead> Iterator for Records<T, R> {
    type Item = Result<Line<T>>;

    fn next(&mut self) -> Option<Self::Item> {
        let parsed = match self.lines.next_line()? {
            Ok((no, text)) => (self.parse)(&self.file, no, text).map(|r| Line::Record(no, r)),
            Err(e) => Err(e),
        };
        Some(match parsed {
            Err(Error::Input(e)) => Ok(Line::Malformed(*e)),
            other => other,
        })
    }
}

/// Reads a whole JSONL file into memory (for files known to be small, like dialogues).
pub fn read_all<T: DeserializeOwned>(path: impl AsRef<Path>) -> Result<Vec<T>> {
    let mut out = Vec::new();
    for_each(path, |_, r| {
        out.push(r);
        Ok(())
    })?;
    Ok(out)
}

/// Writes records as JSONL atomically.
pub struct JsonlWriter {
    file: AtomicFile,
    count: u64,
}

impl JsonlWriter {
    /// A writer that becomes `path` on [`JsonlWriter::commit`].
    pub fn create(path: impl AsRef<Path>) -> Result<Self> {
        Ok(Self {
            file: AtomicFile::create(path)?,
            count: 0,
        })
    }
    /// Appends one record as one line.
    pub fn write<T: Serialize>(&mut self, rec: &T) -> Result<()> {
        let path = self.file.path().to_path_buf();
        serde_json::to_writer(&mut self.file, rec).map_err(|e| {
            Error::Internal(format!("serialising a record for {}: {e}", path.display()))
        })?;
        self.file
            .write_all(b"\n")
            .map_err(|e| Error::io(&path, e))?;
        self.count += 1;
        Ok(())
    }
    /// Records written so far.
    pub fn count(&self) -> u64 {
        self.count
    }
    /// Moves the file into place; returns the number of records.
    pub fn commit(self) -> Result<u64> {
        let n = self.count;
        self.file.commit()?;
        Ok(n)
    }
}

/// Reads a whole file as UTF-8 text with a BOM removed, naming the file on error.
pub fn read_text(path: impl AsRef<Path>) -> Result<String> {
    let path = path.as_ref();
    let mut bytes = Vec::new();
    File::open(path)
        .and_then(|mut f| f.read_to_end(&mut bytes))
        .map_err(|e| Error::io(path, e))?;
    if bytes.starts_with(b"\xEF\xBB\xBF") {
        bytes.drain(..3);
    }
    String::from_utf8(bytes).map_err(|e| {
        let upto = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..upto].iter().filter(|b| **b == b'\n').count() as u64 + 1;
        InputError::new(path, "invalid UTF-8")
            .line(line)
            .hint("re-encode the file as UTF-8")
            .into()
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn records_hand_back_malformed_lines_and_go_on() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        std::fs::write(
            &path,
            "{\"a\": 1}\nnot json\n\n{\"a\": \"x\"}\n{\"a\": 3}\n",
        )
        .unwrap();
        #[derive(serde::Deserialize)]
        struct R {
            a: u32,
        }
        let mut got = Vec::new();
        let mut bad = Vec::new();
        for line in super::records::<R>(&path).unwrap() {
            match line.unwrap() {
                super::Line::Record(no, r) => got.push((no, r.a)),
                super::Line::Malformed(e) => bad.push(e.line),
            }
        }
        assert_eq!(got, vec![(1, 1), (5, 3)]);
        assert_eq!(bad, vec![Some(2), Some(4)]);
    }

    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize, Debug)]
    struct Rec {
        id: String,
    }

    #[test]
    fn bom_crlf_blank_lines_and_chinese() {
        let data = "\u{feff}{\"id\":\"a\"}\r\n\r\n{\"id\":\"中文\"}\r\n";
        let mut lines = Lines::new(data.as_bytes(), "x.jsonl");
        let (n1, t1) = lines.next_line().unwrap().unwrap();
        assert_eq!((n1, t1), (1, "{\"id\":\"a\"}"));
        let (n2, t2) = lines.next_line().unwrap().unwrap();
        assert_eq!(n2, 3);
        let r: Rec = parse_line(Path::new("x"), n2, t2).unwrap();
        assert_eq!(r.id, "中文");
        assert!(lines.next_line().is_none());
    }

    fn all_lines<R: BufRead>(mut lines: Lines<R>) -> Vec<(u64, String)> {
        let mut out = Vec::new();
        while let Some(l) = lines.next_line() {
            let (n, t) = l.unwrap();
            out.push((n, t.to_string()));
        }
        out
    }

    #[test]
    fn lone_cr_crlf_and_a_last_line_without_end_are_line_ends() {
        let want: Vec<(u64, String)> = vec![(1, "a".into()), (2, "b".into()), (4, "c".into())];
        for data in [
            "a\rb\r\rc",
            "a\r\nb\r\n\r\nc\r\n",
            "a\nb\n\nc\n",
            "a\rb\n\r\nc\r",
            "\u{feff}a\rb\r\n \t\rc",
        ] {
            // a one-byte buffer splits every CRLF across two reads
            for cap in [1, 2, 4096] {
                let r = std::io::BufReader::with_capacity(cap, data.as_bytes());
                assert_eq!(all_lines(Lines::new(r, "x")), want, "{data:?} cap {cap}");
            }
        }
    }

    /// A reader that yields `data`, then fails as a cut-short compressed stream does.
    struct CutShort<'a>(&'a [u8]);

    impl std::io::Read for CutShort<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.0.is_empty() {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "incomplete deflate stream",
                ));
            }
            let n = buf.len().min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn a_stream_cut_short_is_the_users_file_at_fault() {
        let r = std::io::BufReader::new(CutShort(b"{\"id\":\"a\"}\n{\"id\":\"b\"}\n{\"id\""));
        let mut lines = Lines::new(r, "corpus.jsonl.gz");
        lines.next_line().unwrap().unwrap();
        lines.next_line().unwrap().unwrap();
        let e = lines.next_line().unwrap().unwrap_err();
        assert!(e.is_user_error(), "{e}");
        let e = e.to_string();
        assert!(
            e.contains("corpus.jsonl.gz:3") && e.contains("truncated"),
            "{e}"
        );
    }

    #[test]
    fn invalid_utf8_names_line() {
        let data: &[u8] = b"{\"id\":\"a\"}\n{\"id\":\"\xff\"}\n";
        let mut lines = Lines::new(data, "x.jsonl");
        lines.next_line().unwrap().unwrap();
        let err = lines.next_line().unwrap().unwrap_err();
        assert!(err.to_string().contains("x.jsonl:2"), "{err}");
    }

    #[derive(Deserialize, Debug)]
    struct Outer {
        #[allow(dead_code)]
        items: Vec<Rec>,
    }

    #[test]
    fn nested_fields_are_named_by_their_path() {
        let err = parse_line::<Outer>(
            Path::new("d.jsonl"),
            3,
            "{\"items\":[{\"id\":\"a\"},{\"id\":5}]}",
        )
        .unwrap_err();
        let s = err.to_string();
        assert!(s.contains("d.jsonl:3") && s.contains("items[1].id"), "{s}");
        let err = parse_line::<Outer>(Path::new("d.jsonl"), 4, "{\"items\":[{}]}").unwrap_err();
        let s = err.to_string();
        assert!(s.contains("items[0].id"), "{s}");
    }

    #[test]
    fn missing_field_is_named() {
        let err = parse_line::<Rec>(Path::new("c.jsonl"), 7, "{\"title\":\"t\"}").unwrap_err();
        let s = err.to_string();
        assert!(s.contains("c.jsonl:7"), "{s}");
        assert!(s.contains("field `id`"), "{s}");
    }
}
