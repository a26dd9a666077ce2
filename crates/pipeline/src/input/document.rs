//! The unit every reader produces: one source document, before curation and chunking, and
//! where it came from (the file, and the page or section within it).

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

/// Where a document came from: its file (relative to the corpus folder, `/`-separated) and,
/// for paged and structured files, the page or the section's heading path.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Source {
    /// The file, relative to the corpus folder.
    pub file: String,
    /// The page (PDF), 1-based.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<usize>,
    /// The section's heading path (HTML, DOCX, ODT, reStructuredText).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub section: Option<String>,
}
