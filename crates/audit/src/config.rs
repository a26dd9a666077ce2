//! Audit settings: the `[audit]` section of `mtr.toml`, overridden by command-line flags.
//! Every field has a default so an empty section audits all four dimensions.

use serde::{Deserialize, Serialize};

use mtr_retrieve::QueryFormulation;

use crate::dimension::Dimension;
use crate::error::{AuditError, Result};

/// Most passages a letter-picks pool may hold: every label is one digit, one token.
pub(crate) const MAX_LABELS: usize = 9;

/// What to audit and how. Serialised into `summary.json` so a report says how it was made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct AuditSettings {
    /// Dimensions to audit (default: all four).
    pub dimensions: Vec<Dimension>,
    /// Hard negatives per discriminability pool (M); the pool is the gold plus M negatives.
    pub negatives: usize,
    /// Seeded permutations per judge and pool (T).
    pub trials: usize,
    /// Seed of every random choice (sample, permutations, bootstrap).
    pub seed: u64,
    /// Audit a seeded sample of this many dialogues instead of all.
    pub sample: Option<usize>,
    /// A rating item whose ensemble score is below this is flagged.
    pub flag_rating_below: f64,
    /// A discriminability item whose gold-pick share is below this is flagged.
    pub flag_share_below: f64,
    /// How many worst items per dimension the report shows with their text.
    pub worst: usize,
    /// Bootstrap resamples for confidence intervals.
    pub resamples: usize,
    /// Confidence level of intervals.
    pub confidence: f64,
    /// Use dense retrieval for hard negatives too when an embedder is configured.
    pub dense_negatives: bool,
    /// Query formulation for hard negatives: `auto` (the turn's rewrite when it has one, else
    /// `full:512`) or any `mtr retrieve` formulation (`last`, `all`, `full:N`, `window:N`).
    #[schemars(with = "String")]
    pub negatives_query: NegativesQuery,
    /// A judge whose failed judgements pass this share (or that failed every one) makes the
    /// audit incomplete, and `mtr audit` exit with 1 naming it and its first error.
    pub max_failed_share: f64,
    /// A missing-gold candidate (a non-gold passage a majority picked over the gold) becomes a
    /// probable missing gold when a strict majority of the judges rate it pointwise (alignment
    /// prompt, 1-5) at least this.
    pub verify_rating_at_least: f64,
    /// Discriminability picks read from the label probabilities of one forward pass, for the
    /// judges named here (see [`LetterPicks`]); absent: every chat judge writes its pick.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub letter_picks: Option<LetterPicks>,
    /// Also state completeness as the MTR-Suite paper's released code computes it (summary's
    /// `paper_scale`, see [`crate::paper_scale`]); off, nothing of it is written.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub paper_scale: bool,
}

/// `negatives_query`: how a turn becomes the query its hard negatives are retrieved with.
/// Parsed once, from the file, the environment or `--negatives-query`; written by its name
/// (`auto`, `full:512`, ...).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum NegativesQuery {
    /// The turn's rewrite when it has one, else `full:512`.
    #[default]
    Auto,
    /// One `mtr retrieve` formulation for every turn.
    Formulation(QueryFormulation),
}

impl std::str::FromStr for NegativesQuery {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        if s.trim() == "auto" {
            return Ok(Self::Auto);
        }
        s.parse().map(Self::Formulation).map_err(|e: String| {
            format!("{e} (or `auto`: the turn's rewrite when it has one, else full:512)")
        })
    }
}

impl std::fmt::Display for NegativesQuery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Auto => f.write_str("auto"),
            Self::Formulation(q) => f.write_str(&q.name()),
        }
    }
}

impl From<NegativesQuery> for String {
    fn from(q: NegativesQuery) -> String {
        q.to_string()
    }
}

impl TryFrom<String> for NegativesQuery {
    type Error = String;

    fn try_from(s: String) -> std::result::Result<Self, String> {
        s.parse()
    }
}

