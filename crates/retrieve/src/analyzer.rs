//! Text analysis for BM25: how passages and queries become index terms. The analyzer is part
//! of an index's fingerprint, because a query analysed differently from the corpus silently
//! matches nothing; [`Analyzer::register`] installs the same pipeline on both sides.

use std::str::FromStr;

use serde::{Deserialize, Serialize};
use tantivy::tokenizer::{
    LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, StopWordFilter, TextAnalyzer, Token,
    TokenFilter, TokenStream, Tokenizer, TokenizerManager,
};

use crate::error::Result;

/// The language setting a user picks (`--language`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    /// English analyzer.
    En,
    /// Chinese analyzer (jieba segmentation).
    Zh,
    /// The benchmark manifest's language when it is `en` or `zh`, else detected from the corpus.
    #[default]
    Auto,
}

impl FromStr for Language {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "en" | "english" => Ok(Language::En),
            "zh" | "chinese" | "zh-cn" | "zh-tw" | "zh-hans" | "zh-hant" => Ok(Language::Zh),
            "auto" => Ok(Language::Auto),
            other => Err(format!(
                "unknown language `{other}` (expected en, zh or auto)"
            )),
        }
    }
}

impl std::fmt::Display for Language {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Language::En => "en",
            Language::Zh => "zh",
            Language::Auto => "auto",
        })
    }
}

impl Language {
    /// Maps a manifest language code (`en`, `zh`, `en-US`, `multi`, ...) to an analyzer
    /// language, or `None` when the code does not decide it.
    pub fn from_code(code: &str) -> Option<Analyzer> {
        let c = code.trim().to_ascii_lowercase();
        if c == "en" || c.starts_with("en-") || c.starts_with("en_") {
            Some(Analyzer::English)
        } else if c == "zh" || c.starts_with("zh-") || c.starts_with("zh_") {
            Some(Analyzer::Chinese)
        } else {
            None
        }
    }
}

/// A concrete analyzer, as recorded in an index's metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Analyzer {
    /// Simple tokenizer, tokens over 40 bytes dropped, lowercase, Lucene's English stop words,
    /// Snowball English stemmer.
    English,
    /// jieba search-mode segmentation, lowercase, whitespace and punctuation dropped.
    Chinese,
}

/// Name under which the analyzer is registered in tantivy; part of the schema, so an index
/// built with one analyzer never silently uses another.
impl Analyzer {
    pub(crate) fn tokenizer_name(self) -> &'static str {
        match self {
            Analyzer::English => "mtr_en_v1",
            Analyzer::Chinese => "mtr_zh_v1",
        }
    }

    /// The language this analyzer is for.
    pub fn language(self) -> Language {
        match self {
            Analyzer::English => Language::En,
            Analyzer::Chinese => Language::Zh,
        }
    }

    /// A stable description of the pipeline, hashed into the index fingerprint.
    pub fn description(self) -> &'static str {
        match self {
            Analyzer::English => {
                "simple-tokenizer|remove-long-40|lowercase|stop-lucene-en-33|snowball-english"
            }
            Analyzer::Chinese => "jieba-0.11-search-hmm|lowercase|drop-space-punct",
        }
    }

    /// A tantivy text analyzer running this pipeline (what [`Self::description`] names).
    pub fn build(self) -> TextAnalyzer {
        match self {
            Analyzer::English => {
                let mut b = TextAnalyzer::builder(SimpleTokenizer::default())
                    .filter(RemoveLongFilter::limit(40))
                    .filter(LowerCaser)
                    .dynamic();
                if let Some(stop) = StopWordFilter::new(tantivy::tokenizer::Language::English) {
                    b = b.filter_dynamic(stop);
                }
                b.filter_dynamic(Stemmer::new(tantivy::tokenizer::Language::English))
                    .build()
            }
            Analyzer::Chinese => TextAnalyzer::builder(tantivy_jieba::JiebaTokenizer::new())
                .filter(DropSeparators)
                .filter(RemoveLongFilter::limit(40))
                .filter(LowerCaser)
                .build(),
        }
    }

    /// Installs this analyzer under its name.
    pub fn register(self, manager: &TokenizerManager) {
        manager.register(self.tokenizer_name(), self.build());
    }

    /// The terms of a text, in order (duplicates kept): what BM25 sees.
    pub fn terms(self, text: &str) -> Vec<String> {
        let mut a = self.build();
        let mut stream = a.token_stream(text);
        let mut out = Vec::new();
        while stream.advance() {
            out.push(stream.token().text.clone());
        }
        out
    }

    /// Decides the analyzer for a corpus from a sample of its texts: Chinese when at least 20%
    /// of the non-space characters are CJK ideographs.
    pub fn detect<'a>(sample: impl IntoIterator<Item = &'a str>) -> Analyzer {
        let (mut cjk, mut total) = (0u64, 0u64);
        for text in sample {
            for c in text.chars().filter(|c| !c.is_whitespace()) {
                total += 1;
                if is_cjk(c) {
                    cjk += 1;
                }
            }
        }
        if total > 0 && cjk * 5 >= total {
            Analyzer::Chinese
        } else {
            Analyzer::English
        }
    }
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32, 0x4E00..=0x9FFF | 0x3400..=0x4DBF | 0x20000..=0x2A6DF | 0xF900..=0xFAFF)
}

