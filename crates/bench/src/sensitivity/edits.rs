//! What an audit says about the labels ([`LabelEdits`], read by the binary and handed over as
//! plain maps) and the alternative qrels made from it ([`Variant`], [`apply`]). Apart from the
//! scoring ([`super::compute`]) so that the `bench.json` types in [`crate::result`] can name a
//! variant without depending on the engine.

use std::collections::{BTreeMap, BTreeSet};
use std::str::FromStr;

use mtr_core::Qrels;
use serde::{Deserialize, Serialize};

/// What an audit says about the labels, as plain data.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelEdits {
    /// Data fingerprint of the benchmark the audit was made on.
    pub fingerprint: String,
    /// The audit's alignment threshold: golds scored below it are removed.
    pub flag_rating_below: f64,
    /// The audit covered a sample of dialogues.
    pub sampled: bool,
    /// Dialogues the audit covered.
    pub dialogues_audited: usize,
    /// Dialogues of the benchmark.
    pub dialogues_total: usize,
    /// Turn ids the audit covered.
    pub audited_turns: BTreeSet<String>,
    /// Turn id -> gold passages the judges rejected.
    pub removed: BTreeMap<String, BTreeSet<String>>,
    /// Turn id -> verified probable missing gold -> grade.
    pub added: BTreeMap<String, BTreeMap<String, i32>>,
    /// False when the audit stopped early.
    pub complete: bool,
    /// Notes to pass on to the reader.
    pub notes: Vec<String>,
    /// What reviewers decided in the audit's flagged queue, when they did: the `reviewed`
    /// variant applies these edits only.
    pub reviewed: Option<ReviewedEdits>,
}

/// The edits reviewers accepted: golds they rejected, suggested golds they accepted.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReviewedEdits {
    /// Turn id -> gold passages a reviewer rejected.
    pub removed: BTreeMap<String, BTreeSet<String>>,
    /// Turn id -> suggested passage a reviewer accepted -> grade.
    pub added: BTreeMap<String, BTreeMap<String, i32>>,
}

fn keep_turns<V: Clone>(m: &BTreeMap<String, V>, keep: &BTreeSet<&str>) -> BTreeMap<String, V> {
    m.iter()
        .filter(|(t, _)| keep.contains(t.as_str()))
        .map(|(t, p)| (t.clone(), p.clone()))
        .collect()
}

impl LabelEdits {
    /// The edits of the turns in `keep` only.
    pub(super) fn restricted(&self, keep: &BTreeSet<&str>) -> LabelEdits {
        LabelEdits {
            audited_turns: self
                .audited_turns
                .iter()
                .filter(|t| keep.contains(t.as_str()))
                .cloned()
                .collect(),
            removed: keep_turns(&self.removed, keep),
            added: keep_turns(&self.added, keep),
            reviewed: self.reviewed.as_ref().map(|r| ReviewedEdits {
                removed: keep_turns(&r.removed, keep),
                added: keep_turns(&r.added, keep),
            }),
            ..self.clone()
        }
    }

    /// The variants these edits support: the judges' three, and `reviewed` when reviewers
    /// decided anything.
    pub fn variants(&self) -> Vec<Variant> {
        let mut v = Variant::ALL.to_vec();
        if self.reviewed.is_some() {
            v.push(Variant::Reviewed);
        }
        v
    }

    /// Turn id -> golds variant `v` removes (empty when it removes none).
    pub(crate) fn removals(&self, v: Variant) -> &BTreeMap<String, BTreeSet<String>> {
        static NONE: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        match (v, &self.reviewed) {
            (Variant::Reviewed, Some(r)) => &r.removed,
            (Variant::Reviewed, None) => &NONE,
            (v, _) if v.removes() => &self.removed,
            _ => &NONE,
        }
    }

