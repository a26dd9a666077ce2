//! Seeds for every random choice of an audit. A choice's seed is derived from the audit seed
//! and the names of what it is about (item key, trial), never from the order in which work
//! happens, so results are byte-identical whatever the concurrency or resume history.

use rand::SeedableRng;
use rand::rngs::StdRng;

/// A 64-bit seed derived from the audit seed and a list of names.
pub fn derive(seed: u64, parts: &[&str]) -> u64 {
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
pub fn rng(seed: u64, parts: &[&str]) -> StdRng {
    StdRng::seed_from_u64(derive(seed, parts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_seeds_depend_on_all_parts() {
        assert_eq!(derive(1, &["a", "b"]), derive(1, &["a", "b"]));
        assert_ne!(derive(1, &["a", "b"]), derive(2, &["a", "b"]));
        assert_ne!(derive(1, &["ab"]), derive(1, &["a", "b"]));
    }
}
