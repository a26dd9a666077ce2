//! The dataset card (`README.md`) of an exported folder: YAML front matter the Hub reads
//! (`configs` with their `data_files`, `license`, `language`, `task_categories`, size category,
//! `pretty_name`) and a body saying what the benchmark is, how it was made, how to load it and
//! how to cite it. Every string in the front matter is written as a double-quoted YAML scalar
//! (JSON's escapes, which YAML shares), so no name or description can break the YAML.

use std::fmt::Write as _;

use super::layout;
use crate::benchmark::Manifest;
use crate::formats::beir_trec_export::QueryField;

/// A section of the card's body the caller renders (the audit's verdict, realism figures).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CardSection {
    /// The section's heading.
    pub title: String,
    /// Markdown.
    pub body: String,
}

/// The figures the card states.
#[derive(Debug, Clone)]
pub(crate) struct CardFacts<'a> {
    pub(crate) manifest: &'a Manifest,
    pub(crate) dialogues: usize,
    pub(crate) turns: usize,
    pub(crate) judged_turns: usize,
    pub(crate) passages: u64,
    pub(crate) qrels_pairs: usize,
    pub(crate) query: QueryField,
}

/// License identifiers the Hub accepts as they are (its list as `huggingface_hub` validated
/// it in 2026, `other` apart); anything else is `other`, with an id and the text.
const HUB_LICENSES: [&str; 81] = [
    "apache-2.0",
    "mit",
    "openrail",
    "bigscience-openrail-m",
    "creativeml-openrail-m",
    "bigscience-bloom-rail-1.0",
    "bigcode-openrail-m",
    "afl-3.0",
    "artistic-2.0",
    "bsl-1.0",
    "bsd",
    "bsd-2-clause",
    "bsd-3-clause",
    "bsd-3-clause-clear",
    "c-uda",
    "cc",
    "cc0-1.0",
    "cc-by-2.0",
    "cc-by-2.5",
    "cc-by-3.0",
    "cc-by-4.0",
    "cc-by-sa-3.0",
    "cc-by-sa-4.0",
    "cc-by-nc-2.0",
    "cc-by-nc-3.0",
    "cc-by-nc-4.0",
    "cc-by-nd-4.0",
    "cc-by-nc-nd-3.0",
    "cc-by-nc-nd-4.0",
    "cc-by-nc-sa-2.0",
    "cc-by-nc-sa-3.0",
    "cc-by-nc-sa-4.0",
    "cdla-sharing-1.0",
    "cdla-permissive-1.0",
    "cdla-permissive-2.0",
    "wtfpl",
    "ecl-2.0",
    "epl-1.0",
    "epl-2.0",
    "etalab-2.0",
    "eupl-1.1",
    "eupl-1.2",
    "agpl-3.0",
    "gfdl",
    "gpl",
    "gpl-2.0",
    "gpl-3.0",
    "lgpl",
    "lgpl-2.1",
    "lgpl-3.0",
    "isc",
    "h-research",
    "intel-research",
    "lppl-1.3c",
    "ms-pl",
    "apple-ascl",
    "apple-amlr",
    "mpl-2.0",
    "odc-by",
    "odbl",
    "openmdw-1.0",
    "openrail++",
    "osl-3.0",
    "postgresql",
    "ofl-1.1",
    "ncsa",
    "unlicense",
    "zlib",
    "pddl",
    "lgpl-lr",
    "deepfloyd-if-license",
    "fair-noncommercial-research-license",
    "llama2",
    "llama3",
    "llama3.1",
    "llama3.2",
    "llama3.3",
    "llama4",
    "grok2-community",
    "gemma",
    "unknown",
];

fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// The Hub's size category of a dataset of `rows` rows (its largest config).
pub(crate) fn size_category(rows: u64) -> &'static str {
    match rows {
        0..1_000 => "n<1K",
        1_000..10_000 => "1K<n<10K",
        10_000..100_000 => "10K<n<100K",
        100_000..1_000_000 => "100K<n<1M",
        1_000_000..10_000_000 => "1M<n<10M",
        10_000_000..100_000_000 => "10M<n<100M",
        100_000_000..1_000_000_000 => "100M<n<1B",
        _ => "n>1B",
    }
}

