//! The random-sample labels of the review, matched to the audit's items: which item a label is
//! about (its key `"<dimension>|<turn_id>|<passage_id>"`), what each reviewer said of it, and
//! the item's judge scores. Only the random sample enters the estimates (it is a random draw of
//! the audited items); flagged-queue labels (`missing|...`, `gold|...`) are corrections and
//! are left to [`super::corrections`].

use std::collections::BTreeMap;

use crate::dimension::Dimension;
use crate::items::aggregate::ItemScore;

use crate::review_queue::{ItemKey, Queue};

use super::EffectiveLabels;

/// What one reviewer said of one sampled item.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Answer {
    /// 1 when the item fails (a rating below the threshold; completeness: the gold not picked).
    pub fails: f64,
    /// The 1-5 rating (rating dimensions).
    pub rating: Option<f64>,
}

/// A sampled item with its reviewers' answers and the judges' scores.
#[derive(Debug, Clone)]
pub(crate) struct Reviewed<'a> {
    pub item: &'a ItemScore,
    /// Reviewer -> answer, reviewers in name order.
    pub answers: BTreeMap<String, Answer>,
}

impl Reviewed<'_> {
    /// Several reviewers on one item: the mean of their answers.
    pub(crate) fn mean_fails(&self) -> f64 {
        self.answers.values().map(|a| a.fails).sum::<f64>() / self.answers.len() as f64
    }

    pub(crate) fn mean_rating(&self) -> Option<f64> {
        let r: Vec<f64> = self.answers.values().filter_map(|a| a.rating).collect();
        (!r.is_empty()).then(|| r.iter().sum::<f64>() / r.len() as f64)
    }
}

/// `"<dimension>|<turn_id>|<passage_id>"` of an item (passage empty for answer dimensions).
pub(crate) fn item_key(it: &ItemScore) -> String {
    ItemKey::unit(it.dimension, &it.turn_id, it.passage_id.as_deref()).to_string()
}

/// A reviewer's label read for an item of `dim`: a rating `1`-`5` for the rating dimensions
/// (fails below `threshold`), the chosen passage id, `none` or `several` for completeness
/// (fails unless it is the gold). `None` for a label that does not fit the dimension.
pub(crate) fn answer(
    dim: Dimension,
    gold: Option<&str>,
    label: &str,
    threshold: f64,
) -> Option<Answer> {
    let label = label.trim();
    if dim.is_rating() {
        let r: u8 = label.parse().ok().filter(|r| (1..=5).contains(r))?;
        let r = f64::from(r);
        return Some(Answer {
            fails: f64::from(r < threshold),
            rating: Some(r),
        });
    }
    (!label.is_empty()).then(|| Answer {
        fails: f64::from(Some(label) != gold),
        rating: None,
    })
}

/// Whether a labels-file key belongs to the random sample.
pub(crate) fn is_sample_key(key: &str) -> bool {
    ItemKey::parse(key).is_some_and(|k| k.queue() == Queue::Sample)
}

/// The sampled items of `dim` that reviewers labelled, in item order, and the count of labels
/// that did not fit (unknown item, unscored item, or a label that does not fit the dimension).
pub(crate) fn reviewed<'a>(
    dim: Dimension,
    items: &[&'a ItemScore],
    labels: &EffectiveLabels,
    threshold: f64,
) -> (Vec<Reviewed<'a>>, usize) {
    let mut out = Vec::new();
    let mut unusable = 0;
    let mut matched = 0;
    for it in items {
        let Some(by) = labels.get(&item_key(it)) else {
            continue;
        };
        matched += 1;
        let mut answers = BTreeMap::new();
        for (who, label) in by {
            match answer(dim, it.passage_id.as_deref(), label, threshold) {
                Some(a) => {
                    answers.insert(who.clone(), a);
                }
                None => unusable += 1,
            }
        }
        if !answers.is_empty() {
            out.push(Reviewed { item: it, answers });
        }
    }
    let prefix = format!("{}|", dim.name());
    let of_dim = labels.keys().filter(|k| k.starts_with(&prefix)).count();
    (out, unusable + of_dim.saturating_sub(matched))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_read_per_dimension() {
        let a = |d, g, l| answer(d, g, l, 3.0);
        assert_eq!(
            a(Dimension::Alignment, Some("p"), "2"),
            Some(Answer {
                fails: 1.0,
                rating: Some(2.0)
            })
        );
        assert_eq!(a(Dimension::Quality, None, "3").unwrap().fails, 0.0);
        assert!(a(Dimension::Alignment, Some("p"), "6").is_none());
        assert!(a(Dimension::Alignment, Some("p"), "yes").is_none());
        let c = Dimension::Completeness;
        assert_eq!(a(c, Some("p"), "p").unwrap().fails, 0.0);
        assert_eq!(a(c, Some("p"), "q").unwrap().fails, 1.0);
        assert_eq!(a(c, Some("p"), "none").unwrap().fails, 1.0);
        assert_eq!(a(c, Some("p"), "several").unwrap().fails, 1.0);
        assert!(is_sample_key("alignment|d::1|p") && is_sample_key("quality|d::1|"));
        assert!(!is_sample_key("missing|d::1|p") && !is_sample_key("gold|d::1|p"));
    }
}
