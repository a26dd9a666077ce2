//! Language detection and language-aware word counting (whatlang). Codes are ISO 639-1 where
//! one exists (`en`, `zh`, ...), else whatlang's ISO 639-3 code.

use serde::{Deserialize, Serialize};

/// A corpus language by code.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Language(String);

impl Language {
    /// The language of an ISO 639-1 code (`en`, `zh`, ...).
    pub fn from_code(code: &str) -> Self {
        let c = code.trim().to_ascii_lowercase();
        let c = match c.as_str() {
            "eng" | "english" => "en",
            "cmn" | "zho" | "chi" | "chinese" | "zh-cn" | "zh-tw" | "zh-hans" | "zh-hant" => "zh",
            other => other,
        };
        Language(c.to_string())
    }
    /// The ISO 639-1 code.
    pub fn code(&self) -> &str {
        &self.0
    }
    /// Whether the language is written in CJK characters (no spaces between words).
    pub fn is_cjk(&self) -> bool {
        matches!(self.0.as_str(), "zh" | "ja" | "ko")
    }
    /// The language's English name, for prompts ("Answer in Chinese").
    pub fn name(&self) -> String {
        match self.0.as_str() {
            "en" => "English".into(),
            "zh" => "Chinese".into(),
            "ja" => "Japanese".into(),
            "ko" => "Korean".into(),
            "de" => "German".into(),
            "fr" => "French".into(),
            "es" => "Spanish".into(),
            "pt" => "Portuguese".into(),
            "it" => "Italian".into(),
            "ru" => "Russian".into(),
            "nl" => "Dutch".into(),
            other => whatlang::Lang::from_code(other)
                .map(|l| l.eng_name().to_string())
                .unwrap_or_else(|| other.to_string()),
        }
    }
}

/// Detects the language of a text from its first 1,500 bytes; `None` when too unsure.
pub(crate) fn detect(text: &str) -> Option<Language> {
    let mut end = text.len().min(1500);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let info = whatlang::detect(&text[..end])?;
    if info.confidence() < 0.3 && !info.is_reliable() {
        return None;
    }
    Some(Language::from_code(iso639_1(info.lang())))
}

/// The most frequent detected language (ties: smallest code).
pub(crate) fn dominant(detected: &[Option<Language>]) -> Option<Language> {
    let mut counts = std::collections::BTreeMap::<&Language, usize>::new();
    for l in detected.iter().flatten() {
        *counts.entry(l).or_default() += 1;
    }
    counts
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(a.0)))
        .map(|(l, _)| l.clone())
}

fn iso639_1(l: whatlang::Lang) -> &'static str {
    use whatlang::Lang::*;
    match l {
        Eng => "en",
        Cmn => "zh",
        Jpn => "ja",
        Kor => "ko",
        Deu => "de",
        Fra => "fr",
        Spa => "es",
        Por => "pt",
        Ita => "it",
        Rus => "ru",
        Nld => "nl",
        Ara => "ar",
        Hin => "hi",
        Tur => "tr",
        Pol => "pl",
        Swe => "sv",
        Ukr => "uk",
        Vie => "vi",
        other => other.code(),
    }
}

/// True for Han, kana and Hangul characters (written without spaces between words).
pub(crate) fn is_cjk_char(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0xAC00..=0xD7AF | 0x20000..=0x2FA1F)
}

/// Words of a text: whitespace-separated runs of non-CJK characters, plus one per CJK character.
pub(crate) fn word_count(text: &str) -> usize {
    let mut n = 0;
    let mut in_word = false;
    for c in text.chars() {
        if is_cjk_char(c) {
            n += 1;
            in_word = false;
        } else if c.is_whitespace() || (!c.is_alphanumeric() && !in_word) {
            in_word = false;
        } else if !in_word {
            n += 1;
            in_word = true;
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_english_and_chinese() {
        assert_eq!(
            detect("Employees receive twenty five days of paid annual leave every year.")
                .unwrap()
                .code(),
            "en"
        );
        assert_eq!(
            detect("员工每年享有带薪年休假，未休完的年假最多可以结转五天。")
                .unwrap()
                .code(),
            "zh"
        );
        assert_eq!(
            detect("員工每年享有帶薪年休假，未休完的年假最多可以結轉五天。")
                .unwrap()
                .code(),
            "zh"
        );
    }

    #[test]
    fn counts_words_in_both_scripts() {
        assert_eq!(word_count("Hello, big world!"), 3);
        assert_eq!(word_count("年假10天"), 4);
        assert_eq!(word_count("  "), 0);
    }
}
