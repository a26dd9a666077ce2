//! Audit settings: the `[audit]` section of `mtr.toml`, overridden by command-line flags.
//! Every field has a default so an empty section audits all four dimensions.

use serde::{Deserialize, Serialize};

use crate::dimension::Dimension;
use crate::error::{AuditError, Result};

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
    pub negatives_query: String,
    /// A judge whose failed judgements pass this share (or that failed every one) makes the
    /// audit incomplete, and `mtr audit` exit with 1 naming it and its first error.
    pub max_failed_share: f64,
    /// A missing-gold candidate (a non-gold passage a majority picked over the gold) becomes a
    /// probable missing gold when a strict majority of the judges rate it pointwise (alignment
    /// prompt, 1-5) at least this.
    pub verify_rating_at_least: f64,
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
            negatives_query: "auto".into(),
            max_failed_share: 0.2,
            verify_rating_at_least: 4.0,
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
}
