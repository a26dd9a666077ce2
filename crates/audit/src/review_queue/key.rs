//! The name of a reviewable item, a contract with the estimator that reads the labels:
//! - a random-sample unit is `"<dimension>|<turn_id>|<passage_id>"` (dimension one of
//!   `alignment`, `completeness`, `faithfulness`, `quality`; the passage id empty for
//!   faithfulness and quality, which judge the turn's answer);
//! - a probable missing gold is `"missing|<turn_id>|<candidate_passage_id>"`;
//! - a flagged gold is `"gold|<turn_id>|<gold_passage_id>"`.
//!
//! Turn ids never contain `|` in practice; a passage id may, so a key is split at its first two
//! bars only.

use crate::dimension::Dimension;

/// A parsed item key.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ItemKey {
    /// A unit of the random sample.
    Unit {
        /// The audited dimension.
        dimension: Dimension,
        /// The turn.
        turn_id: String,
        /// Empty for faithfulness and quality.
        passage_id: String,
    },
    /// A probable missing gold: a passage the judges picked instead of the gold.
    Missing {
        /// The turn.
        turn_id: String,
        /// The passage picked instead of the gold.
        passage_id: String,
    },
    /// A gold passage the judges rated as not answering its turn.
    Gold {
        /// The turn.
        turn_id: String,
        /// The gold passage.
        passage_id: String,
    },
}

impl ItemKey {
    /// The key of an audited unit (`passage_id` none for faithfulness and quality).
    pub fn unit(dimension: Dimension, turn_id: &str, passage_id: Option<&str>) -> Self {
        ItemKey::Unit {
            dimension,
            turn_id: turn_id.to_string(),
            passage_id: passage_id.unwrap_or_default().to_string(),
        }
    }

    /// Parses a key; `None` when it is not one of the three forms.
    pub fn parse(s: &str) -> Option<Self> {
        let mut parts = s.splitn(3, '|');
        let (kind, turn, passage) = (parts.next()?, parts.next()?, parts.next()?);
        if turn.is_empty() {
            return None;
        }
        let (turn_id, passage_id) = (turn.to_string(), passage.to_string());
        match kind {
            "missing" if !passage.is_empty() => Some(ItemKey::Missing {
                turn_id,
                passage_id,
            }),
            "gold" if !passage.is_empty() => Some(ItemKey::Gold {
                turn_id,
                passage_id,
            }),
            _ => {
                let dimension = Dimension::ALL.into_iter().find(|d| d.name() == kind)?;
                // alignment and completeness judge a gold passage; the others the answer
                if dimension.needs_answer() == passage.is_empty() {
                    Some(ItemKey::Unit {
                        dimension,
                        turn_id,
                        passage_id,
                    })
                } else {
                    None
                }
            }
        }
    }

    /// The key's first field: its dimension for a sample unit, `missing` or `gold` for a
    /// flagged item (how the page groups its counts).
    pub fn group(&self) -> &'static str {
        match self {
            ItemKey::Unit { dimension, .. } => dimension.name(),
            ItemKey::Missing { .. } => "missing",
            ItemKey::Gold { .. } => "gold",
        }
    }

    /// The turn the item is about.
    pub fn turn_id(&self) -> &str {
        match self {
            ItemKey::Unit { turn_id, .. }
            | ItemKey::Missing { turn_id, .. }
            | ItemKey::Gold { turn_id, .. } => turn_id,
        }
    }

    /// The passage of the key (`None` for faithfulness and quality units).
    pub fn passage_id(&self) -> Option<&str> {
        match self {
            ItemKey::Unit { passage_id, .. }
            | ItemKey::Missing { passage_id, .. }
            | ItemKey::Gold { passage_id, .. } => {
                (!passage_id.is_empty()).then_some(passage_id.as_str())
            }
        }
    }

    /// The queue the item belongs to.
    pub fn queue(&self) -> super::Queue {
        match self {
            ItemKey::Unit { .. } => super::Queue::Sample,
            _ => super::Queue::Flagged,
        }
    }
}

impl std::fmt::Display for ItemKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ItemKey::Unit {
                dimension,
                turn_id,
                passage_id,
            } => write!(f, "{}|{turn_id}|{passage_id}", dimension.name()),
            ItemKey::Missing {
                turn_id,
                passage_id,
            } => write!(f, "missing|{turn_id}|{passage_id}"),
            ItemKey::Gold {
                turn_id,
                passage_id,
            } => write!(f, "gold|{turn_id}|{passage_id}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_follow_the_contract_and_roundtrip() {
        let cases = [
            (
                ItemKey::unit(Dimension::Alignment, "d::1", Some("p|1")),
                "alignment|d::1|p|1",
            ),
            (
                ItemKey::unit(Dimension::Completeness, "d::1", Some("g")),
                "completeness|d::1|g",
            ),
            (
                ItemKey::unit(Dimension::Faithfulness, "d::2", None),
                "faithfulness|d::2|",
            ),
            (
                ItemKey::unit(Dimension::Quality, "d::2", None),
                "quality|d::2|",
            ),
            (
                ItemKey::Missing {
                    turn_id: "t".into(),
                    passage_id: "c".into(),
                },
                "missing|t|c",
            ),
            (
                ItemKey::Gold {
                    turn_id: "t".into(),
                    passage_id: "g".into(),
                },
                "gold|t|g",
            ),
        ];
        for (key, text) in cases {
            assert_eq!(key.to_string(), text);
            assert_eq!(ItemKey::parse(text), Some(key));
        }
        for bad in [
            "",
            "alignment|t|",
            "quality|t|p",
            "missing|t|",
            "gold||g",
            "relevance|t|p",
            "alignment|t",
        ] {
            assert_eq!(ItemKey::parse(bad), None, "{bad}");
        }
    }
}
