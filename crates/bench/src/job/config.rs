//! `[bench]` of `mtr.toml`: the settings of `mtr bench`, each declared once here with its
//! default (the binary's flags and the environment's `MTR_BENCH__KEY` layer over it), and the
//! job's [`Settings`] read from it. The main measure and the split's part are typed, so a typo
//! in the file stops the command before any work, naming the key.

use serde::{Deserialize, Serialize};

use crate::measure::Measure;
use crate::query_set::Part;
use crate::strata::MIN_GROUP;

/// `[bench]`: rank depth, statistics, split and analyses of `mtr bench`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BenchSettings {
    /// Rank depth of the retriever runs.
    pub k: usize,
    /// The measure for ranking, tests, failure analysis and turn-depth curves.
    pub main: Measure,
    /// The system every other is tested against (unset: the first system).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
    /// Bootstrap resamples (over dialogues).
    pub resamples: usize,
    /// Confidence level of the intervals.
    pub confidence_level: f64,
    /// Sign-flip permutations of the randomization tests.
    pub permutations: usize,
    /// Significance level.
    pub alpha: f64,
    /// Seed of every random choice (bootstrap, tests, split, example sampling).
    pub seed: u64,
    /// Share of the dialogues in the dev part of a seeded dev/test split (unset: no split).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub split: Option<f64>,
    /// Which part of the split to score.
    pub part: Part,
    /// Worst turns shown per system in the failure analysis.
    pub examples: usize,
    /// Recall failure: no relevant passage in the top `failure_k`.
    pub failure_k: usize,
    /// Ranking failure: the first relevant passage below this rank.
    pub failure_rank: usize,
    /// Refuse runs that rank documents the corpus lacks.
    pub strict: bool,
    /// Strata with fewer turns than this are marked small.
    pub min_stratum: usize,
    /// Changed turns listed per variant in the label-sensitivity section.
    pub moved_turns: usize,
}

impl Default for BenchSettings {
    fn default() -> Self {
        Self {
            k: 100,
            main: Measure::Ndcg(10),
            baseline: None,
            resamples: 1000,
            confidence_level: 0.95,
            permutations: 10_000,
            alpha: 0.05,
            seed: 42,
            split: None,
            part: Part::Dev,
            examples: 5,
            failure_k: 10,
            failure_rank: 3,
            strict: false,
            min_stratum: MIN_GROUP,
            moved_turns: 20,
        }
    }
}

impl From<&BenchSettings> for Settings {
    /// The job's settings with the default measures (the command's `--measure` replaces them).
    fn from(b: &BenchSettings) -> Self {
        Settings {
            measures: Measure::defaults(),
            main: b.main,
            resamples: b.resamples,
            level: b.confidence_level,
            permutations: b.permutations,
            alpha: b.alpha,
            seed: b.seed,
            baseline: b.baseline.clone(),
            diagnosis_k: 10,
            failure_k: b.failure_k,
            failure_rank: b.failure_rank,
            failure_examples: b.examples,
            max_position: 10,
            min_stratum: b.min_stratum,
            strict: b.strict,
        }
    }
}

/// What to compute and with which seeds.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Reported measures, in display order.
    pub measures: Vec<Measure>,
    /// The measure for ranking, tests, failure analysis and by-position curves.
    pub main: Measure,
    /// Bootstrap resamples over dialogues (default 1000).
    pub resamples: usize,
    /// Confidence level of the intervals (default 0.95).
    pub level: f64,
    /// Sign-flip permutations of the randomization tests (default 10000).
    pub permutations: usize,
    /// Significance level (default 0.05).
    pub alpha: f64,
    /// Seed of the bootstrap; the tests use `seed + 1` (default 42).
    pub seed: u64,
    /// System every other is tested against (default: the first system).
    pub baseline: Option<String>,
    /// Depth of the metric-combination table.
    pub diagnosis_k: usize,
    /// Recall failure: no relevant in the top `failure_k`.
    pub failure_k: usize,
    /// Ranking failure: first relevant below rank `failure_rank`.
    pub failure_rank: usize,
    /// Worst turns shown per system.
    pub failure_examples: usize,
    /// By-position curves pool turns at this position and deeper.
    pub max_position: usize,
    /// Strata with fewer turns than this are marked small (a warning; charts grey them out).
    pub min_stratum: usize,
    /// Refuse runs that rank documents the corpus lacks (default: score them as
    /// non-relevant, as trec_eval does, with a warning and a count).
    pub strict: bool,
}

impl Default for Settings {
    /// The defaults of `[bench]` ([`BenchSettings`], where they are declared).
    fn default() -> Self {
        Settings::from(&BenchSettings::default())
    }
}

impl Settings {
    /// Seed of the randomization tests (the bootstrap uses `seed` itself).
    pub(crate) fn test_seed(&self) -> u64 {
        self.seed.wrapping_add(1)
    }
    /// Seed of the tie-breaking among equally bad turns.
    pub(crate) fn failure_seed(&self) -> u64 {
        self.seed.wrapping_add(2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_jobs_defaults_are_the_sections() {
        let s = Settings::default();
        assert_eq!(s, Settings::from(&BenchSettings::default()));
        assert_eq!(
            (s.main, s.resamples, s.level),
            (Measure::Ndcg(10), 1000, 0.95)
        );
        assert_eq!((s.permutations, s.alpha, s.seed), (10_000, 0.05, 42));
    }

    #[test]
    fn a_misspelt_measure_or_part_fails_when_the_section_loads() {
        let bad = serde_json::from_str::<BenchSettings>(r#"{"main": "ndcg_cut.1O"}"#);
        assert!(bad.is_err());
        let bad = serde_json::from_str::<BenchSettings>(r#"{"part": "tset"}"#);
        let e = bad.unwrap_err().to_string();
        assert!(e.contains("dev") && e.contains("test"), "{e}");
        let ok: BenchSettings =
            serde_json::from_str(r#"{"main": "RR@10", "part": "test"}"#).unwrap();
        assert_eq!((ok.main, ok.part), (Measure::Mrr(10), Part::Test));
    }
}
