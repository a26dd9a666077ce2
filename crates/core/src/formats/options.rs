//! What an import is asked for: the [`Format`] of a source, the [`Grouping`] of flat query ids
//! into dialogues and the [`ImportOptions`] every importer reads. Plain data with no
//! dependency, so that the importers take their options from here rather than from
//! `formats.rs`, which dispatches to them (no import circle between the two).

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A format mtr can read a benchmark from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// mtr's own folder (`benchmark.toml`, `corpus.jsonl`, `dialogues.jsonl`, `qrels.tsv`).
    Native,
    /// IBM MTRAG: conversations + BEIR-style retrieval tasks + corpus (per-domain or upstream layout).
    Mtrag,
    /// BEIR: `corpus.jsonl`, `queries.jsonl`, `qrels/<split>.tsv`.
    Beir,
    /// TREC: a topics file, qrels, optionally a collection.
    Trec,
    /// TopiOCQA JSON (`Conversation_no`, `Turn_no`, `Question`, `Answer`, `Topic`, ...).
    Topiocqa,
    /// QReCC JSON (`Conversation_no`, `Turn_no`, `Question`, `Rewrite`, `Truth_passages`, ...).
    Qrecc,
    /// INSCIT JSON (dialogues with `turns[].context`, `labels[].evidence[].passage_id`).
    Inscit,
    /// TREC CAsT / iKAT topics JSON plus TREC qrels.
    Cast,
    /// NVIDIA's ChatRAG-Bench (`messages`, `ctxs`, `ground_truth_ctx`, `answers`, `documents.json`).
    Chatrag,
    /// CORAL (conversations with `turns` of `question`, `response`, `golden_docs_pids`; passages
    /// `ref_id`, `ref_string`).
    Coral,
    /// Doc2Dial's native release (`dial_data` dialogues, `doc_data` documents cut in sections).
    Doc2dial,
    /// QuAC's native release (`data[].paragraphs[].qas[]`).
    Quac,
    /// A Hugging Face dataset folder: `mtr export --to hf`'s, or MTEB's retrieval layout
    /// (`corpus/`, `queries/`, `qrels/` of Parquet or JSON lines).
    Hf,
}

impl Format {
    /// Every format, in the order `mtr import --help` lists them.
    pub const ALL: [Format; 13] = [
        Format::Native,
        Format::Mtrag,
        Format::Beir,
        Format::Trec,
        Format::Topiocqa,
        Format::Qrecc,
        Format::Inscit,
        Format::Cast,
        Format::Chatrag,
        Format::Coral,
        Format::Doc2dial,
        Format::Quac,
        Format::Hf,
    ];

    /// The name on the command line and in manifests.
    pub fn name(self) -> &'static str {
        match self {
            Format::Native => "native",
            Format::Mtrag => "mtrag",
            Format::Beir => "beir",
            Format::Trec => "trec",
            Format::Topiocqa => "topiocqa",
            Format::Qrecc => "qrecc",
            Format::Inscit => "inscit",
            Format::Cast => "cast",
            Format::Chatrag => "chatrag",
            Format::Coral => "coral",
            Format::Doc2dial => "doc2dial",
            Format::Quac => "quac",
            Format::Hf => "hf",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let lower = s.to_ascii_lowercase();
        let f = match lower.as_str() {
            "native" | "mtr" => Format::Native,
            "mtrag" | "mt-rag" => Format::Mtrag,
            "beir" => Format::Beir,
            "trec" => Format::Trec,
            "topiocqa" => Format::Topiocqa,
            "qrecc" => Format::Qrecc,
            "inscit" => Format::Inscit,
            "cast" | "ikat" | "trec-cast" | "trec-ikat" => Format::Cast,
            "chatrag" | "chatrag-bench" => Format::Chatrag,
            "coral" => Format::Coral,
            "doc2dial" => Format::Doc2dial,
            "quac" => Format::Quac,
            "hf" | "huggingface" | "hugging-face" | "mteb" => Format::Hf,
            _ => {
                return Err(format!(
                    "unknown format `{s}` (expected one of: {})",
                    Format::ALL
                        .iter()
                        .map(|f| f.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        };
        Ok(f)
    }
}

/// How query ids of flat formats (BEIR, TREC) become dialogues.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Grouping {
    /// Group when every id looks conversational (`conv::3`, `conv<::>3`, `conv_3`, `conv-3`)
    /// and grouping yields real multi-turn dialogues; otherwise one dialogue per query.
    #[default]
    Auto,
    /// One single-turn dialogue per query.
    Single,
    /// Always group by the conversational id pattern (an id that does not match is an error).
    Conversational,
}

impl FromStr for Grouping {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(Grouping::Auto),
            "single" | "none" => Ok(Grouping::Single),
            "conversational" | "conv" => Ok(Grouping::Conversational),
            _ => Err(format!(
                "unknown grouping `{s}` (expected auto, single or conversational)"
            )),
        }
    }
}

/// Options every importer understands (each uses the ones that apply to it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ImportOptions {
    /// MTRAG: import only this domain (`clapnq`, `govt`, ...); ChatRAG-Bench: only this subset
    /// (`doc2dial`, `topiocqa`, ...); all when absent.
    pub domain: Option<String>,
    /// BEIR: which qrels split (`test`, `dev`, ...); default test, then dev, then the only one.
    pub split: Option<String>,
    /// Skip bad records with a warning (counted in the report) instead of failing.
    pub lenient: bool,
    /// BEIR/TREC: how query ids become dialogues.
    pub grouping: Grouping,
    /// The benchmark's name in the manifest (default: derived from the source).
    pub name: Option<String>,
    /// An explicit corpus file or folder (formats whose corpus ships separately).
    pub corpus: Option<PathBuf>,
    /// An explicit qrels file (CAsT, TREC).
    pub qrels: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_names_roundtrip() {
        for f in Format::ALL {
            assert_eq!(f.name().parse::<Format>().unwrap(), f);
        }
        assert_eq!("iKAT".parse::<Format>().unwrap(), Format::Cast);
        assert!("nope".parse::<Format>().is_err());
    }
}
