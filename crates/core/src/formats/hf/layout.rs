//! Where the tables of a Hugging Face dataset folder live and what their columns are: one
//! place for the writer, the reader and the dataset card, so that the three cannot disagree.
//!
//! The folder holds four configs, each a folder of Parquet files: `corpus` (split `corpus`),
//! `queries` (split `queries`), `qrels` (split `test`, the default config, where MTEB's loader
//! looks for relevance judgements) and `dialogues` (split `test`: one row per turn with
//! everything the native folder holds, so that an import gives back the same benchmark).

use super::parquet::{Column, Kind};

/// A config of the dataset: its name, its split and the file that holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Config {
    pub(crate) name: &'static str,
    pub(crate) split: &'static str,
    pub(crate) columns: &'static [Column],
}

impl Config {
    /// The file's path inside the folder, as the card's `data_files` names it.
    pub(crate) fn file(&self) -> String {
        format!("{}/{}-00000-of-00001.parquet", self.name, self.split)
    }
}

const fn col(name: &'static str, kind: Kind) -> Column {
    Column { name, kind }
}

pub(crate) const CORPUS: Config = Config {
    name: "corpus",
    split: "corpus",
    columns: &[
        col("_id", Kind::Text),
        col("title", Kind::Text),
        col("text", Kind::Text),
        // the source document a passage was cut from, when known
        col("doc_id", Kind::OptText),
        // the passage's other fields as a JSON object, null when it has none
        col("metadata", Kind::OptText),
    ],
};

pub(crate) const QUERIES: Config = Config {
    name: "queries",
    split: "queries",
    columns: &[
        col("_id", Kind::Text),
        // the query text in the formulation chosen at export (`--query`)
        col("text", Kind::Text),
        col("dialogue_id", Kind::Text),
        col("turn", Kind::Int),
        // the user's question as asked
        col("question", Kind::Text),
        col("rewrite", Kind::OptText),
        // the conversation so far, oldest first, and who said each utterance (user, agent)
        col("history", Kind::TextList),
        col("history_speakers", Kind::TextList),
    ],
};

pub(crate) const QRELS: Config = Config {
    name: "qrels",
    split: "test",
    columns: &[
        col("query-id", Kind::Text),
        col("corpus-id", Kind::Text),
        col("score", Kind::Int),
    ],
};

pub(crate) const DIALOGUES: Config = Config {
    name: "dialogues",
    split: "test",
    columns: &[
        col("dialogue_id", Kind::Text),
        col("turn", Kind::Int),
        col("turn_id", Kind::Text),
        col("user", Kind::Text),
        col("rewrite", Kind::OptText),
        col("answer", Kind::OptText),
        // `[{"passage_id", "grade"}]` as JSON, the turn's graded gold
        col("gold", Kind::Text),
        // the turn's labels as a JSON object
        col("tags", Kind::Text),
        // the dialogue's own fields as a JSON object (the same on each of its turns)
        col("dialogue_meta", Kind::Text),
    ],
};

/// Every config, in the card's order.
pub(crate) const CONFIGS: [Config; 4] = [CORPUS, QUERIES, QRELS, DIALOGUES];

/// The dataset card.
pub(crate) const CARD: &str = "README.md";

/// The benchmark's manifest, kept beside the tables so that an import restores its name,
/// license, generator models and synthesis settings.
pub(crate) const MANIFEST: &str = "benchmark.toml";
