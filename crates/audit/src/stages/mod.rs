//! The audit job as named stages, in the order [`crate::audit::run`] calls them:
//!
//! 1. [`plan`]: settings, judges, the gold passages, the work list, the fingerprint;
//! 2. [`reuse`]: which judgements of an earlier run in the output folder stand;
//! 3. [`judge`]: every unit fitted to the judges' context and judged (rating dimensions while
//!    the hard negatives are retrieved, then the discriminability pools), then the human
//!    calibration set; a dry run stops after it, and what was judged is scored ([`judge::score`]);
//! 4. [`verify`]: missing-gold candidates rated pointwise by every judge;
//! 5. [`calibrate`]: the judges against the human labels;
//! 6. [`summarise`]: `summary.json`'s statistics, biases, cost and verdict;
//! 7. [`write`]: the output folder.
//!
//! Each stage hands the next a plain struct; the work itself lives in the modules the stages
//! call ([`crate::items::plan`], [`crate::judges::engine`], [`crate::items::missing_gold`], [`crate::human::calibration`],
//! [`crate::statistics::dimensions`], [`crate::output`]).

pub(crate) mod calibrate;
pub(crate) mod judge;
pub(crate) mod plan;
pub(crate) mod reuse;
pub(crate) mod summarise;
pub(crate) mod verify;
pub(crate) mod write;
