//! Near-duplicate turns within one dialogue. Small generators like to ask the same thing
//! again ("What are the working days between 27 and 31 December?" twice, with the same answer)
//! with a word changed, which an exact comparison misses. A follow-up must ask for something
//! new, so the generator compares every new question, rewrite and answer with the dialogue's
//! earlier turns by word-shingle overlap and rejects (and regenerates) a turn that nearly
//! repeats one: Jaccard similarity of the sets of `shingle`-word sequences (CJK text: of
//! `shingle`-character sequences, since Chinese has no spaces), over lower-cased alphanumeric
//! tokens. A shorter restatement of an earlier question ("年金是多少？" after
//! "员工福利中的年金是多少？", seen in a main-job run) has a low Jaccard similarity because the
//! sets differ in size, so a standalone rewrite is also rejected when nearly all of its
//! shingles are in one earlier question (`containment`): a standalone rewrite carries the whole
//! meaning of the question, so one that adds nothing asks nothing new. (The raw follow-up is
//! not held to it: "How many days?" may rightly lean on the conversation.) Deterministic and
//! free: no model call.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

/// `[synth.generation.repetition]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RepetitionOptions {
    /// Whether near-repeats are rejected.
    pub enabled: bool,
    /// Reject when the shingle Jaccard similarity with an earlier turn is at least this.
    pub threshold: f64,
    /// Words (CJK: characters) per shingle.
    pub shingle: usize,
    /// Reject a standalone rewrite when at least this share of its shingles are in one earlier
    /// question (rewrites of at least [`MIN_CONTAINED_SHINGLES`] shingles; 1 = only exact
    /// restatements, above 1 = off).
    pub containment: f64,
}

/// A standalone rewrite shorter than this many shingles is never judged by containment.
pub(crate) const MIN_CONTAINED_SHINGLES: usize = 3;

impl Default for RepetitionOptions {
    fn default() -> Self {
        Self {
            enabled: true,
            threshold: 0.6,
            shingle: 2,
            containment: 0.8,
        }
    }
}

impl RepetitionOptions {
    /// Checks the thresholds; the message names what is wrong.
    pub fn validate(&self) -> Result<(), String> {
        if self.shingle == 0 {
            return Err("shingle must be at least 1".into());
        }
        if !(0.0..=1.0).contains(&self.threshold) || self.threshold == 0.0 {
            return Err(format!("threshold {} is not in (0, 1]", self.threshold));
        }
        if self.containment.is_nan() || self.containment <= 0.0 {
            return Err(format!("containment {} must be positive", self.containment));
        }
        Ok(())
    }

    /// The highest share of the shingles of `standalone` found in one of `earlier`, when it
    /// reaches `containment` (`None`: it adds something, is too short to judge, or the check
    /// is off).
    pub fn restates<'a>(
        &self,
        standalone: &str,
        earlier: impl IntoIterator<Item = &'a str>,
    ) -> Option<f64> {
        let a = shingles(standalone, self.shingle);
        if !self.enabled || a.len() < MIN_CONTAINED_SHINGLES {
            return None;
        }
        earlier
            .into_iter()
            .map(|e| {
                let b = shingles(e, self.shingle);
                a.intersection(&b).count() as f64 / a.len() as f64
            })
            .filter(|&s| s >= self.containment)
            .reduce(f64::max)
    }

    /// The highest similarity of `text` with any of `earlier` when it reaches the threshold
    /// (`None`: new enough, or the check is off).
    pub fn repeats<'a>(
        &self,
        text: &str,
        earlier: impl IntoIterator<Item = &'a str>,
    ) -> Option<f64> {
        if !self.enabled || text.trim().is_empty() {
            return None;
        }
        let a = shingles(text, self.shingle);
        earlier
            .into_iter()
            .filter(|e| !e.trim().is_empty())
            .map(|e| jaccard(&a, &shingles(e, self.shingle)))
            .filter(|&s| s >= self.threshold)
            .reduce(f64::max)
    }
}

