//! Near-duplicate detection with MinHash and locality-sensitive hashing (LSH).
//!
//! A document becomes the set of its character n-grams ("shingles", default 5 characters, over
//! lower-cased text with runs of whitespace collapsed), each hashed to 32 bits. A signature
//! keeps, for each of `num_perm` seeded hash functions, the minimum hash over the set; the
//! fraction of equal signature slots estimates the Jaccard similarity of two sets. LSH cuts the
//! signature into `bands` bands of `num_perm / bands` rows: two documents become candidates
//! when any band is identical, and candidates are confirmed on the estimated Jaccard.
//! Deduplication keeps the first document (corpus order) of every group of near-duplicates,
//! so the result does not depend on thread count.

use std::collections::HashMap;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// MinHash-LSH parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MinHashOptions {
    /// Characters per shingle.
    pub shingle: usize,
    /// Number of hash functions ("permutations") per signature.
    pub num_perm: usize,
    /// LSH bands; `num_perm` must be divisible by it. 32 bands of 4 rows put the LSH
    /// threshold at about (1/32)^(1/4) = 0.42, below the default Jaccard threshold.
    pub bands: usize,
    /// Documents at or above this estimated Jaccard similarity are near-duplicates.
    pub threshold: f64,
    /// Seed of the hash functions.
    pub seed: u64,
}

impl Default for MinHashOptions {
    fn default() -> Self {
        Self {
            shingle: 5,
            num_perm: 128,
            bands: 32,
            threshold: 0.5,
            seed: 0x6d74_725f_6d68,
        }
    }
}

impl MinHashOptions {
    /// Checks the band layout; the message names what is wrong.
    pub fn validate(&self) -> Result<(), String> {
        if self.shingle == 0 {
            return Err("shingle must be at least 1".into());
        }
        if self.num_perm == 0 || self.bands == 0 || self.num_perm % self.bands != 0 {
            return Err(format!(
                "num_perm ({}) must be a positive multiple of bands ({})",
                self.num_perm, self.bands
            ));
        }
        if !(0.0..=1.0).contains(&self.threshold) {
            return Err(format!("threshold {} is not in [0, 1]", self.threshold));
        }
        Ok(())
    }
}

/// The seeded hash family of a signature.
#[derive(Debug, Clone)]
pub struct MinHasher {
    opts: MinHashOptions,
    seeds: Vec<u32>,
}

/// A MinHash signature (one minimum per hash function); empty sets give all `u32::MAX`.
pub(crate) type Signature = Vec<u32>;

impl MinHasher {
    /// A hasher with its seeded permutations.
    pub fn new(opts: MinHashOptions) -> Self {
        let mut state = opts.seed;
        let seeds = (0..opts.num_perm)
            .map(|_| (splitmix64(&mut state) >> 32) as u32)
            .collect();
        Self { opts, seeds }
    }

    /// The options it was made with.
    pub fn options(&self) -> &MinHashOptions {
        &self.opts
    }

    /// The distinct 32-bit shingle hashes of a text.
    pub fn shingles(&self, text: &str) -> Vec<u32> {
        let chars = normalise(text);
        let n = self.opts.shingle;
        let mut out = Vec::with_capacity(chars.len());
        if chars.is_empty() {
            return out;
        }
        if chars.len() < n {
            out.push(hash_chars(&chars));
        } else {
            out.extend(chars.windows(n).map(hash_chars));
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The signature of a text.
    pub(crate) fn signature(&self, text: &str) -> Signature {
        self.signature_of_shingles(&self.shingles(text))
    }

    /// The signature of a set of hashed shingles.
    pub(crate) fn signature_of_shingles(&self, shingles: &[u32]) -> Signature {
        let mut mins = vec![u32::MAX; self.seeds.len()];
        for &s in shingles {
            for (m, &seed) in mins.iter_mut().zip(&self.seeds) {
                let h = fmix32(s ^ seed);
                if h < *m {
                    *m = h;
                }
            }
        }
        mins
    }

    /// Signatures of many texts in parallel (order preserved).
    pub fn signatures<S: AsRef<str> + Sync>(&self, texts: &[S]) -> Vec<Signature> {
        texts
            .par_iter()
            .map(|t| self.signature(t.as_ref()))
            .collect()
    }
}

/// Estimated Jaccard similarity: the share of equal signature slots.
pub(crate) fn estimate_jaccard(a: &[u32], b: &[u32]) -> f64 {
    if a.is_empty() || a.len() != b.len() {
        return 0.0;
    }
    a.iter().zip(b).filter(|(x, y)| x == y).count() as f64 / a.len() as f64
}

/// A near-duplicate found by [`dedup`]: `index` duplicates the earlier kept `of`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Duplicate {
    pub index: usize,
    pub of: usize,
    pub similarity: f64,
}

/// Finds near-duplicates among signatures, keeping the first of each group (input order).
/// Returns the duplicates in input order; every other index is kept.
pub fn dedup(signatures: &[Signature], opts: &MinHashOptions) -> Vec<Duplicate> {
    let rows = opts.num_perm / opts.bands.max(1);
    let mut buckets: Vec<HashMap<u64, Vec<usize>>> = vec![HashMap::new(); opts.bands];
    let mut out = Vec::new();
    for (i, sig) in signatures.iter().enumerate() {
        if sig.iter().all(|&v| v == u32::MAX) {
            continue;
        }
        let keys: Vec<u64> = (0..opts.bands)
            .map(|b| band_key(&sig[b * rows..(b + 1) * rows]))
            .collect();
        let mut best: Option<(usize, f64)> = None;
        for (b, key) in keys.iter().enumerate() {
            if let Some(cands) = buckets[b].get(key) {
                for &c in cands {
                    let s = estimate_jaccard(sig, &signatures[c]);
                    if s >= opts.threshold
                        && best.is_none_or(|(bc, bs)| s > bs || (s == bs && c < bc))
                    {
                        best = Some((c, s));
                    }
                }
            }
        }
        match best {
            Some((of, similarity)) => out.push(Duplicate {
                index: i,
                of,
                similarity,
            }),
            None => {
                for (b, key) in keys.into_iter().enumerate() {
                    buckets[b].entry(key).or_default().push(i);
                }
            }
        }
    }
    out
}

fn band_key(rows: &[u32]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &r in rows {
        h ^= u64::from(r);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
        h ^= h >> 29;
    }
    h
}

/// Lower-cased characters with runs of whitespace collapsed to one space, trimmed.
fn normalise(text: &str) -> Vec<char> {
    let mut out = Vec::with_capacity(text.len());
    let mut space = true;
    for c in text.chars() {
        if c.is_whitespace() {
            if !space {
                out.push(' ');
                space = true;
            }
        } else {
            if c.is_ascii() {
                out.push(c.to_ascii_lowercase());
            } else {
                out.extend(c.to_lowercase());
            }
            space = false;
        }
    }
    if out.last() == Some(&' ') {
        out.pop();
    }
    out
}

/// FNV-1a over the code points, finalised with murmur3's mixer.
fn hash_chars(chars: &[char]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for &c in chars {
        h ^= c as u32;
        h = h.wrapping_mul(0x0100_0193);
    }
    fmix32(h)
}

/// murmur3's 32-bit finaliser: a bijection with full avalanche.
#[inline]
fn fmix32(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^= h >> 16;
    h
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Exact Jaccard similarity of two sorted, deduplicated shingle sets.
    fn exact_jaccard(a: &[u32], b: &[u32]) -> f64 {
        if a.is_empty() && b.is_empty() {
            return 1.0;
        }
        let (mut i, mut j, mut inter) = (0, 0, 0usize);
        while i < a.len() && j < b.len() {
            match a[i].cmp(&b[j]) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => {
                    inter += 1;
                    i += 1;
                    j += 1;
                }
            }
        }
        inter as f64 / (a.len() + b.len() - inter) as f64
    }