    /// Turn id -> passage -> grade variant `v` adds (empty when it adds none).
    pub(crate) fn additions(&self, v: Variant) -> &BTreeMap<String, BTreeMap<String, i32>> {
        static NONE: BTreeMap<String, BTreeMap<String, i32>> = BTreeMap::new();
        match (v, &self.reviewed) {
            (Variant::Reviewed, Some(r)) => &r.added,
            (Variant::Reviewed, None) => &NONE,
            (v, _) if v.adds() => &self.added,
            _ => &NONE,
        }
    }
}

/// An alternative set of qrels built from an audit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Variant {
    /// Golds the judges rejected are dropped.
    NoiseRemoved,
    /// Verified probable missing golds are added.
    SparsityFilled,
    /// Both.
    Corrected,
    /// Only what reviewers decided: the suggested golds they accepted added, the golds they
    /// rejected removed.
    Reviewed,
}

impl Variant {
    /// The variants an audit alone yields (not `Reviewed`, which needs reviews).
    pub const ALL: [Variant; 3] = [
        Variant::NoiseRemoved,
        Variant::SparsityFilled,
        Variant::Corrected,
    ];

    /// The variant's name in reports (`noise-removed`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Variant::NoiseRemoved => "noise-removed",
            Variant::SparsityFilled => "sparsity-filled",
            Variant::Corrected => "corrected",
            Variant::Reviewed => "reviewed",
        }
    }

    pub(super) fn removes(self) -> bool {
        matches!(
            self,
            Variant::NoiseRemoved | Variant::Corrected | Variant::Reviewed
        )
    }

    pub(super) fn adds(self) -> bool {
        matches!(
            self,
            Variant::SparsityFilled | Variant::Corrected | Variant::Reviewed
        )
    }
}

impl std::fmt::Display for Variant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Variant {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        Variant::ALL
            .into_iter()
            .chain([Variant::Reviewed])
            .find(|v| v.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown variant `{s}`; variants are noise-removed, sparsity-filled, corrected, reviewed"
                )
            })
    }
}

/// What applying a variant changed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Applied {
    /// Relevant golds dropped.
    pub golds_removed: usize,
    /// Passages made relevant (not relevant before).
    pub golds_added: usize,
    /// Turns whose qrels changed.
    pub turns_changed: usize,
    /// Turns that had a relevant passage and have none left (they leave the mean).
    pub turns_left_without_gold: usize,
}

/// The qrels of a variant: `qrels` with the audit's removals and/or additions. A removal drops
/// the passage's line; an addition sets its grade (a passage already relevant keeps its own).
/// Returns the changed turn ids too.
pub fn apply(qrels: &Qrels, edits: &LabelEdits, v: Variant) -> (Qrels, Applied, BTreeSet<String>) {
    let mut out = qrels.clone();
    let mut a = Applied::default();
    let mut changed = BTreeSet::new();
    {
        for (qid, ps) in edits.removals(v) {
            if let Some(docs) = out.get_mut(qid) {
                for p in ps {
                    if docs.get(p).is_some_and(|g| *g > 0) {
                        docs.remove(p);
                        a.golds_removed += 1;
                        changed.insert(qid.clone());
                    }
                }
            }
        }
    }
    {
        for (qid, ps) in edits.additions(v) {
            let docs = out.entry(qid.clone()).or_default();
            for (p, g) in ps {
                if *g > 0 && docs.get(p).is_none_or(|old| *old <= 0) {
                    docs.insert(p.clone(), *g);
                    a.golds_added += 1;
                    changed.insert(qid.clone());
                }
            }
        }
    }
    let relevant = |q: &Qrels, qid: &str| q.get(qid).is_some_and(|d| d.values().any(|g| *g > 0));
    a.turns_changed = changed.len();
    a.turns_left_without_gold = changed
        .iter()
        .filter(|q| relevant(qrels, q) && !relevant(&out, q))
        .count();
    out.retain(|_, d| !d.is_empty());
    (out, a, changed)
}
