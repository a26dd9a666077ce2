//! Run depth. The official MTRAG runs rank 10 documents per query, mtr's own retrievers 100:
//! Recall@100 of a depth-10 run is its Recall@10, and ranking it against deeper runs compares
//! different things. So every system records its depth (the most documents it ranks for one
//! scored turn), and a measure whose cutoff is deeper than the run leaves `measures` for
//! `beyond_depth` (still computed as trec_eval computes it, for parity checks); reports and the
//! leaderboard show it as "n/a (depth 10)". A run that ranks the whole corpus has nothing
//! deeper, so its measures stay. The main measure stays in `measures` whatever the depth
//! (ranking needs it), is listed in `beyond_depth` too, and gets a warning.

use crate::measure::Measure;
use crate::result::SystemResult;

/// What a report shows instead of a measure deeper than the run.
pub(crate) fn not_available(depth: usize) -> String {
    format!("n/a (depth {depth})")
}

/// True when `m` looks deeper than a run of `depth` documents over a corpus of `corpus`
/// passages (depth 0 is unknown: never flagged).
pub(crate) fn is_beyond(m: Measure, depth: usize, corpus: u64) -> bool {
    depth > 0 && m.k() > depth && (depth as u64) < corpus
}

/// Moves the measures deeper than the system's run out of `measures` (and its strata) into
/// `beyond_depth`; returns the warnings to show.
pub(crate) fn apply(
    sys: &mut SystemResult,
    measures: &[Measure],
    main: Measure,
    corpus: u64,
) -> Vec<String> {
    let mut moved = Vec::new();
    let mut warnings = Vec::new();
    for &m in measures {
        if !is_beyond(m, sys.depth, corpus) {
            continue;
        }
        let id = m.id();
        if m == main {
            if let Some(e) = sys.measures.get(&id) {
                sys.beyond_depth.insert(id, *e);
            }
            warnings.push(format!(
                "{}: the main measure {} is deeper than the run (depth {}): its value is a lower bound, not comparable with deeper runs",
                sys.name,
                m.label(),
                sys.depth
            ));
            continue;
        }
        if let Some(e) = sys.measures.remove(&id) {
            sys.beyond_depth.insert(id.clone(), e);
            moved.push(m.label());
        }
        for groups in sys.strata.values_mut() {
            for by_measure in groups.values_mut() {
                by_measure.remove(&id);
            }
        }
    }
    if !moved.is_empty() {
        warnings.push(format!(
            "{}: ranks {} documents per turn; {} are deeper than the run and shown as {} (not comparable with deeper runs)",
            sys.name,
            sys.depth,
            moved.join(", "),
            not_available(sys.depth)
        ));
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_cutoffs_deeper_than_a_shorter_than_corpus_run() {
        assert!(is_beyond(Measure::Recall(100), 10, 5000));
        assert!(!is_beyond(Measure::Recall(10), 10, 5000));
        assert!(
            !is_beyond(Measure::Recall(100), 10, 10),
            "the run ranks the whole corpus"
        );
        assert!(!is_beyond(Measure::Recall(100), 0, 5000), "unknown depth");
        assert_eq!(not_available(10), "n/a (depth 10)");
    }
}