/// `[audit.letter_picks]`: the named judges' discriminability picks are read from one token's
/// probabilities. The answer is prefilled up to the choice (`{"choice": `), one token is
/// generated with its top alternatives, and the pick is the passage label (1..N) most
/// probable there; the judge abstains by the rules of [`crate::judges::letters`]. Each named judge's
/// endpoint must read probabilities (`rating_mode = "probability"`, which its ratings then use
/// too) and should continue a prefilled answer (`continues_assistant`: llama.cpp, vLLM, the
/// embedded servers); pools hold at most 9 passages (one digit is one token).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct LetterPicks {
    /// Judges (endpoint names, or their model names) whose picks are read this way.
    pub judges: Vec<String>,
    /// Abstain `none` when the best label's probability (as the judge gave it, not
    /// renormalised over the labels) is below this.
    pub none_below: f64,
    /// Abstain `several` when the two best labels' probabilities are closer than this.
    pub several_margin: f64,
    /// Divide each judge's probabilities by its mean distribution over the positions (on all
    /// its pools of that size, when it judged at least [`crate::judges::letters::MIN_PRIOR_POOLS`]),
    /// renormalised: a judge's preference for a position, not for a passage, is taken out.
    /// A pick then depends on the judge's other pools.
    pub debias_positions: bool,
}

impl Default for LetterPicks {
    fn default() -> Self {
        Self {
            judges: Vec::new(),
            none_below: 0.25,
            several_margin: 0.05,
            debias_positions: false,
        }
    }
}

impl LetterPicks {
    /// True when `judge` (endpoint name) or its `model` is named.
    pub fn names(&self, judge: &str, model: &str) -> bool {
        self.judges.iter().any(|n| n == judge || n == model)
    }
}

impl Default for AuditSettings {
    fn default() -> Self {
        Self {
            dimensions: Dimension::ALL.to_vec(),
            negatives: 7,
            trials: 3,
            seed: 42,
            sample: None,
            flag_rating_below: 3.0,
            flag_share_below: 0.5,
            worst: 10,
            resamples: 2000,
            confidence: 0.95,
            dense_negatives: true,
            negatives_query: NegativesQuery::Auto,
            max_failed_share: 0.2,
            verify_rating_at_least: 4.0,
            letter_picks: None,
            paper_scale: false,
        }
    }
}

impl AuditSettings {
    /// Rejects settings that cannot produce a meaningful audit.
    pub fn validate(&self) -> Result<()> {
        if self.dimensions.is_empty() {
            return Err(AuditError::Config("no dimension selected".into()));
        }
        if self.dimensions.contains(&Dimension::Completeness) {
            if self.negatives == 0 {
                return Err(AuditError::Config(
                    "`negatives` must be at least 1 for the discriminability test".into(),
                ));
            }
            if self.trials == 0 {
                return Err(AuditError::Config("`trials` must be at least 1".into()));
            }
        }
        if self.sample == Some(0) {
            return Err(AuditError::Config(
                "`sample` must be at least 1 dialogue".into(),
            ));
        }
        if !(0.0..=1.0).contains(&self.max_failed_share) {
            return Err(AuditError::Config(format!(
                "`max_failed_share` must be in [0, 1], got {}",
                self.max_failed_share
            )));
        }
        if !(1.0..=5.0).contains(&self.verify_rating_at_least) {
            return Err(AuditError::Config(format!(
                "`verify_rating_at_least` must be in [1, 5], got {}",
                self.verify_rating_at_least
            )));
        }
        if !(0.5..1.0).contains(&self.confidence) {
            return Err(AuditError::Config(format!(
                "`confidence` must be in [0.5, 1), got {}",
                self.confidence
            )));
        }
        if let Some(l) = &self.letter_picks {
            l.validate(self.negatives)?;
        }
        Ok(())
    }

    /// The dimensions in canonical order, without duplicates.
    pub fn dimensions(&self) -> Vec<Dimension> {
        let mut d = self.dimensions.clone();
        d.sort();
        d.dedup();
        d
    }
}

