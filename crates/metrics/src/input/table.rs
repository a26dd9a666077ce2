//! A compact open-addressing index over document ids: slots hold `index + 1` into a caller's
//! array, keyed by a fixed-seed hash computed once per document (so the same hash serves both
//! duplicate detection and the qrels lookup). Used instead of a `HashMap<&[u8], _>` because it
//! allocates one `Vec<u32>`, is reused across queries, and needs no key copies.
//! Hash quality only affects speed: every hit is confirmed by comparing the bytes.

/// A fixed, fast hash for short ids: one multiply per 8 bytes, then murmur3's finaliser so
/// the low bits (used to index the table) are well mixed. The same in every process.
///
/// The last partial word is read with overlapping loads (the final 8 bytes of an id of 8 or
/// more bytes; two overlapping 4-byte reads of one of 4 to 7 bytes; the first, middle and
/// last byte of one of 1 to 3 bytes), never by copying the tail into a zeroed buffer: that
/// copy was a `memcpy` call plus a store-forwarding stall per document and dominated ranking
/// profiles. The reads still see every byte, and the length is hashed first.
#[inline]
pub(crate) fn doc_hash(doc: &[u8]) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    #[inline]
    fn mix(h: u64, v: u64) -> u64 {
        (h ^ v).wrapping_mul(K).rotate_left(31)
    }
    let n = doc.len();
    let mut h = (n as u64).wrapping_mul(K);
    let mut chunks = doc.chunks_exact(8);
    for c in chunks.by_ref() {
        h = mix(
            h,
            u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]),
        );
    }
    let r = chunks.remainder();
    if !r.is_empty() {
        let tail = if n >= 8 {
            let t = &doc[n - 8..];
            u64::from_le_bytes([t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7]])
        } else if r.len() >= 4 {
            let lo = u32::from_le_bytes([r[0], r[1], r[2], r[3]]);
            let t = &r[r.len() - 4..];
            let hi = u32::from_le_bytes([t[0], t[1], t[2], t[3]]);
            u64::from(lo) | (u64::from(hi) << 32)
        } else {
            // 1 to 3 bytes: first, middle and last (some may coincide).
            u64::from(r[0]) | (u64::from(r[r.len() / 2]) << 8) | (u64::from(r[r.len() - 1]) << 16)
        };
        h = mix(h, tail);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

#[inline(always)]
fn be8(s: &[u8], at: usize) -> u64 {
    let c = &s[at..at + 8];
    u64::from_be_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])
}

/// Up to 8 bytes of `s` from `from` on as a big-endian word, zero-padded on the right, read
/// without copying into a buffer (an overlapping load, as in [`doc_hash`]): comparing two such
/// words compares those bytes in byte order.
#[inline]
fn word_from(s: &[u8], from: usize) -> u64 {
    let n = s.len();
    let r = n - from;
    if r >= 8 {
        be8(s, from)
    } else if r == 0 {
        0
    } else if n >= 8 {
        be8(s, n - 8) << (8 * (8 - r))
    } else {
        short_word(&s[from..])
    }
}

/// [`word_from`] for 1 to 7 bytes in all (rare: kept out of line so that the comparisons stay
/// small enough to inline).
#[inline(never)]
fn short_word(s: &[u8]) -> u64 {
    let r = s.len();
    if r >= 4 {
        let a = u32::from_be_bytes([s[0], s[1], s[2], s[3]]);
        let b = u32::from_be_bytes([s[r - 4], s[r - 3], s[r - 2], s[r - 1]]);
        (u64::from(a) << 32) | (u64::from(b) << (8 * (8 - r)))
    } else {
        (u64::from(s[0]) << 56)
            | (u64::from(s[r / 2]) << (56 - 8 * (r / 2)))
            | (u64::from(s[r - 1]) << (56 - 8 * (r - 1)))
    }
}

/// Byte-string equality for short ids, inlined and without `memcmp`/`bcmp` calls (a call per
/// comparison dominated profiles: ids are usually 8 to 40 bytes).
#[inline]
pub(crate) fn short_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut ca = a.chunks_exact(8);
    let mut cb = b.chunks_exact(8);
    for (x, y) in ca.by_ref().zip(cb.by_ref()) {
        let x = u64::from_ne_bytes([x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7]]);
        let y = u64::from_ne_bytes([y[0], y[1], y[2], y[3], y[4], y[5], y[6], y[7]]);
        if x != y {
            return false;
        }
    }
    let i = a.len() / 8 * 8;
    word_from(a, i) == word_from(b, i)
}

