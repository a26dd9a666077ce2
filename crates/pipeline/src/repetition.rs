//! Near-duplicate turns within one dialogue. Small generators like to ask the same thing
//! again ("What are the working days between 27 and 31 December?" twice, with the same answer)
//! with a word changed, which an exact comparison misses. A follow-up must ask for something
//! new, so the generator compares every new question, rewrite and answer with the dialogue's
//! earlier turns by word-shingle overlap and rejects (and regenerates) a turn that nearly
//! repeats one: Jaccard similarity of the sets of `shingle`-word sequences (CJK text: of
//! `shingle`-character sequences, since Chinese has no spaces), over lower-cased alphanumeric
//! tokens. Deterministic and free: no model call.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

/// `[synth.generation.repetition]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RepetitionOptions {
    pub enabled: bool,
    /// Reject when the shingle Jaccard similarity with an earlier turn is at least this.
    pub threshold: f64,
    /// Words (CJK: characters) per shingle.
    pub shingle: usize,
}

impl Default for RepetitionOptions {
    fn default() -> Self {
        Self {
            enabled: true,
            threshold: 0.6,
            shingle: 2,
        }
    }
}

impl RepetitionOptions {
    pub fn validate(&self) -> Result<(), String> {
        if self.shingle == 0 {
            return Err("shingle must be at least 1".into());
        }
        if !(0.0..=1.0).contains(&self.threshold) || self.threshold == 0.0 {
            return Err(format!("threshold {} is not in (0, 1]", self.threshold));
        }
        Ok(())
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
pub fn tokens(text: &str) -> Vec<String> {
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
pub fn shingles(text: &str, k: usize) -> BTreeSet<String> {
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
pub fn jaccard(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f64 {
    let inter = a.intersection(b).count();
    let union = a.len() + b.len() - inter;
    if union == 0 {
        0.0
    } else {
        inter as f64 / union as f64
    }
}

/// Shingle similarity of two texts.
pub fn similarity(a: &str, b: &str, k: usize) -> f64 {
    jaccard(&shingles(a, k), &shingles(b, k))
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
