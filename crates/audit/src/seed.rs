//! Seeds for every random choice of an audit. A choice's seed is derived from the audit seed
//! and the names of what it is about (item key, trial), never from the order in which work
//! happens, so results are byte-identical whatever the concurrency or resume history.

use mtr_core::rng::{self, SeededRng};

/// A 64-bit seed derived from the audit seed and a list of names.
pub(crate) fn derive(seed: u64, parts: &[&str]) -> u64 {
    let mut h = blake3::Hasher::new();
    h.update(&seed.to_le_bytes());
    for p in parts {
        h.update(&(p.len() as u64).to_le_bytes());
        h.update(p.as_bytes());
    }
    let bytes = h.finalize();
    let mut out = [0u8; 8];
    out.copy_from_slice(&bytes.as_bytes()[..8]);
    u64::from_le_bytes(out)
}

/// A seeded RNG for the named choice.
pub(crate) fn rng(seed: u64, parts: &[&str]) -> SeededRng {
    rng::stream(derive(seed, parts), rng::purpose::AS_GIVEN)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first draws of this use of the seeded generator ([`mtr_core::rng`]): a dependency
    /// update that changes them fails here, not silently in a report.
    #[test]
    fn golden_first_draws() {
        use rand::seq::SliceRandom as _;
        let draws = |parts: &[&str]| {
            let mut v: Vec<u32> = (0..10).collect();
            v.shuffle(&mut rng(7, parts));
            v
        };
        // the dialogue sample (plan), a pool's trial order, the human-label sample
        let sample = draws(&["sample"]);
        let trial = draws(&["trial", "q1", "0"]);
        let human = draws(&["human-sample"]);
        assert_eq!(sample, [0, 4, 1, 9, 2, 7, 8, 5, 6, 3]);
        assert_eq!(trial, [9, 6, 5, 7, 1, 0, 8, 4, 3, 2]);
        assert_eq!(human, [5, 0, 7, 8, 6, 4, 9, 2, 1, 3]);
    }

    #[test]
    fn derived_seeds_depend_on_all_parts() {
        assert_eq!(derive(1, &["a", "b"]), derive(1, &["a", "b"]));
        assert_ne!(derive(1, &["a", "b"]), derive(2, &["a", "b"]));
        assert_ne!(derive(1, &["ab"]), derive(1, &["a", "b"]));
    }
}
