//! Which language a text is in (whatlang), as ISO 639-1 codes: one text's language and the
//! dominant language of many short texts. Importers record it in the manifest; statistics and
//! realism checks report it.

use std::collections::BTreeMap;

/// ISO 639-1 code of a whatlang language where one exists, else its ISO 639-3 code.
pub fn iso639_1(lang: whatlang::Lang) -> &'static str {
    use whatlang::Lang::*;
    match lang {
        Eng => "en",
        Cmn => "zh",
        Spa => "es",
        Fra => "fr",
        Deu => "de",
        Ita => "it",
        Por => "pt",
        Rus => "ru",
        Jpn => "ja",
        Kor => "ko",
        Ara => "ar",
        Hin => "hi",
        Nld => "nl",
        Tur => "tr",
        Pol => "pl",
        Vie => "vi",
        Ukr => "uk",
        Swe => "sv",
        Ind => "id",
        Heb => "he",
        Pes => "fa",
        Ell => "el",
        Ces => "cs",
        Dan => "da",
        Fin => "fi",
        Nob => "no",
        Hun => "hu",
        Ron => "ro",
        Tha => "th",
        Ben => "bn",
        other => other.code(),
    }
}

/// The language of one text (`und` when undetectable).
pub fn language_of(text: &str) -> String {
    match whatlang::detect(text) {
        Some(info) => iso639_1(info.lang()).to_string(),
        None => "und".into(),
    }
}

/// The dominant language of many short texts: texts are concatenated in chunks of about 2,000
/// characters and each chunk votes. Returns the winner when it has at least 80% of the votes,
/// `multi` otherwise, and `""` when there is no text.
pub(crate) fn detect_language<'a>(texts: impl Iterator<Item = &'a str>) -> String {
    let mut votes: BTreeMap<String, usize> = BTreeMap::new();
    let mut chunk = String::new();
    let mut chunks = 0usize;
    for t in texts {
        chunk.push_str(t);
        chunk.push('\n');
        if chunk.len() > 2000 {
            flush(&mut chunk, &mut votes);
            chunks += 1;
            if chunks >= 200 {
                break;
            }
        }
    }
    flush(&mut chunk, &mut votes);
    votes.remove("und");
    let total: usize = votes.values().sum();
    let Some((best, n)) = votes.iter().max_by_key(|(_, n)| **n) else {
        return String::new();
    };
    if *n * 5 >= total * 4 {
        best.clone()
    } else {
        "multi".into()
    }
}

fn flush(chunk: &mut String, votes: &mut BTreeMap<String, usize>) {
    if !chunk.trim().is_empty() {
        *votes.entry(language_of(chunk)).or_default() += 1;
    }
    chunk.clear();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_text_and_many() {
        assert_eq!(
            language_of("Where do the Arizona Cardinals play this week and who is their coach?"),
            "en"
        );
        assert_eq!(
            language_of("员工每年有多少天年假？请假需要提前几天申请？"),
            "zh"
        );
        assert_eq!(
            detect_language(["What is the capital of France and why is it famous?"].into_iter()),
            "en"
        );
    }
}