/// The Hub license id of a manifest's license and, when it is not one (`other`), an id for it
/// (`license_name`: lower-case letters, digits, `.` and `-`) and its text (`license_details`).
fn license(m: &Manifest) -> (String, Option<(String, String)>) {
    let text = m.license.trim();
    let l = text.to_ascii_lowercase().replace(' ', "-");
    if l.is_empty() {
        return ("unknown".into(), None);
    }
    if HUB_LICENSES.contains(&l.as_str()) {
        return (l, None);
    }
    ("other".into(), Some((license_id(text), text.to_string())))
}

/// `Company terms (v2)` -> `company-terms-v2`; `custom` when no letter or digit is ASCII.
fn license_id(text: &str) -> String {
    let mut id = String::new();
    for c in text.chars().map(|c| c.to_ascii_lowercase()) {
        if c.is_ascii_alphanumeric() || (c == '.' && !id.is_empty()) {
            id.push(c);
        } else if !id.is_empty() && !id.ends_with('-') {
            id.push('-');
        }
    }
    let id = id.trim_end_matches(['-', '.']);
    if id.is_empty() {
        "custom".into()
    } else {
        id.to_string()
    }
}

/// ISO 639-1 codes of a manifest's `language` (`en`, `en,zh`; `multi` and unknown give none).
fn languages(m: &Manifest) -> Vec<String> {
    m.language
        .split([',', ' ', '+'])
        .map(|s| s.trim().to_ascii_lowercase())
        .filter(|s| s.len() == 2 && s.bytes().all(|b| b.is_ascii_lowercase()))
        .collect()
}

fn pretty_name(m: &Manifest) -> String {
    if m.name.trim().is_empty() {
        "mtr benchmark".into()
    } else {
        m.name.trim().to_string()
    }
}

fn front_matter(f: &CardFacts<'_>) -> String {
    let m = f.manifest;
    let mut o = String::from("---\n");
    let _ = writeln!(o, "pretty_name: {}", quoted(&pretty_name(m)));
    let (id, name) = license(m);
    let _ = writeln!(o, "license: {}", quoted(&id));
    if let Some((name, text)) = name {
        let _ = writeln!(o, "license_name: {}", quoted(&name));
        let _ = writeln!(o, "license_details: {}", quoted(&text));
    }
    let langs = languages(m);
    if !langs.is_empty() {
        o.push_str("language:\n");
        for l in &langs {
            let _ = writeln!(o, "- {}", quoted(l));
        }
    }
    if langs.len() > 1 || m.language.trim().eq_ignore_ascii_case("multi") {
        o.push_str("multilinguality:\n- \"multilingual\"\n");
    }
    o.push_str("task_categories:\n- \"text-retrieval\"\n");
    o.push_str("task_ids:\n- \"document-retrieval\"\n");
    let rows = f.passages.max(f.turns as u64).max(f.qrels_pairs as u64);
    let _ = writeln!(o, "size_categories:\n- {}", quoted(size_category(rows)));
    o.push_str("tags:\n- \"mtr\"\n- \"conversational-retrieval\"\n- \"multi-turn\"\n- \"rag\"\n");
    o.push_str("configs:\n");
    for c in layout::CONFIGS {
        let _ = writeln!(o, "- config_name: {}", quoted(c.name));
        if c.name == layout::QRELS.name {
            // MTEB's loader reads qrels from the default config
            o.push_str("  default: true\n");
        }
        let _ = writeln!(
            o,
            "  data_files:\n  - split: {}\n    path: {}",
            quoted(c.split),
            quoted(&c.file())
        );
    }
    o.push_str("---\n");
    o
}

