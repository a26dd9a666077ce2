//! The bytes-level reading every TREC reader shares: line spans (a final line without newline
//! included), whitespace tokens as trec_eval splits them, and scores parsed as C's strtod
//! parses them.

use std::path::Path;

use mtr_core::InputError;

pub(crate) fn bad_line(path: &Path, no: u64, msg: &str) -> InputError {
    InputError::new(path, msg).line(no)
}

/// The columns of a TREC run line, named as errors name them.
pub(crate) const RUN_FIELDS: &[&str] = &["qid", "Q0", "docno", "rank", "score", "tag"];
/// The columns of a TREC qrels line (a BEIR line has no `iter`).
pub(crate) const QRELS_FIELDS: &[&str] = &["qid", "iter", "docno", "grade"];
const BEIR_QRELS_FIELDS: &[&str] = &["qid", "docno", "grade"];

/// Refuses a line that is not valid UTF-8, naming its first field that holds the bad bytes
/// (`fields`: the columns' names). A corrupt byte in an id would otherwise make another query
/// or document of it, silently. ASCII lines, nearly all of them, cost one vectorised scan.
#[inline]
pub(crate) fn utf8_line(
    path: &Path,
    no: u64,
    line: &[u8],
    fields: &[&str],
) -> Result<(), InputError> {
    if line.is_ascii() {
        return Ok(());
    }
    not_utf8(path, no, line, fields)
}

#[cold]
fn not_utf8(path: &Path, no: u64, line: &[u8], fields: &[&str]) -> Result<(), InputError> {
    let Err(e) = std::str::from_utf8(line) else {
        return Ok(());
    };
    let at = e.valid_up_to();
    let mut toks = Tokens::new(line);
    let mut count = 0usize;
    let mut column = None;
    while toks.next().is_some() {
        if column.is_none() && toks.position() > at {
            column = Some(count);
        }
        count += 1;
    }
    let fields = if fields == QRELS_FIELDS && count == 3 {
        BEIR_QRELS_FIELDS
    } else {
        fields
    };
    let mut err = InputError::new(path, format!("invalid UTF-8 at byte {at} of the line"))
        .line(no)
        .hint("re-encode the file as UTF-8");
    if let Some(f) = column.and_then(|c| fields.get(c)) {
        err = err.field(*f);
    }
    Err(err)
}

/// Checks a run for UTF-8 ahead of a reader that goes through it line by line: a chunk of
/// whole lines at a time (one `is_ascii` scan per megabyte, hot in cache for the parse that
/// follows: 1.3% of an evaluation's instructions, where a call per line costs its overhead per
/// line), and on a chunk that is not UTF-8 the first line at fault, named by [`utf8_line`].
#[derive(Debug, Default)]
pub(crate) struct Utf8Ahead {
    /// The bytes before this offset are checked.
    checked: usize,
}

impl Utf8Ahead {
    const CHUNK: usize = 1 << 20;

    /// Before the line that starts at `start` (line `no`) is read: checks it and the lines
    /// after it, a chunk at a time, unless they are checked already.
    #[inline]
    pub(crate) fn check(
        &mut self,
        bytes: &[u8],
        start: usize,
        no: u64,
        path: &Path,
        fields: &[&str],
    ) -> Result<(), InputError> {
        if start < self.checked {
            return Ok(());
        }
        self.check_chunk(bytes, start, no, path, fields)
    }

    fn check_chunk(
        &mut self,
        bytes: &[u8],
        start: usize,
        no: u64,
        path: &Path,
        fields: &[&str],
    ) -> Result<(), InputError> {
        let mut end = (start + Self::CHUNK).min(bytes.len());
        if end < bytes.len() {
            end = memchr::memchr(b'\n', &bytes[end..]).map_or(bytes.len(), |k| end + k);
        }
        let chunk = &bytes[start..end];
        if !chunk.is_ascii() && std::str::from_utf8(chunk).is_err() {
            for ((s, e), k) in line_spans(chunk).zip(0u64..) {
                utf8_line(path, no + k, &chunk[s..e], fields)?;
            }
        }
        self.checked = end;
        Ok(())
    }
}

/// (start, end) byte spans of the lines of a buffer, without their `\n`; a final line without
/// newline is included. One SIMD scan over the whole buffer, not a search per line.
pub(crate) fn line_spans(bytes: &[u8]) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut newlines = memchr::memchr_iter(b'\n', bytes);
    let mut start = 0usize;
    let mut done = false;
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        match newlines.next() {
            Some(e) => {
                let s = start;
                start = e + 1;
                Some((s, e))
            }
            None => {
                done = true;
                (start < bytes.len()).then_some((start, bytes.len()))
            }
        }
    })
}

