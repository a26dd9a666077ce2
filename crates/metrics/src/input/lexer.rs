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

/// Lines of a byte buffer with 1-based numbers (`\r\n` endings are fine: `\r` is whitespace
/// to [`Tokens`]).
pub(crate) fn lines(bytes: &[u8]) -> impl Iterator<Item = (u64, &[u8])> {
    line_spans(bytes)
        .zip(1u64..)
        .map(|((s, e), no)| (no, &bytes[s..e]))
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

/// A score as C's strtod reads a well-formed one. Plain decimals with at most 15 significant
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
    std::str::from_utf8(tok).ok()?.parse::<f64>().ok()
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
        for bad in ["", ".", "-", "1.2.3", "abc", "1,5"] {
            assert_eq!(parse_score(bad.as_bytes()), None, "{bad}");
        }
        assert!(parse_score(b"nan").unwrap().is_nan());
    }

    proptest! {
        #[test]
        fn fast_score_parse_equals_std(int in 0u64..10_000_000_000, frac in 0u32..1_000_000, width in 0usize..9, neg: bool) {
            let s = format!("{}{int}.{frac:0width$}", if neg { "-" } else { "" });
            prop_assert_eq!(parse_score(s.as_bytes()), Some(s.parse::<f64>().unwrap()), "{}", s);
        }
    }
}
