//! Curation: turn raw documents into documents worth asking questions about. In order:
//! strip boilerplate sections (See also, References, External links, ...), drop documents
//! outside the length bounds, drop documents not in the corpus language, and drop
//! near-duplicates (MinHash-LSH, see [`crate::minhash`]). Every filter counts what it removed
//! and names a few examples, so the report can say exactly what curation did.

use std::collections::BTreeMap;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::input::Document;
use crate::lang::{self, Language};
use crate::minhash::{self, MinHashOptions, MinHasher};

/// Curation parameters (the `[synth.curation]` config section).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CurationOptions {
    /// Section titles whose section is removed (case-insensitive, exact title match).
    pub strip_sections: Vec<String>,
    /// Minimum length in words (a CJK character counts as one word) after stripping.
    pub min_words: usize,
    /// Maximum length in words.
    pub max_words: usize,
    /// Languages to keep (ISO 639-1, e.g. `en`, `zh`). Empty: the corpus's dominant language.
    pub languages: Vec<String>,
    /// Near-duplicate removal (MinHash-LSH); `false` disables it.
    pub dedup: bool,
    /// Near-duplicate detection.
    pub minhash: MinHashOptions,
}

impl Default for CurationOptions {
    fn default() -> Self {
        Self {
            strip_sections: DEFAULT_STRIP.iter().map(|s| s.to_string()).collect(),
            min_words: 30,
            max_words: 50_000,
            languages: Vec::new(),
            dedup: true,
            minhash: MinHashOptions::default(),
        }
    }
}

const DEFAULT_STRIP: &[&str] = &[
    "See also",
    "References",
    "External links",
    "Further reading",
    "Notes",
    "Footnotes",
    "Bibliography",
    "Sources",
    "Citations",
    "Notes and references",
    "参见",
    "參見",
    "参考资料",
    "參考資料",
    "参考文献",
    "參考文獻",
    "外部链接",
    "外部連結",
    "延伸阅读",
    "延伸閱讀",
    "注释",
    "註釋",
    "脚注",
    "腳註",
    "相关条目",
    "相關條目",
];

/// What curation kept and removed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CurationReport {
    pub input: usize,
    pub kept: usize,
    /// The language kept (ISO 639-1 or 639-3 code).
    pub language: String,
    /// Documents that lost at least one boilerplate section, and how many sections.
    pub stripped_documents: usize,
    pub stripped_sections: usize,
    /// Removed documents per filter (`too_short`, `too_long`, `language`, `near_duplicate`).
    pub removed: BTreeMap<String, usize>,
    /// Up to five removed document ids per filter (duplicates as `id ~ kept_id`).
    pub examples: BTreeMap<String, Vec<String>>,
}

/// The curated corpus.
#[derive(Debug, Clone)]
pub struct Curated {
    pub documents: Vec<Document>,
    pub report: CurationReport,
    pub language: Language,
}

