//! A compact open-addressing index over document ids: slots hold `index + 1` into a caller's
//! array, keyed by a fixed-seed hash computed once per document (so the same hash serves both
//! duplicate detection and the qrels lookup). Used instead of a `HashMap<&[u8], _>` because it
//! allocates one `Vec<u32>`, is reused across queries, and needs no key copies.
//! Hash quality only affects speed: every hit is confirmed by comparing the bytes.

/// A fixed, fast hash for short ids: one multiply per 8 bytes, then murmur3's finaliser so
/// the low bits (used to index the table) are well mixed. The same in every process.
#[inline]
pub(crate) fn doc_hash(doc: &[u8]) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut h = (doc.len() as u64).wrapping_mul(K);
    let mut chunks = doc.chunks_exact(8);
    for c in chunks.by_ref() {
        let v = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        h = (h ^ v).wrapping_mul(K).rotate_left(31);
    }
    let r = chunks.remainder();
    if !r.is_empty() {
        let mut buf = [0u8; 8];
        buf[..r.len()].copy_from_slice(r);
        h = (h ^ u64::from_le_bytes(buf))
            .wrapping_mul(K)
            .rotate_left(31);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// Byte-string equality for short ids, inlined (a `memcmp` call per comparison dominated
/// profiles: ids are usually 8 to 40 bytes).
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
    ca.remainder() == cb.remainder()
}

/// Byte-string order (`strcmp` order for ids without NUL), inlined like [`short_eq`].
#[inline]
pub(crate) fn short_cmp(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    let mut ca = a.chunks_exact(8);
    let mut cb = b.chunks_exact(8);
    for (x, y) in ca.by_ref().zip(cb.by_ref()) {
        let x = u64::from_be_bytes([x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7]]);
        let y = u64::from_be_bytes([y[0], y[1], y[2], y[3], y[4], y[5], y[6], y[7]]);
        if x != y {
            return x.cmp(&y);
        }
    }
    // One of the inputs is exhausted to fewer than 8 bytes: compare the rest directly.
    let n = a.len().min(b.len()) / 8 * 8;
    a[n..].cmp(&b[n..])
}

#[derive(Debug, Clone, Default)]
pub(crate) struct SlotTable {
    slots: Vec<u32>,
}

impl SlotTable {
    /// Empties the table and sizes it for `n` entries (load factor <= 1/2).
    pub(crate) fn reset(&mut self, n: usize) {
        let size = (2 * n).next_power_of_two().max(8);
        self.slots.clear();
        self.slots.resize(size, 0);
    }

    pub(crate) fn into_slots(self) -> Box<[u32]> {
        self.slots.into_boxed_slice()
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
        let mut i = hash as usize & mask;
        loop {
            let s = self.slots[i];
            if s == 0 {
                self.slots[i] = index as u32 + 1;
                return None;
            }
            if eq(s as usize - 1) {
                return Some(s as usize - 1);
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
