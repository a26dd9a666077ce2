//! What a synthesis job is (corpus, output, work dir, settings, prompts): its own module so
//! that every stage that takes a job (`prepare`, `pipeline`, `dryrun`) imports it from below
//! rather than from the orchestration file.

use std::path::{Path, PathBuf};

use crate::config::SynthConfig;
use crate::prompts::SynthPrompts;

/// A synthesis job: where from, where to, how.
pub struct SynthJob {
    pub corpus: PathBuf,
    pub out: PathBuf,
    /// Artefacts and checkpoints (default `<out>/.mtr-synth`).
    pub work_dir: PathBuf,
    pub config: SynthConfig,
    pub prompts: SynthPrompts,
}

impl SynthJob {
    pub fn new(
        corpus: impl Into<PathBuf>,
        out: impl Into<PathBuf>,
        config: SynthConfig,
        prompts: SynthPrompts,
    ) -> Self {
        let out = out.into();
        Self {
            corpus: corpus.into(),
            work_dir: default_work_dir(&out),
            out,
            config,
            prompts,
        }
    }
}

/// Used by the command to default the work dir next to the output.
pub fn default_work_dir(out: &Path) -> PathBuf {
    out.join(".mtr-synth")
}