impl LetterPicks {
    fn validate(&self, negatives: usize) -> Result<()> {
        if self.judges.is_empty() {
            return Err(AuditError::Config(
                "`[audit.letter_picks] judges` names no judge".into(),
            ));
        }
        for (name, v) in [
            ("none_below", self.none_below),
            ("several_margin", self.several_margin),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err(AuditError::Config(format!(
                    "`[audit.letter_picks] {name}` must be in [0, 1], got {v}"
                )));
            }
        }
        if negatives + 1 > MAX_LABELS {
            return Err(AuditError::Config(format!(
                "letter picks read one digit: a pool holds at most {} passages, `negatives` is {negatives}",
                MAX_LABELS
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_toml() {
        let s: AuditSettings = serde_json::from_value(
            serde_json::json!({"negatives": 5, "dimensions": ["quality", "alignment", "quality"]}),
        )
        .unwrap();
        assert_eq!(s.negatives, 5);
        assert_eq!(s.trials, 3);
        assert_eq!(
            s.dimensions(),
            vec![Dimension::Alignment, Dimension::Quality]
        );
        s.validate().unwrap();
        let bad = AuditSettings {
            trials: 0,
            ..Default::default()
        };
        assert!(bad.validate().is_err());
        assert!(
            serde_json::from_value::<AuditSettings>(serde_json::json!({"negativs": 5})).is_err()
        );
    }

    #[test]
    fn negatives_query_is_parsed_once_and_written_by_its_name() {
        assert_eq!("auto".parse(), Ok(NegativesQuery::Auto));
        let q: NegativesQuery = "window:2".parse().unwrap();
        assert_eq!(q, NegativesQuery::Formulation(QueryFormulation::Window(2)));
        assert_eq!(q.to_string(), "window:2");
        let s: AuditSettings = toml::from_str("negatives_query = \"full:256\"").unwrap();
        assert_eq!(
            s.negatives_query,
            NegativesQuery::Formulation(QueryFormulation::Full { budget: 256 })
        );
        // the default is written as before: summaries and fingerprints keep their text
        let json = serde_json::to_value(AuditSettings::default()).unwrap();
        assert_eq!(json["negatives_query"], "auto");
        let bad = toml::from_str::<AuditSettings>("negatives_query = \"sideways\"");
        assert!(bad.unwrap_err().to_string().contains("sideways"));
    }

    #[test]
    fn letter_picks_are_opt_in_and_checked() {
        // absent by default, and absent from the serialised settings (fingerprints unchanged)
        let s = AuditSettings::default();
        assert!(s.letter_picks.is_none());
        assert!(
            serde_json::to_value(&s)
                .unwrap()
                .get("letter_picks")
                .is_none()
        );
        let s: AuditSettings =
            toml::from_str("negatives = 3\n[letter_picks]\njudges = [\"q\"]\nnone_below = 0.3\n")
                .unwrap();
        let l = s.letter_picks.clone().unwrap();
        assert_eq!((l.none_below, l.several_margin), (0.3, 0.05));
        assert!(l.names("q", "m") && l.names("x", "q") && !l.names("x", "m"));
        s.validate().unwrap();
        // a pool of 10 needs two digits; no judge named; a threshold off the scale
        let ten = AuditSettings {
            negatives: 9,
            ..s.clone()
        };
        assert!(
            ten.validate()
                .unwrap_err()
                .to_string()
                .contains("at most 9")
        );
        let mut none = s.clone();
        none.letter_picks = Some(LetterPicks::default());
        assert!(none.validate().is_err());
        let mut off = s.clone();
        off.letter_picks.as_mut().unwrap().several_margin = 1.5;
        assert!(
            off.validate()
                .unwrap_err()
                .to_string()
                .contains("several_margin")
        );
        assert!(toml::from_str::<AuditSettings>("[letter_picks]\njudge = [\"q\"]\n").is_err());
    }
}
