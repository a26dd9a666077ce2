//! The unit every reader produces: one source document, before curation and chunking.

use serde::{Deserialize, Serialize};

/// One source document before curation and chunking.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Document {
    /// Unique within the corpus: the record's id, or the file's path relative to the corpus
    /// folder without its extension.
    pub id: String,
    /// The record's title, the first level-1 heading, or the file's stem.
    #[serde(default)]
    pub title: String,
    /// The document's text.
    pub text: String,
}