/// The UTF-8 byte-order mark some editors (and Excel) write at the start of a text file.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The buffer without a leading UTF-8 byte-order mark.
pub(crate) fn strip_bom(bytes: &[u8]) -> &[u8] {
    bytes.strip_prefix(BOM).unwrap_or(bytes)
}

/// True when the first line of `bytes` ends in a lone `\r` (old Mac line ends), which the
/// `\n`-splitting readers would take for one long line.
pub(crate) fn has_lone_cr_line_ends(bytes: &[u8]) -> bool {
    memchr::memchr2(b'\n', b'\r', bytes)
        .is_some_and(|i| bytes[i] == b'\r' && bytes.get(i + 1) != Some(&b'\n'))
}

/// The buffer with every lone `\r` made a `\n` (`\r\n` kept), so the line numbers are an
/// editor's.
pub(crate) fn lone_cr_to_lf(bytes: &[u8]) -> Vec<u8> {
    let mut out = bytes.to_vec();
    for i in memchr::memchr_iter(b'\r', bytes) {
        if bytes.get(i + 1) != Some(&b'\n') {
            out[i] = b'\n';
        }
    }
    out
}

/// Lines of a byte buffer with 1-based numbers, a leading byte-order mark left out. `\r\n`
/// endings are fine (`\r` is whitespace to [`Tokens`]) and a lone `\r` ends a line too.
pub(crate) fn lines(bytes: &[u8]) -> impl Iterator<Item = (u64, &[u8])> {
    let bytes = strip_bom(bytes);
    let mut ends = memchr::memchr2_iter(b'\n', b'\r', bytes);
    let mut start = 0usize;
    let mut done = false;
    let spans = std::iter::from_fn(move || {
        if done {
            return None;
        }
        loop {
            match ends.next() {
                // `\r\n`: the `\n` ends the line
                Some(e) if bytes[e] == b'\r' && bytes.get(e + 1) == Some(&b'\n') => {}
                Some(e) => {
                    let s = start;
                    start = e + 1;
                    return Some((s, e));
                }
                None => {
                    done = true;
                    return (start < bytes.len()).then_some((start, bytes.len()));
                }
            }
        }
    });
    spans
        .zip(1u64..)
        .map(move |((s, e), no)| (no, &bytes[s..e]))
}

/// Whitespace-separated tokens of a line (space, tab, `\r`, vertical tab, form feed).
pub(crate) struct Tokens<'a> {
    line: &'a [u8],
    pos: usize,
}

impl<'a> Tokens<'a> {
    #[inline]
    pub(crate) fn new(line: &'a [u8]) -> Self {
        Tokens { line, pos: 0 }
    }
    /// Byte offset just after the last token returned.
    #[inline]
    pub(crate) fn position(&self) -> usize {
        self.pos
    }
}

#[inline]
pub(crate) fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\x0b' | b'\x0c')
}

impl<'a> Iterator for Tokens<'a> {
    type Item = &'a [u8];
    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        let l = self.line;
        let mut i = self.pos;
        while i < l.len() && is_space(l[i]) {
            i += 1;
        }
        if i >= l.len() {
            self.pos = i;
            return None;
        }
        let start = i;
        while i < l.len() && !is_space(l[i]) {
            i += 1;
        }
        self.pos = i;
        Some(&l[start..i])
    }
}