/// The whole card.
pub(crate) fn render(f: &CardFacts<'_>, sections: &[CardSection]) -> String {
    let m = f.manifest;
    let name = pretty_name(m);
    let mut o = front_matter(f);
    let _ = writeln!(o, "\n# {name}\n");
    if m.description.trim().is_empty() {
        let _ = writeln!(
            o,
            "A multi-turn conversational retrieval benchmark: dialogues whose user turns are \
             queries over a passage corpus, with graded gold passages per turn.\n"
        );
    } else {
        let _ = writeln!(o, "{}\n", m.description.trim());
    }
    o.push_str("| | |\n|---|---|\n");
    for (k, v) in [
        ("dialogues", f.dialogues.to_string()),
        ("turns (queries)", f.turns.to_string()),
        ("turns with gold passages", f.judged_turns.to_string()),
        ("passages", f.passages.to_string()),
        ("relevance judgements", f.qrels_pairs.to_string()),
        ("language", m.language.clone()),
        ("source", m.source.clone()),
        ("data fingerprint (BLAKE3)", format!("`{}`", m.fingerprint)),
    ] {
        let _ = writeln!(o, "| {k} | {v} |");
    }
    made(&mut o, m);
    for s in sections {
        let _ = writeln!(o, "\n## {}\n\n{}", s.title, s.body.trim_end());
    }
    files(&mut o, f.query);
    loading(&mut o);
    citation(&mut o, m);
    o
}

fn made(o: &mut String, m: &Manifest) {
    o.push_str("\n## How it was made\n\n");
    if m.source == "mtr-synth" {
        o.push_str("Synthesized from a corpus by `mtr synth`: LLM agents write each turn's question from sampled gold passages, answer it, and verify it before it is kept.\n");
    } else {
        let _ = writeln!(
            o,
            "Imported into mtr from the `{}` format.",
            if m.source.is_empty() {
                "native"
            } else {
                &m.source
            }
        );
    }
    if !m.generator.is_empty() {
        o.push_str("\nModels, by role:\n\n");
        for (role, model) in &m.generator {
            let _ = writeln!(o, "- {role}: `{model}`");
        }
    }
    if !m.extra.is_empty()
        && let Ok(settings) = toml::to_string_pretty(&m.extra)
    {
        let _ = writeln!(
            o,
            "\nSettings recorded in its manifest:\n\n```toml\n{}\n```",
            settings.trim_end()
        );
    }
    let _ = writeln!(
        o,
        "\nThe data fingerprint is mtr's BLAKE3 hash of the native files (`corpus.jsonl`, `dialogues.jsonl`, `qrels.tsv`): `mtr import auto` of this folder gives a benchmark with the same fingerprint."
    );
}

fn files(o: &mut String, query: QueryField) {
    o.push_str("\n## Configs\n\n| config | split | columns |\n|---|---|---|\n");
    for c in layout::CONFIGS {
        let cols: Vec<String> = c.columns.iter().map(|c| format!("`{}`", c.name)).collect();
        let _ = writeln!(o, "| `{}` | `{}` | {} |", c.name, c.split, cols.join(", "));
    }
    let q = match query {
        QueryField::Last => "the user's question as asked",
        QueryField::Rewrite => "the turn's standalone rewrite where it has one, else the question",
        QueryField::Full => "every user question of the dialogue so far, oldest first, one a line",
    };
    let _ = writeln!(
        o,
        "\n`queries.text` is {q}; `history` holds the conversation before the turn (with `history_speakers`), `question` the turn's own question. `dialogues` has one row per turn with everything mtr's native format holds (`gold`, `tags` and `dialogue_meta` are JSON). `qrels.score` is the graded relevance (> 0 relevant)."
    );
}

