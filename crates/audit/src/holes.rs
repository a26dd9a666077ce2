//! `mtr judge`: the holes of a leaderboard. A passage that a run ranks in its top K for a turn
//! and that the benchmark's qrels do not judge for that turn is a hole; every hole is pooled
//! once over all runs and judged by the audit's relevance judges, through the audit itself
//! (the alignment prompt with the dialogue history, the ensemble, the cache, resume, the dry
//! run, the time budget, Batch export and spend records), on a copy of the benchmark whose
//! golds are the holes. What the judges say fills the holes ([`filled_qrels`]) and shows how
//! much each run's measures rest on unjudged passages ([`HoleSummary`]).
//!
//! - [`hole_pool`]: the runs read, their top K ranked as `trec_eval` ranks, the holes pooled;
//! - [`verdicts`]: the audit's judgements of the holes read back, one verdict a hole;
//! - [`effect`]: each run's Judged@K and measures before and after the holes are filled;
//! - [`run_scoring`]: a run's P@K, nDCG@K and Judged@K on the pooled turns;
//! - [`pool_record`]: `pool.json`, what was pooled, for a review to score the runs again;
//! - [`files`]: `judgements.jsonl`, `summary.json` and the report;
//! - [`judge_holes`]: the job, end to end;
//! - [`hole_review`]: what reviewers' labels on the holes say (`mtr review DIR`), and the flagged
//!   queue of the holes that move the runs most.

mod effect;
mod files;
mod hole_pool;
mod hole_review;
mod judge_holes;
mod pool_record;
mod run_scoring;
mod verdicts;

pub use effect::{HoleSummary, RunEffect, TauInterval};
pub use files::{
    JUDGEMENTS, SUMMARY, attach_review, is_judge_dir, read_summary, read_verdicts, review_of,
};
pub use hole_pool::{Hole, HolePlan, NamedRun, plan_holes, read_named_runs};
pub use hole_review::{HoleReview, RunReview, queue as review_queue};
pub use judge_holes::{HoleJob, HoleOutcome, judge_holes};
pub use pool_record::{AUDIT_DIR, Pool, PoolRun, read_pool};
pub use verdicts::{HoleVerdict, JudgeGrade, filled_qrels};
