//! BM25 search over the tantivy index of an index folder. Queries are analysed with the
//! index's own analyzer and run as a disjunction of term queries (no query syntax, so user
//! text such as `"?"` or `AND` is never misread). Scores are tantivy's BM25 (k1 = 1.2,
//! b = 0.75, Lucene's formula with one-byte field norms), with statistics over the whole index.
//! Ties are broken by corpus order, so a run is the same on every machine and thread count.

use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mtr_core::Passage;
use rayon::prelude::*;
use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::Column;
use tantivy::query::{BooleanQuery, BoostQuery, Occur, Query as TantivyQuery, TermQuery, Weight};
use tantivy::schema::{
    Field, IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing, TextOptions, Value,
};
use tantivy::{
    DocId, Index, IndexReader, ReloadPolicy, Score, SegmentOrdinal, SegmentReader, Term,
};

use crate::analyzer::Analyzer;
use crate::error::{Error, Result};
use crate::ids::IdTable;
use crate::retriever::{BoxFuture, Hit, Query, Retriever};

/// BM25 parameters of tantivy 0.27 (constants of its scorer, recorded in every index's meta).
pub(crate) const K1: f32 = 1.2;
pub(crate) const B: f32 = 0.75;

pub(crate) const F_ID: &str = "id";
pub(crate) const F_ORD: &str = "ord";
pub(crate) const F_BODY: &str = "body";
pub(crate) const F_TITLE: &str = "title";
pub(crate) const F_TEXT: &str = "text";

/// The tantivy schema of an index folder.
pub(crate) fn schema(analyzer: Analyzer, store_text: bool) -> Schema {
    let mut b = Schema::builder();
    b.add_text_field(F_ID, STRING);
    b.add_u64_field(F_ORD, tantivy::schema::INDEXED | tantivy::schema::FAST);
    let body = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(analyzer.tokenizer_name())
            .set_index_option(IndexRecordOption::WithFreqs),
    );
    b.add_text_field(F_BODY, body);
    if store_text {
        b.add_text_field(F_TITLE, STORED);
        b.add_text_field(F_TEXT, STORED);
    }
    b.build()
}

/// The text that is indexed for a passage: the title, unless the text already starts with it,
/// then the text.
pub(crate) fn body_text(p: &Passage) -> String {
    let title = p.title.trim();
    if title.is_empty() || p.text.trim_start().starts_with(title) {
        p.text.clone()
    } else {
        format!("{title}\n{}", p.text)
    }
}

struct Inner {
    path: PathBuf,
    reader: IndexReader,
    analyzer: Analyzer,
    ids: Arc<IdTable>,
    f_id: Field,
    f_ord: Field,
    f_body: Field,
    f_title: Option<Field>,
    f_text: Option<Field>,
}

/// An opened BM25 index: cheap to clone, safe to share between threads.
#[derive(Clone)]
pub struct Bm25Index {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Bm25Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bm25Index")
            .field("path", &self.inner.path)
            .field("analyzer", &self.inner.analyzer)
            .finish()
    }
}

impl Bm25Index {
    /// Opens the tantivy index at `path` (memory-mapped) with the analyzer it was built with.
    pub(crate) fn open(path: &Path, analyzer: Analyzer, ids: Arc<IdTable>) -> Result<Self> {
        let index = Index::open_in_dir(path).map_err(|e| Error::index(path, e))?;
        let schema = index.schema();
        let field = |name: &str| schema.get_field(name).map_err(|e| Error::index(path, e));
        let (f_id, f_ord, f_body) = (field(F_ID)?, field(F_ORD)?, field(F_BODY)?);
        let tokenizer = match schema.get_field_entry(f_body).field_type() {
            tantivy::schema::FieldType::Str(o) => {
                o.get_indexing_options().map(|i| i.tokenizer().to_string())
            }
            _ => None,
        };
        if tokenizer.as_deref() != Some(analyzer.tokenizer_name()) {
            return Err(Error::index(
                path,
                format!(
                    "the tantivy schema uses tokenizer {tokenizer:?} but the index metadata says {}; rebuild the index",
                    analyzer.tokenizer_name()
                ),
            ));
        }
        analyzer.register(index.tokenizers());
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(|e| Error::index(path, e))?;
        Ok(Self {
            inner: Arc::new(Inner {
                path: path.to_path_buf(),
                reader,
                analyzer,
                ids,
                f_id,
                f_ord,
                f_body,
                f_title: schema.get_field(F_TITLE).ok(),
                f_text: schema.get_field(F_TEXT).ok(),
            }),
        })
    }