fn loading(o: &mut String) {
    o.push_str(
        "\n## Loading\n\nWith `datasets` (a local folder or the Hub repository's id):\n\n\
```python\nfrom datasets import load_dataset\n\n\
corpus = load_dataset(\"REPO\", \"corpus\", split=\"corpus\")\n\
queries = load_dataset(\"REPO\", \"queries\", split=\"queries\")\n\
qrels = load_dataset(\"REPO\", \"qrels\", split=\"test\")\n\
dialogues = load_dataset(\"REPO\", \"dialogues\", split=\"test\")\n```\n\n\
With MTEB: the folder follows its retrieval layout (configs `corpus` and `queries` with \
`_id` and `text`, qrels `query-id`, `corpus-id`, `score` in the default config's `test` \
split), so a retrieval task whose `dataset` path is this repository loads it with MTEB's \
own loader.\n\nWith mtr: `mtr import auto DIR -o BENCH` gives back the native benchmark.\n",
    );
}

fn citation(o: &mut String, m: &Manifest) {
    let key: String = pretty_name(m)
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    let _ = writeln!(
        o,
        "\n## Citation\n\n```bibtex\n@misc{{{key},\n  title = {{{{{}}}}},\n  note = {{Made with mtr {}; data fingerprint {}}}\n}}\n```",
        pretty_name(m).replace(['{', '}'], ""),
        env!("CARGO_PKG_VERSION"),
        crate::fingerprint::short(&m.fingerprint)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(m: &Manifest) -> CardFacts<'_> {
        CardFacts {
            manifest: m,
            dialogues: 2,
            turns: 5,
            judged_turns: 4,
            passages: 12_000,
            qrels_pairs: 6,
            query: QueryField::Last,
        }
    }

    #[test]
    fn the_front_matter_quotes_every_string_and_lists_each_config() {
        let m = Manifest {
            name: "a \"quoted\": name\n#".into(),
            license: "CC-BY-SA-4.0".into(),
            language: "en".into(),
            ..Default::default()
        };
        let card = render(&facts(&m), &[]);
        let front = card.split("---\n").nth(1).unwrap();
        assert!(front.contains("pretty_name: \"a \\\"quoted\\\": name\\n#\""));
        assert!(front.contains("license: \"cc-by-sa-4.0\""));
        assert!(front.contains("size_categories:\n- \"10K<n<100K\""));
        for c in layout::CONFIGS {
            assert!(
                front.contains(&format!("path: \"{}\"", c.file())),
                "{front}"
            );
        }
        assert_eq!(front.matches("default: true").count(), 1);
        let other = Manifest {
            license: "Company terms".into(),
            ..m
        };
        let card = render(&facts(&other), &[]);
        assert!(card.contains("license: \"other\"\nlicense_name: \"company-terms\"\nlicense_details: \"Company terms\"\n"), "{card}");
    }

    /// The Hub validates `license` against its own list and wants `license_name` as an id
    /// (`my-license-1.0`) when it is `other`, the text itself in `license_details`.
    #[test]
    fn licenses_are_the_hubs_ids_or_other_with_an_id_and_the_text() {
        let with = |l: &str| Manifest {
            license: l.into(),
            ..Default::default()
        };
        for (given, id, name) in [
            ("MPL-2.0", "mpl-2.0", None),
            ("Apache 2.0", "apache-2.0", None),
            ("isc", "isc", None),
            ("", "unknown", None),
            // not on the Hub's list, though cc-by-2.5 and cc-by-sa-3.0 are
            ("CC-BY-SA-2.5", "other", Some("cc-by-sa-2.5")),
            (
                "see the source corpus",
                "other",
                Some("see-the-source-corpus"),
            ),
            (
                "Conditions d'utilisation (v2)",
                "other",
                Some("conditions-d-utilisation-v2"),
            ),
            ("条款", "other", Some("custom")),
        ] {
            let (got, got_name) = license(&with(given));
            assert_eq!(
                (got.as_str(), got_name.as_ref().map(|(n, _)| n.as_str())),
                (id, name),
                "{given}"
            );
            if let Some((_, text)) = got_name {
                assert_eq!(text, given.trim());
            }
        }
    }

    #[test]
    fn size_categories_follow_the_hub() {
        assert_eq!(size_category(0), "n<1K");
        assert_eq!(size_category(999), "n<1K");
        assert_eq!(size_category(1_000), "1K<n<10K");
        assert_eq!(size_category(2_500_000), "1M<n<10M");
    }
}