/// Byte-string order (`strcmp` order for ids without NUL), inlined like [`short_eq`].
#[inline]
pub(crate) fn short_cmp(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= n {
        let (x, y) = (be8(a, i), be8(b, i));
        if x != y {
            return x.cmp(&y);
        }
        i += 8;
    }
    // Fewer than 8 bytes of the shorter input are left: one zero-padded word each decides,
    // unless they are equal, when the shorter input is a prefix of the longer one (the
    // longer one's extra bytes in the word are then zeros) and the lengths decide.
    match word_from(a, i).cmp(&word_from(b, i)) {
        std::cmp::Ordering::Equal => a.len().cmp(&b.len()),
        o => o,
    }
}

/// Open addressing for one query's documents. A slot holds the high 32 bits of the hash
/// (a tag) and `index + 1` in the low 32 bits, so a probe compares bytes only when the tags
/// agree, not at every occupied slot it passes.
#[derive(Debug, Clone, Default)]
pub(crate) struct SlotTable {
    slots: Vec<u64>,
}

impl SlotTable {
    /// Empties the table and sizes it for `n` entries (load factor <= 1/2).
    pub(crate) fn reset(&mut self, n: usize) {
        let size = (2 * n).next_power_of_two().max(8);
        self.slots.clear();
        self.slots.resize(size, 0);
    }

    /// The slots in the tag-less form [`find`] reads.
    pub(crate) fn into_slots(self) -> Box<[u32]> {
        self.slots.iter().map(|s| *s as u32).collect()
    }

    /// Finds the entry equal to the probe (per `eq`) or inserts `index`; returns the existing
    /// entry's index if there was one.
    #[inline]
    pub(crate) fn find_or_insert(
        &mut self,
        hash: u64,
        index: usize,
        eq: impl Fn(usize) -> bool,
    ) -> Option<usize> {
        let mask = self.slots.len() - 1;
        let tag = hash >> 32;
        let mut i = hash as usize & mask;
        loop {
            let s = self.slots[i];
            if s == 0 {
                self.slots[i] = (tag << 32) | (index as u64 + 1);
                return None;
            }
            let j = (s as u32) as usize - 1;
            if s >> 32 == tag && eq(j) {
                return Some(j);
            }
            i = (i + 1) & mask;
        }
    }
}

/// A growable index from ids (stored by the caller, e.g. as spans of a file) to their
/// positions: no allocation per id, one hash per lookup.
#[derive(Debug, Clone, Default)]
pub(crate) struct IdIndex {
    slots: Vec<u32>,
    hashes: Vec<u64>,
}

impl IdIndex {
    /// The position of the id with this hash for which `eq` holds.
    #[inline]
    pub(crate) fn get(&self, hash: u64, eq: impl Fn(usize) -> bool) -> Option<usize> {
        if self.slots.is_empty() {
            return None;
        }
        find(&self.slots, hash, |i| self.hashes[i] == hash && eq(i))
    }

    /// Adds an id known to be absent; it gets position `self.len()`.
    pub(crate) fn push(&mut self, hash: u64) -> usize {
        let idx = self.hashes.len();
        self.hashes.push(hash);
        if 2 * self.hashes.len() > self.slots.len() {
            let size = (4 * self.hashes.len()).next_power_of_two().max(16);
            self.slots.clear();
            self.slots.resize(size, 0);
            let mask = size - 1;
            for (i, h) in self.hashes.iter().enumerate() {
                let mut k = *h as usize & mask;
                while self.slots[k] != 0 {
                    k = (k + 1) & mask;
                }
                self.slots[k] = i as u32 + 1;
            }
        } else {
            let mask = self.slots.len() - 1;
            let mut k = hash as usize & mask;
            while self.slots[k] != 0 {
                k = (k + 1) & mask;
            }
            self.slots[k] = idx as u32 + 1;
        }
        idx
    }
}