    /// The analyzer the index was built with.
    pub fn analyzer(&self) -> Analyzer {
        self.inner.analyzer
    }

    /// How many passages the index holds.
    pub fn num_passages(&self) -> u64 {
        self.inner.reader.searcher().num_docs()
    }

    /// The query as tantivy runs it: one term query per distinct analysed term, boosted by the
    /// number of times the term occurs in the query (the same as repeating the clause).
    fn build_query(&self, text: &str) -> Option<Box<dyn TantivyQuery>> {
        let mut counts: BTreeMap<String, u32> = BTreeMap::new();
        for t in self.inner.analyzer.terms(text) {
            *counts.entry(t).or_default() += 1;
        }
        if counts.is_empty() {
            return None;
        }
        let clauses: Vec<(Occur, Box<dyn TantivyQuery>)> = counts
            .into_iter()
            .map(|(t, n)| {
                let tq: Box<dyn TantivyQuery> = Box::new(TermQuery::new(
                    Term::from_field_text(self.inner.f_body, &t),
                    IndexRecordOption::WithFreqs,
                ));
                let q: Box<dyn TantivyQuery> = if n == 1 {
                    tq
                } else {
                    Box::new(BoostQuery::new(tq, n as Score))
                };
                (Occur::Should, q)
            })
            .collect();
        Some(Box::new(BooleanQuery::new(clauses)))
    }

    /// The top `k` passages for `text`, best first.
    pub fn search(&self, text: &str, k: usize) -> Result<Vec<Hit>> {
        self.search_excluding(text, k, &[] as &[&str])
    }

    /// The top `k` passages for `text` that are not in `exclude`, best first.
    pub fn search_excluding<S: AsRef<str>>(
        &self,
        text: &str,
        k: usize,
        exclude: &[S],
    ) -> Result<Vec<Hit>> {
        if k == 0 {
            return Ok(Vec::new());
        }
        let Some(query) = self.build_query(text) else {
            return Ok(Vec::new());
        };
        let searcher = self.inner.reader.searcher();
        // Never more than the index holds (a huge k must not allocate a huge heap).
        let want = k
            .saturating_add(exclude.len())
            .min(searcher.num_docs() as usize);
        let collector = TopOrd { k: want.max(1) };
        let top = searcher
            .search(query.as_ref(), &collector)
            .map_err(|e| Error::index(&self.inner.path, e))?;
        let mut hits = Vec::with_capacity(want);
        for (score, ord) in top {
            let ord = u32::try_from(ord)
                .map_err(|_| Error::index(&self.inner.path, "passage ordinal out of range"))?;
            let id = self.inner.ids.get(ord).ok_or_else(|| {
                Error::index(
                    &self.inner.path,
                    format!("passage ordinal {ord} not in ids.txt"),
                )
            })?;
            if exclude.iter().any(|e| e.as_ref() == id) {
                continue;
            }
            hits.push(Hit {
                id: id.to_string(),
                score: f64::from(score),
                ord,
            });
            if hits.len() == k {
                break;
            }
        }
        Ok(hits)
    }

    /// Many queries in parallel (rayon), results in query order. Identical queries (the same
    /// text and exclusions: a search is a function of those) are searched once and share the
    /// hits ([`distinct_queries`]).
    pub fn search_batch(&self, queries: &[Query], k: usize) -> Result<Vec<Vec<Hit>>> {
        let (first, of) = distinct_queries(queries);
        let mut hits: Vec<Vec<Hit>> = first
            .par_iter()
            .map(|&i| self.search_excluding(&queries[i].text, k, &queries[i].exclude))
            .collect::<Result<_>>()?;
        // each distinct query's hits, cloned for all its uses but the last, which takes them
        let mut uses = vec![0usize; first.len()];
        for &u in &of {
            uses[u] += 1;
        }
        Ok(of
            .into_iter()
            .map(|u| {
                uses[u] -= 1;
                if uses[u] == 0 {
                    std::mem::take(&mut hits[u])
                } else {
                    hits[u].clone()
                }
            })
            .collect())
    }

