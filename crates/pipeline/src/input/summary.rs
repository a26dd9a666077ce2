//! What reading a corpus found, kept for the log and the synthesis report: files read,
//! documents, malformed records skipped and the sample drawn.

use serde::{Deserialize, Serialize};

/// What reading found, for the log and the synthesis report.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputReport {
    /// Corpus files read.
    pub files: usize,
    /// Well-formed documents in the input.
    pub documents: u64,
    /// Malformed records skipped (`--skip-bad`).
    #[serde(default)]
    pub malformed_skipped: u64,
    /// The sample drawn (`--max-documents`), when the input had more documents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample: Option<Sample>,
    /// PDF pages read.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pages: u64,
    /// Files that could not be read (an encrypted PDF, a scan without text, a damaged DOCX,
    /// undecodable HTML), each with the reason, in input order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<SkippedFile>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A corpus file left out, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedFile {
    /// The file, relative to the corpus folder.
    pub file: String,
    /// Why it could not be read.
    pub reason: String,
}

/// A seeded uniform sample of the input's documents.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sample {
    /// Documents kept.
    pub kept: usize,
    /// The seed that drew them.
    pub seed: u64,
}

impl InputReport {
    /// One line for the log: what was read and sampled.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "read {} documents from {} corpus file{}",
            self.documents,
            self.files,
            if self.files == 1 { "" } else { "s" }
        );
        if let Some(x) = &self.sample {
            s.push_str(&format!(
                "; --max-documents {}: a uniform sample over the whole input (reservoir sampling, seed {})",
                x.kept, x.seed
            ));
        }
        if !self.skipped.is_empty() {
            let n = self.skipped.len();
            s.push_str(&format!(
                "; {n} unreadable file{} skipped",
                if n == 1 { "" } else { "s" }
            ));
        }
        if self.malformed_skipped > 0 {
            s.push_str(&format!(
                "; {} malformed records skipped (--skip-bad)",
                self.malformed_skipped
            ));
        }
        s
    }
}
