//! Stage 2, reuse: an earlier run in the output folder of the same data leaves judgements that
//! stand (the engine keeps one whose prompt, model and pool are unchanged); an audit of other
//! data leaves none, with a warning.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::judges::record::Judgement;
use crate::output;
use crate::summary::{SUMMARY, read_summary};

/// Whether the folder's earlier judgements may be reused, and those of `items.jsonl`.
pub struct Reuse {
    dir: PathBuf,
    same_data: bool,
    /// `items.jsonl` of the earlier run, by judgement id.
    pub existing: HashMap<String, Judgement>,
    /// Said when the folder held an audit of other data.
    pub warning: Option<String>,
}

impl Reuse {
    /// The earlier run's judgements in the folder's file `name`, none for other data.
    pub fn earlier(&self, name: &str) -> HashMap<String, Judgement> {
        if self.same_data {
            output::read_existing(&self.dir, name)
        } else {
            HashMap::new()
        }
    }
}

/// Reads the folder `out_dir`'s `summary.json` and `items.jsonl`; `data` is this run's data
/// fingerprint.
pub fn reuse(out_dir: &Path, data: &str) -> Reuse {
    let previous = read_summary(&out_dir.join(SUMMARY)).ok();
    let same_data = previous.as_ref().is_none_or(|p| p.fingerprint.data == data);
    let warning = (!same_data).then(|| {
        "the output folder held an audit of other data; its judgements were not reused".to_string()
    });
    let mut reuse = Reuse {
        dir: out_dir.to_path_buf(),
        same_data,
        existing: HashMap::new(),
        warning,
    };
    reuse.existing = reuse.earlier(output::ITEMS);
    reuse
}