    /// The stored passage with this id (`None` when absent; title and text are empty when the
    /// index was built without stored text).
    pub fn passage(&self, id: &str) -> Result<Option<Passage>> {
        self.fetch(Term::from_field_text(self.inner.f_id, id), id.to_string())
    }

    /// The stored passage at corpus position `ord`.
    pub fn passage_by_ord(&self, ord: u32) -> Result<Option<Passage>> {
        let Some(id) = self.inner.ids.get(ord) else {
            return Ok(None);
        };
        self.fetch(
            Term::from_field_u64(self.inner.f_ord, u64::from(ord)),
            id.to_string(),
        )
    }

    fn fetch(&self, term: Term, id: String) -> Result<Option<Passage>> {
        let searcher = self.inner.reader.searcher();
        let q = TermQuery::new(term, IndexRecordOption::Basic);
        let top = searcher
            .search(
                &q,
                &tantivy::collector::TopDocs::with_limit(1).order_by_score(),
            )
            .map_err(|e| Error::index(&self.inner.path, e))?;
        let Some((_, addr)) = top.first() else {
            return Ok(None);
        };
        let doc: tantivy::TantivyDocument = searcher
            .doc(*addr)
            .map_err(|e| Error::index(&self.inner.path, e))?;
        let get = |f: Option<Field>| {
            f.and_then(|f| {
                doc.get_first(f)
                    .and_then(|v| v.as_str().map(str::to_string))
            })
            .unwrap_or_default()
        };
        Ok(Some(Passage {
            id,
            title: get(self.inner.f_title),
            text: get(self.inner.f_text),
            doc_id: None,
            meta: Default::default(),
        }))
    }
}

impl Retriever for Bm25Index {
    fn name(&self) -> String {
        "bm25".to_string()
    }
    fn search<'a>(
        &'a self,
        queries: &'a [Query],
        k: usize,
    ) -> BoxFuture<'a, Result<Vec<Vec<Hit>>>> {
        Box::pin(async move { self.search_batch(queries, k) })
    }
}

/// The distinct queries of `queries` (the same text and the same exclusions, in the same
/// order): the index of each one's first occurrence, in query order, and for every query the
/// position of its distinct query in that list.
fn distinct_queries(queries: &[Query]) -> (Vec<usize>, Vec<usize>) {
    let mut seen: HashMap<(&str, &[String]), usize> = HashMap::with_capacity(queries.len());
    let mut first = Vec::new();
    let of = queries
        .iter()
        .enumerate()
        .map(|(i, q)| {
            *seen
                .entry((q.text.as_str(), q.exclude.as_slice()))
                .or_insert_with(|| {
                    first.push(i);
                    first.len() - 1
                })
        })
        .collect();
    (first, of)
}

/// A heap entry ordered so that the heap's maximum is the worst hit kept so far.
#[derive(Clone, Copy, PartialEq)]
struct Entry {
    score: Score,
    ord: u64,
}

impl Eq for Entry {}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other
            .score
            .total_cmp(&self.score)
            .then(self.ord.cmp(&other.ord))
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// The largest f32 below `x` (so that hits scoring exactly the current threshold still reach
/// the collector and ties are broken by corpus order, not by segment layout).
fn just_below(x: Score) -> Score {
    if x.is_nan() || x == Score::NEG_INFINITY {
        return x;
    }
    if x == 0.0 {
        return -Score::from_bits(1);
    }
    let bits = x.to_bits();
    Score::from_bits(if x > 0.0 { bits - 1 } else { bits + 1 })
}

/// Top-k collector ordering by (score desc, corpus ordinal asc), with block-max WAND pruning.
struct TopOrd {
    k: usize,
}

struct TopOrdSegment {
    k: usize,
    ords: Column<u64>,
    heap: BinaryHeap<Entry>,
}

