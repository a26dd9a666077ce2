//! The four audit dimensions and what each one needs from a turn. Names are stable: they are
//! keys in `items.jsonl`, `summary.json`, prompt file names and the JSON Schemas in `docs/`.

use serde::{Deserialize, Serialize};

/// One audited property of a benchmark.
#[derive(Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Dimension {
    /// Query-evidence alignment: does this gold passage answer this question in context (1-5)?
    Alignment,
    /// Evidence completeness by a discriminability test: is the gold the most relevant passage
    /// of a pool of hard negatives (share of trials picking the gold, 0-1)?
    Completeness,
    /// Answer-evidence faithfulness: is the reference answer supported by the gold passages (1-5)?
    Faithfulness,
    /// Answer quality: coherent, helpful, complete for the question in context (1-5).
    Quality,
}

impl Dimension {
    /// Every dimension, in the report's order.
    pub const ALL: [Dimension; 4] = [
        Dimension::Alignment,
        Dimension::Completeness,
        Dimension::Faithfulness,
        Dimension::Quality,
    ];

    /// The name in settings, file names and `summary.json`.
    pub fn name(self) -> &'static str {
        match self {
            Dimension::Alignment => "alignment",
            Dimension::Completeness => "completeness",
            Dimension::Faithfulness => "faithfulness",
            Dimension::Quality => "quality",
        }
    }

    /// A human title for reports.
    pub fn title(self) -> &'static str {
        match self {
            Dimension::Alignment => "Query-evidence alignment",
            Dimension::Completeness => "Evidence completeness (discriminability)",
            Dimension::Faithfulness => "Answer-evidence faithfulness",
            Dimension::Quality => "Answer quality",
        }
    }

    /// The dimension of a name ([`Dimension::name`]); `None` for an unknown one.
    pub fn parse(s: &str) -> Option<Dimension> {
        Self::ALL
            .into_iter()
            .find(|d| d.name().eq_ignore_ascii_case(s.trim()))
    }

    /// True for the 1-5 rating dimensions; false for the discriminability pick test.
    pub(crate) fn is_rating(self) -> bool {
        !matches!(self, Dimension::Completeness)
    }

    /// The scale of an item score: `(low, high)`.
    pub fn scale(self) -> (f64, f64) {
        if self.is_rating() {
            (1.0, 5.0)
        } else {
            (0.0, 1.0)
        }
    }

    /// Needs at least one relevant gold passage.
    pub(crate) fn needs_gold(self) -> bool {
        !matches!(self, Dimension::Quality)
    }

    /// Needs a reference answer.
    pub(crate) fn needs_answer(self) -> bool {
        matches!(self, Dimension::Faithfulness | Dimension::Quality)
    }
}

/// `--dimensions alignment,quality`: an unknown name is refused with the four known ones.
impl std::str::FromStr for Dimension {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Self::parse(s).ok_or_else(|| {
            format!("unknown dimension `{s}`: use alignment, completeness, faithfulness, quality")
        })
    }
}

impl std::fmt::Display for Dimension {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_roundtrip() {
        for d in Dimension::ALL {
            assert_eq!(Dimension::parse(d.name()), Some(d));
            assert_eq!(
                serde_json::to_string(&d).unwrap(),
                format!("\"{}\"", d.name())
            );
        }
        assert_eq!(Dimension::parse("nope"), None);
    }
}
