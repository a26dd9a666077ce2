//! How long a question is, in the unit its language is read in: words, or characters for
//! Chinese, Japanese and Korean (which write no spaces), and the histogram bins of those
//! lengths. Apart from the rest of the realism measures because synthesis draws question
//! lengths in the same unit (`--style production`, `like:BENCH`).

use serde::{Deserialize, Serialize};

/// True for the languages written without spaces between words (ISO 639-1 codes).
pub(crate) fn is_cjk_language(code: &str) -> bool {
    matches!(code, "zh" | "ja" | "ko")
}

/// True for a Han, kana or Hangul character.
pub fn is_cjk_char(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xAC00..=0xD7AF | 0xF900..=0xFAFF
        | 0x20000..=0x2FA1F)
}

/// The unit a language's question lengths are counted in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LengthUnit {
    /// Whitespace-separated words.
    Words,
    /// CJK characters (a Latin word counts as one), for Chinese, Japanese and Korean.
    Characters,
}

impl LengthUnit {
    pub(crate) fn of_language(code: &str) -> Self {
        if is_cjk_language(code) {
            LengthUnit::Characters
        } else {
            LengthUnit::Words
        }
    }

    /// The unit's name in reports (`words`, `characters`).
    pub fn name(self) -> &'static str {
        match self {
            LengthUnit::Words => "words",
            LengthUnit::Characters => "characters",
        }
    }

    /// The length of `text` in this unit: whitespace-separated words, or CJK characters (a
    /// Latin word inside a Chinese question counts as one character).
    pub fn length(self, text: &str) -> usize {
        match self {
            LengthUnit::Words => text.split_whitespace().count(),
            LengthUnit::Characters => {
                let cjk = text.chars().filter(|c| is_cjk_char(*c)).count();
                let latin = text
                    .split(|c: char| !c.is_ascii_alphanumeric())
                    .filter(|w| !w.is_empty())
                    .count();
                cjk + latin
            }
        }
    }

    /// The histogram's bins: inclusive lower and upper bounds (the last one open).
    pub fn bins(self) -> &'static [(usize, usize)] {
        match self {
            LengthUnit::Words => &[
                (0, 5),
                (6, 10),
                (11, 15),
                (16, 20),
                (21, 30),
                (31, 50),
                (51, usize::MAX),
            ],
            LengthUnit::Characters => &[
                (0, 5),
                (6, 10),
                (11, 20),
                (21, 30),
                (31, 50),
                (51, 100),
                (101, usize::MAX),
            ],
        }
    }
}

/// One bin of a length histogram.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bin {
    /// `6-10`, `51+`.
    pub label: String,
    /// Questions in the bin.
    pub count: usize,
    /// Their share of all questions (0 to 1).
    pub share: f64,
}

/// The histogram of `lengths` over `unit`'s bins.
pub fn histogram(unit: LengthUnit, lengths: &[usize]) -> Vec<Bin> {
    let n = lengths.len().max(1) as f64;
    unit.bins()
        .iter()
        .map(|&(lo, hi)| {
            let count = lengths.iter().filter(|&&l| l >= lo && l <= hi).count();
            let label = if hi == usize::MAX {
                format!("{lo}+")
            } else {
                format!("{lo}-{hi}")
            };
            Bin {
                label,
                count,
                share: count as f64 / n,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_count_words_or_cjk_characters() {
        assert_eq!(
            LengthUnit::Words.length("How many days of leave do I get?"),
            8
        );
        assert_eq!(LengthUnit::Characters.length("年假最多能结转几天？"), 9);
        // a Latin word in a Chinese question is one unit
        assert_eq!(LengthUnit::Characters.length("VPN怎么连？"), 4);
        assert_eq!(LengthUnit::of_language("zh"), LengthUnit::Characters);
        assert_eq!(LengthUnit::of_language("en"), LengthUnit::Words);
    }

    #[test]
    fn the_histogram_puts_every_length_in_one_bin() {
        let h = histogram(LengthUnit::Words, &[1, 5, 6, 10, 11, 60]);
        assert_eq!(h.iter().map(|b| b.count).sum::<usize>(), 6);
        assert_eq!(h[0].count, 2);
        assert_eq!(h[1].count, 2);
        assert_eq!(h.last().map(|b| b.label.as_str()), Some("51+"));
        assert_eq!(h.last().map(|b| b.count), Some(1));
    }
}