    /// `n` pseudo-random 8-letter words numbered from `offset`: distinct words share no
    /// 5-grams (up to rare collisions), so shingle overlaps follow from word overlaps.
    fn words(n: usize, offset: usize) -> String {
        (offset..offset + n)
            .map(|i| {
                let mut st = i as u64;
                (0..8)
                    .map(|_| (b'a' + (splitmix64(&mut st) % 26) as u8) as char)
                    .collect::<String>()
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Texts built from disjoint numbered tokens have computable shingle overlaps: the exact
    /// Jaccard is checked first, then the MinHash estimate must be within 0.1 of it
    /// (128 permutations: standard error <= 0.045).
    #[test]
    fn known_jaccard_pairs() {
        let mh = MinHasher::new(MinHashOptions::default());
        let cases = [
            (words(400, 0), words(400, 0), 1.0),
            (words(400, 0), words(400, 10_000), 0.0),
            (words(400, 0), words(400, 200), 1.0 / 3.0),
            (words(400, 0), words(400, 100), 0.6),
        ];
        for (a, b, expected) in cases {
            let (sa, sb) = (mh.shingles(&a), mh.shingles(&b));
            let exact = exact_jaccard(&sa, &sb);
            assert!(
                (exact - expected).abs() < 0.02,
                "exact {exact} vs {expected}"
            );
            let est = estimate_jaccard(&mh.signature(&a), &mh.signature(&b));
            assert!((est - exact).abs() < 0.1, "estimate {est} vs exact {exact}");
        }
    }

    #[test]
    fn normalisation_ignores_case_and_whitespace() {
        let mh = MinHasher::new(MinHashOptions::default());
        assert_eq!(
            mh.signature("Hello   World\n\tagain"),
            mh.signature("hello world again")
        );
        assert_eq!(mh.shingles("短文"), mh.shingles("短文"));
        assert_eq!(mh.shingles("短文").len(), 1);
        assert!(mh.shingles("").is_empty());
    }

    #[test]
    fn dedup_keeps_first_of_each_group() {
        let opts = MinHashOptions::default();
        let mh = MinHasher::new(opts.clone());
        let base = words(300, 0);
        let near = format!("{base} zzzzqqq extra tail");
        let other = words(300, 5000);
        let chinese = "公司每年为员工提供十五天带薪年假，未休完的年假最多可以结转五天。".repeat(3);
        let chinese_near = format!("{chinese}另有说明。");
        let texts = vec![
            base.clone(),
            other,
            near,
            chinese.clone(),
            chinese_near,
            base,
        ];
        let sigs = mh.signatures(&texts);
        let d = dedup(&sigs, &opts);
        let pairs: Vec<_> = d.iter().map(|x| (x.index, x.of)).collect();
        assert_eq!(pairs, vec![(2, 0), (4, 3), (5, 0)]);
        assert!(d.iter().all(|x| x.similarity >= 0.5));
    }

    #[test]
    fn options_are_checked() {
        assert!(
            MinHashOptions {
                bands: 30,
                ..Default::default()
            }
            .validate()
            .is_err()
        );
        assert!(MinHashOptions::default().validate().is_ok());
    }
}
