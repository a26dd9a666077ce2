//! Discriminability pools: a gold passage plus M hard negatives, shown to each judge in T
//! seeded permutations.
//!
//! Where the gold sits matters: LLM judges prefer early (or late) positions, so the gold's
//! position is not left to chance. A [`PositionBalancer`] assigns positions cyclically across
//! the whole audit: the k-th pool of size P puts the gold of trial t at `(c + k + t*s) mod P`
//! with stride `s = max(1, P / T)`. For every trial index, successive pools walk through all
//! positions, so over the audit each position holds the gold equally often (to within one per
//! P pools), and within one pool the T trials use T distinct, spread-out positions. The
//! starting offset `c` is derived from the seed. Negatives fill the other positions in a
//! seeded order per (item, trial).

use std::collections::{BTreeMap, HashSet};

use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};

use crate::seed;

/// Assigns gold positions so that every position holds the gold equally often over an audit.
#[derive(Debug, Clone)]
pub(crate) struct PositionBalancer {
    seed: u64,
    /// Pools of each size seen so far.
    counters: BTreeMap<usize, usize>,
}

impl PositionBalancer {
    pub(crate) fn new(seed: u64) -> Self {
        Self {
            seed,
            counters: BTreeMap::new(),
        }
    }

    /// Gold positions (0-based) for the `trials` permutations of the next pool of `pool_size`.
    pub(crate) fn assign(&mut self, pool_size: usize, trials: usize) -> Vec<usize> {
        if pool_size == 0 {
            return Vec::new();
        }
        let k = self.counters.entry(pool_size).or_insert(0);
        let offset = (seed::derive(self.seed, &["positions", &pool_size.to_string()])
            % pool_size as u64) as usize;
        let stride = (pool_size / trials.max(1)).max(1);
        let out = (0..trials)
            .map(|t| (offset + *k + t * stride) % pool_size)
            .collect();
        *k += 1;
        out
    }
}

/// One permutation of a pool shown to the judges.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Trial {
    pub index: usize,
    /// 0-based position of the gold in `order`.
    pub gold_position: usize,
    /// Passage ids in display order.
    pub order: Vec<String>,
}

/// The permutations of a pool: the gold at each assigned position, the negatives around it in
/// a seeded order that depends only on the seed, the item key and the trial index.
pub(crate) fn permutations(
    gold: &str,
    negatives: &[String],
    gold_positions: &[usize],
    seed: u64,
    item_key: &str,
) -> Vec<Trial> {
    gold_positions
        .iter()
        .enumerate()
        .map(|(t, &pos)| {
            let mut order: Vec<String> = negatives.to_vec();
            let mut rng = seed::rng(seed, &["trial", item_key, &t.to_string()]);
            order.shuffle(&mut rng);
            let pos = pos.min(order.len());
            order.insert(pos, gold.to_string());
            Trial {
                index: t,
                gold_position: pos,
                order,
            }
        })
        .collect()
}

/// Normalised text used to detect the same passage under two ids (whitespace and case folded):
/// the words lowercased (`str::to_lowercase`), joined by one space. Written into one string: an
/// ASCII word is lowercased byte by byte, which is what `to_lowercase` gives it.
pub(crate) fn text_key(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (i, w) in text.split_whitespace().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        if w.is_ascii() {
            out.extend(w.bytes().map(|b| char::from(b.to_ascii_lowercase())));
        } else {
            out.push_str(&w.to_lowercase());
        }
    }
    out
}

/// Interleaves ranked candidate lists (e.g. BM25 and dense), keeping the first occurrence.
pub(crate) fn interleave(lists: &[Vec<String>]) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    let longest = lists.iter().map(Vec::len).max().unwrap_or(0);
    for i in 0..longest {
        for l in lists {
            if let Some(id) = l.get(i)
                && seen.insert(id.clone())
            {
                out.push(id.clone());
            }
        }
    }
    out
}

