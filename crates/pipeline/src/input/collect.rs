//! Where every reader puts what it reads: the documents (all of them, or a seeded uniform
//! sample drawn by reservoir sampling over the whole input, so that `--max-documents 2000` of
//! a million-article dump holds 2,000 documents in memory, never the dump), duplicate ids, and
//! malformed records (the first kept with its file, line and field, the rest counted).

use std::collections::HashSet;
use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};

use mtr_core::InputError;
use rand_xoshiro::Xoshiro256PlusPlus;
use rand_xoshiro::rand_core::{RngCore, SeedableRng};

use super::document::{Document, Source};

/// A seeded uniform sample of at most `cap` items of a stream of unknown length (Vitter's
/// algorithm R), returned in stream order.
pub(crate) struct Reservoir<T> {
    cap: usize,
    seen: u64,
    rng: Xoshiro256PlusPlus,
    slots: Vec<(u64, T)>,
}

impl<T> Reservoir<T> {
    pub(crate) fn new(cap: usize, seed: u64) -> Self {
        Self {
            cap,
            seen: 0,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            slots: Vec::with_capacity(cap.min(1 << 16)),
        }
    }

    /// Offers the next item of the stream.
    pub(crate) fn offer(&mut self, item: T) {
        let i = self.seen;
        self.seen += 1;
        if self.slots.len() < self.cap {
            self.slots.push((i, item));
            return;
        }
        // uniform in 0..=i (multiply-shift: the bias is below 2^-40 for any stream)
        let j = ((u128::from(self.rng.next_u64()) * u128::from(i + 1)) >> 64) as usize;
        if let Some(slot) = self.slots.get_mut(j) {
            *slot = (i, item);
        }
    }

    /// The sample in stream order.
    pub(crate) fn into_sorted(mut self) -> Vec<T> {
        self.slots.sort_by_key(|(i, _)| *i);
        self.slots.into_iter().map(|(_, t)| t).collect()
    }
}

/// The documents kept (with their sources): every one, or a sample.
enum Kept {
    All(Vec<(Document, Source)>),
    Sample(Reservoir<(Document, Source)>),
}

/// Collects the documents and the malformed records of one read.
pub(crate) struct Collector {
    kept: Kept,
    /// The file being read, relative to the corpus folder (each document's source).
    file: String,
    /// Hashes of the ids seen (8 bytes a document: a million ids take 8 MB, not their text).
    ids: HashSet<u64>,
    hasher: BuildHasherDefault<DefaultHasher>,
    read: u64,
    first_bad: Option<InputError>,
    bad: u64,
}

impl Collector {
    /// `sample`: keep a seeded uniform sample of this many documents (None: all).
    pub(crate) fn new(sample: Option<(usize, u64)>) -> Self {
        Self {
            kept: match sample {
                Some((n, seed)) => Kept::Sample(Reservoir::new(n, seed)),
                None => Kept::All(Vec::new()),
            },
            file: String::new(),
            ids: HashSet::new(),
            hasher: BuildHasherDefault::default(),
            read: 0,
            first_bad: None,
            bad: 0,
        }
    }

    /// The documents that follow come from `file` (relative to the corpus folder).
    pub(crate) fn begin_file(&mut self, file: String) {
        self.file = file;
    }

    /// A well-formed document of the current file; `at` names where it is, for a duplicate id.
    pub(crate) fn document(&mut self, doc: Document, at: impl FnOnce() -> InputError) {
        let source = Source {
            file: self.file.clone(),
            ..Source::default()
        };
        self.located(doc, source, at);
    }

    /// A well-formed document from `source`; `at` names where it is, for a duplicate id.
    pub(crate) fn located(
        &mut self,
        doc: Document,
        source: Source,
        at: impl FnOnce() -> InputError,
    ) {
        if !self.ids.insert(self.hasher.hash_one(&doc.id)) {
            let id = doc.id;
            self.malformed(
                at().field("id")
                    .with_message(format!("duplicate document id `{id}`"))
                    .hint("ids must be unique; --skip-bad drops the later ones"),
            );
            return;
        }
        self.read += 1;
        match &mut self.kept {
            Kept::All(v) => v.push((doc, source)),
            Kept::Sample(r) => r.offer((doc, source)),
        }
    }

    /// A malformed record.
    pub(crate) fn malformed(&mut self, e: InputError) {
        self.bad += 1;
        if self.first_bad.is_none() {
            self.first_bad = Some(e);
        }
    }

    /// What the read collected.
    pub(crate) fn finish(self) -> Collected {
        let docs = match self.kept {
            Kept::All(v) => v,
            Kept::Sample(r) => r.into_sorted(),
        };
        Collected {
            kept: docs,
            read: self.read,
            malformed: self.first_bad.map(|e| (e, self.bad)),
        }
    }
}

/// What a read collected.
pub(crate) struct Collected {
    /// The documents kept, with their sources, in input order.
    pub(crate) kept: Vec<(Document, Source)>,
    /// Well-formed documents read.
    pub(crate) read: u64,
    /// The first malformed record and how many there were in all.
    pub(crate) malformed: Option<(InputError, u64)>,
}

/// Replacing an error's message while keeping its place.
trait WithMessage {
    fn with_message(self, message: String) -> Self;
}

impl WithMessage for InputError {
    fn with_message(mut self, message: String) -> Self {
        self.message = message;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reservoir_is_seeded_in_stream_order_and_uniform() {
        let draw = |seed| {
            let mut r = Reservoir::new(3, seed);
            (0..100).for_each(|i| r.offer(i));
            r.into_sorted()
        };
        let a = draw(7);
        assert_eq!(a, draw(7));
        assert_ne!(a, draw(8));
        assert!(a.windows(2).all(|w| w[0] < w[1]), "{a:?}");
        // every position is drawn about equally often (10 of 100 kept, 20,000 draws)
        let mut hits = [0u32; 100];
        for seed in 0..2000 {
            let mut r = Reservoir::new(10, seed);
            (0..100).for_each(|i| r.offer(i));
            r.into_sorted().into_iter().for_each(|i| hits[i] += 1);
        }
        let (lo, hi) = (hits.iter().min().unwrap(), hits.iter().max().unwrap());
        assert!(*lo > 140 && *hi < 260, "{lo}..{hi}");
        // a short stream is kept whole
        let mut r = Reservoir::new(10, 1);
        (0..4).for_each(|i| r.offer(i));
        assert_eq!(r.into_sorted(), [0, 1, 2, 3]);
    }

    #[test]
    fn duplicates_and_malformed_records_are_counted_with_the_first_named() {
        let doc = |id: &str| Document {
            id: id.into(),
            title: String::new(),
            text: "t".into(),
        };
        let mut c = Collector::new(None);
        c.document(doc("a"), || InputError::new("f", "").line(1));
        c.document(doc("a"), || InputError::new("f", "").line(2));
        c.malformed(InputError::new("f", "bad").line(3));
        let c = c.finish();
        let (docs, read, bad) = (c.kept, c.read, c.malformed);
        assert_eq!((docs.len(), read), (1, 1));
        let (first, n) = bad.unwrap();
        assert_eq!((first.line, n), (Some(2), 2));
        assert!(
            first.to_string().contains("duplicate document id `a`"),
            "{first}"
        );
    }
}