/// A finite score as C's strtod reads a well-formed one (`None` for anything else, NaN and
/// infinities included). Plain decimals with at most 15 significant
/// digits take Clinger's fast path (mantissa and power of ten are exact doubles, so one
/// correctly rounded division gives the correctly rounded result); anything else goes to std's
/// correctly rounded parser.
#[inline]
pub(crate) fn parse_score(tok: &[u8]) -> Option<f64> {
    const POW10: [f64; 16] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
    ];
    let (neg, digits) = match tok.first() {
        Some(b'-') => (true, &tok[1..]),
        Some(b'+') => (false, &tok[1..]),
        _ => (false, tok),
    };
    let mut mantissa: u64 = 0;
    let mut n_digits = 0usize;
    let mut frac_digits = 0usize;
    let mut seen_dot = false;
    let mut ok = !digits.is_empty();
    for &b in digits {
        match b {
            b'0'..=b'9' => {
                if mantissa == 0 && b == b'0' && !seen_dot {
                    // leading zeros do not count as significant digits
                } else {
                    n_digits += 1;
                }
                mantissa = mantissa.wrapping_mul(10).wrapping_add(u64::from(b - b'0'));
                if seen_dot {
                    frac_digits += 1;
                }
            }
            b'.' if !seen_dot => seen_dot = true,
            _ => {
                ok = false;
                break;
            }
        }
    }
    if ok && n_digits <= 15 && frac_digits < POW10.len() && digits != b"." {
        let v = mantissa as f64 / POW10[frac_digits];
        return Some(if neg { -v } else { v });
    }
    // NaN and the infinities (written, or beyond the double range) rank nothing: refused
    let v = std::str::from_utf8(tok).ok()?.parse::<f64>().ok()?;
    v.is_finite().then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn score_parsing_edge_cases() {
        for (s, v) in [
            ("1", 1.0),
            ("-2.5", -2.5),
            ("+0.30000001", 0.30000001),
            ("1e-3", 1e-3),
            ("9.99e-4", 9.99e-4),
            ("16777217", 16777217.0),
            ("007.50", 7.5),
            (".5", 0.5),
            ("5.", 5.0),
            (
                "0.1234567890123456789",
                "0.1234567890123456789".parse().unwrap(),
            ),
            ("12345678901234567890", 12345678901234567890.0),
        ] {
            assert_eq!(parse_score(s.as_bytes()), Some(v), "{s}");
        }
        for bad in [
            "", ".", "-", "1.2.3", "abc", "1,5", "nan", "NaN", "inf", "-inf", "1e400",
        ] {
            assert_eq!(parse_score(bad.as_bytes()), None, "{bad}");
        }
    }

    #[test]
    fn a_line_that_is_not_utf8_names_its_field() {
        let p = Path::new("run.txt");
        assert!(utf8_line(p, 1, b"q1 Q0 d\xc3\xa9 1 2.5 t", RUN_FIELDS).is_ok());
        let e = utf8_line(p, 7, b"q\xff1 Q0 d1 1 2.5 t", RUN_FIELDS).unwrap_err();
        assert_eq!(
            e.to_string(),
            "run.txt:7: field `qid`: invalid UTF-8 at byte 1 of the line (hint: re-encode the file as UTF-8)"
        );
        let e = utf8_line(p, 2, b"q1 Q0 d1 1 2.5 t\xe9", RUN_FIELDS).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("tag"));
        let e = utf8_line(p, 2, b"q1\td\xfe\t1", QRELS_FIELDS).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("docno"));
        let e = utf8_line(p, 2, b"q1 0 d\xfe 1", QRELS_FIELDS).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("docno"));
    }

    #[test]
    fn utf8_is_checked_ahead_by_chunks_of_whole_lines() {
        let p = Path::new("run.txt");
        let line = "q1 Q0 d\u{e9} 1 2.5 t\n";
        let n = Utf8Ahead::CHUNK / line.len() * 3;
        let mut text = line.repeat(n).into_bytes();
        let mut ahead = Utf8Ahead::default();
        let (mut start, mut no) = (0, 1);
        while start < text.len() {
            ahead.check(&text, start, no, p, RUN_FIELDS).unwrap();
            start += line.len();
            no += 1;
        }
        // a bad byte in the docno of line n - 1 (in the last chunk): that line is named
        let at = (n - 2) * line.len() + 8;
        text[at] = 0xff;
        let mut ahead = Utf8Ahead::default();
        let (mut start, mut no) = (0, 1);
        let e = loop {
            if let Err(e) = ahead.check(&text, start, no, p, RUN_FIELDS) {
                break e;
            }
            start += line.len();
            no += 1;
        };
        assert_eq!(
            (e.line, e.field.as_deref()),
            (Some(n as u64 - 1), Some("docno"))
        );
    }

    #[test]
    fn lines_take_bom_crlf_lone_cr_and_a_last_line_without_end() {
        let got: Vec<(u64, &[u8])> = lines(b"\xEF\xBB\xBFa\r\nb\rc\n\nd").collect();
        let want: Vec<(u64, &[u8])> = vec![(1, b"a\r"), (2, b"b"), (3, b"c"), (4, b""), (5, b"d")];
        assert_eq!(got, want);
        assert!(has_lone_cr_line_ends(b"a b\rc d\r"));
        assert!(!has_lone_cr_line_ends(b"a b\r\nc d\r\n"));
        assert_eq!(lone_cr_to_lf(b"a\rb\r\nc"), b"a\nb\r\nc");
    }

    proptest! {
        #[test]
        fn fast_score_parse_equals_std(int in 0u64..10_000_000_000, frac in 0u32..1_000_000, width in 0usize..9, neg: bool) {
            let s = format!("{}{int}.{frac:0width$}", if neg { "-" } else { "" });
            prop_assert_eq!(parse_score(s.as_bytes()), Some(s.parse::<f64>().unwrap()), "{}", s);
        }
    }
}
