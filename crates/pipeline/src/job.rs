//! What a synthesis job is (corpus, output, work dir, settings, prompts): its own module so
//! that every stage that takes a job (`prepare`, `pipeline`, `dryrun`) imports it from below
//! rather than from the orchestration file.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::clock::JobClock;

use crate::config::SynthConfig;
use crate::input::Unreadable;
use crate::prompts::SynthPrompts;

/// A synthesis job: where from, where to, how.
pub struct SynthJob {
    /// The corpus to read (a file or a folder).
    pub corpus: PathBuf,
    /// The benchmark folder written.
    pub out: PathBuf,
    /// Artefacts and checkpoints (default `<out>/.mtr-synth`).
    pub work_dir: PathBuf,
    /// The settings.
    pub config: SynthConfig,
    /// The agents' prompts.
    pub prompts: SynthPrompts,
    /// Seconds since the job began: a time budget counts from its start (the wall clock;
    /// tests set their own).
    pub clock: JobClock,
    /// `--time-budget`: the dialogues whose expected time does not fit are not started
    /// (`dryrun::budget`); None: no limit.
    pub time_budget: Option<Duration>,
    /// Under a time budget, a dialogue the plan left may still start when the finished turns
    /// show the work running ahead of the plan (`generate::schedule::Pace`; default true).
    /// False keeps a run to the plan's dialogues whatever the speed.
    pub start_ahead: bool,
    /// Told what a run has to say before generation starts (the time budget's plan, one
    /// line; every corpus file that could not be read, with its reason); the command prints
    /// it.
    pub announce: Option<Announce>,
    /// What a corpus file that cannot be read (an encrypted PDF, a damaged DOCX) does: skipped
    /// and listed (the default), or the job fails on the first (`--strict`).
    pub unreadable: Unreadable,
}

/// A function told one line to show.
pub(crate) type Announce = Box<dyn Fn(&str) + Send + Sync>;

impl SynthJob {
    /// A job with the default work dir (`OUT/.mtr-synth`) and no time budget.
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
            clock: JobClock::wall(),
            time_budget: None,
            start_ahead: true,
            announce: None,
            unreadable: Unreadable::Skip,
        }
    }
}

/// Used by the command to default the work dir next to the output.
pub(crate) fn default_work_dir(out: &Path) -> PathBuf {
    out.join(".mtr-synth")
}
