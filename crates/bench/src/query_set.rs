//! The evaluation set of a bench: which turns are scored, which dialogue each belongs to (the
//! unit of resampling, since turns of one dialogue are not independent), its position in the
//! dialogue and its tags (for strata), and the qrels restricted to those turns.
//!
//! A turn is scored when the qrels judge at least one of its passages relevant (grade > 0):
//! a turn without relevant evidence scores 0 for every system and says nothing about them.
//! Such turns are counted, not hidden.

use std::collections::{BTreeMap, BTreeSet};

use mtr_core::{Dialogue, Qrels, Tags, Turn};
use serde::{Deserialize, Serialize};

/// Which part of a dev/test split a query belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Part {
    /// The dev part.
    Dev,
    /// The test part.
    Test,
}

impl std::fmt::Display for Part {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Part {
    /// The part's name in bench.json and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Part::Dev => "dev",
            Part::Test => "test",
        }
    }
}

/// One scored turn.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryInfo {
    pub qid: String,
    /// Index into [`QuerySet::dialogues`].
    pub dialogue: usize,
    /// 1-based position of the turn in its dialogue (0 when the qid matches no turn).
    pub position: usize,
    /// The turn's tags (empty when the qid matches no turn).
    pub tags: Tags,
    /// Number of relevant (grade > 0) passages.
    pub num_rel: usize,
    /// The user's question at this turn (empty when the qid matches no turn).
    pub question: String,
    /// The benchmark's standalone rewrite of the question, when it has one.
    pub rewrite: Option<String>,
}

/// The scored turns of a benchmark and their qrels.
#[derive(Debug, Clone, Default)]
pub struct QuerySet {
    /// Dialogue ids; queries refer to them by index.
    pub dialogues: Vec<String>,
    /// Scored queries, in qid byte order.
    pub queries: Vec<QueryInfo>,
    /// Qrels of the scored queries only.
    pub qrels: Qrels,
    /// Turns of the benchmark that were not scored because no passage is judged relevant.
    pub skipped_without_relevant: usize,
    /// Qrels query ids that match no turn of the benchmark (scored, each its own dialogue).
    pub orphan_qids: Vec<String>,
}

impl QuerySet {
    /// Builds the evaluation set from a benchmark's dialogues and qrels.
    pub fn build(dialogues: &[Dialogue], qrels: &Qrels) -> QuerySet {
        let mut turn_of: BTreeMap<&str, (usize, usize, &Turn)> = BTreeMap::new();
        for (di, d) in dialogues.iter().enumerate() {
            for (ti, t) in d.turns.iter().enumerate() {
                turn_of.insert(t.id.as_str(), (di, ti + 1, t));
            }
        }
        let mut set = QuerySet::default();
        let mut dialogue_index: BTreeMap<String, usize> = BTreeMap::new();
        let mut index_of = |set: &mut QuerySet, id: &str| -> usize {
            if let Some(&i) = dialogue_index.get(id) {
                return i;
            }
            let i = set.dialogues.len();
            set.dialogues.push(id.to_string());
            dialogue_index.insert(id.to_string(), i);
            i
        };
        let mut judged: BTreeSet<&str> = BTreeSet::new();
        for (qid, docs) in qrels {
            judged.insert(qid.as_str());
            let num_rel = docs.values().filter(|&&g| g > 0).count();
            if num_rel == 0 {
                continue;
            }
            let info = match turn_of.get(qid.as_str()) {
                Some(&(di, position, turn)) => QueryInfo {
                    qid: qid.clone(),
                    dialogue: index_of(&mut set, &dialogues[di].id),
                    position,
                    tags: turn.tags.clone(),
                    num_rel,
                    question: turn.user.clone(),
                    rewrite: turn.rewrite.clone(),
                },
                None => {
                    set.orphan_qids.push(qid.clone());
                    QueryInfo {
                        qid: qid.clone(),
                        dialogue: index_of(&mut set, qid),
                        position: 0,
                        tags: Tags::default(),
                        num_rel,
                        question: String::new(),
                        rewrite: None,
                    }
                }
            };
            set.queries.push(info);
            set.qrels.insert(qid.clone(), docs.clone());
        }
        set.skipped_without_relevant = turn_of.len()
            - turn_of
                .keys()
                .filter(|q| qrels.get(**q).is_some_and(|d| d.values().any(|&g| g > 0)))
                .count();
        set
    }

