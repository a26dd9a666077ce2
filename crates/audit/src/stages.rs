//! The audit job as named stages, in the order [`crate::run::run`] calls them:
//!
//! 1. [`plan`]: settings, judges, the gold passages, the work list, the fingerprint, the
//!    time budget's deadline;
//! 2. [`reuse`]: which judgements of an earlier run in the output folder stand;
//! 3. [`judge`]: every unit fitted to the judges' context and judged (rating dimensions while
//!    the hard negatives are retrieved, then the discriminability pools); a dry run stops after
//!    the human stage;
//! 4. [`human_labels`]: the human calibration set loaded and judged (`--human-labels`);
//! 5. [`score`]: item scores, and whether the audit stopped early;
//! 6. [`verify`]: missing-gold candidates rated pointwise by every judge;
//! 7. [`calibrate`]: the judges against the human labels;
//! 8. [`summarise`]: `summary.json`'s statistics, biases, cost and verdict;
//! 9. [`output_folder`]: writes the output folder.
//!
//! Each stage is a function of the job and the earlier stages' results, and returns its own
//! plain struct; no stage changes an earlier one's result. The work itself lives in the modules
//! the stages call ([`crate::items::selection`], [`crate::judges::engine`],
//! [`crate::items::missing_gold`], [`crate::human::calibration`], [`crate::statistics::dimension_statistics`],
//! [`crate::output`]).

pub(crate) mod calibrate;
pub(crate) mod human_labels;
pub(crate) mod judge;
pub(crate) mod output_folder;
pub(crate) mod plan;
pub(crate) mod reuse;
pub(crate) mod score;
pub(crate) mod summarise;
pub(crate) mod verify;
