//! `report.md` and `report.html` from a [`Summary`](crate::Summary): score tables with
//! confidence intervals, per-judge means, agreement, what was skipped and what failed, probable
//! missing gold, bias checks (position chart, length correlations, self-preference), human
//! calibration, the worst items with their text, score histograms, and the cost ledger.

mod bias;
pub(crate) mod doc;
mod document;
mod format;
mod human_calibration;
mod reviewed;
mod robust;
mod scores;
mod suggested;
mod svg;
mod worst;

pub use document::{html, markdown, verdict};
pub(crate) use format::excerpt;