/// Runs all curation filters over `docs` (order preserved).
pub fn curate(docs: Vec<Document>, opts: &CurationOptions) -> Curated {
    let input = docs.len();
    let strip: Vec<String> = opts
        .strip_sections
        .iter()
        .map(|s| s.to_lowercase())
        .collect();
    // a section of a structured document (its title a heading path, `Guide › See also`)
    // whose own heading is boilerplate is stripped whole: left out, counted as stripped
    // (document, sections stripped, whether the document was one and is left out)
    let stripped: Vec<(Document, usize, bool)> = docs
        .into_par_iter()
        .map(|mut d| {
            if boilerplate_section(&d.title, &strip) {
                return (d, 1, true);
            }
            let (text, n) = strip_boilerplate(&d.text, &strip);
            d.text = text;
            (d, n, false)
        })
        .collect();
    let mut report = CurationReport {
        input,
        ..Default::default()
    };
    report.stripped_documents = stripped.iter().filter(|(_, n, _)| *n > 0).count();
    report.stripped_sections = stripped.iter().map(|(_, n, _)| n).sum();

    let remove = |report: &mut CurationReport, filter: &str, example: String| {
        *report.removed.entry(filter.to_string()).or_default() += 1;
        let ex = report.examples.entry(filter.to_string()).or_default();
        if ex.len() < 5 {
            ex.push(example);
        }
    };
    for f in ["too_short", "too_long", "language", "near_duplicate"] {
        report.removed.insert(f.to_string(), 0);
    }

    let mut kept = Vec::with_capacity(stripped.len());
    for (d, _, whole) in stripped {
        if whole {
            continue;
        }
        let words = lang::word_count(&d.text);
        if words < opts.min_words {
            remove(&mut report, "too_short", d.id);
        } else if words > opts.max_words {
            remove(&mut report, "too_long", d.id);
        } else {
            kept.push(d);
        }
    }

    let detected: Vec<Option<Language>> = kept.par_iter().map(|d| lang::detect(&d.text)).collect();
    let wanted: Vec<Language> = if opts.languages.is_empty() {
        lang::dominant(&detected).into_iter().collect()
    } else {
        opts.languages
            .iter()
            .map(|c| Language::from_code(c))
            .collect()
    };
    let language = wanted
        .first()
        .cloned()
        .unwrap_or_else(|| Language::from_code("en"));
    let mut lang_kept = Vec::with_capacity(kept.len());
    for (d, l) in kept.into_iter().zip(detected) {
        match l {
            Some(l) if !wanted.is_empty() && !wanted.contains(&l) => {
                remove(&mut report, "language", format!("{} ({})", d.id, l.code()))
            }
            _ => lang_kept.push(d),
        }
    }

    let mut final_docs = lang_kept;
    if opts.dedup {
        let mh = MinHasher::new(opts.minhash.clone());
        let texts: Vec<String> = final_docs
            .iter()
            .map(|d| format!("{}\n{}", d.title, d.text))
            .collect();
        let sigs = mh.signatures(&texts);
        let dups = minhash::dedup(&sigs, &opts.minhash);
        let mut drop = vec![false; final_docs.len()];
        for dup in &dups {
            drop[dup.index] = true;
            let ex = format!(
                "{} ~ {} ({:.2})",
                final_docs[dup.index].id, final_docs[dup.of].id, dup.similarity
            );
            remove(&mut report, "near_duplicate", ex);
        }
        final_docs = final_docs
            .into_iter()
            .zip(drop)
            .filter(|(_, d)| !d)
            .map(|(doc, _)| doc)
            .collect();
    }
    report.kept = final_docs.len();
    report.language = language.code().to_string();
    Curated {
        documents: final_docs,
        report,
        language,
    }
}

/// Removes boilerplate sections. A Markdown heading (`## See also`) or wiki heading
/// (`== See also ==`) whose title is in `titles` starts a section that ends at the next heading
/// of the same or a higher level; a plain line that is exactly such a title (as in plain-text
/// dumps) removes everything after it. Returns the new text and the number of sections removed.
pub(crate) fn strip_boilerplate(text: &str, titles_lower: &[String]) -> (String, usize) {
    if titles_lower.is_empty() {
        return (text.to_string(), 0);
    }
    let mut out = String::with_capacity(text.len());
    let mut removed = 0;
    let mut skipping: Option<usize> = None;
    for line in text.split_inclusive('\n') {
        let heading = heading(line);
        if let Some(level) = skipping {
            match heading {
                Some((l, _)) if l <= level => skipping = None,
                _ => continue,
            }
        }
        if let Some((level, title)) = heading {
            if is_boilerplate(title, titles_lower) {
                skipping = Some(level);
                removed += 1;
                continue;
            }
        } else if is_boilerplate(line.trim().trim_end_matches(':'), titles_lower) {
            removed += 1;
            break;
        }
        out.push_str(line);
    }
    if removed > 0 {
        let trimmed = out.trim_end().len();
        out.truncate(trimmed);
        out.push('\n');
    }
    (out, removed)
}

/// True when `title` is a heading path (`Guide › See also`) whose last heading is boilerplate.
fn boilerplate_section(title: &str, titles_lower: &[String]) -> bool {
    title
        .rsplit_once(" › ")
        .is_some_and(|(_, last)| is_boilerplate(last, titles_lower))
}

fn is_boilerplate(title: &str, titles_lower: &[String]) -> bool {
    let t = title.trim();
    !t.is_empty() && t.len() <= 40 && titles_lower.iter().any(|x| x == &t.to_lowercase())
}

