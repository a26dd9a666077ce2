//! Rank fusion: combining the rankings of several retrievers into one. Reciprocal rank fusion
//! needs no score calibration; weighted score fusion normalises each ranking's scores first.
//! Both are deterministic: ties are broken by corpus order, then id.

use std::collections::HashMap;
use std::str::FromStr;

use futures::future::try_join_all;
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::retriever::{BoxFuture, Hit, Query, Retriever, sort_hits};

/// How each ranking's scores are made comparable before a weighted sum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Normalization {
    /// (s - min) / (max - min) per ranking (1 when all scores are equal).
    #[default]
    MinMax,
    /// (s - mean) / std per ranking (0 when all scores are equal).
    ZScore,
    /// Raw scores.
    None,
}

/// A fusion method.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fusion {
    /// Reciprocal rank fusion: sum of w / (k + rank), rank 1-based (Cormack et al. 2009, k = 60).
    Rrf {
        /// The rank offset (Cormack et al. use 60).
        k: f64,
    },
    /// Weighted sum of normalised scores; a passage missing from a ranking contributes 0 there.
    Weighted(Normalization),
}

/// Reciprocal rank fusion of rankings (each best first), top `depth` of the result.
pub fn rrf(rankings: &[Vec<Hit>], k: f64, depth: usize) -> Vec<Hit> {
    let weights = vec![1.0; rankings.len()];
    rrf_weighted(rankings, &weights, k, depth)
}

/// Reciprocal rank fusion with a weight per ranking.
pub(crate) fn rrf_weighted(
    rankings: &[Vec<Hit>],
    weights: &[f64],
    k: f64,
    depth: usize,
) -> Vec<Hit> {
    let mut acc: HashMap<&str, (f64, u32)> = HashMap::new();
    for (ranking, w) in rankings.iter().zip(weights) {
        for (rank, h) in ranking.iter().enumerate() {
            let e = acc.entry(h.id.as_str()).or_insert((0.0, h.ord));
            e.0 += w / (k + (rank + 1) as f64);
        }
    }
    finish(acc, depth)
}

/// Weighted score fusion of rankings (each best first), top `depth` of the result.
pub(crate) fn weighted_fusion(
    rankings: &[Vec<Hit>],
    weights: &[f64],
    norm: Normalization,
    depth: usize,
) -> Vec<Hit> {
    let mut acc: HashMap<&str, (f64, u32)> = HashMap::new();
    for (ranking, w) in rankings.iter().zip(weights) {
        let scores: Vec<f64> = ranking.iter().map(|h| h.score).collect();
        let normed = normalize(&scores, norm);
        for (h, s) in ranking.iter().zip(normed) {
            let e = acc.entry(h.id.as_str()).or_insert((0.0, h.ord));
            e.0 += w * s;
        }
    }
    finish(acc, depth)
}

fn normalize(scores: &[f64], norm: Normalization) -> Vec<f64> {
    if scores.is_empty() {
        return Vec::new();
    }
    match norm {
        Normalization::None => scores.to_vec(),
        Normalization::MinMax => {
            let (lo, hi) = scores
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &s| {
                    (lo.min(s), hi.max(s))
                });
            if hi > lo {
                scores.iter().map(|s| (s - lo) / (hi - lo)).collect()
            } else {
                vec![1.0; scores.len()]
            }
        }
        Normalization::ZScore => {
            let n = scores.len() as f64;
            let mean = scores.iter().sum::<f64>() / n;
            let var = scores.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / n;
            let sd = var.sqrt();
            if sd > 0.0 {
                scores.iter().map(|s| (s - mean) / sd).collect()
            } else {
                vec![0.0; scores.len()]
            }
        }
    }
}

fn finish(acc: HashMap<&str, (f64, u32)>, depth: usize) -> Vec<Hit> {
    let mut hits: Vec<Hit> = acc
        .into_iter()
        .map(|(id, (score, ord))| Hit {
            id: id.to_string(),
            score,
            ord,
        })
        .collect();
    sort_hits(&mut hits);
    hits.truncate(depth);
    hits
}

/// A retriever fusing other retrievers. Each part is asked for `depth` hits (default: 2 k,
/// at least 100) before fusion.
pub struct FusionRetriever {
    parts: Vec<(Box<dyn Retriever>, f64)>,
    method: Fusion,
    depth: Option<usize>,
}

impl FusionRetriever {
    /// Fuses `parts`, each `(retriever, weight)`, by `method`.
    pub fn new(parts: Vec<(Box<dyn Retriever>, f64)>, method: Fusion) -> Self {
        Self {
            parts,
            method,
            depth: None,
        }
    }
}

