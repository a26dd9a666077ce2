//! Style profiles of the user agent and the humanizer (`[synth.style]`, `--style`): how long
//! a question is and whether a follow-up leans on the history.
//! - `concise`: today's behaviour (one short sentence, the caps tuned for the embedded 0.5B
//!   model): the default for the embedded local model;
//! - `production`: what people write to a search assistant (context, a constraint, an aside,
//!   several sentences), a length drawn per turn from a long-tailed (log-normal) distribution,
//!   follow-ups that refer back more often than not: the default with any other endpoint;
//! - `like:BENCH`: lengths and the referring-back share drawn from a real benchmark's
//!   measured distributions (`mtr_retrieve::realism`).
//!
//! A turn's draw ([`TurnStyle`]) is seeded by the synthesis seed, the dialogue and the layer,
//! so a retry keeps its target and a rerun draws the same. [`ks_statistic`] is the
//! Kolmogorov-Smirnov distance the tests hold a profile's questions to.

use std::path::Path;

use mtr_core::rng::{self, SeededRng};
use rand::RngExt as _;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::lang::Language;

/// `[synth.style]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StyleOptions {
    /// `concise`, `production` or `like:BENCH`; unset: `concise` on the embedded local model,
    /// `production` with any other endpoint.
    pub profile: Option<String>,
}

impl StyleOptions {
    /// True when nothing is set (the section is then left out of the config's hash, so a
    /// `concise` synthesis keeps its fingerprints).
    pub(crate) fn is_default(&self) -> bool {
        self.profile.is_none()
    }
}

/// A parsed profile name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProfileName {
    /// One short question (the default on the embedded local model).
    Concise,
    /// Production traffic's length and context.
    Production,
    /// Lengths drawn from a real benchmark's questions (`like:PATH`).
    Like(String),
}

impl std::str::FromStr for ProfileName {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.trim() {
            "concise" => Ok(Self::Concise),
            "production" => Ok(Self::Production),
            other => match other.strip_prefix("like:") {
                Some(b) if !b.trim().is_empty() => Ok(Self::Like(b.trim().to_string())),
                _ => Err(format!(
                    "unknown style `{other}`: concise, production or like:BENCH"
                )),
            },
        }
    }
}

/// The profile in force: `profile` when set, else by the endpoints.
pub(crate) fn profile_name(opts: &StyleOptions, local_default: bool) -> Result<ProfileName> {
    match &opts.profile {
        Some(p) => p
            .parse()
            .map_err(|e: String| Error::param("style.profile", e)),
        None if local_default => Ok(ProfileName::Concise),
        None => Ok(ProfileName::Production),
    }
}

/// The production profile's log-normal lengths: median and spread (words; CJK characters),
/// and the clamp. Medians of 20 words and 32 characters are about twice MTRAG's 8 words,
/// with a long tail.
const PRODUCTION_WORDS: (f64, f64, usize, usize) = (20.0, 0.6, 5, 120);
const PRODUCTION_CJK: (f64, f64, usize, usize) = (32.0, 0.6, 8, 240);
/// The share of production follow-ups told to refer back.
const PRODUCTION_REFER: f64 = 0.6;

/// Where a styled profile's lengths come from.
#[derive(Debug, Clone, PartialEq)]
pub enum LengthDistribution {
    /// Rounded and clamped `exp(N(ln median, sigma))`.
    LogNormal {
        /// The median length.
        median: f64,
        /// The spread of the log length.
        sigma: f64,
        /// The shortest length.
        min: usize,
        /// The longest length.
        max: usize,
    },
    /// A benchmark's question lengths, drawn uniformly.
    Empirical(Vec<usize>),
}

impl LengthDistribution {
    fn draw(&self, rng: &mut SeededRng) -> usize {
        match self {
            LengthDistribution::LogNormal {
                median,
                sigma,
                min,
                max,
            } => {
                // Box-Muller
                let u1: f64 = rng.random::<f64>().max(f64::MIN_POSITIVE);
                let u2: f64 = rng.random();
                let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                let x = (median.ln() + sigma * z).exp().round();
                (x.max(0.0) as usize).clamp(*min, *max)
            }
            LengthDistribution::Empirical(v) => {
                if v.is_empty() {
                    return 1;
                }
                v[rng.random_range(0..v.len())].max(1)
            }
        }
    }