impl TopOrdSegment {
    /// Adds a hit; returns the new pruning threshold.
    fn push(&mut self, doc: DocId, score: Score) -> Score {
        let ord = self.ords.first(doc).unwrap_or(u64::MAX);
        let e = Entry { score, ord };
        if self.heap.len() < self.k {
            self.heap.push(e);
        } else if let Some(mut worst) = self.heap.peek_mut()
            && e < *worst
        {
            *worst = e;
        }
        self.threshold()
    }

    /// Scores at or below this cannot enter the top k any more.
    fn threshold(&self) -> Score {
        if self.heap.len() < self.k {
            Score::MIN
        } else {
            self.heap.peek().map_or(Score::MIN, |w| just_below(w.score))
        }
    }
}

impl SegmentCollector for TopOrdSegment {
    type Fruit = Vec<(Score, u64)>;
    fn collect(&mut self, doc: DocId, score: Score) {
        self.push(doc, score);
    }
    fn harvest(self) -> Self::Fruit {
        self.heap.into_iter().map(|e| (e.score, e.ord)).collect()
    }
}

impl Collector for TopOrd {
    type Fruit = Vec<(Score, u64)>;
    type Child = TopOrdSegment;

    fn for_segment(
        &self,
        _: SegmentOrdinal,
        segment: &SegmentReader,
    ) -> tantivy::Result<TopOrdSegment> {
        Ok(TopOrdSegment {
            k: self.k,
            ords: segment.fast_fields().u64(F_ORD)?,
            heap: BinaryHeap::with_capacity(self.k + 1),
        })
    }

    fn requires_scoring(&self) -> bool {
        true
    }

    fn merge_fruits(&self, fruits: Vec<Vec<(Score, u64)>>) -> tantivy::Result<Self::Fruit> {
        let mut all: Vec<Entry> = fruits
            .into_iter()
            .flatten()
            .map(|(score, ord)| Entry { score, ord })
            .collect();
        all.sort();
        all.truncate(self.k);
        Ok(all.into_iter().map(|e| (e.score, e.ord)).collect())
    }

    fn collect_segment(
        &self,
        weight: &dyn Weight,
        segment_ord: SegmentOrdinal,
        reader: &SegmentReader,
    ) -> tantivy::Result<Vec<(Score, u64)>> {
        let mut seg = self.for_segment(segment_ord, reader)?;
        match reader.alive_bitset() {
            Some(alive) => weight.for_each_pruning(Score::MIN, reader, &mut |doc, score| {
                if alive.is_alive(doc) {
                    seg.push(doc, score)
                } else {
                    seg.threshold()
                }
            })?,
            None => weight
                .for_each_pruning(Score::MIN, reader, &mut |doc, score| seg.push(doc, score))?,
        }
        Ok(seg.harvest())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_queries_are_searched_once() {
        let q = |text: &str, exclude: &[&str]| Query::new(text).excluding(exclude.iter().copied());
        let queries = [
            q("a b", &["p1"]),
            q("a b", &[]),
            q("a b", &["p1"]),
            q("c", &["p1", "p2"]),
            q("c", &["p2", "p1"]),
            q("a b", &[]),
        ];
        let (first, of) = distinct_queries(&queries);
        assert_eq!(first, vec![0, 1, 3, 4]);
        assert_eq!(of, vec![0, 1, 0, 2, 3, 1]);
        for (i, &u) in of.iter().enumerate() {
            assert_eq!(queries[first[u]], queries[i]);
        }
        assert_eq!(distinct_queries(&[]), (vec![], vec![]));
    }

    #[test]
    fn just_below_is_the_previous_float() {
        assert!(just_below(1.0) < 1.0);
        assert_eq!(just_below(1.0), f32::from_bits(1.0f32.to_bits() - 1));
        assert!(just_below(0.0) < 0.0);
        assert!(just_below(-2.0) < -2.0);
    }

    #[test]
    fn entry_order_puts_worst_on_top() {
        let mut h = BinaryHeap::new();
        h.push(Entry { score: 2.0, ord: 5 });
        h.push(Entry { score: 1.0, ord: 1 });
        h.push(Entry { score: 2.0, ord: 9 });
        assert_eq!(h.peek().map(|e| (e.score, e.ord)), Some((1.0, 1)));
        h.pop();
        assert_eq!(h.peek().map(|e| (e.score, e.ord)), Some((2.0, 9)));
    }
}