impl Retriever for FusionRetriever {
    fn name(&self) -> String {
        let parts: Vec<String> = self
            .parts
            .iter()
            .map(|(r, w)| {
                if (*w - 1.0).abs() < f64::EPSILON {
                    r.name()
                } else {
                    format!("{}={w}", r.name())
                }
            })
            .collect();
        match self.method {
            Fusion::Rrf { k } if (k - 60.0).abs() < f64::EPSILON => {
                format!("rrf({})", parts.join(","))
            }
            Fusion::Rrf { k } => format!("rrf{k}({})", parts.join(",")),
            Fusion::Weighted(Normalization::MinMax) => format!("weighted({})", parts.join(",")),
            Fusion::Weighted(Normalization::ZScore) => format!("weighted-z({})", parts.join(",")),
            Fusion::Weighted(Normalization::None) => format!("weighted-raw({})", parts.join(",")),
        }
    }

    fn search<'a>(
        &'a self,
        queries: &'a [Query],
        k: usize,
    ) -> BoxFuture<'a, Result<Vec<Vec<Hit>>>> {
        Box::pin(async move {
            let depth = self.depth.unwrap_or(k.saturating_mul(2).max(100));
            let results =
                try_join_all(self.parts.iter().map(|(r, _)| r.search(queries, depth))).await?;
            let weights: Vec<f64> = self.parts.iter().map(|(_, w)| *w).collect();
            Ok((0..queries.len())
                .map(|qi| {
                    let rankings: Vec<Vec<Hit>> = results
                        .iter()
                        .map(|r| r.get(qi).cloned().unwrap_or_default())
                        .collect();
                    match self.method {
                        Fusion::Rrf { k: c } => rrf_weighted(&rankings, &weights, c, k),
                        Fusion::Weighted(n) => weighted_fusion(&rankings, &weights, n, k),
                    }
                })
                .collect())
        })
    }
}

/// A parsed retriever specification (the CLI's `--retriever`): `bm25`, `dense`,
/// `rrf(bm25,dense)`, `weighted(bm25=0.3,dense=0.7)`, `weighted-z(...)`.
#[derive(Debug, Clone, PartialEq)]
pub enum RetrieverSpec {
    /// The BM25 index.
    Bm25,
    /// The dense index of the configured embedder.
    Dense,
    /// A fusion of other retrievers.
    Fusion {
        /// How their rankings are fused.
        method: Fusion,
        /// The retrievers fused, each with its weight.
        parts: Vec<(RetrieverSpec, f64)>,
    },
}

impl FromStr for RetrieverSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        match s.to_ascii_lowercase().as_str() {
            "bm25" => return Ok(RetrieverSpec::Bm25),
            "dense" => return Ok(RetrieverSpec::Dense),
            _ => {}
        }
        let (head, rest) = s.split_once('(').ok_or_else(|| {
            format!("unknown retriever `{s}` (expected bm25, dense, rrf(...), weighted(...))")
        })?;
        let inner = rest
            .strip_suffix(')')
            .ok_or_else(|| format!("missing `)` in `{s}`"))?;
        let method = match head.trim().to_ascii_lowercase().as_str() {
            "rrf" => Fusion::Rrf { k: 60.0 },
            h if h.starts_with("rrf") => Fusion::Rrf {
                k: h[3..]
                    .parse()
                    .map_err(|_| format!("bad RRF constant in `{h}`"))?,
            },
            "weighted" | "weighted-minmax" => Fusion::Weighted(Normalization::MinMax),
            "weighted-z" | "weighted-zscore" => Fusion::Weighted(Normalization::ZScore),
            "weighted-raw" => Fusion::Weighted(Normalization::None),
            other => {
                return Err(format!(
                    "unknown fusion `{other}` (expected rrf, weighted, weighted-z, weighted-raw)"
                ));
            }
        };
        let mut parts = Vec::new();
        for part in split_top_level(inner) {
            let (spec, w) = match part.rsplit_once('=') {
                Some((p, w)) if !p.contains('(') || p.ends_with(')') => (
                    p,
                    w.trim()
                        .parse::<f64>()
                        .map_err(|_| format!("bad weight `{w}` in `{s}`"))?,
                ),
                _ => (part, 1.0),
            };
            parts.push((spec.parse()?, w));
        }
        if parts.len() < 2 {
            return Err(format!("fusion `{s}` needs at least two retrievers"));
        }
        Ok(RetrieverSpec::Fusion { method, parts })
    }
}

impl RetrieverSpec {
    /// The fusion's parts with their weights (a single retriever is its own only part).
    pub fn components(&self) -> Vec<(RetrieverSpec, f64)> {
        match self {
            RetrieverSpec::Fusion { parts, .. } => parts.clone(),
            other => vec![(other.clone(), 1.0)],
        }
    }

    /// The fusion method, `None` for a single retriever.
    pub fn method(&self) -> Option<Fusion> {
        match self {
            RetrieverSpec::Fusion { method, .. } => Some(*method),
            _ => None,
        }
    }

    /// Whether any part needs dense vectors (and so an embedder).
    pub fn needs_dense(&self) -> bool {
        match self {
            RetrieverSpec::Bm25 => false,
            RetrieverSpec::Dense => true,
            RetrieverSpec::Fusion { parts, .. } => parts.iter().any(|(p, _)| p.needs_dense()),
        }
    }