    /// P(length <= k).
    pub fn cdf(&self, k: usize) -> f64 {
        match self {
            LengthDistribution::LogNormal {
                median,
                sigma,
                min,
                max,
            } => {
                if k < *min {
                    0.0
                } else if k >= *max {
                    1.0
                } else {
                    normal_cdf(((k as f64 + 0.5).ln() - median.ln()) / sigma)
                }
            }
            LengthDistribution::Empirical(v) => {
                let n = v.len().max(1) as f64;
                v.iter().filter(|&&x| x.max(1) <= k).count() as f64 / n
            }
        }
    }
}

/// The standard normal CDF (Abramowitz and Stegun 7.1.26 for erf; error under 1.5e-7).
fn normal_cdf(z: f64) -> f64 {
    let x = z.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erf = 1.0 - poly * (-x * x).exp();
    if z >= 0.0 {
        0.5 * (1.0 + erf)
    } else {
        0.5 * (1.0 - erf)
    }
}

/// A styled profile's distributions for one corpus language.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Style {
    /// `production` or `like:NAME`.
    pub name: String,
    pub lengths: LengthDistribution,
    /// The share of follow-ups told to refer back.
    pub refer_share: f64,
    /// Lengths in CJK characters (else words).
    pub cjk: bool,
}

/// One turn's draw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct TurnStyle {
    /// The question's length to aim at, in `unit`.
    pub length: usize,
    /// `words` or `characters`.
    pub unit: &'static str,
    /// Lean on the history (pronouns, ellipsis): only ever true for a follow-up.
    pub refer_back: bool,
}

impl Style {
    /// The production profile.
    pub(crate) fn production(lang: &Language) -> Self {
        let (median, sigma, min, max) = if lang.is_cjk() {
            PRODUCTION_CJK
        } else {
            PRODUCTION_WORDS
        };
        Self {
            name: "production".into(),
            lengths: LengthDistribution::LogNormal {
                median,
                sigma,
                min,
                max,
            },
            refer_share: PRODUCTION_REFER,
            cjk: lang.is_cjk(),
        }
    }

    /// A profile drawn from a real benchmark's questions in `lang` (all its questions when it
    /// has none in that language).
    pub(crate) fn like(bench: &Path, lang: &Language) -> Result<Self> {
        let dir = mtr_core::BenchmarkDir::open(bench)?;
        let dialogues = dir.dialogues()?;
        let groups = mtr_retrieve::realism::by_language(&dialogues);
        let all: Vec<&mtr_core::Dialogue> = dialogues.iter().collect();
        let chosen = groups
            .iter()
            .find(|(code, _)| code == lang.code())
            .map_or(all.as_slice(), |(_, g)| g.as_slice());
        let unit = if lang.is_cjk() {
            mtr_retrieve::realism::LengthUnit::Characters
        } else {
            mtr_retrieve::realism::LengthUnit::Words
        };
        let lengths = mtr_retrieve::realism::question_lengths(chosen, unit);
        if lengths.is_empty() {
            return Err(Error::param(
                "style.profile",
                format!("like:{}: the benchmark has no question", bench.display()),
            ));
        }
        let refer = mtr_retrieve::realism::referring_back(chosen, lang.code());
        let refer_share = if refer.is_empty() {
            0.0
        } else {
            refer.values.iter().sum::<f64>() / refer.len() as f64
        };
        let name = bench
            .file_name()
            .map_or_else(|| "bench".into(), |n| n.to_string_lossy().into_owned());
        Ok(Self {
            name: format!("like:{name}"),
            lengths: LengthDistribution::Empirical(
                lengths.values.iter().map(|&v| v as usize).collect(),
            ),
            refer_share,
            cjk: lang.is_cjk(),
        })
    }

    /// The profile in force for `name`; None for `concise` (today's prompts, untouched).
    pub(crate) fn resolve(name: &ProfileName, lang: &Language) -> Result<Option<Self>> {
        match name {
            ProfileName::Concise => Ok(None),
            ProfileName::Production => Ok(Some(Self::production(lang))),
            ProfileName::Like(b) => Self::like(Path::new(b), lang).map(Some),
        }
    }