/// Drops tokens that contain no letter or digit (jieba emits spaces and punctuation as tokens).
#[derive(Clone, Copy, Debug)]
struct DropSeparators;

impl TokenFilter for DropSeparators {
    type Tokenizer<T: Tokenizer> = DropSeparatorsTokenizer<T>;
    fn transform<T: Tokenizer>(self, tokenizer: T) -> Self::Tokenizer<T> {
        DropSeparatorsTokenizer(tokenizer)
    }
}

#[derive(Clone)]
struct DropSeparatorsTokenizer<T>(T);

impl<T: Tokenizer> Tokenizer for DropSeparatorsTokenizer<T> {
    type TokenStream<'a> = DropSeparatorsStream<T::TokenStream<'a>>;
    fn token_stream<'a>(&'a mut self, text: &'a str) -> Self::TokenStream<'a> {
        DropSeparatorsStream(self.0.token_stream(text))
    }
}

struct DropSeparatorsStream<S>(S);

impl<S: TokenStream> TokenStream for DropSeparatorsStream<S> {
    fn advance(&mut self) -> bool {
        while self.0.advance() {
            if self.0.token().text.chars().any(char::is_alphanumeric) {
                return true;
            }
        }
        false
    }
    fn token(&self) -> &Token {
        self.0.token()
    }
    fn token_mut(&mut self) -> &mut Token {
        self.0.token_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn english_stems_lowercases_and_drops_stop_words() {
        let t = Analyzer::English.terms("The Cardinals are PLAYING in the stadiums");
        assert_eq!(t, vec!["cardin", "play", "stadium"]);
    }

    #[test]
    fn chinese_segments_and_drops_punctuation() {
        let t = Analyzer::Chinese.terms("《战国无双3》是由光荣和ω-force开发的。");
        assert!(t.contains(&"战国".to_string()), "{t:?}");
        assert!(t.contains(&"开发".to_string()), "{t:?}");
        assert!(
            !t.iter().any(|w| w == "《" || w == "。" || w == " "),
            "{t:?}"
        );
        assert!(t.contains(&"force".to_string()), "{t:?}");
    }

    #[test]
    fn detection_and_codes() {
        assert_eq!(
            Analyzer::detect(["员工每年有15天年假。"]),
            Analyzer::Chinese
        );
        assert_eq!(
            Analyzer::detect(["Employees get 15 days of leave."]),
            Analyzer::English
        );
        assert_eq!(Language::from_code("zh-TW"), Some(Analyzer::Chinese));
        assert_eq!(Language::from_code("multi"), None);
        assert_eq!("ZH".parse::<Language>().unwrap(), Language::Zh);
        assert!("fr".parse::<Language>().is_err());
    }
}