    /// Fuses rankings already retrieved by this spec's components (in `components()` order).
    pub fn fuse(&self, rankings: &[Vec<Hit>], depth: usize) -> Vec<Hit> {
        let weights: Vec<f64> = self.components().iter().map(|(_, w)| *w).collect();
        match self.method() {
            Some(Fusion::Rrf { k }) => rrf_weighted(rankings, &weights, k, depth),
            Some(Fusion::Weighted(n)) => weighted_fusion(rankings, &weights, n, depth),
            None => rankings
                .first()
                .map(|r| r.iter().take(depth).cloned().collect())
                .unwrap_or_default(),
        }
    }
}

/// A spec is written in settings as on the command line (`"rrf(bm25,dense)"`).
impl serde::Serialize for RetrieverSpec {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for RetrieverSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

impl std::fmt::Display for RetrieverSpec {
    /// The canonical spelling, which parses back to the same spec.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RetrieverSpec::Bm25 => f.write_str("bm25"),
            RetrieverSpec::Dense => f.write_str("dense"),
            RetrieverSpec::Fusion { method, parts } => {
                let head = match method {
                    Fusion::Rrf { k } if (*k - 60.0).abs() < f64::EPSILON => "rrf".to_string(),
                    Fusion::Rrf { k } => format!("rrf{k}"),
                    Fusion::Weighted(Normalization::MinMax) => "weighted".into(),
                    Fusion::Weighted(Normalization::ZScore) => "weighted-z".into(),
                    Fusion::Weighted(Normalization::None) => "weighted-raw".into(),
                };
                let parts: Vec<String> = parts
                    .iter()
                    .map(|(p, w)| {
                        if (*w - 1.0).abs() < f64::EPSILON {
                            p.to_string()
                        } else {
                            format!("{p}={w}")
                        }
                    })
                    .collect();
                write!(f, "{head}({})", parts.join(","))
            }
        }
    }
}

fn split_top_level(s: &str) -> Vec<&str> {
    let (mut depth, mut start, mut out) = (0i32, 0usize, Vec::new());
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    if !s[start..].trim().is_empty() {
        out.push(s[start..].trim());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(id: &str, score: f64, ord: u32) -> Hit {
        Hit {
            id: id.into(),
            score,
            ord,
        }
    }

    #[test]
    fn rrf_matches_hand_computation() {
        let a = vec![h("x", 9.0, 0), h("y", 5.0, 1)];
        let b = vec![h("y", 0.9, 1), h("z", 0.8, 2)];
        let f = rrf(&[a, b], 60.0, 10);
        assert_eq!(f[0].id, "y");
        assert!((f[0].score - (1.0 / 62.0 + 1.0 / 61.0)).abs() < 1e-12);
        assert_eq!(f[1].id, "x");
        assert_eq!(f[2].id, "z");
        assert!((f[1].score - 1.0 / 61.0).abs() < 1e-12);
    }

    #[test]
    fn weighted_minmax() {
        let a = vec![h("x", 10.0, 0), h("y", 0.0, 1)];
        let b = vec![h("y", 1.0, 1), h("x", 0.5, 0)];
        let f = weighted_fusion(&[a, b], &[0.3, 0.7], Normalization::MinMax, 10);
        assert_eq!(f[0].id, "y");
        assert!((f[0].score - 0.7).abs() < 1e-12 && (f[1].score - 0.3).abs() < 1e-12);
        let z = normalize(&[1.0, 1.0], Normalization::ZScore);
        assert_eq!(z, vec![0.0, 0.0]);
    }

    #[test]
    fn specs_parse() {
        assert_eq!(
            "bm25".parse::<RetrieverSpec>().unwrap(),
            RetrieverSpec::Bm25
        );
        let s: RetrieverSpec = "weighted(bm25=0.3, dense=0.7)".parse().unwrap();
        assert_eq!(
            s,
            RetrieverSpec::Fusion {
                method: Fusion::Weighted(Normalization::MinMax),
                parts: vec![(RetrieverSpec::Bm25, 0.3), (RetrieverSpec::Dense, 0.7)]
            }
        );
        let s: RetrieverSpec = "rrf(bm25,rrf(bm25,dense)=2)".parse().unwrap();
        let RetrieverSpec::Fusion { parts, .. } = s else {
            panic!()
        };
        assert_eq!(parts[1].1, 2.0);
        assert!("rrf(bm25)".parse::<RetrieverSpec>().is_err());
        for text in [
            "bm25",
            "rrf(bm25,dense)",
            "weighted(bm25=0.3,dense=0.7)",
            "rrf10(bm25,weighted-z(bm25,dense=2))",
        ] {
            let spec: RetrieverSpec = text.parse().unwrap();
            assert_eq!(spec.to_string(), text);
        }
        assert!("colbert".parse::<RetrieverSpec>().is_err());
    }
}
