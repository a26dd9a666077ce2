//! The report's small formatters: numbers, intervals, fingerprints, excerpts.

use crate::dimension::Dimension;
use crate::summary::Summary;

pub(super) fn f(x: Option<f64>, digits: usize) -> String {
    match x {
        Some(v) if v.is_finite() => format!("{v:.digits$}"),
        _ => "-".into(),
    }
}

pub(super) fn ci(d: &Option<crate::summary::Interval>, digits: usize) -> String {
    match d {
        Some(i) => format!("[{:.digits$}, {:.digits$}]", i.lower, i.upper),
        None => "-".into(),
    }
}

pub(super) fn short(s: &str) -> &str {
    mtr_core::fingerprint::short(s)
}

/// Cuts long text at a character boundary, marking the cut.
pub(crate) fn excerpt(s: &str, max_chars: usize) -> String {
    let s = s.trim();
    if s.chars().count() <= max_chars {
        return s.to_string();
    }
    let cut: String = s.chars().take(max_chars).collect();
    format!("{cut} [...]")
}

/// ` (chance 0.125)` after a completeness share: what a judge picking at random would get
/// (the mean of 1/P over the judged trials); empty for the other dimensions.
pub(super) fn chance(s: &Summary, dim: Dimension) -> String {
    match (dim, s.discriminability.as_ref().and_then(|d| d.chance_rate)) {
        (Dimension::Completeness, Some(c)) => format!(" (chance {c:.3})"),
        _ => String::new(),
    }
}

/// What a dimension's flags are when its judges cannot separate anything.
pub(super) const JUDGES_FAILURE: &str = "the judges' failure, not the benchmark's";