    /// The draw of layer `layer` of dialogue `dialogue`; `follow_up`: a turn after the first
    /// that does not switch topic (the only kind that may refer back).
    pub(crate) fn turn(
        &self,
        seed: u64,
        dialogue: usize,
        layer: usize,
        follow_up: bool,
    ) -> TurnStyle {
        let key = seed
            ^ (dialogue as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
            ^ (layer as u64).wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
        let mut rng = rng::stream(key, rng::purpose::AS_GIVEN);
        let length = self.lengths.draw(&mut rng);
        let refer: f64 = rng.random();
        TurnStyle {
            length,
            unit: if self.cjk { "characters" } else { "words" },
            refer_back: follow_up && refer < self.refer_share,
        }
    }

    /// The most words (CJK: characters) a question of this profile may have before it is
    /// `too_long`: room above the longest length it draws.
    pub(crate) fn max_length(&self) -> usize {
        let longest = match &self.lengths {
            LengthDistribution::LogNormal { max, .. } => *max,
            LengthDistribution::Empirical(v) => v.iter().copied().max().unwrap_or(1),
        };
        longest + longest / 2 + 10
    }
}

/// The Kolmogorov-Smirnov distance between the lengths `sample` and `dist`: the largest
/// difference of their CDFs over the integers.
pub fn ks_statistic(sample: &[usize], dist: &LengthDistribution) -> f64 {
    if sample.is_empty() {
        return 1.0;
    }
    let n = sample.len() as f64;
    let top = sample.iter().copied().max().unwrap_or(0).max(match dist {
        LengthDistribution::LogNormal { max, .. } => *max,
        LengthDistribution::Empirical(v) => v.iter().copied().max().unwrap_or(0),
    });
    (0..=top)
        .map(|k| {
            let f_n = sample.iter().filter(|&&x| x <= k).count() as f64 / n;
            (f_n - dist.cdf(k)).abs()
        })
        .fold(0.0, f64::max)
}

/// The one-sample KS test's critical distance at the 5% level for `n` values (asymptotic;
/// conservative for lengths, which are discrete).
pub fn ks_critical_5pct(n: usize) -> f64 {
    1.358 / (n.max(1) as f64).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_names_parse_and_default_by_endpoint() {
        assert_eq!("concise".parse(), Ok(ProfileName::Concise));
        assert_eq!("production".parse(), Ok(ProfileName::Production));
        assert_eq!(
            "like:/x/mtrag".parse(),
            Ok(ProfileName::Like("/x/mtrag".into()))
        );
        assert!("like:".parse::<ProfileName>().is_err());
        assert!("verbose".parse::<ProfileName>().is_err());
        let unset = StyleOptions::default();
        assert_eq!(profile_name(&unset, true).unwrap(), ProfileName::Concise);
        assert_eq!(
            profile_name(&unset, false).unwrap(),
            ProfileName::Production
        );
        let set = StyleOptions {
            profile: Some("concise".into()),
        };
        assert_eq!(profile_name(&set, false).unwrap(), ProfileName::Concise);
    }

    #[test]
    fn production_draws_follow_their_long_tailed_distribution() {
        let s = Style::production(&Language::from_code("en"));
        let draws: Vec<TurnStyle> = (0..400).map(|d| s.turn(7, d, 1, true)).collect();
        let lengths: Vec<usize> = draws.iter().map(|t| t.length).collect();
        let d = ks_statistic(&lengths, &s.lengths);
        assert!(d < ks_critical_5pct(lengths.len()), "D = {d}");
        // long-tailed: some questions are far longer than the median
        assert!(lengths.iter().any(|&l| l >= 40), "{lengths:?}");
        let refer = draws.iter().filter(|t| t.refer_back).count() as f64 / 400.0;
        assert!((refer - PRODUCTION_REFER).abs() < 0.08, "{refer}");
        // the same seed draws the same; a first turn never refers back
        assert_eq!(s.turn(7, 3, 2, true), s.turn(7, 3, 2, true));
        assert!(!s.turn(7, 3, 0, false).refer_back);
        // a draw from another distribution fails the test
        let short = LengthDistribution::LogNormal {
            median: 8.0,
            sigma: 0.4,
            min: 2,
            max: 40,
        };
        assert!(ks_statistic(&lengths, &short) > ks_critical_5pct(lengths.len()));
    }

    #[test]
    fn the_normal_cdf_is_right() {
        assert!((normal_cdf(0.0) - 0.5).abs() < 1e-7);
        assert!((normal_cdf(1.96) - 0.975).abs() < 1e-4);
        assert!((normal_cdf(-1.0) - 0.158_655).abs() < 1e-5);
    }
}