/// Lower-cased tokens: words of alphanumeric characters, each CJK character on its own.
pub(crate) fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    for c in text.chars() {
        if crate::lang::is_cjk_char(c) {
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            out.push(c.to_string());
        } else if c.is_alphanumeric() {
            word.extend(c.to_lowercase());
        } else if !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// The set of `k`-token shingles (a text shorter than `k` tokens is one shingle).
pub(crate) fn shingles(text: &str, k: usize) -> BTreeSet<String> {
    let t = tokens(text);
    let k = k.max(1);
    if t.len() <= k {
        return std::iter::once(t.join(" "))
            .filter(|s| !s.is_empty())
            .collect();
    }
    t.windows(k).map(|w| w.join(" ")).collect()
}

/// Jaccard similarity of two sets (0 when both are empty).
pub(crate) fn jaccard(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f64 {
    let inter = a.intersection(b).count();
    let union = a.len() + b.len() - inter;
    if union == 0 {
        0.0
    } else {
        inter as f64 / union as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reworded_repeat_is_caught_and_a_new_question_is_not() {
        let o = RepetitionOptions::default();
        let first = "What are the working days between 27 and 31 December?";
        // the case: the same question with a few words added
        let again = "What are the working days between 27 and 31 December, not extra holidays?";
        let s = o.repeats(again, [first]).unwrap();
        assert!(s >= o.threshold && s < 1.0, "{s}");
        assert_eq!(o.repeats(first, [first]), Some(1.0));
        assert_eq!(
            o.repeats("Who pays the Christmas bonus, and when?", [first]),
            None
        );
        // a short follow-up sharing a phrase is new
        assert_eq!(o.repeats("And in 2025?", ["Which days in 2025?"]), None);
        let off = RepetitionOptions {
            enabled: false,
            ..o.clone()
        };
        assert_eq!(off.repeats(first, [first]), None);
        assert_eq!(o.repeats("", [first]), None);
    }

    #[test]
    fn chinese_is_compared_by_character_shingles() {
        let o = RepetitionOptions::default();
        let first = "年假最多可以结转多少天？";
        assert!(o.repeats("那年假最多可以结转多少天呢？", [first]).is_some());
        assert_eq!(o.repeats("病假需要提供什么证明？", [first]), None);
        assert_eq!(
            tokens("HR 年假 policy"),
            ["hr", "年", "假", "policy"].map(String::from)
        );
    }

    #[test]
    fn a_shorter_restatement_is_caught_by_containment() {
        let o = RepetitionOptions::default();
        // from a main-job run: the second turn asked the first one's question again, shorter
        let first = "员工福利中的年金是多少？";
        let again = "年金是多少？";
        assert_eq!(o.repeats(again, [first]), None, "Jaccard alone misses it");
        assert_eq!(o.restates(again, [first]), Some(1.0));
        // a follow-up whose standalone form adds a new fact is new
        assert_eq!(o.restates("年金什么时候发放？", [first]), None);
        assert_eq!(
            o.restates(
                "How many days of sick leave do new employees get?",
                ["How many days of annual leave do new employees get in their first year?"]
            ),
            None
        );
        assert!(
            o.restates(
                "How many days of annual leave?",
                ["How many days of annual leave do new employees get?"]
            )
            .is_some()
        );
        // too short to judge
        assert_eq!(o.restates("多少？", [first]), None);
        let off = RepetitionOptions {
            containment: 1.5,
            ..o.clone()
        };
        assert_eq!(off.restates(again, [first]), None);
    }

    #[test]
    fn invalid_options_are_named() {
        let bad = RepetitionOptions {
            shingle: 0,
            ..Default::default()
        };
        assert!(bad.validate().unwrap_err().contains("shingle"));
        let bad = RepetitionOptions {
            threshold: 1.5,
            ..Default::default()
        };
        assert!(bad.validate().unwrap_err().contains("threshold"));
        RepetitionOptions::default().validate().unwrap();
    }
}