/// Picks up to `m` negatives from ranked candidates: never an excluded id (the turn's golds),
/// never a passage whose text equals a gold's or an already chosen one's, so that no passage is
/// shown twice in one prompt, and never an empty or blank passage.
pub(crate) fn select_negatives<'a, T: AsRef<str>>(
    candidates: impl IntoIterator<Item = &'a str>,
    exclude: &HashSet<&str>,
    text_of: &dyn Fn(&str) -> Option<T>,
    gold_texts: &HashSet<String>,
    m: usize,
) -> Vec<String> {
    let mut seen_text: HashSet<String> = gold_texts.clone();
    let mut seen_id: HashSet<&str> = HashSet::new();
    let mut out = Vec::new();
    for id in candidates {
        if out.len() >= m {
            break;
        }
        if exclude.contains(id) || !seen_id.insert(id) {
            continue;
        }
        let Some(text) = text_of(id) else { continue };
        let key = text_key(text.as_ref());
        // an empty passage is nothing to tell apart from the gold
        if key.is_empty() || !seen_text.insert(key) {
            continue;
        }
        out.push(id.to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_are_balanced_and_distinct_within_a_pool() {
        for (p, t) in [(8usize, 3usize), (8, 1), (5, 3), (3, 3), (4, 6)] {
            let mut b = PositionBalancer::new(11);
            let mut counts = vec![0usize; p];
            let mut per_trial = vec![vec![0usize; p]; t];
            let pools = 40 * p;
            for _ in 0..pools {
                let pos = b.assign(p, t);
                assert_eq!(pos.len(), t);
                if t <= p {
                    let uniq: HashSet<_> = pos.iter().collect();
                    assert_eq!(uniq.len(), t, "distinct positions within a pool: {pos:?}");
                }
                for (ti, &x) in pos.iter().enumerate() {
                    counts[x] += 1;
                    per_trial[ti][x] += 1;
                }
            }
            // exactly balanced over a multiple of P pools, and per trial index too
            assert!(
                counts.iter().all(|&c| c == pools * t / p),
                "{p} {t} {counts:?}"
            );
            for row in per_trial {
                assert!(row.iter().all(|&c| c == pools / p), "{row:?}");
            }
        }
    }

    #[test]
    fn permutations_place_gold_and_keep_every_negative_once() {
        let negs: Vec<String> = (0..7).map(|i| format!("n{i}")).collect();
        let trials = permutations("g", &negs, &[0, 3, 7], 5, "item");
        assert_eq!(trials.len(), 3);
        for (t, want) in trials.iter().zip([0, 3, 7]) {
            assert_eq!(t.order[want], "g");
            assert_eq!(t.gold_position, want);
            let mut sorted = t.order.clone();
            sorted.sort();
            assert_eq!(sorted.len(), 8);
            sorted.dedup();
            assert_eq!(sorted.len(), 8);
        }
        assert_eq!(trials, permutations("g", &negs, &[0, 3, 7], 5, "item"));
        assert_ne!(trials, permutations("g", &negs, &[0, 3, 7], 6, "item"));
    }

    /// The words lowercased and joined, as `str::to_lowercase` gives them (a final sigma
    /// included), for ASCII and other words alike.
    #[test]
    fn a_text_key_is_the_lowercased_words_joined_by_one_space() {
        let reference = |t: &str| {
            t.split_whitespace()
                .map(str::to_lowercase)
                .collect::<Vec<_>>()
                .join(" ")
        };
        for t in [
            "",
            "  \n\t ",
            "The  Gold text",
            " Mixed\tCASE\n words, PUNCT-uated! 42 ",
            "ΟΔΟΣ ΣΟΦΟΣ Σ",
            "İstanbul ÇAĞ straße ÉTÉ 北京 Ǆ",
            "ascii Ünïcödé\u{a0}nbsp\u{3000}ideographic",
        ] {
            assert_eq!(text_key(t), reference(t), "{t:?}");
        }
    }

    #[test]
    fn negatives_skip_golds_and_duplicate_texts() {
        let texts = |id: &str| -> Option<String> {
            Some(match id {
                "dup" => "The  Gold text".to_string(),
                "a2" => "text a".to_string(),
                other => format!("text {other}"),
            })
        };
        let gold_texts: HashSet<String> = [text_key("the gold text")].into();
        let exclude: HashSet<&str> = ["g1", "g2"].into();
        let got = select_negatives(
            ["g1", "a", "dup", "a", "a2", "g2", "b", "c"],
            &exclude,
            &texts,
            &gold_texts,
            2,
        );
        assert_eq!(got, vec!["a", "b"]);
        // an empty or blank passage (real releases hold some) is never a negative
        let blank = |id: &str| -> Option<String> {
            Some(match id {
                "empty" => String::new(),
                "blank" => " \n\t ".to_string(),
                other => format!("text {other}"),
            })
        };
        let got = select_negatives(
            ["empty", "blank", "a"],
            &HashSet::new(),
            &blank,
            &HashSet::new(),
            3,
        );
        assert_eq!(got, vec!["a"]);
        assert_eq!(
            interleave(&[
                vec!["a".into(), "b".into()],
                vec!["b".into(), "c".into(), "d".into()]
            ]),
            vec!["a", "b", "c", "d"]
        );
    }
}
