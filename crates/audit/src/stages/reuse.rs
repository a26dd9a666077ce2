//! Stage 2, reuse: an earlier run in the output folder of the same data leaves judgements that
//! stand (the engine keeps one whose prompt, model and pool are unchanged); an audit of other
//! data leaves none, with a warning.

use std::collections::HashMap;
use std::path::PathBuf;

use crate::job::AuditJob;
use crate::judges::record::Judgement;
use crate::output;

/// Whether the folder's earlier judgements may be reused, and those of `items.jsonl`.
pub struct Reuse {
    dir: PathBuf,
    same_data: bool,
    /// `items.jsonl` of the earlier run, by judgement id.
    pub existing: HashMap<String, Judgement>,
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

/// Reads the folder's `summary.json` and `items.jsonl`; `data` is this run's data fingerprint.
pub fn reuse(job: &AuditJob, data: &str, warnings: &mut Vec<String>) -> Reuse {
    let previous = output::read_summary(&job.out_dir.join(output::SUMMARY)).ok();
    let same_data = previous.as_ref().is_none_or(|p| p.fingerprint.data == data);
    if !same_data {
        warnings.push(
            "the output folder held an audit of other data; its judgements were not reused".into(),
        );
    }
    let mut reuse = Reuse {
        dir: job.out_dir.clone(),
        same_data,
        existing: HashMap::new(),
    };
    reuse.existing = reuse.earlier(output::ITEMS);
    reuse
}
