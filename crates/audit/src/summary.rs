//! `summary.json`: everything the report shows, computed once. The report renderers read only
//! this file (and `items.jsonl` for nothing else), so `mtr report AUDIT_DIR` re-renders an
//! audit without the benchmark or any LLM. Its JSON Schema is `docs/schema/audit-summary.schema.json`.

mod bias_part;
mod dimension_part;
mod file;
mod ledger;
pub(crate) mod review;
mod top_level;

pub(crate) use crate::statistics::interval::Interval;
pub(crate) use bias_part::{BiasInfo, LengthBias, PoolLengthBias, PositionBias};
pub(crate) use dimension_part::{
    Agreement, Bin, DimensionSummary, Estimate, FailureRates, JudgeScore, RateBin, WorstItem,
};
pub use file::{SUMMARY, read_summary, write_summary};
pub(crate) use ledger::{CostInfo, Ledger};
pub(crate) use review::{Review, ReviewEstimate, ReviewerAgreement};
pub use top_level::Summary;
pub(crate) use top_level::{BenchmarkInfo, FingerprintInfo, JudgeInfo, PlanInfo, SUMMARY_VERSION};