/// Looks up in slots produced by [`SlotTable::into_slots`].
#[inline]
pub(crate) fn find(slots: &[u32], hash: u64, eq: impl Fn(usize) -> bool) -> Option<usize> {
    let mask = slots.len() - 1;
    let mut i = hash as usize & mask;
    loop {
        let s = slots[i];
        if s == 0 {
            return None;
        }
        if eq(s as usize - 1) {
            return Some(s as usize - 1);
        }
        i = (i + 1) & mask;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_find_and_duplicates() {
        let docs: Vec<String> = (0..100).map(|i| format!("doc{i}")).collect();
        let mut t = SlotTable::default();
        t.reset(docs.len());
        for (i, d) in docs.iter().enumerate() {
            assert_eq!(
                t.find_or_insert(doc_hash(d.as_bytes()), i, |j| docs[j] == *d),
                None
            );
        }
        assert_eq!(
            t.find_or_insert(doc_hash(b"doc7"), 100, |j| docs[j] == "doc7"),
            Some(7)
        );
        let slots = t.into_slots();
        assert_eq!(
            find(&slots, doc_hash(b"doc42"), |j| docs[j] == "doc42"),
            Some(42)
        );
        assert_eq!(find(&slots, doc_hash(b"nope"), |j| docs[j] == "nope"), None);
        assert_eq!(doc_hash(b"x"), doc_hash(b"x"));
    }

    #[test]
    fn hash_separates_ids_of_every_length() {
        // Ids of 0 to 40 bytes, each differing from its neighbours in one byte at every
        // position: the overlapping tail reads must still see every byte.
        let mut seen = std::collections::HashSet::new();
        let mut n = 0;
        for len in 0..=40usize {
            let base: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
            assert!(seen.insert(doc_hash(&base)), "len {len}");
            n += 1;
            for pos in 0..len {
                let mut v = base.clone();
                v[pos] = b'#';
                assert!(seen.insert(doc_hash(&v)), "len {len} pos {pos}");
                n += 1;
            }
        }
        for i in 0..200_000u32 {
            assert!(seen.insert(doc_hash(format!("doc{i:07}").as_bytes())));
            n += 1;
        }
        assert_eq!(seen.len(), n);
    }

    #[test]
    fn id_index_grows() {
        let ids: Vec<String> = (0..1000).map(|i| format!("q{i}")).collect();
        let mut ix = IdIndex::default();
        for id in &ids {
            let h = doc_hash(id.as_bytes());
            assert_eq!(ix.get(h, |i| ids[i] == *id), None);
            ix.push(h);
        }
        for (k, id) in ids.iter().enumerate() {
            assert_eq!(ix.get(doc_hash(id.as_bytes()), |i| ids[i] == *id), Some(k));
        }
        assert_eq!(ix.get(doc_hash(b"zz"), |i| ids[i] == "zz"), None);
    }

    proptest::proptest! {
        #[test]
        fn short_eq_and_cmp_agree_with_std(
            a in proptest::collection::vec(proptest::sample::select(vec![0u8, 1, b'a', b'b', 0xff]), 0..26),
            b in proptest::collection::vec(proptest::sample::select(vec![0u8, 1, b'a', b'b', 0xff]), 0..26),
            common in 0usize..26,
        ) {
            // A shared prefix makes long equal runs (and prefixes) likely.
            let mut b2 = a[..common.min(a.len())].to_vec();
            b2.extend_from_slice(&b);
            for (x, y) in [(&a, &b), (&a, &b2), (&b2, &a)] {
                proptest::prop_assert_eq!(short_eq(x, y), x == y);
                proptest::prop_assert_eq!(short_cmp(x, y), x.cmp(y));
            }
        }
    }

    #[test]
    fn short_eq_is_equality() {
        let words: Vec<Vec<u8>> = [
            "",
            "a",
            "abcdefgh",
            "abcdefgi",
            "abcdefghi",
            "abcdefghj",
            "0a1b2c3d4e5f6a7b<::>3",
        ]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect();
        for a in &words {
            for b in &words {
                assert_eq!(short_eq(a, b), a == b, "{a:?} {b:?}");
                assert_eq!(short_cmp(a, b), a.cmp(b), "{a:?} {b:?}");
            }
        }
    }
}