/// `(level, title)` of a Markdown (`#`..`######`) or wiki (`==`..) heading line.
pub(crate) fn heading(line: &str) -> Option<(usize, &str)> {
    let l = line.trim_end();
    let hashes = l.bytes().take_while(|&b| b == b'#').count();
    if (1..=6).contains(&hashes) && l[hashes..].starts_with(' ') {
        return Some((hashes, l[hashes..].trim()));
    }
    let eq = l.bytes().take_while(|&b| b == b'=').count();
    if eq >= 2 && l.len() > 2 * eq && l.ends_with(&"=".repeat(eq)) {
        return Some((eq - 1, l[eq..l.len() - eq].trim()));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lower(xs: &[&str]) -> Vec<String> {
        xs.iter().map(|s| s.to_lowercase()).collect()
    }

    #[test]
    fn strips_markdown_wiki_and_plain_sections() {
        let t = lower(&["See also", "References", "参见"]);
        let md = "Intro.\n\n## Rules\nKeep.\n\n## See also\n- A\n- B\n\n## More rules\nKeep too.\n\n## References\n- x\n";
        let (s, n) = strip_boilerplate(md, &t);
        assert_eq!(n, 2);
        assert_eq!(s, "Intro.\n\n## Rules\nKeep.\n\n## More rules\nKeep too.\n");
        let wiki =
            "Body.\n== History ==\nOld.\n== See also ==\n* X\n=== Sub ===\n* Y\n== Later ==\nZ\n";
        let (s, n) = strip_boilerplate(wiki, &t);
        assert_eq!(
            (s.as_str(), n),
            ("Body.\n== History ==\nOld.\n== Later ==\nZ\n", 1)
        );
        let plain = "正文第一段。\n参见\n某条目\n";
        assert_eq!(
            strip_boilerplate(plain, &t),
            ("正文第一段。\n".to_string(), 1)
        );
        let mention = "We see also that references matter.\n";
        assert_eq!(strip_boilerplate(mention, &t).1, 0);
    }

    fn doc(id: &str, text: &str) -> Document {
        Document {
            id: id.into(),
            title: String::new(),
            text: text.into(),
        }
    }

    #[test]
    fn filters_are_counted() {
        let en = "The annual leave policy gives every employee twenty five days of paid leave each year, and up to five unused days may be carried over into the next leave year until the end of June. ";
        let other_en = "Laptops are replaced every three years, or earlier when a repair would cost more than half of the replacement price, and requests are made in the service portal thirty days ahead. ";
        let docs = vec![
            doc("a", &en.repeat(2)),
            doc("short", "Too short."),
            doc("b", &other_en.repeat(2)),
            doc("a-copy", &format!("{} Updated.", en.repeat(2))),
            doc("fr", &"Les employés ont droit à vingt-cinq jours de congés payés par an, et cinq jours non utilisés peuvent être reportés sur l'année suivante jusqu'à la fin du mois de juin. ".repeat(2)),
        ];
        let c = curate(docs, &CurationOptions::default());
        let ids: Vec<_> = c.documents.iter().map(|d| d.id.as_str()).collect();
        assert_eq!(ids, ["a", "b"]);
        assert_eq!(c.report.removed["too_short"], 1);
        assert_eq!(c.report.removed["language"], 1);
        assert_eq!(c.report.removed["near_duplicate"], 1);
        assert_eq!(c.report.language, "en");
        assert_eq!(
            c.report.examples["near_duplicate"][0].split(' ').next(),
            Some("a-copy")
        );
        assert_eq!((c.report.input, c.report.kept), (5, 2));
    }

    #[test]
    fn a_section_document_whose_heading_is_boilerplate_is_stripped_whole() {
        let text = "Every employee receives twenty five days of paid leave each year, and up to five unused days may be carried over into the next year until the end of June when they lapse. ";
        let section = |id: &str, title: &str| Document {
            id: id.into(),
            title: title.into(),
            text: text.into(),
        };
        let docs = vec![
            section("g.md#leave", "Guide › Leave"),
            section("g.md#see-also", "Guide › See also"),
            section("notes", "Notes"),
        ];
        let opts = CurationOptions {
            dedup: false,
            ..Default::default()
        };
        let c = curate(docs, &opts);
        let ids: Vec<_> = c.documents.iter().map(|d| d.id.as_str()).collect();
        // an article titled "Notes" is no section: kept
        assert_eq!(ids, ["g.md#leave", "notes"]);
        assert_eq!(
            (c.report.stripped_documents, c.report.stripped_sections),
            (1, 1)
        );
        assert_eq!(c.report.removed["too_short"], 0);
    }
}