    /// How many queries (scored turns) it holds.
    pub fn len(&self) -> usize {
        self.queries.len()
    }

    /// Whether it holds no query.
    pub fn is_empty(&self) -> bool {
        self.queries.is_empty()
    }

    /// The sub-set of queries whose dialogue is in `keep` (dialogue ids), re-indexed.
    pub(crate) fn restrict_to_dialogues(&self, keep: &BTreeSet<String>) -> QuerySet {
        let mut out = QuerySet {
            skipped_without_relevant: self.skipped_without_relevant,
            ..QuerySet::default()
        };
        let mut remap: BTreeMap<usize, usize> = BTreeMap::new();
        for q in &self.queries {
            let id = &self.dialogues[q.dialogue];
            if !keep.contains(id) {
                continue;
            }
            let di = *remap.entry(q.dialogue).or_insert_with(|| {
                out.dialogues.push(id.clone());
                out.dialogues.len() - 1
            });
            let mut q = q.clone();
            q.dialogue = di;
            if let Some(docs) = self.qrels.get(&q.qid) {
                out.qrels.insert(q.qid.clone(), docs.clone());
            }
            if q.position == 0 {
                out.orphan_qids.push(q.qid.clone());
            }
            out.queries.push(q);
        }
        out
    }

    /// Dialogue index of every query, in query order (the clusters of the bootstrap).
    pub fn clusters(&self) -> Vec<usize> {
        self.queries.iter().map(|q| q.dialogue).collect()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use mtr_core::Gold;

    pub(crate) fn turn(id: &str, gold: &[(&str, i32)]) -> Turn {
        Turn {
            id: id.into(),
            user: format!("question {id}"),
            rewrite: None,
            answer: None,
            gold: gold
                .iter()
                .map(|(p, g)| Gold {
                    passage_id: (*p).into(),
                    grade: *g,
                })
                .collect(),
            tags: Tags::default(),
        }
    }

    #[test]
    fn scores_turns_with_relevant_gold_only() {
        let d = vec![
            Dialogue {
                id: "d1".into(),
                turns: vec![turn("d1::1", &[]), turn("d1::2", &[("p1", 1)])],
                meta: Default::default(),
            },
            Dialogue {
                id: "d2".into(),
                turns: vec![turn("d2::1", &[("p2", 0)]), turn("d2::2", &[("p3", 2)])],
                meta: Default::default(),
            },
        ];
        let mut qrels = mtr_core::model::qrels_from_dialogues(&d);
        qrels
            .entry("x::9".into())
            .or_default()
            .insert("p9".into(), 1);
        let s = QuerySet::build(&d, &qrels);
        let qids: Vec<_> = s.queries.iter().map(|q| q.qid.as_str()).collect();
        assert_eq!(qids, ["d1::2", "d2::2", "x::9"]);
        assert_eq!(s.queries[0].position, 2);
        assert_eq!(s.skipped_without_relevant, 2);
        assert_eq!(s.orphan_qids, ["x::9"]);
        assert_eq!(s.dialogues, ["d1", "d2", "x::9"]);
        let keep: BTreeSet<String> = ["d2".to_string()].into();
        let r = s.restrict_to_dialogues(&keep);
        assert_eq!(r.queries.len(), 1);
        assert_eq!(r.queries[0].dialogue, 0);
        assert_eq!(r.qrels.len(), 1);
    }
}
