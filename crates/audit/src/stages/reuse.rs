//! Stage 2, reuse: an earlier run in the output folder of the same data leaves judgements that
//! stand (the engine keeps one whose prompt, model and pool are unchanged): those of
//! `items.jsonl`, `verify_items.jsonl` and, with human labels, `human_items.jsonl`. An audit of
//! other data leaves none, with a warning.

use std::collections::HashMap;
use std::path::Path;

use crate::judges::record::Judgement;
use crate::output;
use crate::summary::{SUMMARY, read_summary};

/// The earlier run's judgements that may be reused, by judgement id.
pub(crate) struct Reuse {
    /// `items.jsonl`: the benchmark's units.
    pub existing: HashMap<String, Judgement>,
    /// `verify_items.jsonl`: the missing-gold check.
    pub verify: HashMap<String, Judgement>,
    /// `human_items.jsonl`: the human calibration set.
    pub human: HashMap<String, Judgement>,
    /// Said when the folder held an audit of other data.
    pub warning: Option<String>,
}

/// Reads the folder `out_dir`'s `summary.json` and its judgements (`human`: the calibration
/// set's too); `data` is this run's data fingerprint.
pub(crate) fn reuse(out_dir: &Path, data: &str, human: bool) -> Reuse {
    let previous = read_summary(&out_dir.join(SUMMARY)).ok();
    let same_data = previous.as_ref().is_none_or(|p| p.fingerprint.data == data);
    if !same_data {
        return Reuse {
            existing: HashMap::new(),
            verify: HashMap::new(),
            human: HashMap::new(),
            warning: Some(
                "the output folder held an audit of other data; its judgements were not reused"
                    .into(),
            ),
        };
    }
    let earlier = |name: &str| read_existing(out_dir, name);
    Reuse {
        existing: earlier(output::ITEMS),
        verify: earlier(output::VERIFY_ITEMS),
        human: if human {
            earlier(output::HUMAN_ITEMS)
        } else {
            HashMap::new()
        },
        warning: None,
    }
}

/// Judgements of an earlier run in `dir/name`, by id. A missing file gives none; an
/// unreadable one is reported and ignored (its judgements are redone, from the LLM cache).
fn read_existing(dir: &Path, name: &str) -> HashMap<String, Judgement> {
    let p = dir.join(name);
    if !p.is_file() {
        return HashMap::new();
    }
    match mtr_core::jsonl::read_all::<Judgement>(&p) {
        Ok(v) => v.into_iter().map(|j| (j.id.clone(), j)).collect(),
        Err(e) => {
            tracing::warn!("ignoring {}: {e}", p.display());
            HashMap::new()
        }
    }
}
