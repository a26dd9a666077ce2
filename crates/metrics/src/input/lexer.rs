//! The bytes-level reading every TREC reader shares: line spans (a final line without newline
//! included), whitespace tokens as trec_eval splits them, and scores parsed as C's strtod
//! parses them.

use std::path::Path;

use mtr_core::InputError;

pub(crate) fn bad_line(path: &Path, no: u64, msg: &str) -> InputError {
    InputError::new(path, msg).line(no)
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
