//! Named training splits by dialogue (`train=0.8,dev=0.2`): whole dialogues go to one split,
//! since the turns of a dialogue share topic, history and often gold passages, and a split by
//! turn would leak them from train into dev. Dialogue ids are sorted, shuffled with the seed
//! ([`mtr_core::rng`]) and cut by the shares (largest remainders), so the same ids and seed
//! give the same splits whatever order the dialogues came in.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::str::FromStr;

use mtr_core::rng;
use rand::seq::SliceRandom;

/// The splits asked for: names and shares (summing to 1), in the order given.
#[derive(Debug, Clone, PartialEq)]
pub struct SplitSpec {
    parts: Vec<(String, f64)>,
}

impl Default for SplitSpec {
    /// One split holding everything.
    fn default() -> Self {
        Self {
            parts: vec![("train".into(), 1.0)],
        }
    }
}

impl SplitSpec {
    /// The splits' names, in the order given.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().map(|(n, _)| n.as_str())
    }

    /// True when everything goes to one split (no split was asked for).
    pub fn is_single(&self) -> bool {
        self.parts.len() == 1
    }

    /// The split of every dialogue.
    pub fn assign<'a>(
        &self,
        dialogues: impl IntoIterator<Item = &'a str>,
        seed: u64,
    ) -> HashMap<String, String> {
        let mut ids: Vec<&str> = dialogues
            .into_iter()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        ids.shuffle(&mut rng::stream(seed, rng::purpose::AS_GIVEN));
        let counts = self.counts(ids.len());
        let mut out = HashMap::with_capacity(ids.len());
        let mut next = ids.into_iter();
        for ((name, _), n) in self.parts.iter().zip(counts) {
            for id in next.by_ref().take(n) {
                out.insert(id.to_string(), name.clone());
            }
        }
        out
    }

    /// Dialogues per split: the floors of the shares, the rest to the largest remainders (the
    /// earlier split first on a tie).
    fn counts(&self, n: usize) -> Vec<usize> {
        let exact: Vec<f64> = self.parts.iter().map(|(_, s)| s * n as f64).collect();
        let mut counts: Vec<usize> = exact.iter().map(|x| x.floor() as usize).collect();
        let mut order: Vec<usize> = (0..counts.len()).collect();
        order.sort_by(|&a, &b| {
            let (ra, rb) = (exact[a] - exact[a].floor(), exact[b] - exact[b].floor());
            rb.total_cmp(&ra).then(a.cmp(&b))
        });
        let left = n.saturating_sub(counts.iter().sum());
        for &i in order.iter().cycle().take(left) {
            counts[i] += 1;
        }
        counts
    }
}

impl FromStr for SplitSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let mut parts: Vec<(String, f64)> = Vec::new();
        for item in s.split(',').map(str::trim).filter(|x| !x.is_empty()) {
            let Some((name, share)) = item.split_once('=') else {
                return Err(format!(
                    "`{item}` is not NAME=SHARE (e.g. train=0.8,dev=0.2)"
                ));
            };
            let name = name.trim();
            let valid = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            if !valid {
                return Err(format!(
                    "split name `{name}`: letters, digits, `_` and `-` only"
                ));
            }
            let share: f64 = share
                .trim()
                .parse()
                .map_err(|_| format!("share `{}` of `{name}` is not a number", share.trim()))?;
            if !(share > 0.0 && share <= 1.0) {
                return Err(format!("share of `{name}` must be in (0, 1], got {share}"));
            }
            if parts.iter().any(|(n, _)| n == name) {
                return Err(format!("split `{name}` is named twice"));
            }
            parts.push((name.to_string(), share));
        }
        let total: f64 = parts.iter().map(|(_, s)| s).sum();
        if parts.is_empty() || (total - 1.0).abs() > 1e-6 {
            return Err(format!(
                "the shares must sum to 1, they sum to {total} (e.g. train=0.8,dev=0.2)"
            ));
        }
        Ok(Self { parts })
    }
}

impl fmt::Display for SplitSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.parts.iter().map(|(n, s)| format!("{n}={s}")).collect();
        f.write_str(&parts.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_parse_and_bad_ones_are_named() {
        let s: SplitSpec = "train=0.8, dev=0.2".parse().unwrap();
        assert_eq!(s.names().collect::<Vec<_>>(), ["train", "dev"]);
        assert_eq!(s.to_string(), "train=0.8,dev=0.2");
        for bad in [
            "train=0.8",
            "train",
            "train=x,dev=0.2",
            "a=0.5,a=0.5",
            "a b=1",
            "a=0,b=1",
        ] {
            assert!(bad.parse::<SplitSpec>().is_err(), "{bad}");
        }
    }

    #[test]
    fn whole_dialogues_go_to_one_split_the_same_for_any_input_order() {
        let s: SplitSpec = "train=0.7,dev=0.2,test=0.1".parse().unwrap();
        let ids: Vec<String> = (0..11).map(|i| format!("d{i}")).collect();
        let a = s.assign(ids.iter().map(String::as_str), 3);
        let b = s.assign(ids.iter().rev().map(String::as_str), 3);
        assert_eq!(a, b);
        let count = |name: &str| a.values().filter(|v| *v == name).count();
        // 7.7, 2.2, 1.1: floors 7, 2, 1 and the one left to train's 0.7
        assert_eq!((count("train"), count("dev"), count("test")), (8, 2, 1));
        assert_ne!(a, s.assign(ids.iter().map(String::as_str), 4));
    }

    /// The first draws of this use of the seeded generator: a dependency update that changes
    /// them fails here, not silently in a training set.
    #[test]
    fn golden_first_draws() {
        let s: SplitSpec = "train=0.5,dev=0.5".parse().unwrap();
        let ids: Vec<String> = (0..6).map(|i| format!("d{i}")).collect();
        let a = s.assign(ids.iter().map(String::as_str), 7);
        let mut dev: Vec<&str> = a
            .iter()
            .filter(|(_, v)| *v == "dev")
            .map(|(k, _)| k.as_str())
            .collect();
        dev.sort();
        assert_eq!(dev, ["d0", "d2", "d5"]);
    }
}
